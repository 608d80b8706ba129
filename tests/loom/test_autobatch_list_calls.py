"""td.loom.autobatch's recording path for cells called with lists of
per-example values (a child-sum TreeLSTM's children): a call whose lists'
lengths and element signatures were seen is recorded from a key of
signature numbers (_record.CallHook). It must give the values and gradients of
the general path, keep lists of different lengths (and lists apart from
tuples) on ops of their own, and still refuse another example's value."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import ChildSumTreeLSTM, finite_difference_gradient
from treadle.loom.autobatch import CrossExampleError
from treadle.loom.autobatch._record import list_call_key
from treadle.loom.autobatch.recording import Recorder

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")

# Repeated shapes, so that most calls take the cached path: nodes of 0, 1, 2 and 3 children.
TREES = [(1, [(2, []), (3, []), (4, [(5, [])])]), (0, []), (2, [(1, [(0, []), (3, [])])]),
         (5, [(4, [(3, []), (2, []), (1, [])]), (0, [(1, [])])])]


def dense(g):
    return td.convert_to_tensor(g).numpy() if isinstance(g, td.IndexedSlices) else g.numpy()


def test_cached_list_calls_give_the_recursions_values_and_gradients():
    model = ChildSumTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    batched(TREES)  # fills the cache
    cached = dict(batched._registry.list_calls)
    assert sorted(len(key[2][1]) for key in cached) == [0, 1, 2, 3]  # one key per number of children
    weights = np.random.default_rng(3).uniform(-1, 1, (len(TREES), model.H))
    with td.GradientTape() as tape:
        out = batched(TREES)
        loss = td.reduce_sum(out * weights)
    assert batched._registry.list_calls == cached and len(batched._registry.ops) == 4
    np.testing.assert_allclose(out.numpy(), np.stack([model.numpy_root_h(t) for t in TREES]), rtol=1e-10,
                               atol=1e-12)
    variables = list(model.vars.values())

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy_root_h(t) for t in TREES]) * weights))
    for var, g in zip(variables, tape.gradient(loss, variables)):
        np.testing.assert_allclose(dense(g), finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)


def test_lists_and_tuples_of_one_length_are_ops_of_their_own():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))

    @td.function
    def total(x, parts):
        return x + (td.add_n(list(parts)) if type(parts) is list else 10.0 * td.add_n(list(parts)))

    def fn(example):
        kind, rows = example
        parts = [td.gather(emb, r) for r in rows]
        return total(td.gather(emb, 0), parts if kind == "list" else tuple(parts))
    examples = [("list", [1, 2]), ("tuple", [3, 4]), ("list", [5, 1]), ("tuple", [2, 2])]
    batched = td.loom.autobatch(fn)
    out = batched(examples).numpy()
    out_again = batched(examples).numpy()
    e = np.arange(12.0).reshape(6, 2)
    expected = [e[0] + (1.0 if kind == "list" else 10.0) * e[rows].sum(0) for kind, rows in examples]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    np.testing.assert_allclose(out_again, expected, rtol=1e-12)
    assert len(batched._registry.list_calls) == 2 and len(batched._registry.ops) == 2


def test_a_list_with_a_python_number_takes_the_general_path():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))

    @td.function
    def scaled_sum(parts):
        return parts[0] * parts[1] + parts[2]

    def fn(row):
        return scaled_sum([td.gather(emb, row), 3.0, td.gather(emb, 5)])
    batched = td.loom.autobatch(fn)
    out = batched([1, 2, 4]).numpy()
    e = np.arange(12.0).reshape(6, 2)
    np.testing.assert_allclose(out, [3.0 * e[r] + e[5] for r in (1, 2, 4)], rtol=1e-12)
    assert not batched._registry.list_calls


def test_a_cached_list_call_still_refuses_another_examples_value():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))

    @td.function
    def total(parts):
        return td.add_n(parts)
    kept = []

    def fn(row):
        v = td.gather(emb, row) * 1.0
        if kept:
            return total([v, kept[0]])  # a value of example 0 in example 1's list
        kept.append(v)
        return total([v, v])
    with pytest.raises(CrossExampleError, match="example 0 is used by example 1"):
        td.loom.autobatch(fn)([0, 1])


def test_cached_list_calls_are_recorded_without_the_general_path(monkeypatch):
    model = ChildSumTreeLSTM()
    batched = td.loom.autobatch(model.root_h)
    first = batched(TREES).numpy()
    general_calls = []
    general = Recorder.call

    def counting(self, function, args, kwargs):
        general_calls.append(function)
        return general(self, function, args, kwargs)
    monkeypatch.setattr(Recorder, "call", counting)
    again = batched(TREES).numpy()
    assert general_calls == []  # every cell call (0 to 3 children) found its cached entry in C
    np.testing.assert_array_equal(again, first)


def test_list_call_keys_tell_lengths_lists_and_tuples_apart():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))
    keys = {}

    def fn(example):
        a, b = td.gather(emb, 0), td.gather(emb, 1)
        keys["list"] = list_call_key(fn, (a, [a, b]))
        keys["tuple"] = list_call_key(fn, (a, (a, b)))
        keys["longer"] = list_call_key(fn, (a, [a, b, b]))
        keys["number"] = list_call_key(fn, (a, [a, 2.0]))
        keys["variable"] = list_call_key(fn, (emb.read_value(), [a]))
        return a
    td.loom.autobatch(fn)([0])
    (key_list, flat_list), (key_tuple, flat_tuple) = keys["list"], keys["tuple"]
    assert key_list != key_tuple != keys["longer"][0] and key_list[0] is fn
    assert len(flat_list) == 3 and all(x is y for x, y in zip(flat_list, flat_tuple))
    assert keys["number"] is None and keys["variable"] is None


def test_more_list_lengths_in_turn_than_the_recent_keys_kept_and_very_long_lists():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))

    @td.function
    def weighted(x, parts):
        return x + td.add_n([(k + 1.0) * p for k, p in enumerate(parts)])

    def fn(example):
        rows = example
        return weighted(td.gather(emb, 0), [td.gather(emb, r) for r in rows])
    # lengths 1 to 6 in turn (more than the recent keys compared in place), then 300 (more
    # flat arguments than are matched in place)
    examples = [[(k + j) % 6 for j in range(length)] for k in range(3) for length in range(1, 7)]
    examples += [[j % 6 for j in range(300)], [(j + 1) % 6 for j in range(300)]]
    batched = td.loom.autobatch(fn)
    e = np.arange(12.0).reshape(6, 2)
    expected = [e[0] + sum((k + 1.0) * e[r] for k, r in enumerate(rows)) for rows in examples]
    for _ in range(2):  # the second call records every call from the caches
        np.testing.assert_allclose(batched(examples).numpy(), expected, rtol=1e-12)
    assert len(batched._registry.list_calls) == 7 and len(batched._registry.ops) == 7


def test_a_list_call_with_more_positional_values_than_are_matched_in_place():
    emb = td.Variable(np.arange(12.0).reshape(6, 2))

    @td.function
    def total(*parts):
        return td.add_n(list(parts[:-1])) + td.add_n(parts[-1])

    def fn(row):
        v = td.gather(emb, row)
        return total(*([v] * 300), [v, v])  # 300 values, then a list: 302 flat arguments
    batched = td.loom.autobatch(fn)
    for _ in range(2):
        np.testing.assert_allclose(batched([1, 4]).numpy(), [302 * np.arange(12.0).reshape(6, 2)[r] for r in (1, 4)],
                                   rtol=1e-12)
