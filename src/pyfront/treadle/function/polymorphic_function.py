"""td.function: a Python function traced into a graph once per distinct
FunctionType of its arguments; calls dispatch to the most specific traced
ConcreteFunction whose type accepts them."""

import functools
import inspect
import threading
import types
import warnings
import weakref

import numpy as np

from treadle import _core
from treadle.autograph import converter, features
from treadle.framework import context, indexed_slices, variables
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.framework.type_spec import TypeSpec
from treadle.function import argument_mutation, trace_type
from treadle.function import attributes as function_attributes
from treadle.function._call import InterceptedCall, call_interceptors  # noqa: F401 (call_interceptors: autobatch's)
from treadle.function.concrete_function import extension_parts, extension_rebuilt, finish_function, is_extension_value
from treadle.function.function_type import FunctionCache, FunctionType, Parameter, is_specific
from treadle.function.retracing import RetracingDetector
from treadle.util import nest

_RUN_EAGERLY = False
_RETURNED_AS_TENSORS = (bool, int, float, str, bytes, np.generic, np.ndarray)

# The most traces a td.function keeps. Past it, the least recently used
# traces (an eighth of them at a time) are evicted: a call of an evicted type
# traces again, and td.save saves only the traces kept.
MAX_TRACES = 1024


class BoundMethod:
    """`instance.method` for a td.function method: the instance's own Function,
    holding the instance as a Python bound method does (so `Model().call(x)`
    and `f = Model().call` work). The per-instance Function, cached by
    instance, holds it only weakly: an object is freed once nothing else
    refers to it. Everything but calling is the Function's."""

    __slots__ = ("__func__", "__self__", "__weakref__")

    def __init__(self, function, instance):
        self.__func__ = function
        self.__self__ = instance

    def __call__(self, *args, **kwargs):
        return self.__func__(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.__func__, name)

    def __repr__(self):
        return repr(self.__func__)


def as_function(value):
    """The Function behind `value` (itself, or the one a BoundMethod calls)."""
    return value.__func__ if type(value) is BoundMethod else value


def run_functions_eagerly(run_eagerly):
    """When True, td.functions run their Python body each call instead of a graph."""
    global _RUN_EAGERLY
    _RUN_EAGERLY = bool(run_eagerly)


def functions_run_eagerly():
    return _RUN_EAGERLY


