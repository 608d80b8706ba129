"""td.function: a Python function traced into a graph once per distinct kind
of argument, and its calls dispatched to the matching ConcreteFunction."""

import functools
import inspect
import threading
import weakref

from treadle.framework import context
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.function.concrete_function import ConcreteFunction
from treadle.util import nest

_RUN_EAGERLY = False


def run_functions_eagerly(run_eagerly):
    """When True, td.functions run their Python body each call instead of a graph."""
    global _RUN_EAGERLY
    _RUN_EAGERLY = bool(run_eagerly)


def functions_run_eagerly():
    return _RUN_EAGERLY


class Parameter:
    """One bound parameter of a traced signature, for printing."""

    KIND_NAMES = {
        inspect.Parameter.POSITIONAL_ONLY: "POSITIONAL_ONLY",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "POSITIONAL_OR_KEYWORD",
        inspect.Parameter.VAR_POSITIONAL: "VAR_POSITIONAL",
        inspect.Parameter.KEYWORD_ONLY: "KEYWORD_ONLY",
        inspect.Parameter.VAR_KEYWORD: "VAR_KEYWORD",
    }

    def __init__(self, name, kind, value):
        self.name = name
        self.kind = kind
        self.kind_name = self.KIND_NAMES[kind]
        self.value = value


class FunctionType:
    """The parameters of a traced function with the types they were traced for."""

    def __init__(self, parameters):
        self.parameters = parameters

    def __repr__(self):
        inner = ", ".join(f"{p.name}: {p.value!r}" for p in self.parameters)
        return f"({inner})"


# ----------------------------------------------------------------- cache keys

def _leaf_key(value):
    if isinstance(value, Tensor):
        return ("T", value.dtype.as_datatype_enum, value.shape.as_tuple())
    if isinstance(value, TensorSpec):
        return ("T", value.dtype.as_datatype_enum, value.shape.as_tuple())
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return (type(value), value)
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"could not generate a cache key for argument {value!r}: it is neither hashable "
                        "nor a tensor") from None
    return ("id", id(value))


def _structure_key(value):
    if not nest.is_nested(value):
        return _leaf_key(value)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _structure_key(v)) for k, v in value.items())))
    return (type(value), tuple(_structure_key(v) for v in nest.flatten(value)) if not isinstance(value, (list, tuple))
            else tuple(_structure_key(v) for v in value))


# ----------------------------------------------------------------- the function

