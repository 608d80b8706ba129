"""AutoGraph's optional features (td.autograph.experimental.Feature), turned
on by td.function(experimental_autograph_options=...) and to_graph: assert
on tensors (an Assert op raising InvalidArgumentError when the graph runs),
print of tensors (at run time, as Python prints their NumPy values), ops
named after the converted function (NAME_SCOPES). Without the feature each
keeps TensorFlow's default behaviour. Chained comparisons of tensors (the
logical and of the pairs) are converted whatever the features, as in
TensorFlow 2.21."""

import numpy as np
import pytest

import treadle as td

Feature = td.autograph.experimental.Feature


def positive(x):
    assert x > 0
    return x


def positive_with_message(x):
    assert x > 0, ("x must be positive, got", x)
    return x * 2


def test_assert_on_a_tensor_raises_when_the_graph_runs():
    f = td.function(positive, experimental_autograph_options=Feature.ASSERT_STATEMENTS)
    assert f(td.constant(3)).numpy() == 3
    with pytest.raises(td.errors.InvalidArgumentError, match="Assertion error"):
        f(td.constant(0))
    # One trace serves both: the check runs in the graph, not while tracing.
    assert f.experimental_get_tracing_count() == 1
    g = td.function(positive_with_message, experimental_autograph_options=[Feature.ASSERT_STATEMENTS])
    with pytest.raises(td.errors.InvalidArgumentError, match="x must be positive, got -4"):
        g(td.constant(-4))


def test_assert_on_python_values_is_pythons_assert():
    f = td.function(positive, experimental_autograph_options=Feature.ALL)
    assert f(1) == 1
    with pytest.raises(AssertionError, match="Assertion error"):
        f(0)
    with pytest.raises(AssertionError):
        positive(td.constant(0))  # eagerly: Python's assert on an eager tensor


def test_without_the_feature_assert_on_a_tensor_is_refused_while_tracing():
    with pytest.raises(Exception, match="(?i)tensor"):
        td.function(positive)(td.constant(1))


def print_values(x, y):
    print("x is", x, {"k": "v"})
    if x > 0:
        print(y, sep="")


@pytest.mark.parametrize("x", [0, 3])
def test_print_of_tensors_runs_with_the_graph(capsys, x):
    f = td.function(print_values, experimental_autograph_options=Feature.BUILTIN_FUNCTIONS)
    y = np.array([1, 2, 3])
    print_values(x, y)
    expected = capsys.readouterr().out
    f(td.constant(x), td.constant(y))
    assert capsys.readouterr().out == expected
    f(td.constant(x), td.constant(y))  # no retrace: printed again by the graph
    assert capsys.readouterr().out == expected


def test_print_of_strings_decodes_them(capsys):
    f = td.function(lambda s: print(s), experimental_autograph_options=Feature.BUILTIN_FUNCTIONS)
    f(td.constant("héllo"))
    assert capsys.readouterr().out == "héllo\n"


def test_without_the_feature_print_runs_once_while_tracing(capsys):
    f = td.function(lambda x: print("traced", x is not None))
    f(td.constant(1))
    f(td.constant(2))
    assert capsys.readouterr().out == "traced True\n"


def chained_equal(x, y, z):
    return x == y == z


def chained_less(x, y, z):
    return x < y <= z


CHAINS = {fn: td.function(fn, experimental_autograph_options=Feature.EQUALITY_OPERATORS)
          for fn in (chained_equal, chained_less)}
PLAIN_CHAINS = {fn: td.function(fn) for fn in (chained_equal, chained_less)}


@pytest.mark.filterwarnings("ignore:.*retracing")  # Python ints: one trace per value, on purpose
@pytest.mark.parametrize("values", [(1, 1, 2), (1, 1, 1), (2, 1, 1), (0, 1, 1), (0, 2, 1)])
def test_chained_comparisons_of_tensors(values):
    tensors = [td.constant(v) for v in values]
    for fn in CHAINS:
        eager = bool(fn(*tensors))
        for f in (CHAINS[fn], PLAIN_CHAINS[fn]):
            assert bool(f(*tensors).numpy()) == eager
            assert f(*values) == fn(*values)


