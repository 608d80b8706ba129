"""ConcreteFunction: one traced graph, callable with tensors."""

import threading

import numpy as np

from treadle import _core, errors, graph_pb2
from treadle.framework import context, dtypes, graph_serialization, indexed_slices, variables
from treadle.framework.func_graph import FuncGraph
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.function import call_binding, trace_type
from treadle.function.signature_printing import pretty_signature
from treadle.util import nest


# While a GradientTape records (treadle/autodiff/tape.py), the function here
# sees each call first: (ConcreteFunction, flat tensor arguments) -> the flat
# outputs when it ran the call itself (to record it), else None.
call_recorders = []


class ConcreteFunction:
    """A traced function: a FuncGraph whose inputs are the tensor leaves of the
    arguments followed by the captured values, run by the C++ executor."""

    def __init__(self, graph: FuncGraph, name, arg_structure, flat_outputs, python_function=None):
        self.graph = graph
        self.name = name
        # (args, kwargs) with each tensor leaf replaced by its TensorSpec and
        # the other leaves kept as the Python values the trace saw.
        self.structured_input_signature = arg_structure
        self.structured_outputs = graph.structured_outputs
        self._flat_outputs = flat_outputs
        self._python_function = python_function
        self._num_args = len(graph.inputs) - len(graph.captures)
        self._executable = None
        self._run = None
        self._capture_values = None
        self._pack = None
        self._lock = threading.Lock()
        self._library_function = None  # the graph's snapshot in C++, taken when the function is finished
        self._function_def = None
        self.function_type = None  # set by the polymorphic function that traced it
        self._signature = None     # inspect.Signature of the Python function
        # The name binding errors give (the Python function's, as TensorFlow's do).
        self._function_name = getattr(python_function, "__name__", None) or name
        self._call_signature = None  # (inspect.Signature, gatherers) calls bind to, made on the first call
        self._flat = None

    # ---------------------------------------------------------- inspection
    @property
    def inputs(self):
        return list(self.graph.inputs)

    @property
    def outputs(self):
        return list(self._flat_outputs)

    @property
    def captured_inputs(self):
        return [external for external, _ in self.graph.captures.values()]

    @property
    def inference_fn(self):
        return self

    @property
    def variables(self):
        """The td.Variables the function reads or writes, in the order it first
        used them (it captures their handles), as TensorFlow's."""
        found = {}
        for external, _ in self.graph.captures.values():
            var = variables.variable_for_handle(external)
            if var is not None:
                found.setdefault(id(var), var)
        return tuple(found.values())

    @property
    def trainable_variables(self):
        return tuple(v for v in self.variables if v.trainable)

    @property
    def output_shapes(self):
        """The static shape of each output, in the structure the function
        returns (TensorShape(None) for outputs that are not tensors, as
        TensorFlow gives for None)."""
        shape_of = _output_property("shape")

        def shape(leaf):
            s = shape_of(leaf)
            return TensorShape(None) if s is None else s

        return nest.map_structure(shape, self.structured_outputs)

    @property
    def output_dtypes(self):
        """The dtype of each output, in the structure the function returns."""
        return nest.map_structure(_output_property("dtype"), self.structured_outputs)

    def library_function(self):
        """The function as a _core.LibraryFunction: a snapshot of its graph,
        taken the first time it is asked for (finish_function does so)."""
        if self._library_function is None:
            self._library_function = graph_serialization.library_function(self.graph, self.name, self._flat_outputs)
        return self._library_function

    def function_def(self):
        if self._function_def is None:
            self._function_def = graph_pb2.FunctionDef.FromString(self.library_function().function_def())
        return self._function_def

    def library_graph_def(self):
        return graph_serialization.library_graph_def(self)

    # ---------------------------------------------------------- calling
    def _get_executable(self):
        if self._executable is None:
            with self._lock:
                if self._executable is None:
                    library = graph_serialization.library_functions([self])
                    self._executable = _core.Executable.from_library(library, self.name)
        return self._executable

    def __call__(self, *args, **kwargs):
        return self._call_flat(self._bind_call(args, kwargs))

    def _bind_call(self, args, kwargs):
        """The flat tensor arguments of a call: bound through the Python
        signature the function was traced with, else (as TensorFlow falls
        back) through its flat signature of graph inputs."""
        inputs, keywords, summary = self._flat_signature()
        if self.function_type is None:
            flat = call_binding.bind_flat(inputs, keywords, summary, args, kwargs, convert=True)
        else:
            if self._call_signature is None:
                self._call_signature = call_binding.call_signature(self.function_type)
            try:
                flat = call_binding.bind_structured(self.function_type, self._call_signature, self._function_name,
                                                    args, kwargs)
            except TypeError as structured_error:
                try:
                    flat = call_binding.bind_flat(inputs, keywords, summary, args, kwargs)
                except (TypeError, ValueError) as flat_error:
                    raise TypeError(f"{structured_error}\nFallback to flat signature also failed due to: "
                                    f"{flat_error}") from None
        call_binding.check_dtypes(inputs, flat, self.name)
        return flat

    def _flat_signature(self):
        """(graph inputs of the arguments, their placeholder names, "f(x, y)"), made once."""
        if self._flat is None:
            inputs = self.graph.inputs[:self._num_args]
            keywords = [t.op.name for t in inputs]
            self._flat = (inputs, keywords, f"{self._function_name}({', '.join(keywords)})")
        return self._flat

    def _call_flat(self, tensors):
        """Runs on the flat tensor arguments; returns the structured outputs."""
        if call_recorders:
            flat = call_recorders[-1](self, tensors)
            if flat is not None:
                return self._pack_outputs(flat)
        graph = context.current_graph()
        if graph is not None or any(type(t) is not EagerTensor for t in tensors):
            captured = [external for external, _ in self.graph.captures.values()]
            return self._pack_outputs(self._call_in_graph(graph, tensors + captured))
        return self._run_eager(tensors)

    def _call_flat_eager(self, tensors):
        """_call_flat for arguments known to be eager tensors (the dispatch fast path)."""
        if call_recorders or context.current_graph() is not None:
            return self._call_flat(tensors)
        return self._run_eager(tensors)

    def _run_eager(self, tensors):
        """Runs the executable on eager arguments plus the captures' values."""
        run = self._run
        if run is None:
            run = self._prepare_run()
        return self._pack(run(tensors + self._capture_values))

    def _prepare_run(self):
        """Binds the executable and the values of the captures (fixed once the
        graph is finished: eager constants, and variable handles)."""
        self._capture_values = [_read_capture(c) for c, _ in self.graph.captures.values()]
        outputs = self.structured_outputs
        if isinstance(outputs, Tensor):
            self._pack = _first
        elif outputs is None:
            self._pack = _none
        else:
            self._pack = self._pack_outputs
        self._run = self._get_executable().run
        return self._run

    def _call_in_graph(self, graph, inputs):
        """Adds a call of this function to the graph being traced."""
        if graph is None:
            graph = next(t for t in inputs if type(t) is not EagerTensor).graph
        graph.add_function(self)
        op_type = "StatefulPartitionedCall" if self.graph.stateful_ops else "PartitionedCall"
        attrs = {
            "f": self.name,
            "Tin": [t.dtype for t in inputs],
            "Tout": [t.dtype for t in self._flat_outputs],
            "output_shapes": [s.dims for s in self._call_output_shapes(inputs)],
        }
        return execute(op_type, list(inputs), attrs)

    def _call_output_shapes(self, inputs):
        """The static shapes of a call's outputs. As TensorFlow's shape
        inference of function calls: when the call's inputs are more specific
        than the traced placeholders (known dimensions, constant values), the
        body's shape functions run again on them, so `f(x, 5)` of a function
        traced for any shape and any int can give [3, 5]."""
        traced = [t.shape for t in self._flat_outputs]
        placeholders = self.graph.inputs
        if len(placeholders) != len(inputs) or not any(
                _is_constant(v) or (v.shape != p.shape and TensorShape(v.shape).is_subtype_of(p.shape))
                for v, p in zip(inputs, placeholders)):
            return traced
        refined = _infer_body_shapes(self, inputs)
        if refined is None:
            return traced
        return [r if r.is_subtype_of(t) else t for r, t in zip(refined, traced)]

    def _pack_outputs(self, flat_out):
        it = iter(flat_out)
        leaves = []
        for leaf in nest.flatten(self.structured_outputs):
            if isinstance(leaf, Tensor):
                leaves.append(next(it))
            elif isinstance(leaf, indexed_slices.IndexedSlices):
                parts = [next(it) for _ in range(indexed_slices.num_components(leaf))]
                leaves.append(indexed_slices.rebuild(leaf, parts))
            elif is_extension_value(leaf):
                parts = [next(it) for _ in range(len(extension_parts(leaf)))]
                leaves.append(extension_rebuilt(leaf, parts))
            else:
                leaves.append(leaf)
        return nest.pack_sequence_as(self.structured_outputs, leaves)

    # ---------------------------------------------------------- printing
    def pretty_printed_signature(self, verbose=True):
        return pretty_signature(self, verbose)

    def __repr__(self):
        return f"<ConcreteFunction {self.name}>"

    def __str__(self):
        return "ConcreteFunction " + self.pretty_printed_signature()


