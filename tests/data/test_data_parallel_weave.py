"""td.data.experimental.parallel_weave: schedules woven in worker processes."""

import pickle

import numpy as np
import pytest

import treadle as td
import weave_helpers
from test_data_schedules import VEC, expected, make_loom

parallel_weave = td.data.experimental.parallel_weave


@pytest.fixture(scope="module")
def loom():
    return make_loom()


def test_ordered_schedules_match_local_weaving(loom):
    ds = parallel_weave(range(23), weave_helpers.weave_vector, loom, processes=2, chunk_size=3)
    assert ds.element_spec == td.TensorSpec([], td.string) and len(ds) == 23
    messages = [m.numpy() for m in ds]
    local = []
    for i in range(23):
        w = loom.make_weaver()
        weave_helpers.weave_vector(w, i)
        local.append(w.serialize())
    assert messages == local  # the same bytes as weaving here
    outs = np.concatenate([loom.output_tensor(VEC, b).numpy() for b in ds.batch(5)])
    np.testing.assert_allclose(outs, expected(range(23)))
    ds.close()


def test_unordered_and_extra_values_and_several_examples_per_schedule(loom):
    ds = parallel_weave(range(20), weave_helpers.weave_vector, loom, processes=2, ordered=False, chunk_size=2,
                        extra_signature=td.TensorSpec([], td.int64))
    pairs = [(s, int(i)) for s, i in ds]
    assert sorted(i for _, i in pairs) == list(range(20))
    for schedule, i in pairs:
        np.testing.assert_allclose(loom.output_tensor(VEC, schedule).numpy(), expected([i]))
    ds.close()
    grouped = parallel_weave(range(7), weave_helpers.weave_vector, loom, processes=1, examples_per_schedule=3)
    outs = [loom.output_tensor(VEC, s).numpy() for s in grouped]
    assert [len(o) for o in outs] == [3, 3, 1] and len(grouped) == 3
    np.testing.assert_allclose(np.concatenate(outs), expected(range(7)))
    grouped.close()


def test_examples_from_a_dataset_and_workers_are_processes(loom):
    ds = parallel_weave(td.data.Dataset.range(8), weave_helpers.weave_with_pid, loom, processes=2, chunk_size=1,
                        extra_signature=td.TensorSpec([], td.int64))
    pids = {int(pid) for _, pid in ds}
    import os
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    ds.close()


def test_worker_error_carries_its_traceback(loom):
    ds = parallel_weave(range(10), weave_helpers.weave_fails_on_5, loom, processes=2, chunk_size=2)
    got = []
    with pytest.raises(td.data.experimental.WeaveError) as info:
        for s in ds:
            got.append(s)
    message = str(info.value)
    assert "example 5" in message and "KeyError" in message and "no tree for example 5" in message
    assert "weave_helpers.py" in message and "Worker traceback" in message
    assert len(got) == 4  # the chunks before the failing one arrived, in order
    ds.close()


def test_dead_worker_is_reported_not_waited_on(loom):
    ds = parallel_weave(range(10), weave_helpers.weave_dies_on_5, loom, processes=2, chunk_size=2)
    with pytest.raises(td.data.experimental.WorkerDiedError, match="died"):
        list(ds)
    # the next iteration gets a fresh pool (and dies again at the same example)
    with pytest.raises(td.data.experimental.WorkerDiedError):
        list(ds)
    ds.close()


def test_schedule_for_another_loom_is_refused(loom):
    other = td.loom.Loom(named_tensors={"x": td.Variable(np.zeros(3))}, named_ops={},
                         extra_type_shapes=[td.loom.TypeShape("float32", (2,))], dry_run=True)
    with pytest.raises(TypeError, match="Loom"):
        parallel_weave(range(3), weave_helpers.weave_vector, "not a loom")
    from treadle.data import weaving
    result = ("ok", [(other.make_weaver().serialize(), None)])
    with pytest.raises(td.errors.InvalidArgumentError, match="another loom"):
        weaving.check_result(result, loom.fingerprint, 0, 1)


def test_looms_and_weavers_pickle_as_weaving_descriptions(loom):
    with pytest.raises(TypeError, match="weaving_loom"):
        pickle.dumps(loom)
    copy = pickle.loads(pickle.dumps(loom.weaving_loom()))
    assert copy.fingerprint == loom.fingerprint
    w = loom.make_weaver()
    weave_helpers.weave_vector(w, 4)
    w2 = pickle.loads(pickle.dumps(w))
    assert w2.serialize() == w.serialize()
    weave_helpers.weave_vector(w2, 5)  # weaving goes on in the copy
    np.testing.assert_allclose(loom.output_tensor(VEC, w2.serialize()).numpy(), expected([4, 5]))
