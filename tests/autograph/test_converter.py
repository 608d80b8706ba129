"""The converter: what is converted (user code, recursively) and what is not
(library code, do_not_convert, unreadable source), caching, and the kinds of
callables it accepts."""

import functools
import inspect
import warnings

import numpy as np
import pytest

import treadle as td
from treadle.autograph import converter
from treadle.autograph.converter import converted_call


def _is_converted(fn):
    from treadle.autograph.operators.errors import CONVERTED_CODE
    return fn.__code__ in CONVERTED_CODE


def plain(x):
    if x > 0:
        return 1
    return 2


def test_convert_returns_a_function_with_the_same_signature_and_metadata():
    conv = converter.convert(plain)
    assert conv is not plain and _is_converted(conv)
    assert inspect.signature(conv) == inspect.signature(plain)
    assert conv.__name__ == "plain" and conv.__qualname__ == plain.__qualname__
    assert conv.__module__ == plain.__module__


def with_defaults(a, b=2, *args, c=3, **kwargs):
    """doc"""
    if a:
        return a + b + c + len(args) + len(kwargs)
    return 0


def test_defaults_keyword_defaults_and_docstring_are_kept():
    conv = converter.convert(with_defaults)
    assert conv(1) == 6 and conv(1, 1, 9, 9, c=0, z=1) == 5
    assert conv.__doc__ == "doc" and conv.__kwdefaults__ == {"c": 3}


def test_conversion_is_cached_per_function():
    assert converter.convert(plain) is converter.convert(plain)


def make_closure(k):
    def inner(x):
        if x > k:
            return x
        return k
    return inner


def test_closures_share_one_conversion_of_their_code_and_keep_their_cells():
    a, b = make_closure(1), make_closure(10)
    ca, cb = converter.convert(a), converter.convert(b)
    assert ca.__code__ is cb.__code__  # transformed once per code object
    assert ca(5) == 5 and cb(5) == 10


def test_closure_cells_are_shared_with_the_original():
    counter = 0

    def bump(n):
        nonlocal counter
        for _ in range(n):
            counter += 1
        return counter

    conv = converter.convert(bump)
    conv(3)
    assert counter == 3
    counter = 10
    assert conv(1) == 11


def test_library_functions_are_not_converted():
    assert converter.convert(np.sum) is np.sum
    assert converter.convert(inspect.getsource) is inspect.getsource
    assert converter.convert(td.cond) is td.cond


def test_do_not_convert():
    @td.autograph.experimental.do_not_convert
    def f(x):
        return x

    assert converter.convert(f) is f
    assert converted_call(f) is f
    assert f(3) == 3 and f.__name__ == "f"


def test_do_not_convert_with_parentheses():
    @td.autograph.experimental.do_not_convert()
    def g(x):
        return x + 1

    assert g(1) == 2 and converter.convert(g) is g


def calls_helper(x):
    return helper_with_control_flow(x)


def helper_with_control_flow(x):
    while x < 10:
        x = x * 2
    return x


def test_called_user_functions_are_converted_recursively():
    assert _is_converted(converted_call(helper_with_control_flow))
    f = td.function(calls_helper)
    assert {"While", "StatelessWhile"} & set([op.type for op in f.get_concrete_function(td.TensorSpec([], td.int32)).graph.operations])
    assert f(td.constant(3)).numpy() == 12


def test_functions_defined_in_converted_code_are_not_converted_again():
    def outer():
        def inner(x):
            return x
        return inner

    inner = converter.convert(outer)()
    assert _is_converted(inner) and converted_call(inner) is inner


def test_unreadable_lambda_runs_unconverted_with_a_warning():
    namespace = {}
    exec("f = lambda x: x * 2", namespace)
    f = namespace["f"]
    with pytest.warns(td.autograph.AutoGraphWarning, match="could not transform <lambda> and will run it as-is"):
        conv = converter.convert(f)
    assert conv is f
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert converter.convert(f) is f  # warned once: the result is cached


def test_builtins_run_unconverted_with_a_warning():
    with pytest.warns(td.autograph.AutoGraphWarning, match="could not transform len"):
        assert converter.convert(len) is len
    with pytest.warns(td.autograph.AutoGraphWarning):
        assert td.function(len)([1, 2, 3]) == 3


def test_lambdas_in_source_files_are_converted():
    f = lambda x: x if x > 0 else -x  # noqa: E731
    conv = converter.convert(f)
    assert _is_converted(conv) and conv(-3) == 3
    assert td.function(f)(td.constant(-4)).numpy() == 4


def test_lambdas_on_one_line_are_told_apart_by_column():
    pair = [lambda x: x + 1, lambda x: x + 2]
    assert converter.convert(pair[0])(0) == 1
    assert converter.convert(pair[1])(0) == 2


def test_multiline_lambda_argument():
    f = td.function(
        lambda a:
            a * 2 if a > 1 else a)
    assert f(td.constant(3)).numpy() == 6


class Model:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        if x > 0:
            return x * self.scale
        return x

    def __call__(self, x):
        while x < 100:
            x = x * self.scale
        return x


def test_methods_and_callable_objects():
    m = Model(3)
    assert td.function(m.apply)(td.constant(2)).numpy() == 6
    assert td.function(m)(td.constant(2)).numpy() == 162
    bound = converter.convert(m.apply)
    assert bound.__self__ is m and _is_converted(bound.__func__)
    assert converted_call(m.apply).__self__ is m


def test_partials():
    p = functools.partial(helper_with_control_flow)
    conv = converter.convert(p)
    assert isinstance(conv, functools.partial) and _is_converted(conv.func)
    assert conv(3) == 12


def test_classes_are_called_as_they_are():
    assert converted_call(Model) is Model


def test_builtins_in_converted_code_get_tensor_aware_versions():
    from treadle.autograph.operators import builtins as ag_builtins
    assert converted_call(range) is ag_builtins.range_
    assert converted_call(len) is ag_builtins.len_
    assert converted_call(print) is print
    assert converted_call(sorted) is sorted
    assert list(ag_builtins.range_(3)) == [0, 1, 2]


def generator(n):
    for i in range(n):
        if i % 2:
            yield i


def test_generators_are_not_converted():
    assert converter.convert(generator) is generator
    assert list(generator(5)) == [1, 3]


def test_td_function_with_autograph_false_does_not_convert():
    f = td.function(plain, autograph=False)
    assert f(1) == 1  # Python values: works without conversion
    with pytest.raises(TypeError):
        f(td.constant(1))


def test_to_code_of_an_unconvertible_function():
    namespace = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(ValueError, match="could not convert f"):
        td.autograph.to_code(namespace["f"])
    with pytest.raises(TypeError, match="expects a Python function"):
        td.autograph.to_code(len)


def test_to_graph_returns_the_converted_function():
    conv = td.autograph.to_graph(plain)
    assert _is_converted(conv) and conv(1) == 1
    assert td.autograph.to_graph(td.function(plain)) is conv