class Function:
    """The object `@td.function` makes: call it like the Python function."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 reduce_retracing=False):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = None if input_signature is None else tuple(input_signature)
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._signature = inspect.signature(python_function)
        self._cache = {}
        self._concrete_functions = []
        self._tracing_count = 0
        self._lock = threading.RLock()
        self._tracing_now = False
        self._descriptor_cache = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, python_function, updated=())

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self):
        return self._tracing_count

    def __get__(self, instance, owner):
        if instance is None:
            return self
        bound = self._descriptor_cache.get(instance)
        if bound is None:
            bound = Function(self._python_function.__get__(instance, owner), self._name, self._input_signature,
                             self._autograph, self._reduce_retracing)
            self._descriptor_cache[instance] = bound
        return bound

    # ---------------------------------------------------------- binding
    def _bind(self, args, kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"Binding inputs to td.function failed due to `{e}`. Received args: {args} and "
                            f"kwargs: {kwargs} for signature: {self._signature}.") from None
        bound.apply_defaults()
        return bound

    def _bound_to_call(self, bound):
        """(args, kwargs) in the order the Python function takes them."""
        return tuple(bound.args), dict(bound.kwargs)

    # ---------------------------------------------------------- calling
    def __call__(self, *args, **kwargs):
        if _RUN_EAGERLY:
            return self._python_function(*args, **kwargs)
        concrete, call_args, call_kwargs = self._concrete_for_call(args, kwargs)
        return concrete(*call_args, **call_kwargs)

    def _concrete_for_call(self, args, kwargs):
        if self._input_signature is not None:
            concrete = self._signature_concrete()
            call_args, call_kwargs = self._cast_to_signature(args, kwargs)
            return concrete, call_args, call_kwargs
        bound = self._bind(args, kwargs)
        key = tuple((name, _structure_key(v)) for name, v in bound.arguments.items())
        concrete = self._cache.get(key)
        if concrete is None:
            with self._lock:
                concrete = self._cache.get(key)
                if concrete is None:
                    concrete = self._trace(bound)
                    self._cache[key] = concrete
        call_args, call_kwargs = self._bound_to_call(bound)
        return concrete, call_args, call_kwargs

    def _signature_concrete(self):
        key = ("input_signature",)
        concrete = self._cache.get(key)
        if concrete is None:
            with self._lock:
                concrete = self._cache.get(key)
                if concrete is None:
                    bound = self._bind(self._input_signature, {})
                    concrete = self._trace(bound)
                    self._cache[key] = concrete
        return concrete

    def _cast_to_signature(self, args, kwargs):
        bound = self._bind(args, kwargs)
        call_args = list(bound.args)
        if len(call_args) != len(self._input_signature) or bound.kwargs:
            raise TypeError(f"Binding inputs to td.function failed due to `Can not cast {args!r} to the "
                            f"input_signature {self._input_signature!r}`.")
        out = []
        for value, spec in zip(call_args, self._input_signature):
            flat_spec = nest.flatten(spec)
            try:
                nest.assert_same_structure(value, spec, check_types=False)
                flat = [convert_to_tensor(v, dtype_hint=s.dtype) if not isinstance(v, Tensor) else v
                        for v, s in zip(nest.flatten(value), flat_spec)]
                ok = all(s.is_compatible_with(t) for s, t in zip(flat_spec, flat))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise TypeError(f"Binding inputs to td.function failed due to `Can not cast {value!r} to "
                                f"{spec!r}`. Received args: {args} and kwargs: {kwargs} for signature: "
                                f"{self._signature}.")
            out.append(nest.pack_sequence_as(spec, flat))
        return tuple(out), {}

    # ---------------------------------------------------------- tracing
    def _trace(self, bound):
        if self._tracing_now:
            raise RecursionError(f"td.function '{self._name}' calls itself while it is being traced; recursive "
                                 "td.functions are not supported (the graph would be infinite). Use a loop, or "
                                 "call the Python function directly.")
        self._tracing_now = True
        try:
            return self._trace_unguarded(bound)
        finally:
            self._tracing_now = False

    def _trace_unguarded(self, bound):
        graph = FuncGraph(self._name, outer_graph=context.current_graph())
        params = []
        with graph:
            traced_args = {}
            for pname, value in bound.arguments.items():
                flat = nest.flatten(value)
                placeholders = []
                for i, leaf in enumerate(flat):
                    if isinstance(leaf, (Tensor, TensorSpec)):
                        ph_name = leaf.name if isinstance(leaf, TensorSpec) and leaf.name else pname
                        placeholders.append(graph.add_placeholder(leaf.dtype, leaf.shape, ph_name))
                    else:
                        placeholders.append(leaf)
                traced_args[pname] = nest.pack_sequence_as(value, placeholders)
                spec_value = nest.pack_sequence_as(
                    value, [TensorSpec(p.shape, p.dtype, pname) if isinstance(p, Tensor) else p for p in placeholders])
                kind = self._signature.parameters[pname].kind
                params.append(Parameter(pname, kind, spec_value))
            bound_traced = self._signature.bind_partial()
            bound_traced.arguments.update(traced_args)
            call_args, call_kwargs = tuple(bound_traced.args), dict(bound_traced.kwargs)
            fn = self._converted_function()
            outputs = fn(*call_args, **call_kwargs)
            flat_out = nest.flatten(outputs)
            graph_outputs = []
            packed = []
            for leaf in flat_out:
                if isinstance(leaf, Tensor):
                    t = graph._graph_input(leaf) if leaf is not None else leaf
                    graph_outputs.append(t)
                    packed.append(t)
                else:
                    packed.append(leaf)
            graph.structured_outputs = nest.pack_sequence_as(outputs, packed)
            graph.outputs = graph_outputs
        self._tracing_count += 1
        arg_signature = (tuple(_spec_of(v) for v in bound.args), {k: _spec_of(v) for k, v in bound.kwargs.items()})
        concrete = ConcreteFunction(graph, unique_function_name(self._name), arg_signature, graph_outputs,
                                    self._python_function)
        concrete.function_type = FunctionType(params)
        concrete.function_def()  # serialize now: the graph is final
        graph.finalized = True
        self._concrete_functions.append(concrete)
        return concrete

    def _converted_function(self):
        if self._autograph:
            try:
                from treadle.autograph import converter
            except ImportError:
                return self._python_function
            return converter.convert(self._python_function)
        return self._python_function

    # ---------------------------------------------------------- inspection
    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (values or TensorSpecs), tracing if needed."""
        if self._input_signature is not None and not args and not kwargs:
            return self._signature_concrete()
        if self._input_signature is not None:
            return self._signature_concrete()
        bound = self._bind(args, kwargs)
        key = tuple((name, _structure_key(v)) for name, v in bound.arguments.items())
        with self._lock:
            concrete = self._cache.get(key)
            if concrete is None:
                concrete = self._trace(bound)
                self._cache[key] = concrete
        return concrete

    def pretty_printed_concrete_signatures(self, verbose=True):
        return "\n\n".join(c.pretty_printed_signature(verbose) for c in self._concrete_functions)

    def __repr__(self):
        return f"<td.function {self._name}>"


def _spec_of(value):
    return nest.map_structure(lambda v: TensorSpec(v.shape, v.dtype) if isinstance(v, Tensor) else v, value)


def function(func=None, *, input_signature=None, autograph=True, reduce_retracing=False, jit_compile=None,
             name=None, experimental_relax_shapes=None):
    """Compiles a Python function into a callable graph (TensorFlow's tf.function)."""
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(f):
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing)

    if func is not None:
        return decorate(func)
    return decorate
