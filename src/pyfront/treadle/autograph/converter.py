"""convert(fn): the function with its Python control flow rewritten into
calls of the AutoGraph runtime (treadle.autograph.operators).

The pipeline, per function scope (the function and the functions defined in
it): loop directives, break/continue lowering, return lowering, definedness
and liveness analysis, control flow; then expressions and calls over the
whole function. The result is compiled with the user's file name and line
numbers and instantiated with the original globals, closure cells and
defaults, so it behaves as the original on Python values and tracebacks
show user lines.

Converted code is cached per code object (a closure made many times is
transformed once) and per function object. Library code (treadle, the
standard library, site-packages, NumPy) is never converted; functions whose
source cannot be read run unconverted with a warning."""

import __future__
import ast
import builtins as python_builtins
import copy
import functools
import inspect
import linecache
import os
import re
import sys
import sysconfig
import threading
import types
import warnings
import weakref

import numpy

from treadle.autograph import features, operators
from treadle.autograph.operators import builtins, errors
from treadle.autograph.static_analysis import definitions, liveness
from treadle.autograph.transformer import (asserts, base, break_continue, comparisons, control_flow, directives,
                                           expressions, functions, return_statements)
from treadle.framework.name_scope import name_scope


class AutoGraphWarning(UserWarning):
    """A function runs without conversion."""


_SCOPE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # what a function name loses to become a scope name ("<lambda>")
_lock = threading.RLock()
_function_cache = weakref.WeakKeyDictionary()  # function -> {features: converted function (or itself)}
_code_cache = {}  # (code object, features) -> _Converted, or a str: why it cannot be converted
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_NOT_CONVERTIBLE_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | \
    inspect.CO_ITERABLE_COROUTINE


# ------------------------------------------------------------------ library code

