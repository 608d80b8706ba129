"""td.vectorized_map: every op with a batching rule against td.map_fn and a
per-example run (batched and unbatched operands mixed), eagerly and inside a
td.function; gradients through it against finite differences; function
calls, captured variables, control flow; and the coverage of the rule table."""

import warnings

import numpy as np
import pytest

import treadle as td
from treadle.autodiff import batching_registry

from .gradcheck import fixed_arity
from .vectorize_cases import CASES, NO_CASE, RUNS_PER_EXAMPLE_CASES

BATCH = 3
_SCALES = (1.0, 1.03, 0.97)  # keeps each input in its case's domain (signs, order, ranges)


def _batch_of(array):
    """BATCH examples like `array` (floats scaled a little, others repeated)."""
    a = np.asarray(array)
    if a.dtype == np.float64:
        return np.stack([a * s for s in _SCALES])
    return np.stack([a] * BATCH)


def _modes(n):
    """Which inputs are batched: all, and with several inputs each one alone."""
    modes = [tuple([True] * n)]
    if n > 1:
        modes += [tuple(i == j for j in range(n)) for i in range(n)]
    return modes


def _per_example_fn(fn, inputs, batched):
    shared = [td.constant(a) for a in inputs]

    def one(elems):
        it = iter(elems)
        return fn(*[next(it) if b else s for s, b in zip(shared, batched)])
    return one


def _flat(out):
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _reference(fn, inputs, batched, batches):
    """fn run eagerly on each example, stacked."""
    per_example = []
    for k in range(BATCH):
        args = [td.constant(b[k]) if f else td.constant(a) for a, b, f in zip(inputs, batches, batched)]
        per_example.append(_flat(fn(*args)))
    return [np.stack(parts) for parts in zip(*per_example)]


def _check(got, want):
    got = _flat(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def _run_case(fn, inputs, batched, in_function):
    batches = [_batch_of(a) for a in inputs]
    elems = tuple(td.constant(b) for b, f in zip(batches, batched) if f)
    one = _per_example_fn(fn, inputs, batched)
    want = _reference(fn, inputs, batched, batches)
    if in_function == "unknown batch size":  # as a Loom traces its ops: [None, ...]
        specs = [td.TensorSpec([None] + list(e.shape[1:]), e.dtype) for e in elems]
        vectorized = td.function(fixed_arity(lambda e: td.vectorized_map(one, tuple(e)), len(elems)),
                                 input_signature=specs, autograph=False)
        got = vectorized(*elems)
    elif in_function:
        got = td.function(lambda *e: td.vectorized_map(one, e), autograph=False)(*elems)
    else:
        got = td.vectorized_map(one, elems)
    return got, want, one, elems


def _ids(cases):
    return [f"{op}-{ident}" if ident else op for op, ident, *_ in cases]


def _expanded(cases):
    out = []
    for op, ident, fn, inputs in cases:
        for batched in _modes(len(inputs)):
            out.append(pytest.param(op, fn, inputs, batched,
                                    id=f"{op}-{ident}-{''.join('B' if b else 'u' for b in batched)}"))
    return out


CHECKED = _expanded(CASES)

# Cases whose op has no batched form when these inputs (of the case's
# function) are batched: the segmentation, repeat counts, padding value.
FALLS_BACK_WHEN_BATCHED = {"SegmentSum": 1, "RaggedRowSum": 1, "Repeat": 1, "PadV2": 1}


def _may_fall_back(op_type, batched):
    if batching_registry.per_example_reason(op_type) is not None:
        return True
    i = FALLS_BACK_WHEN_BATCHED.get(op_type)
    return i is not None and i < len(batched) and batched[i]


@pytest.mark.parametrize("op_type,fn,inputs,batched", CHECKED)
def test_eager_against_each_example_and_map_fn(op_type, fn, inputs, batched):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, want, one, elems = _run_case(fn, inputs, batched, in_function=False)
    _check(got, want)
    if not _may_fall_back(op_type, batched):
        assert not [w for w in caught if "once per example" in str(w.message)], \
            [str(w.message) for w in caught]
    signature = tuple(td.TensorSpec(w.shape[1:], td.as_dtype(w.dtype)) for w in want)
    mapped = td.map_fn(one, elems, fn_output_signature=signature if len(want) > 1 or isinstance(
        one(tuple(td.constant(e.numpy()[0]) for e in elems)), (list, tuple)) else signature[0])
    _check(got, [np.asarray(m) for m in _flat(mapped)])


@pytest.mark.parametrize("how", ["static batch size", "unknown batch size"])
@pytest.mark.parametrize("op_type,fn,inputs,batched", [p for p in CHECKED if all(p.values[3])])
def test_in_function(op_type, fn, inputs, batched, how):
    got, want, _, _ = _run_case(fn, inputs, batched, in_function=how)
    _check(got, want)


@pytest.mark.parametrize("op_type,fn,inputs,batched", _expanded(RUNS_PER_EXAMPLE_CASES))
def test_ops_without_a_batched_form_run_per_example_with_a_warning(op_type, fn, inputs, batched):
    with pytest.warns(UserWarning, match=f"op {op_type} .* will run once per example"):
        got, want, _, _ = _run_case(fn, inputs, batched, in_function=False)
    _check(got, want)


def test_without_fallback_an_op_without_a_batched_form_raises():
    with pytest.raises(ValueError, match="Where .*fallback_to_while_loop is False"):
        td.vectorized_map(lambda x: td.where(x > 0.0), td.constant(u33()), fallback_to_while_loop=False)


def u33():
    return np.arange(9.0).reshape(3, 3) - 4.0


# ---------------------------------------------------------------- coverage of the table

def test_every_op_has_a_batching_rule_or_runs_per_example_with_a_reason():
    all_ops = {d["name"] for d in td._core.op_defs()}
    rules = set(batching_registry.registered_rules())
    per_example = batching_registry.per_example_ops()
    assert not rules & set(per_example)
    assert all_ops - rules - set(per_example) == set()
    assert (rules | set(per_example)) - all_ops == set(), "rules for ops that do not exist"
    assert all(reason for reason in per_example.values())


def test_every_op_has_a_case_or_a_reason_why_not():
    covered = {op for op, *_ in CASES} | {op for op, *_ in RUNS_PER_EXAMPLE_CASES}
    all_ops = {d["name"] for d in td._core.op_defs()}
    assert all_ops - covered - set(NO_CASE) == set()


def test_registering_twice_is_refused():
    with pytest.raises(KeyError, match="already registered"):
        batching_registry.RegisterBatchingRule("AddV2")(lambda ctx, op, inputs, batched: inputs)
    with pytest.raises(LookupError, match="No batching rule"):
        batching_registry.get_batching_rule("NoSuchOp")
