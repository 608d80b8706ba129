"""td.name_scope as TensorFlow 2's tf.name_scope: the scope's name eagerly,
prefixed op names in a traced graph (unique per graph), and return, break
and continue inside `with` blocks of converted code."""

import pytest

import treadle as td


def test_eager_scopes_nest_and_return_their_names():
    with td.name_scope("outer") as outer:
        assert outer == "outer/"
        with td.name_scope("inner") as inner:
            assert inner == "outer/inner/"
        with td.name_scope("inner") as again:
            assert again == "outer/inner/"  # eager scopes are not made unique
        with td.name_scope("abs/") as absolute:
            assert absolute == "abs/"
    with td.name_scope("") as empty:
        assert empty == ""
    with pytest.raises(ValueError, match="must be a string"):
        td.name_scope(3)


def test_ops_in_a_traced_graph_are_named_by_their_scope():
    @td.function
    def f(x):
        with td.name_scope("block") as first:
            y = x * 2.0
            with td.name_scope("inner") as inner:
                y = y + 1.0
        with td.name_scope("block") as second:
            z = y * 3.0
        with td.name_scope(first) as reopened:
            z = z - 1.0
        return z, first, inner, second, reopened

    z, *names = f(td.constant(1.0))
    assert z.numpy() == 8.0
    assert [n.numpy() for n in names] == [b"block/", b"block/inner/", b"block_1/", b"block/"]
    op_names = [op.name for op in f.get_concrete_function(td.constant(1.0)).graph.operations]
    scoped = [n for n in op_names if n.startswith(("block", "block_1"))]
    assert len(scoped) >= 4
    with pytest.raises(ValueError, match="not a valid scope name"):
        td.function(lambda x: td.name_scope("bad name!").__enter__())(td.constant(1.0))


def early_return_in_with(x):
    with td.name_scope(""):
        if x > 0:
            if x < 5:
                with td.name_scope("inner"):
                    return x
            else:
                return x * x
        else:
            return x * x * x


def default_return_in_with(x):
    with td.name_scope("scope"):
        if x > 0:
            return 1
        return 0


def break_and_continue_in_with(n):
    total = 0
    i = 0
    while i < n:
        i += 1
        with td.name_scope("body"):
            if i % 2 == 0:
                continue
            if i > 7:
                break
            total += i
    return total


STAGED = {fn: td.function(fn) for fn in (early_return_in_with, default_return_in_with)}


@pytest.mark.filterwarnings("ignore:.*retracing")  # Python ints: one trace per value, on purpose
@pytest.mark.parametrize("x", [-2, 0, 3, 5])
@pytest.mark.parametrize("fn", list(STAGED))
def test_return_inside_with_blocks_matches_python(fn, x):
    expected = fn(x)
    assert STAGED[fn](td.constant(x)).numpy() == expected
    assert int(STAGED[fn](x)) == expected


@pytest.mark.parametrize("n", [0, 4, 12])
def test_break_and_continue_inside_with_blocks_match_python(n):
    expected = break_and_continue_in_with(n)
    assert td.function(break_and_continue_in_with)(td.constant(n)).numpy() == expected