def _library_roots():
    roots = {_TREADLE_ROOT, os.path.dirname(numpy.__file__)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    roots |= {os.path.realpath(r) for r in roots}
    return tuple(os.path.join(r, "") for r in roots)


_TREADLE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # treadle/autograph/..
_roots = None
_library_files = {}


def _is_library(filename):
    result = _library_files.get(filename)
    if result is None:
        global _roots
        if _roots is None:
            _roots = _library_roots()
        result = filename.startswith(_roots) or os.path.realpath(filename).startswith(_roots)
        _library_files[filename] = result
    return result


def _skip(fn):
    """True for functions that run as they are, without a warning."""
    code = fn.__code__
    return (getattr(fn, "__ag_do_not_convert__", False) or code in errors.CONVERTED_CODE
            or code.co_flags & _NOT_CONVERTIBLE_FLAGS or _is_library(code.co_filename))


def _refuse_in_strict_mode(fn):
    """Generators and coroutines run unconverted, unless strict conversion is
    on (TensorFlow raises then too)."""
    code = fn.__code__
    if (strict_conversion() and not getattr(fn, "__ag_do_not_convert__", False)
            and not _is_library(code.co_filename)):
        raise NotImplementedError(f"AutoGraph cannot convert {fn.__qualname__}: generators and coroutines are not "
                                  "supported by AutoGraph (AUTOGRAPH_STRICT_CONVERSION is set, so this is an error "
                                  "rather than running it unconverted)")


def strict_conversion():
    """TensorFlow's AUTOGRAPH_STRICT_CONVERSION: when set to a positive number,
    a function AutoGraph cannot convert is an error instead of running
    unconverted with a warning."""
    try:
        return int(os.environ.get("AUTOGRAPH_STRICT_CONVERSION", "0")) > 0
    except ValueError:
        return False


# ------------------------------------------------------------------ public entry points

def convert(fn, optional_features=features.NONE):
    """The converted version of a callable (a function, method, partial or
    callable object); callables that cannot be converted come back as they
    are (with an AutoGraphWarning when their source could not be read).
    With optional features (features.py), the result converts and runs
    with them in effect, and so do the functions it calls."""
    if optional_features == features.active():
        return _convert_callable(fn, for_call=False)
    # Its own features, not those of a function being traced around it.
    with features.enabled(optional_features):
        conv = _convert_callable(fn, for_call=False)

    @functools.wraps(conv)
    def with_features(*args, **kwargs):
        with features.enabled(optional_features):
            return conv(*args, **kwargs)

    return with_features


def converted_call(f):
    """What converted code calls in place of `f` (`f(x)` becomes
    `ag__.converted_call(f)(x)`): the converted version of a user function,
    method or callable object, a tensor-aware stand-in for a few builtins
    (len, range, print...), or `f` itself (library code, classes, td.functions)."""
    return _convert_callable(f, for_call=True)


def _convert_callable(f, for_call):
    """The one dispatch on callables. `for_call`: `f` is about to be called by
    converted code, so builtins get their stand-ins and opaque callables run
    as they are without a warning."""
    t = type(f)
    if for_call and t is types.FunctionType and f is python_builtins.print:
        # `print` replaced by a library's wrapper (Ray installs one and leaves
        # it after ray.shutdown()) is still print: it gets print's stand-in.
        stand_in = builtins.optional_override(_BUILTIN_PRINT) if features.active() else None
        return f if stand_in is None else stand_in
    if t is types.FunctionType:
        # Defined inside converted code: converted already (the common case, so tested first).
        return f if f.__code__ in errors.CONVERTED_CODE else converted_function(f)
    if t is types.MethodType:
        func = f.__func__
        if type(func) is not types.FunctionType:
            return f
        conv = converted_function(func)
        return f if conv is func else types.MethodType(conv, f.__self__)
    if t is functools.partial:
        inner = _convert_callable(f.func, for_call)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if for_call and (t is types.BuiltinFunctionType or t is type):
        try:
            stand_in = builtins.OVERRIDES.get(f)
            if stand_in is None and features.active():
                stand_in = builtins.optional_override(f)
        except TypeError:  # an unhashable callable has no stand-in
            return f
        return f if stand_in is None else stand_in
    if getattr(f, "__ag_do_not_convert__", False):
        return f
    if isinstance(f, type):
        return f if for_call else _opaque(f)  # classes are called as they are
    call = getattr(t, "__call__", None)
    if type(call) is types.FunctionType:
        conv = converted_function(call)
        return f if conv is call else types.MethodType(conv, f)
    return f if for_call else _opaque(f)


_BUILTIN_PRINT = print  # as at import: the key of print's stand-in in builtins.OPTIONAL_OVERRIDES


def _opaque(fn):
    if not _from_library_module(fn):
        _warn(fn, "its source code is not available (it is a builtin or an extension)")
    return fn


# What converted code sees as `ag__`: the runtime operators and converted_call.
_RUNTIME = types.ModuleType("ag__", "The AutoGraph runtime of converted code.")
_RUNTIME.__dict__.update({name: getattr(operators, name) for name in operators.__all__})
_RUNTIME.converted_call = converted_call
_AG_CELL = types.CellType(_RUNTIME)


def _from_library_module(obj):
    """True for callables of library packages (NumPy ufuncs and dispatchers...)."""
    module = sys.modules.get((getattr(obj, "__module__", None) or "").split(".")[0])
    filename = getattr(module, "__file__", None)
    return filename is not None and _is_library(filename)


def converted_function(fn):
    """The converted version of a plain Python function (cached), with the
    optional features in effect now."""
    if fn.__code__.co_flags & _NOT_CONVERTIBLE_FLAGS:
        _refuse_in_strict_mode(fn)
    optional = features.active()
    try:
        per_features = _function_cache.get(fn)
    except TypeError:
        per_features = None
    result = per_features.get(optional) if per_features is not None else None
    if result is not None:
        return result
    with _lock:
        per_features = _function_cache.get(fn)
        if per_features is None:
            per_features = _function_cache[fn] = {}
        result = per_features.get(optional)
        if result is None:
            result = fn if _skip(fn) else _convert_function(fn, optional)
            per_features[optional] = result
    return result


def to_graph(fn, recursive=True, experimental_optional_features=None):
    """The converted version of `fn` (TensorFlow's tf.autograph.to_graph):
    called inside a td.function, its control flow on tensors is staged."""
    optional = features.normalize(experimental_optional_features, "to_graph(experimental_optional_features)")
    return convert(getattr(fn, "python_function", fn), optional)


def to_code(fn, recursive=True, experimental_optional_features=None):
    """The converted source of `fn` (a function, method or td.function), as a string."""
    fn = getattr(fn, "python_function", fn)
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, functools.partial):
        fn = fn.func
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"to_code expects a Python function, got {fn!r}")
    optional = features.normalize(experimental_optional_features, "to_code(experimental_optional_features)")
    entry = _entry(fn, optional)
    if isinstance(entry, str):
        raise ValueError(f"AutoGraph could not convert {fn.__qualname__}: {entry}")
    return entry.source()