_SMALL_CONSTANT = 1000  # elements: constants up to this size take part in the shape inference of calls


def _constant_value(t):
    """The value of `t` when it is a small constant known while tracing (a
    shape, a size), else None."""
    op = getattr(t, "op", None)
    value = t if type(t) is EagerTensor else (op.value if op is not None and op.type == "Const" else None)
    if value is None or value.dtype in (dtypes.resource, dtypes.variant):
        return None
    count = value.shape.num_elements()
    return value if count is not None and count <= _SMALL_CONSTANT else None


def _is_constant(t):
    return _constant_value(t) is not None


# Pure ops on small integer values (shape arithmetic) that the shape inference
# of a call evaluates when their inputs are constants, as TensorFlow's shape
# inference evaluates constant subgraphs: `shape(y)[0] // shape(x)[0]`.
_FOLDED = frozenset({"Shape", "Size", "Rank", "StridedSlice", "Pack", "Unpack", "ConcatV2", "Cast", "Identity",
                     "AddV2", "Sub", "Mul", "FloorDiv", "FloorMod", "Maximum", "Minimum", "Prod", "Reshape",
                     "ExpandDims", "Squeeze", "GatherV2", "Range"})


def _known_shape_of(op, arg):
    """A Shape/Size/Rank op reads only its input's shape: known when fully defined."""
    return op.type in ("Shape", "Size", "Rank") and TensorShape(arg.shape).is_fully_defined()