def test_chained_comparisons_in_to_code_and_to_graph():
    code = td.autograph.to_code(chained_equal)
    assert "ag__.and_(lambda: x == y, lambda: y == z)" in code
    converted = td.autograph.to_graph(chained_less, experimental_optional_features=[Feature.EQUALITY_OPERATORS])
    assert td.function(converted)(td.constant(1), td.constant(2), td.constant(2)).numpy()


def helper_with_assert(x):
    assert x < 10, "too big"
    return x + 1


def test_features_reach_the_functions_a_converted_function_calls():
    f = td.function(lambda x: helper_with_assert(x) * 2,
                    experimental_autograph_options=Feature.ASSERT_STATEMENTS)
    assert f(td.constant(1)).numpy() == 4
    with pytest.raises(td.errors.InvalidArgumentError, match="too big"):
        f(td.constant(12))
    # The same helper, converted without the feature, keeps Python's assert.
    with pytest.raises(Exception, match="(?i)tensor"):
        td.function(lambda x: helper_with_assert(x))(td.constant(1))


def scaled(x):
    return x * 2.0 + 1.0


def test_name_scopes_name_ops_after_their_function():
    f = td.function(lambda x: scaled(x) - 1.0, experimental_autograph_options=Feature.NAME_SCOPES)
    graph = f.get_concrete_function(td.constant(1.0)).graph
    assert f(td.constant(1.0)).numpy() == 2.0
    names = [op.name for op in graph.operations]
    assert any(n.startswith("lambda_scaled_") for n in names), names  # the lambda's scope, then scaled's
    plain = td.function(lambda x: scaled(x) - 1.0).get_concrete_function(td.constant(1.0)).graph
    assert not any("scaled" in op.name for op in plain.operations)


def test_unimplemented_and_invalid_features_are_refused():
    with pytest.raises(NotImplementedError, match="LISTS is not implemented"):
        td.function(positive, experimental_autograph_options=Feature.LISTS)
    with pytest.raises(TypeError, match="Feature values"):
        td.function(positive, experimental_autograph_options="ASSERT_STATEMENTS")
    td.function(positive, experimental_autograph_options=(Feature.AUTO_CONTROL_DEPS,))


def test_assert_inside_a_graph_loop_runs_each_iteration():
    @td.function(experimental_autograph_options=Feature.ASSERT_STATEMENTS)
    def bounded_sum(n):
        i = 0
        s = 0
        while i < n:
            assert s < 10, ("s too big", s)
            s += i
            i += 1
        return s

    assert bounded_sum(td.constant(4)).numpy() == 6
    with pytest.raises(td.errors.InvalidArgumentError, match="s too big 10"):
        bounded_sum(td.constant(10))


def test_a_td_function_keeps_its_own_features_inside_another():
    inner = td.function(positive)  # no features: Python's assert, refused on a tensor

    @td.function(experimental_autograph_options=Feature.ASSERT_STATEMENTS)
    def outer(x):
        return inner(x)

    with pytest.raises(Exception, match="(?i)tensor"):
        outer(td.constant(1))
    checked = td.function(positive, experimental_autograph_options=Feature.ASSERT_STATEMENTS)
    assert td.function(lambda x: checked(x))(td.constant(2)).numpy() == 2
    with pytest.raises(td.errors.InvalidArgumentError, match="Assertion error"):
        td.function(lambda x: checked(x))(td.constant(-2))


def test_print_replaced_by_a_library_wrapper_still_runs_with_the_graph(capsys, monkeypatch):
    # Ray, for one, replaces builtins.print with a Python wrapper and leaves it
    # there after ray.shutdown(); print of a tensor must still be staged.
    import builtins
    original = builtins.print

    @td.autograph.experimental.do_not_convert  # as library code is: run as it is
    def wrapper(*args, **kwargs):
        return original(*args, **kwargs)
    monkeypatch.setattr(builtins, "print", wrapper)
    f = td.function(print_values, experimental_autograph_options=Feature.BUILTIN_FUNCTIONS)
    y = np.array([1, 2, 3])
    f(td.constant(3), td.constant(y))
    assert capsys.readouterr().out == "x is 3 {'k': 'v'}\n[1 2 3]\n"
    f(td.constant(3), td.constant(y))
    assert capsys.readouterr().out == "x is 3 {'k': 'v'}\n[1 2 3]\n"