# ------------------------------------------------------------------ conversion

class _Converted:
    """The transformed code of one function code object."""

    def __init__(self, code, node):
        self.code = code
        self.node = node
        self._source = None

    def source(self):
        """The converted code as text. As TensorFlow's to_code shows it, the
        function is named `tf__<name>` (the code that runs keeps the name)."""
        if self._source is None:
            node = self.node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                node = copy.copy(node)
                node.name = "tf__" + node.name
            self._source = ast.unparse(node) + "\n"
        return self._source

    def instantiate(self, fn):
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        closure = tuple(_AG_CELL if n == base.AG else cells.get(n) or types.CellType()
                        for n in self.code.co_freevars)
        new = types.FunctionType(self.code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__dict__.update(fn.__dict__)
        new.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
        return new


def _convert_function(fn, optional):
    entry = _entry(fn, optional)
    if isinstance(entry, str):
        if strict_conversion():
            raise NotImplementedError(f"AutoGraph could not transform {fn.__qualname__} (AUTOGRAPH_STRICT_CONVERSION "
                                      f"is set, so this is an error rather than running it unconverted): {entry}")
        _warn(fn, entry)
        return fn
    converted = entry.instantiate(fn)
    if features.Feature.NAME_SCOPES in optional:
        return _in_name_scope(converted, fn.__name__)
    return converted


def _in_name_scope(fn, name):
    """`fn` running inside td.name_scope(<its name>) (Feature.NAME_SCOPES):
    the ops it makes are named after the function that made them."""
    scope = _SCOPE_UNSAFE.sub("", name).lstrip("_.-")
    if not scope:
        return fn

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        with name_scope(scope):
            return fn(*args, **kwargs)

    return scoped


def _entry(fn, optional):
    key = (fn.__code__, optional)
    entry = _code_cache.get(key)
    if entry is None:
        with _lock:
            entry = _code_cache.get(key)
            if entry is None:
                try:
                    entry = _transform(fn, optional)
                except _CannotConvert as e:
                    entry = str(e)
                except (SyntaxError, ValueError, TypeError, AttributeError, KeyError) as e:
                    entry = f"{type(e).__name__}: {e}"
                _code_cache[key] = entry
    return entry


class _CannotConvert(Exception):
    pass


def _warn(fn, reason):
    name = getattr(fn, "__qualname__", None) or repr(fn)
    warnings.warn(f"AutoGraph could not transform {name} and will run it as-is: {reason}", AutoGraphWarning,
                  stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The stacklevel of the first caller outside treadle (where the warning belongs)."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and _is_library(frame.f_code.co_filename) and "treadle" in frame.f_code.co_filename:
        level += 1
        frame = frame.f_back
    return level


def _transform(fn, optional):
    code = fn.__code__
    node = _function_node(fn)
    namer = base.Namer(node)
    if isinstance(node, ast.FunctionDef):
        node.decorator_list = []
        node.ag_method = "__class__" in code.co_freevars
        for n in ast.walk(node):
            if isinstance(n, ast.ClassDef):
                for child in n.body:
                    child.ag_method = True
        for scope in [n for n in ast.walk(node) if isinstance(n, ast.FunctionDef)]:
            _transform_scope(scope, namer, optional)
    comparisons.transform(node)
    expressions.transform(node)
    inner = _compile(node, code, fn)
    errors.register(inner, fn.__qualname__)
    return _Converted(inner, node)


def _transform_scope(scope, namer, optional):
    if base.contains_yield_or_await(scope):
        scope.ag_skip = True  # generators keep their statements (yield cannot move into a nested function)
        return
    if features.Feature.ASSERT_STATEMENTS in optional:
        asserts.transform(scope)
    if getattr(scope, "ag_method", False):
        functions.explicit_super(scope)
    directives.extract(scope)
    break_continue.transform(scope, namer)
    return_statements.transform(scope, namer)
    deleted = functions.deletions_as_undefined(scope)
    definitions.analyze(scope)
    liveness.analyze(scope)
    maybe_undefined = control_flow.transform(scope, namer)
    functions.checked_loads(scope, set(maybe_undefined) | deleted)


def _compile(node, code, fn):
    """Compiles the converted function inside a factory whose locals stand for
    the original free variables (so they become the new code's free
    variables, filled with the original cells) and returns its code object."""
    body = [base.assign(n, base.const(None)) for n in code.co_freevars if n != base.AG]
    if isinstance(node, ast.Lambda):
        body.append(base.assign("__ag_lambda", node))
    else:
        if node.name not in code.co_freevars:
            body.insert(0, ast.Global(names=[node.name]))  # its own name stays a global in its body
        body.append(node)
    factory = base.function_def("__ag_factory", [base.AG], body)
    module = ast.Module(body=[factory], type_ignores=[])
    base.located([factory], node)
    ast.fix_missing_locations(module)
    flags = code.co_flags & _FUTURE_FLAGS
    module_code = compile(module, code.co_filename, "exec", flags=flags, dont_inherit=True)
    factory_code = _child_code(module_code, "__ag_factory")
    return _child_code(factory_code, code.co_name)


def _child_code(code, name):
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise _CannotConvert(f"internal error: no code object named {name!r} after conversion")


# ------------------------------------------------------------------ finding the source

def _function_node(fn):
    code = fn.__code__
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise _CannotConvert(f"its source code is not available ({e})") from None
    source = "".join(lines)
    if code.co_name == "<lambda>":
        return _lambda_node(code, source, start)
    tree, shift = _parse_snippet(source)
    for node in tree:
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            ast.increment_lineno(node, start - 1 - shift)
            return node
    if any(isinstance(n, ast.AsyncFunctionDef) for n in tree):
        raise _CannotConvert("async functions are not converted")
    raise _CannotConvert(f"could not find the definition of {code.co_name} in its source")


def _parse_snippet(source):
    """Parses a block of source that may be indented (a method, a nested
    function). Returns (statements, number of lines added in front)."""
    if source[:1] in (" ", "\t"):
        return ast.parse("if 1:\n" + source).body[0].body, 1
    return ast.parse(source).body, 0


def _by_column(code, lambdas, offset):
    """The lambda whose body holds the leftmost instruction of `code` (several
    lambdas with the same parameters on one line)."""
    positions = [(p[0], p[2]) for p in code.co_positions()
                 if None not in p and (p[1], p[3]) > (p[0], p[2])]  # zero-width ones are bookkeeping
    if not positions:
        return lambdas
    first = min(positions)
    before = [n for n in lambdas if (n.body.lineno + offset, n.body.col_offset) <= first]
    if not before:
        return lambdas
    return [max(before, key=lambda n: (n.body.lineno, n.body.col_offset))]


def _lambda_node(code, source, start):
    try:
        tree, shift = _parse_snippet(source)
        candidates = [n for stmt in tree for n in ast.walk(stmt) if isinstance(n, ast.Lambda)]
        offset = start - 1 - shift
    except SyntaxError:
        # The lambda is part of a statement spanning more lines than its block: parse the whole file.
        lines = linecache.getlines(code.co_filename)
        if not lines:
            raise _CannotConvert("its source code is not available") from None
        candidates = [n for n in ast.walk(ast.parse("".join(lines))) if isinstance(n, ast.Lambda)]
        offset = 0
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    matching = [n for n in candidates if n.lineno + offset == code.co_firstlineno
                and tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == params]
    if len(matching) > 1:
        matching = _by_column(code, matching, offset)
    if len(matching) != 1:
        what = "no lambda" if not matching else "several lambdas"
        raise _CannotConvert(f"{what} with these parameters on line {code.co_firstlineno} of its source")
    node = matching[0]
    ast.increment_lineno(node, offset)
    return node
