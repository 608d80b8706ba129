"""Calls in converted code: `f(x)` becomes `ag__.converted_call(f)(x)`, and
converted_call gives the callable to use: the converted version of a user
function or method, a tensor-aware stand-in for a few builtins, or the
callee itself (library code, classes, td.functions)."""

import functools
import types

from treadle.autograph.operators.builtins import OVERRIDES
from treadle.autograph.operators.errors import CONVERTED_CODE

_FunctionType = types.FunctionType
_MethodType = types.MethodType
_converter = None


def _convert(fn):
    global _converter
    if _converter is None:
        from treadle.autograph import converter
        _converter = converter
    return _converter.converted_function(fn)


def converted_call(f):
    t = type(f)
    if t is _FunctionType:
        if f.__code__ in CONVERTED_CODE:
            return f  # defined inside converted code: converted already
        return _convert(f)
    if t is _MethodType:
        func = f.__func__
        if type(func) is not _FunctionType or func.__code__ in CONVERTED_CODE:
            return f
        conv = _convert(func)
        return f if conv is func else _MethodType(conv, f.__self__)
    if t is types.BuiltinFunctionType or t is type:
        try:
            return OVERRIDES.get(f, f)
        except TypeError:
            return f
    if t is functools.partial:
        inner = converted_call(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if isinstance(f, type):
        return f  # classes are called as they are
    call = getattr(t, "__call__", None)
    if type(call) is _FunctionType and call.__code__ not in CONVERTED_CODE:
        conv = _convert(call)
        return f if conv is call else _MethodType(conv, f)
    return f
