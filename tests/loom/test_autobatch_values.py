"""td.loom.autobatch with values read mid-computation: each example that
reads a value waits for its round, and resumes; checked against the same
program run example by example in NumPy, and its gradients by finite differences."""

import numpy as np

import treadle as td
from autobatch_models import HaltingLoop, ShiftReduceParser, TreeDecoder, finite_difference_gradient


def dense(g):
    return np.asarray(td.convert_to_tensor(g)) if isinstance(g, td.IndexedSlices) else np.asarray(g)


def check_against_numpy(model, examples):
    batched = td.loom.autobatch(model.per_example)
    first, second = batched(examples)
    expected = [model.numpy(x) for x in examples]
    np.testing.assert_allclose(first.numpy(), np.stack([e[0] for e in expected]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(second.numpy(), np.array([e[1] for e in expected]), rtol=1e-10, atol=1e-12)
    return batched, expected


def test_tree_decoder_expands_while_probability_exceeds_half():
    model = TreeDecoder()
    zs = np.random.default_rng(10).normal(0, 1.5, (12, model.H))
    batched, expected = check_against_numpy(model, list(zs))
    counts = [e[1] for e in expected]
    assert min(counts) == 1 and max(counts) > 3  # some examples stop at once, others expand several levels
    assert len(batched.last_stats) >= 2  # the decisions needed several rounds


def test_halting_loop_stops_per_example():
    model = HaltingLoop()
    xs = np.random.default_rng(11).normal(0, 1.0, (9, model.H))
    batched, _ = check_against_numpy(model, list(xs))
    rounds = len(batched.last_stats)
    assert rounds >= 2


def test_shift_reduce_parser_follows_argmax_of_scores():
    model = ShiftReduceParser()
    rng = np.random.default_rng(12)
    sentences = [list(rng.integers(0, 8, size=n)) for n in (2, 5, 3, 6, 1, 4)]
    sentences = [[int(t) for t in s] for s in sentences]
    check_against_numpy(model, sentences)


def test_gradients_through_suspended_examples():
    model = HaltingLoop()
    xs = list(np.random.default_rng(13).normal(0, 1.0, (5, model.H)))
    batched = td.loom.autobatch(model.per_example)
    weights = np.random.default_rng(14).uniform(-1, 1, (len(xs), model.H))
    with td.GradientTape() as tape:
        h, halting = batched(xs)
        loss = td.reduce_sum(h * weights) + td.reduce_sum(halting)
    grads = tape.gradient(loss, [model.vars["A"], model.vars["w"]])

    def numpy_loss():
        out = [model.numpy(x) for x in xs]
        return float(np.sum(np.stack([o[0] for o in out]) * weights) + sum(o[1] for o in out))
    for var, g in zip([model.vars["A"], model.vars["w"]], grads):
        np.testing.assert_allclose(dense(g), finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)


def test_decoder_gradients_match_finite_differences():
    model = TreeDecoder()
    zs = list(np.random.default_rng(15).normal(0, 1.5, (6, model.H)))
    batched = td.loom.autobatch(model.per_example)
    weights = np.random.default_rng(16).uniform(-1, 1, (len(zs), model.H))
    with td.GradientTape() as tape:
        total, _ = batched(zs)
        loss = td.reduce_sum(total * weights)
    variables = [model.vars[k] for k in ("W_l", "W_r")]
    grads = tape.gradient(loss, variables)

    def numpy_loss():
        return float(np.sum(np.stack([model.numpy(z)[0] for z in zs]) * weights))
    for var, g in zip(variables, grads):
        np.testing.assert_allclose(dense(g), finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)


def test_reading_forms():
    """float, int, bool, numpy and np.asarray of a computed value each suspend and resume."""
    w = td.Variable(np.array([1.0, -2.0, 3.0]))

    @td.function
    def scale(x):
        return x * w

    def fn(x):
        v = scale(td.constant(np.asarray(x)))
        total = td.reduce_sum(v)
        seen = (float(total), int(td.argmax(v)), bool(total > 0), v.numpy().tolist(), np.asarray(v).sum())
        return v + seen[0] + seen[1] + float(seen[2]) + seen[4]

    xs = [[1.0, 1.0, 1.0], [0.5, 2.0, -1.0]]
    batched = td.loom.autobatch(fn)
    out = batched(xs)
    assert len(batched.last_stats) == 4  # total, then argmax (recorded after the first read), then total > 0, then the output
    for k, x in enumerate(xs):
        v = np.asarray(x) * w.numpy()
        expected = v + v.sum() + np.argmax(v) + float(v.sum() > 0) + v.sum()
        np.testing.assert_allclose(out.numpy()[k], expected, rtol=1e-12)


def test_reading_variables_and_their_rows_inside_the_function():
    emb = td.Variable(np.arange(12.0).reshape(4, 3))

    def fn(i):
        row = td.gather(emb, i)
        whole = td.convert_to_tensor(emb)
        return row * float(row.numpy()[0] + whole.numpy()[3, 2])

    out = td.loom.autobatch(fn)([1, 3])
    E = emb.numpy()
    np.testing.assert_allclose(out.numpy(), np.stack([E[i] * (E[i, 0] + E[3, 2]) for i in (1, 3)]))