def _folded(op, args):
    """The op run now on its constant inputs, its results made graph constants."""
    with context.init_scope():  # run now, outside every graph
        values = []
        for a in args:
            constant = _constant_value(a)
            if constant is None:  # a Shape/Size/Rank input of known shape: its value does not matter
                constant = convert_to_tensor(np.zeros(TensorShape(a.shape).as_list(), a.dtype.as_numpy_dtype))
            values.append(constant)
        outs = execute(op.type, values, dict(op.attrs))
    return [convert_to_tensor(o.numpy(), dtype=o.dtype) if _is_constant(o) else None for o in outs]


def _infer_body_shapes(fn, inputs):
    """The output shapes of `fn`'s body for a call with `inputs`: its ops
    added again, in order, to a scratch graph that is never run, with
    placeholders of the inputs' shapes and the constant inputs' values. None
    when an op of the body cannot be added again there."""
    scratch = FuncGraph("shape_inference", outer_graph=context.current_graph())
    known = {}
    with scratch:
        for name, body in fn.graph.functions.items():
            scratch.add_function(body)
        for value, placeholder in zip(inputs, fn.graph.inputs):
            constant = _constant_value(value)
            if constant is not None:
                known[id(placeholder)] = convert_to_tensor(constant.numpy(), dtype=constant.dtype)  # a Const node
            else:
                known[id(placeholder)] = scratch.add_placeholder(value.dtype, value.shape)
        for op in fn.graph.operations:
            if op.type == "Placeholder":
                continue
            args = [known.get(id(t)) for t in op.inputs]
            if any(a is None for a in args):
                return None
            callee = fn.graph.functions.get(op.attrs.get("f")) if op.type.endswith("PartitionedCall") else None
            try:
                if op.type == "Const" and _constant_value(op.outputs[0]) is not None:
                    outs = [convert_to_tensor(op.value.numpy(), dtype=op.value.dtype)]  # keeps its value known
                elif callee is not None and hasattr(callee, "_call_in_graph"):
                    outs = callee._call_in_graph(scratch, args)
                elif op.type in _FOLDED and all(_is_constant(a) or _known_shape_of(op, a) for a in args):
                    outs = _folded(op, args)
                else:
                    outs = execute(op.type, args, dict(op.attrs))
            except (TypeError, ValueError, errors.OpError):
                return None  # an op this replay cannot add: the traced shapes stand
            for old, new in zip(op.outputs, outs):
                known[id(old)] = new
    outputs = [known.get(id(t)) for t in fn._flat_outputs]
    return None if any(o is None for o in outputs) else [TensorShape(o.shape) for o in outputs]


