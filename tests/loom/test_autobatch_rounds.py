"""td.loom.autobatch's rounds and outputs: an output column that mixes
values of the store (computed by one round or another), constants made
inside examples, rows of a variable and outside tensors is stacked in the
examples' order, and its gradients reach every variable; checked against
NumPy. Also the planning helpers: argument codes decoded with and without
groups, and distinct store rows as np.unique finds them."""

import numpy as np

import treadle as td
from treadle.loom.autobatch.rounds import _distinct, decode_arguments
from treadle.loom.autobatch.values import row_code

RNG = np.random.default_rng(23)


def _mixed_model():
    w = td.Variable(RNG.uniform(-1, 1, (3, 3)))
    emb = td.Variable(RNG.uniform(-1, 1, (4, 3)))
    outside = td.constant(RNG.uniform(-1, 1, (1, 3)))

    @td.function
    def cell(s):
        return td.tanh(td.matmul(s, w))

    def fn(example):
        kind, x = example
        s = td.constant(np.array([x]))
        if kind == "constant":
            return s
        if kind == "row":
            return td.reshape(td.gather(emb, int(x[0])), [1, 3])
        if kind == "outside":
            return outside
        h = cell(s)
        if kind == "late":  # read a value, so the output comes from a later round
            h = cell(h) if float(td.reduce_sum(h)) > -10 else h
        return h
    return w, emb, outside, fn


def _numpy(example, W, E, O):
    kind, x = example
    s = np.array([x])
    if kind == "constant":
        return s
    if kind == "row":
        return E[int(x[0])][None]
    if kind == "outside":
        return O
    h = np.tanh(s @ W)
    return np.tanh(h @ W) if kind == "late" else h


def test_a_mixed_output_column_is_stacked_in_order_with_gradients():
    w, emb, outside, fn = _mixed_model()
    kinds = ["cell", "constant", "late", "row", "cell", "outside", "constant", "late", "row"]
    examples = [(k, np.array([i % 4, 0.5 - i / 10, i / 7])) for i, k in enumerate(kinds)]
    batched = td.loom.autobatch(fn)
    weights = RNG.uniform(-1, 1, (len(examples), 1, 3))
    with td.GradientTape() as tape:
        out = batched(examples)
        loss = td.reduce_sum(out * weights)
    g_w, g_emb = tape.gradient(loss, [w, emb])
    W, E, O = w.numpy(), emb.numpy(), outside.numpy()
    expected = np.stack([_numpy(e, W, E, O) for e in examples])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    assert len(batched.last_stats) == 2  # the "late" examples' output is a second round's

    def numeric(var, value):
        grad = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[idx] = 1e-6
            args = {"W": W, "E": E}
            args[var] = value + step
            hi = np.sum(np.stack([_numpy(e, args["W"], args["E"], O) for e in examples]) * weights)
            args[var] = value - step
            lo = np.sum(np.stack([_numpy(e, args["W"], args["E"], O) for e in examples]) * weights)
            grad[idx] = (hi - lo) / 2e-6
        return grad
    np.testing.assert_allclose(np.asarray(g_w), numeric("W", W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(td.convert_to_tensor(g_emb)), numeric("E", E), rtol=1e-6, atol=1e-8)


def test_a_recordings_mixed_output_column_runs_in_a_function_with_gradients():
    # A recording's column of loom outputs and other values (constants, rows
    # of a variable, outside tensors) reaches the function as the loom's rows,
    # the others stacked and each example's place.
    w, emb, outside, fn = _mixed_model()
    kinds = ["constant", "cell", "row", "outside", "cell", "constant"]
    examples = [(k, np.array([i % 4, 0.5 - i / 10, i / 7])) for i, k in enumerate(kinds)]
    batched = td.loom.autobatch(fn)
    weights = td.constant(RNG.uniform(-1, 1, (len(examples), 1, 3)))

    @td.function
    def step(recording):
        with td.GradientTape() as tape:
            out = recording.outputs()
            loss = td.reduce_sum(out * weights)
        return out, tape.gradient(loss, [w, emb])

    out, (g_w, g_emb) = step(batched.record(examples))
    W, E, O = w.numpy(), emb.numpy(), outside.numpy()
    np.testing.assert_allclose(out.numpy(), np.stack([_numpy(e, W, E, O) for e in examples]), rtol=1e-12)
    with td.GradientTape() as tape:  # the same column computed eagerly by the call itself
        loss = td.reduce_sum(batched(examples) * weights)
    e_w, e_emb = tape.gradient(loss, [w, emb])
    np.testing.assert_allclose(np.asarray(g_w), np.asarray(e_w), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(td.convert_to_tensor(g_emb)), np.asarray(td.convert_to_tensor(e_emb)),
                               rtol=1e-12)


def test_distinct_rows_agree_with_numpy_unique_at_every_size():
    for n in (1, 2, 7, 47, 48, 49, 300):
        values = RNG.integers(0, max(2, n // 2), n).astype(np.int64)
        distinct, place = _distinct(values)
        expected, inverse = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(distinct, expected)
        np.testing.assert_array_equal(np.asarray(place), inverse)


def test_argument_codes_decode_with_and_without_groups():
    # node 0 reads store row 5; node 1 reads output 1 of node 0 and store row 70000; node 2 reads row 3 of group 2
    codes = np.array([row_code(5), (0 << 8) | 1, row_code(70000), row_code(3, 2)], np.int64)
    splits = np.array([0, 1, 3, 4], np.int64)
    arg_input, source, value, output, group = decode_arguments(codes, splits)
    np.testing.assert_array_equal(arg_input, [0, 0, 1, 0])
    np.testing.assert_array_equal(source, [1, 0, 1, 1])
    np.testing.assert_array_equal(value, [5, 0, 70000, 3])
    np.testing.assert_array_equal(output, [0, 1, 0, 0])
    np.testing.assert_array_equal(group, [-1, -1, -1, 2])
    without = decode_arguments(codes[:3], np.array([0, 1, 3], np.int64), with_groups=False)
    assert without[4] is None
    for a, b in zip(without[:4], decode_arguments(codes[:3], np.array([0, 1, 3], np.int64))[:4]):
        np.testing.assert_array_equal(a, b)
