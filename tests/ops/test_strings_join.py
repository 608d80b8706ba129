"""td.strings.join, reduce_join and as_string (C++ StringJoin, ReduceJoin, AsString)
against TensorFlow's documented results, eagerly and inside td.function."""

import numpy as np
import pytest

import treadle as td

GRID = [["a", "b"], ["c", "d"]]


def _text(t):
    return np.vectorize(lambda b: b.decode())(t.numpy()).tolist() if t.shape.rank else t.numpy().decode()


@pytest.mark.parametrize("staged", [False, True])
def test_join_elementwise_with_scalars_repeated(staged):
    def join(a, b):
        return td.strings.join([a, "-", b], separator="|")

    fn = td.function(join) if staged else join
    out = fn(td.constant(["x", "y"]), td.constant(["1", "2"]))
    assert _text(out) == ["x|-|1", "y|-|2"]
    assert _text(fn(td.constant("p"), td.constant("q"))) == "p|-|q"
    assert _text(td.strings.join([td.constant(GRID), "!"])) == [["a!", "b!"], ["c!", "d!"]]


def test_join_refuses_mismatched_shapes():
    with pytest.raises(td.errors.InvalidArgumentError, match=r"equal or scalars, got \(2,\) and \(3,\)"):
        td.strings.join([td.constant(["a", "b"]), td.constant(["a", "b", "c"])])
    # Shapes known only when the graph runs: checked when it runs.
    unknown = td.function(lambda a, b: td.strings.join([a, b]),
                          input_signature=[td.TensorSpec(None, td.string), td.TensorSpec(None, td.string)])
    with pytest.raises(td.errors.InvalidArgumentError, match="equal or scalars"):
        unknown(td.constant(["a", "b"]), td.constant(["a", "b", "c"]))
    assert unknown(td.constant(["a", "b"]), td.constant("!")).numpy().tolist() == [b"a!", b"b!"]
    with pytest.raises(ValueError, match="equal or scalars"):
        td.function(lambda a, b: td.strings.join([a, b]))(td.constant(["a"]), td.constant([["a"]]))
    with pytest.raises(ValueError, match="at least one"):
        td.strings.join([])
    with pytest.raises((TypeError, ValueError)):
        td.strings.join([td.constant([1, 2])])


@pytest.mark.filterwarnings("ignore:.*retracing")  # one trace per Python axis, on purpose
@pytest.mark.parametrize("staged", [False, True])
def test_reduce_join_follows_tensorflows_examples(staged):
    def rj(a, axis, **kw):
        return td.strings.reduce_join(a, axis, **kw)

    fn = td.function(rj) if staged else rj
    a = td.constant(GRID)
    assert _text(fn(a, 0)) == ["ac", "bd"]
    assert _text(fn(a, 1)) == ["ab", "cd"]
    assert _text(fn(a, -2)) == ["ac", "bd"]
    assert _text(fn(a, 0, keepdims=True)) == [["ac", "bd"]]
    assert _text(fn(a, 1, keepdims=True)) == [["ab"], ["cd"]]
    assert _text(fn(a, 0, separator=".")) == ["a.c", "b.d"]
    assert _text(fn(a, [0, 1])) == "acbd"
    assert _text(fn(a, [1, 0])) == "abcd"
    assert _text(fn(a, [])) == GRID
    assert _text(fn(a, None)) == "abcd"


def test_reduce_join_static_shapes_and_errors():
    @td.function
    def f(a):
        out = td.strings.reduce_join(a, 1, keepdims=True)
        assert out.shape.as_list() == [2, 1]
        return out

    f(td.constant(GRID))
    assert _text(td.strings.reduce_join(td.constant(np.zeros((2, 0), dtype=str)), 1)) == ["", ""]
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="Invalid reduction dimension"):
        td.strings.reduce_join(td.constant(GRID), 2)
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="Duplicate reduction dimension"):
        td.strings.reduce_join(td.constant(GRID), [0, -2])


def test_strings_have_no_gradient():
    from treadle.autodiff import registry
    assert {"StringJoin", "ReduceJoin", "AsString"} <= registry.non_differentiable_ops()


@pytest.mark.parametrize("staged", [False, True])
def test_as_string_formats_as_tensorflow(staged):
    def fmt(x, **kw):
        return td.strings.as_string(x, **kw)

    fn = td.function(fmt) if staged else fmt
    assert fn(td.constant(3)).numpy() == b"3"
    assert fn(td.constant(-12, td.int64)).numpy() == b"-12"
    assert fn(td.constant(3.14159)).numpy() == b"3.141590"
    assert fn(td.constant(2.5, td.float64)).numpy() == b"2.500000"
    assert fn(td.constant(True)).numpy() == b"true"
    assert fn(td.constant([1.0, 0.1])).numpy().tolist() == [b"1.000000", b"0.100000"]
    assert fn(td.constant(3.14159), precision=2).numpy() == b"3.14"
    assert fn(td.constant(3.14159), scientific=True).numpy() == b"3.141590e+00"
    assert fn(td.constant(3.14159), shortest=True).numpy() == b"3.14159"
    assert fn(td.constant(42), width=5).numpy() == b"   42"
    assert fn(td.constant(42), width=5, fill="0").numpy() == b"00042"
    assert fn(td.constant(float("nan"))).numpy() == b"nan"
    assert fn(td.constant("a")).numpy() == b"a"


def test_as_string_refuses_what_tensorflow_refuses():
    with pytest.raises(td.errors.InvalidArgumentError, match="both scientific and shortest"):
        td.strings.as_string(td.constant(3.0), scientific=True, shortest=True)
    with pytest.raises(td.errors.InvalidArgumentError, match="apply to floats, not int32"):
        td.strings.as_string(td.constant(3), precision=2)
    with pytest.raises(td.errors.InvalidArgumentError, match="one or fewer characters"):
        td.strings.as_string(td.constant(3), fill="ab")
    with pytest.raises(td.errors.InvalidArgumentError, match="Fill argument not supported"):
        td.strings.as_string(td.constant(3), fill="x")