def finish_function(graph, name, outputs, arg_structure=((), {}), python_function=None, finalize=True):
    """The ConcreteFunction of a traced `graph` returning `outputs`, its graph
    taken as it is now (ops added later, e.g. by gradients, are not part of
    it); with `finalize`, no op can be added to the graph any more."""
    fn = ConcreteFunction(graph, name, arg_structure, list(outputs), python_function)
    fn.library_function()
    # As TensorFlow's FuncGraph: the variables the traced body uses.
    graph.variables, graph.trainable_variables = fn.variables, fn.trainable_variables
    if finalize:
        graph.finalized = True
    return fn


def is_extension_value(value):
    """A value made of tensors that a function returns as its parts (a
    td.experimental.ExtensionType, a ragged or sparse tensor, or an object of
    a class with TensorFlow's __tf_flatten__/__tf_unflatten__ protocol)."""
    return getattr(type(value), "_td_extension_type", False) or trace_type.has_nest_protocol(value)


def extension_parts(value):
    """The tensors an extension value is returned as, in order."""
    if not trace_type.has_nest_protocol(value):
        return value._to_components()
    parts = []
    for c in value.__tf_flatten__()[1]:
        if isinstance(c, Tensor):
            parts.append(c)
        elif is_extension_value(c):
            parts.extend(extension_parts(c))
    return parts


def extension_rebuilt(value, parts):
    """`value` rebuilt around `parts` (as many as extension_parts gave)."""
    if not trace_type.has_nest_protocol(value):
        return value._from_components(parts)
    it = iter(parts)
    metadata, comps = value.__tf_flatten__()
    rebuilt = []
    for c in comps:
        if isinstance(c, Tensor):
            rebuilt.append(next(it))
        elif is_extension_value(c):
            rebuilt.append(extension_rebuilt(c, [next(it) for _ in extension_parts(c)]))
        else:
            rebuilt.append(c)
    return type(value).__tf_unflatten__(metadata, tuple(rebuilt))


def _output_property(name):
    def get(leaf):
        # Tensors, and composites (ragged, sparse) that have a shape and dtype.
        tensor_like = isinstance(leaf, Tensor) or (hasattr(type(leaf), "shape") and hasattr(type(leaf), "dtype"))
        return getattr(leaf, name) if tensor_like else None
    return get


def _first(outputs):
    return outputs[0]


def _none(outputs):
    return None


def _read_capture(value):
    """Captured values are eager tensors, or objects (variables) that give one."""
    return value if type(value) is EagerTensor else value._captured_value()

