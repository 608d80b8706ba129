"""td.loom.Schedule: serialized schedule bytes as a td.function argument with
the loom's schedule trace type (one trace for every schedule of a loom, the
same as a Weaver's), while plain bytes keep TensorFlow's literal semantics."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, BinaryLoomOp, vector_loom


def serialized(loom, value, depth=1):
    w = loom.make_weaver()
    r = w.constant(np.full(3, value))
    for _ in range(depth):
        r = w.add(w.mul(w.x, w.y), r)
    w.add_output(r)
    return w.serialize()


def expected(x, y, value, depth=1):
    r = np.full(3, value)
    for _ in range(depth):
        r = x.numpy() * y.numpy() + r
    return r


def test_schedules_of_different_bytes_share_one_trace():
    loom, x, y = vector_loom()
    calls = []

    @td.function
    def run(schedule):
        calls.append(1)
        return loom.output_tensor(VEC3, schedule)

    for value, depth in [(0.0, 1), (2.5, 3), (-1.0, 2), (7.0, 1)]:
        got = run(td.loom.Schedule(serialized(loom, value, depth)))
        np.testing.assert_allclose(got.numpy(), [expected(x, y, value, depth)])
    assert len(calls) == 1 and run.experimental_get_tracing_count() == 1
    assert "Schedule[loom" in run.pretty_printed_concrete_signatures()


def test_a_schedule_and_a_weaver_share_the_trace():
    loom, x, y = vector_loom()

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule)

    w = loom.make_weaver()
    w.add_output(w.mul(w.x, w.y))
    np.testing.assert_allclose(run(w).numpy(), [x.numpy() * y.numpy()])
    np.testing.assert_allclose(run(td.loom.Schedule(serialized(loom, 4.0))).numpy(), [expected(x, y, 4.0)])
    assert run.experimental_get_tracing_count() == 1


def test_plain_bytes_still_trace_per_value_as_in_tensorflow():
    loom, _, _ = vector_loom()

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule)

    run(serialized(loom, 1.0))
    run(serialized(loom, 2.0))
    assert run.experimental_get_tracing_count() == 2
    run(serialized(loom, 1.0))  # the same literal: the first trace
    assert run.experimental_get_tracing_count() == 2


def test_schedules_of_another_loom_get_their_own_trace_and_are_checked():
    loom, _, _ = vector_loom()
    other = td.loom.Loom(named_tensors={"x": np.ones(3), "y": np.ones(3)},
                         named_ops={"add": BinaryLoomOp(VEC3, td.add), "mul": BinaryLoomOp(VEC3, td.multiply),
                                    "sub": BinaryLoomOp(VEC3, td.subtract)})

    @td.function
    def run(lm, schedule):
        return lm.output_tensor(VEC3, schedule)

    run(loom, td.loom.Schedule(serialized(loom, 1.0)))
    np.testing.assert_allclose(run(other, td.loom.Schedule(serialized(other, 1.0))).numpy(), [[2.0, 2.0, 2.0]])
    assert run.experimental_get_tracing_count() == 2
    # The trace type checks the fingerprint it was made for; the loom checks it again when it runs.
    trace_type = td.loom.Schedule(serialized(loom, 1.0)).__tf_tracing_type__(None)
    with pytest.raises(ValueError, match="fingerprint"):
        trace_type.cast(td.loom.Schedule(serialized(other, 1.0)))
    with pytest.raises(td.errors.InvalidArgumentError, match="fingerprint"):
        loom.output_tensor(VEC3, td.loom.Schedule(serialized(other, 1.0)))


def test_schedule_runs_eagerly_and_in_files():
    loom, x, y = vector_loom()
    s = td.loom.Schedule(serialized(loom, 3.0))
    assert s.loom_fingerprint == loom.fingerprint and len(s) == len(s.data)
    np.testing.assert_allclose(loom.output_tensor(VEC3, s).numpy(), [expected(x, y, 3.0)])
    np.testing.assert_allclose(loom.output_tensor(VEC3, [s, s]).numpy(), [expected(x, y, 3.0)] * 2)
    assert td.loom.Schedule(s.data) == s and hash(td.loom.Schedule(s.data)) == hash(s)


@pytest.mark.parametrize("data, error, message", [
    (b"\xff\xff\xff", ValueError, "not a serialized WeaverMessage"),
    (b"", ValueError, "no loom fingerprint"),
    ("text", TypeError, "expected serialized WeaverMessage bytes"),
])
def test_bad_schedule_bytes_are_refused(data, error, message):
    with pytest.raises(error, match=message):
        td.loom.Schedule(data)