class Function(InterceptedCall):
    """The object `@td.function` makes: call it like the Python function
    (InterceptedCall's call, by vectorcall, offers the call to
    td.loom.autobatch's interceptor, if one records, then runs _call)."""

    # A method's Function, one per instance (__get__), refers to its instance
    # weakly: the function cache must not keep the object alive (TensorFlow
    # frees an object whose traced method has run once it is unreferenced).
    _weak_instance = None

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 reduce_retracing=False, jit_compile=None, follow_type_hints=False, autograph_options=frozenset(),
                 attributes=None):
        self._python_function = python_function
        self._attributes = dict(attributes or {})  # experimental_attributes (function/attributes.py)
        self._autograph_options = autograph_options  # AutoGraph's optional features (autograph/features.py)
        self._name = name or getattr(python_function, "__name__", "function")
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = jit_compile
        self._follow_type_hints = follow_type_hints
        self._signature = inspect.signature(python_function)
        self._input_signature = None
        self._signature_type = None
        if input_signature is not None:
            self._set_input_signature(tuple(input_signature))
        self._cache = FunctionCache()
        # C++: positional calls of known kinds, for traces of specific types
        # only (a call matching a general trace leaves no key behind).
        self._fast_cache = _core.DispatchCache()
        self._concrete_functions = []
        self._max_traces = MAX_TRACES
        self._tracing_count = 0
        self._lock = threading.RLock()
        self._tracing = set()  # (thread, FunctionType) of the traces under way
        self._traced_once = False
        self._lifted_initialization = None  # the first trace, when the first call must run it (it initializes)
        self._retracing = RetracingDetector()
        self._per_instance = False
        self._instances = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, python_function, updated=())

    def _set_input_signature(self, specs):
        for s in nest.flatten(specs):
            if not isinstance(s, TypeSpec):  # a TensorSpec, or the spec of a composite (td.SparseTensorSpec)
                raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec objects, got "
                                f"{s!r}")
        self._input_signature = specs
        self._signature_type = FunctionType(_signature_parameters(self._signature, specs))

    @property
    def _python_function(self):
        """The Python function; for a method's Function, bound to its instance now."""
        if self._weak_instance is None:
            return self._plain_function
        instance = self._weak_instance()
        if instance is None:
            raise ReferenceError(f"td.function method {self._name}: its object no longer exists")
        return self._plain_function.__get__(instance, type(instance))

    @_python_function.setter
    def _python_function(self, python_function):
        self._plain_function = python_function

    # ---------------------------------------------------------- properties
    @property
    def python_function(self):
        return self._python_function

    @property
    def name(self):
        return self._name

    @property
    def function_type(self):
        """The FunctionType of the Python signature: each parameter's type is
        its input_signature entry, or None where any value is accepted."""
        if self._signature_type is not None:
            typed = {p.name: p.type for p in self._signature_type.parameters}
        else:
            typed = {}
        return FunctionType([Parameter(p.name, p.kind, typed.get(p.name))
                             for p in self._signature.parameters.values()])

    @property
    def jit_compile(self):
        return self._jit_compile

    @property
    def experimental_follow_type_hints(self):
        return self._follow_type_hints

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_spec(self):
        return self._signature

    def experimental_get_tracing_count(self):
        return self._tracing_count

    def __get__(self, instance, owner):
        """A td.function on a method: one Function per instance, so each
        instance's traces are its own (as the self argument's identity)."""
        if instance is None:
            return self
        if is_extension_value(instance):
            # As TensorFlow does for composite tensors: the instance is an
            # argument like any other (its tensors are traced as inputs,
            # its type keys the trace), so it need not be hashable.
            return types.MethodType(self, instance)
        bound = self._instances.get(instance)
        if bound is None:
            bound = Function(self._python_function.__get__(instance, owner), self._name,
                             self._input_signature, self._autograph, self._reduce_retracing,
                             self._jit_compile, self._follow_type_hints, self._autograph_options,
                             self._attributes)
            bound._per_instance = True
            bound._plain_function = self._plain_function
            bound._weak_instance = weakref.ref(instance)
            bound.__wrapped__ = self._plain_function  # not the bound method, which holds the instance
            bound.__signature__ = bound._signature
            self._instances[instance] = bound
        return BoundMethod(bound, instance)

    # ---------------------------------------------------------- calling
    def _call(self, args, kwargs):
        if _RUN_EAGERLY:
            return self._python_function(*args, **kwargs)
        if not kwargs:
            hit = self._fast_cache.lookup(args)
            if hit is not None:  # the C++ cache only answers for eager tensors
                concrete, flat = hit
                return concrete._call_flat_eager(flat)
        else:
            self._fast_cache.tick()  # counts the call
        concrete, flat = self._dispatch(args, kwargs)
        if self._lifted_initialization is not None:
            first, self._lifted_initialization = self._lifted_initialization, None
            return first._call_flat(flat)
        if not kwargs and is_specific(concrete.function_type):
            self._fast_cache.insert(args, flat, concrete)
        return concrete._call_flat(flat)

    def _bind(self, args, kwargs, convert_numpy=True):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"Binding inputs to td.function `{self._name}` failed due to `{e}`. Received args: "
                            f"{args} and kwargs: {kwargs} for signature: {self._signature}.") from None
        bound.apply_defaults()
        if convert_numpy:
            _convert_numpy_arguments(bound)
        if self._follow_type_hints:
            self._convert_hinted_arguments(bound)
        return bound

    def _convert_hinted_arguments(self, bound):
        """experimental_follow_type_hints: arguments annotated td.Tensor become
        tensors, so Python numbers passed for them do not retrace."""
        for name, value in bound.arguments.items():
            if self._signature.parameters[name].annotation is Tensor and not isinstance(value, Tensor):
                bound.arguments[name] = convert_to_tensor(value)

    def _dispatch(self, args, kwargs, from_call=True):
        """(ConcreteFunction, flat tensor arguments) for a call, tracing if
        needed; only a call's traces (from_call) count towards the retracing
        warning, as in TensorFlow, where get_concrete_function never warns."""
        if self._signature_type is not None:
            # NumPy values are cast by the signature's specs (to their dtypes).
            return self._dispatch_to_signature(self._bind(args, kwargs, convert_numpy=False), args, kwargs, from_call)
        bound = self._bind(args, kwargs)
        ftype = FunctionType.from_bound(bound)
        concrete = self._cache.lookup(ftype, self._fast_cache.clock)
        if concrete is None:
            with self._lock:
                concrete = self._cache.lookup(ftype, self._fast_cache.clock)
                if concrete is None:
                    trace_as = self._cache.generalize(ftype) if self._reduce_retracing else ftype
                    concrete = self._trace(trace_as, from_call)
                    self._remember(trace_as, concrete)
        return concrete, concrete.function_type.flatten_tensors(bound.arguments)

    def _dispatch_to_signature(self, bound, args, kwargs, from_call):
        ftype = self._signature_type
        arguments = {}
        if "self" in bound.arguments and "self" not in self._signature_type_names():
            # A method called through the class-level function (an extension
            # type's): as in TensorFlow, `self` has no constraint and traces
            # as the value it is.
            instance = bound.arguments["self"]
            kind = self._signature.parameters["self"].kind
            ftype = FunctionType([Parameter("self", kind, trace_type.from_value(instance))] + list(ftype.parameters))
            arguments["self"] = instance
        concrete = self._signature_concrete(ftype, from_call)
        try:
            for name, value in bound.arguments.items():
                if self._signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD and value:
                    # An input_signature leaves no room for keyword arguments.
                    raise TypeError(f"got an unexpected keyword argument '{next(iter(value))}'")
            for p in self._signature_type.parameters:
                arguments[p.name] = p.type.cast(bound.arguments[p.name])
        except (ValueError, TypeError) as e:
            raise TypeError(f"Binding inputs to td.function `{self._name}` failed due to `{e}`. Received args: "
                            f"{args} and kwargs: {kwargs} for signature: {self._signature_string()}.") from None
        return concrete, ftype.flatten_tensors(arguments)

    def _signature_type_names(self):
        return {p.name for p in self._signature_type.parameters}

    def _signature_string(self):
        params = ", ".join(f"{p.name}: {_describe(p.type)}" for p in self._signature_type.parameters)
        return f"({params})"

    def _signature_concrete(self, ftype=None, from_call=False):
        ftype = ftype or self._signature_type
        concrete = self._cache.lookup(ftype)
        if concrete is None:
            with self._lock:
                concrete = self._cache.lookup(ftype)
                if concrete is None:
                    concrete = self._trace(ftype, from_call)
                    self._remember(ftype, concrete)
        return concrete

    def _remember(self, ftype, concrete):
        """Adds a trace to the cache, evicting the least recently used ones
        (by their last use on either path) past self._max_traces."""
        self._cache.add(ftype, concrete, self._fast_cache.clock)
        if len(self._cache) <= self._max_traces:
            return
        fast = {}
        for value, stamp in self._fast_cache.last_uses():
            fast[id(value)] = max(stamp, fast.get(id(value), 0))
        evicted = self._cache.evict(self._max_traces, lambda c: fast.get(id(c)))
        self._fast_cache.discard(evicted)
        gone = {id(c) for c in evicted}
        self._concrete_functions = [c for c in self._concrete_functions if id(c) not in gone]

    # ---------------------------------------------------------- tracing
    def _trace(self, ftype, from_call=False):
        # A call of the function on the types it is being traced for, from
        # inside that trace, would recurse forever. Other types are traced
        # (the guide's recursion over a Python int: one trace per value).
        key = (threading.get_ident(), ftype)
        if key in self._tracing:
            raise RecursionError(
                f"td.function '{self._name}' calls itself with arguments of the types it is being traced for "
                f"{ftype!r}. A recursive td.function over tensors would need an infinitely large graph; write the "
                "recursion as a loop (td.while_loop or a Python while on tensors), or call the undecorated Python "
                "function.")
        self._tracing.add(key)
        try:
            first = not self._concrete_functions and not self._traced_once
            self._traced_once = True
            created = []
            # As in TensorFlow, a variable made on the first call may take its
            # initial value from the arguments: that value is computed by the call.
            lifted = [] if first and from_call and context.executing_eagerly() else None
            concrete = self._trace_unguarded(ftype, allow_variables=first, created=created, lifted=lifted)
            if lifted:
                # The call runs this first trace, which assigns the initial
                # values; later calls run the trace made once the variables exist.
                self._lifted_initialization = concrete
            if created:
                # As TensorFlow does: a first trace that made variables is
                # traced again, and that trace must find them made.
                concrete = self._trace_unguarded(ftype, allow_variables=False, created=[])
        finally:
            self._tracing.discard(key)
        self._tracing_count += 1
        self._concrete_functions.append(concrete)
        if from_call:
            self._retracing.traced(self._python_function, ftype, self._fast_cache.clock, self._per_instance,
                                   eager=context.executing_eagerly())
        return concrete

    def _trace_unguarded(self, ftype, allow_variables, created, lifted=None):
        graph = FuncGraph(self._name, outer_graph=context.current_graph())
        graph.automatic_control_dependencies = function_attributes.automatic_control_dependencies(self._attributes)
        hook = self._variable_creation_hook(graph, allow_variables, created)
        variables._creation_hooks.append(hook)
        variables._lifted_initializers.append(
            lambda t: lifted if lifted is not None and getattr(t, "graph", None) is graph else None)
        try:
            with graph:
                arguments = ftype.placeholder_arguments(graph)
                before = {name: argument_mutation.snapshot(value) for name, value in arguments.items()}
                bound = self._signature.bind_partial()
                bound.arguments.update(arguments)
                outputs = self._converted_function()(*bound.args, **bound.kwargs)
                argument_mutation.check(self._python_function, before, arguments)
                _refuse_generator(outputs, self._python_function)
                flat_out, packed = [], []
                for leaf in nest.flatten(outputs):
                    if isinstance(leaf, _RETURNED_AS_TENSORS):
                        # As in TensorFlow: Python numbers, strings, bools and
                        # NumPy values returned become tensors (ints int32,
                        # floats float32), not values frozen at trace time.
                        leaf = convert_to_tensor(leaf)
                    if isinstance(leaf, Tensor):
                        t = _output_identity(graph, leaf)
                        flat_out.append(t)
                        packed.append(t)
                    elif isinstance(leaf, indexed_slices.IndexedSlices):  # returned as its parts
                        parts = [_output_identity(graph, t) for t in indexed_slices.flatten(leaf)]
                        flat_out.extend(parts)
                        packed.append(indexed_slices.rebuild(leaf, parts))
                    elif is_extension_value(leaf):  # returned as its tensors, rebuilt by the caller
                        parts = [_output_identity(graph, t) for t in extension_parts(leaf)]
                        flat_out.extend(parts)
                        packed.append(extension_rebuilt(leaf, parts))
                    elif hasattr(leaf, "read_value") and hasattr(leaf, "assign"):  # a Variable: return its value
                        t = _output_identity(graph, leaf.read_value())
                        flat_out.append(t)
                        packed.append(t)
                    else:
                        packed.append(leaf)
                graph.structured_outputs = nest.pack_sequence_as(outputs, packed)
                graph.outputs = flat_out
        finally:
            variables._creation_hooks.remove(hook)
            variables._lifted_initializers.pop()
        arg_specs = {p.name: _spec_structure(p.type, p.name) for p in ftype.parameters}
        structured_args = (tuple(arg_specs[n] for n in arg_specs), {})
        concrete = finish_function(graph, unique_function_name(self._name), flat_out, structured_args,
                                   self._plain_function)
        concrete.function_type = ftype.with_output(_output_type(graph.structured_outputs))
        concrete._signature = self._signature
        concrete._function_name = self._name
        return concrete

    def _variable_creation_hook(self, graph, allowed, created):
        """Variables may be created only while the function is traced the first time."""
        def hook(variable):
            if context.graph_being_built() is not graph:
                return
            if not allowed:
                raise ValueError(
                    "td.function only supports singleton td.Variables created on the first call. Make sure the "
                    "td.Variable is only created once or created outside td.function. See the tf.function "
                    "guide's section on creating variables for more information.")
            created.append(variable)
        return hook

    def _converted_function(self):
        if self._autograph:
            return converter.convert(self._python_function, self._autograph_options)
        return self._python_function

    # ---------------------------------------------------------- inspection
    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (values or TensorSpecs), tracing if needed."""
        if self._signature_type is not None:
            if args or kwargs:
                self._check_signature_arguments(args, kwargs)
            return self._signature_concrete()
        concrete, _ = self._dispatch(args, kwargs, from_call=False)
        return concrete

    def _check_signature_arguments(self, args, kwargs):
        """get_concrete_function's arguments (specs or values) for a function
        with an input_signature must fit that signature."""
        bound = self._bind(args, kwargs)
        for p in self._signature_type.parameters:
            value = bound.arguments[p.name]
            try:
                p.type.cast(value)
            except (TypeError, ValueError) as e:  # TensorFlow's text, as for a call
                raise TypeError(f"Binding inputs to td.function `{self._name}` failed due to `{e}`. Received args: "
                                f"{args} and kwargs: {kwargs} for signature: {self._signature_string()}.") from None

    def pretty_printed_concrete_signatures(self, verbose=True):
        return "\n\n".join(c.pretty_printed_signature(verbose) for c in self._concrete_functions)

    def __repr__(self):
        return f"<td.function {self._name}>"


def _signature_parameters(signature, specs):
    """The parameters of a function with an input_signature, as TensorFlow
    types them: positional parameters take the specs in order, *args the
    specs left over, an optional parameter with no spec its default
    value; a required parameter with no spec, or a spec with no
    parameter, is an error."""
    specs = list(specs)
    params = []
    for p in signature.parameters.values():
        if p.name == "self":
            continue  # a method's instance, bound before a call (see __get__)
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            params.append(Parameter(p.name, p.kind, trace_type.TupleType(
                [trace_type.from_spec_structure(s) for s in specs])))
            specs = []
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            continue  # an input_signature leaves no room for keyword arguments
        elif specs and p.kind is not inspect.Parameter.KEYWORD_ONLY:
            params.append(Parameter(p.name, p.kind, trace_type.from_spec_structure(specs.pop(0))))
        elif p.default is not inspect.Parameter.empty:
            params.append(Parameter(p.name, p.kind, trace_type.from_value(p.default)))
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"input_signature must specify type constraint for keyword-only argument {p.name}")
        else:
            raise TypeError(f"input_signature missing type constraint for {p.name}")
    if specs:
        raise TypeError(f"input_signature contains {len(specs)} extra type constraints.")
    return params


def _is_numpy_value(x):
    return isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, (np.str_, np.bytes_))


def _numpy_to_tensor(x):
    return convert_to_tensor(x) if _is_numpy_value(x) else x


def _convert_numpy_arguments(bound):
    """NumPy arrays and scalars in the arguments become tensors, as in
    TensorFlow: a trace per dtype and shape, not per array object."""
    for name, value in bound.arguments.items():
        if _is_numpy_value(value):
            bound.arguments[name] = convert_to_tensor(value)
        elif nest.is_nested(value):
            try:
                leaves = nest.flatten(value)
            except TypeError:  # a mapping nest cannot order: its trace type says what it is
                continue
            if any(_is_numpy_value(x) for x in leaves):
                bound.arguments[name] = nest.pack_sequence_as(value, [_numpy_to_tensor(x) for x in leaves])


def _refuse_generator(outputs, python_function):
    """A generator function traced runs none of its body: TensorFlow refuses
    its generator as a return value, and so does treadle (other Python
    objects come back as they are)."""
    if inspect.isgenerator(outputs) or inspect.isasyncgen(outputs) or inspect.iscoroutine(outputs):
        if inspect.iscoroutine(outputs):
            outputs.close()
        raise TypeError(
            "To be compatible with td.function, Python functions must return zero or more Tensors or "
            f"ExtensionTypes or None values; in compilation of {python_function}, found return value of type "
            f"{type(outputs).__name__}, which is not a Tensor or ExtensionType.")


def _output_identity(graph, t):
    """Each output of a traced function is an Identity node of its graph, as in
    TensorFlow's (an argument or capture returned as it is included)."""
    return graph.create_op("Identity", [graph._graph_input(t)])[0]


def _output_type(outputs):
    """The TraceType of a traced function's structured outputs (for printing)."""
    try:
        return trace_type.from_value(outputs)
    except TypeError:  # an unhashable Python object, returned as it is
        return _TypeName(outputs)


class _TypeName:
    """Prints as the type name of a value that has no TraceType."""

    def __init__(self, value):
        self._text = type(value).__name__

    def __repr__(self):
        return self._text


def _describe(t):
    if isinstance(t, trace_type.TensorType):
        return repr(t.spec())
    return repr(t)


def _spec_structure(t, name=None):
    """A value standing for a parameter type in structured_input_signature."""
    if isinstance(t, trace_type.TensorType):
        return TensorSpec(t.shape, t.dtype, t.name or name)
    if isinstance(t, trace_type.Literal):
        return t.value
    if isinstance(t, trace_type.SequenceType) and t.rebuilt_in_signatures:
        return t._make([_spec_structure(c) for c in t.components])
    if isinstance(t, trace_type.DictType):
        return {k: _spec_structure(v) for k, v in t.mapping.items()}
    return t


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None, *,
             name=None):
    """Compiles a Python function into a callable graph (TensorFlow's tf.function,
    with its parameters in its order).

    Traces are cached per FunctionType of the arguments. The cache keeps at
    most MAX_TRACES (1024) traces per function; beyond that the least
    recently used are evicted, an eighth at a time, and a call of an evicted
    type traces again. A function that traces 5 times within 10 eager calls
    warns, at most twice (TensorFlow's "triggered tf.function retracing"
    warning), naming the argument whose change caused the last trace.
    `experimental_implements` is accepted as TensorFlow's annotation for graph
    rewriters; treadle has none, so the function runs as written.
    `experimental_attributes` takes TensorFlow's function attributes (a dict
    of the names TensorFlow allows); `{"_disable_acd": True}` traces without
    automatic control dependencies: stateful ops no result needs are pruned."""
    if experimental_relax_shapes:
        reduce_retracing = True
    if experimental_compile is not None and jit_compile is None:
        jit_compile = experimental_compile
    if jit_compile:
        warnings.warn("td.function(jit_compile=True): treadle has no XLA compiler; the function runs as an "
                      "uncompiled graph on treadle's executor.", UserWarning, stacklevel=2)
    if experimental_implements is not None and not isinstance(experimental_implements, str):
        raise TypeError(f"td.function(experimental_implements=...) names the algorithm the function implements "
                        f"and must be a string, got {type(experimental_implements).__name__}")
    # experimental_implements is TensorFlow's annotation for graph rewriters (TF Lite's
    # converter) that may swap the function for a fused kernel; the function itself runs as
    # written. treadle has no such rewriters, so the annotation changes nothing here.
    attributes = function_attributes.parse(experimental_attributes)
    autograph_options = features.normalize(experimental_autograph_options)
    if input_signature is not None and not isinstance(input_signature, (list, tuple)):
        raise TypeError(f"input_signature must be a list or tuple of TensorSpecs, got {input_signature!r}")

    def decorate(f):
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing, jit_compile=jit_compile,
                        follow_type_hints=bool(experimental_follow_type_hints), autograph_options=autograph_options,
                        attributes=attributes)

    if func is not None:
        return decorate(func)
    return decorate
