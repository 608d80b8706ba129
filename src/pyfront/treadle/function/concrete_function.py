"""ConcreteFunction: one traced graph, callable with tensors."""

import inspect
import threading

from treadle import _core
from treadle.framework import context, graph_serialization
from treadle.framework.func_graph import FuncGraph
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.function import trace_type
from treadle.util import nest


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
        self._lock = threading.Lock()
        self._function_def = None
        self.function_type = None  # set by the polymorphic function that traced it
        self._signature = None     # inspect.Signature of the Python function

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
        return list(self.graph.variables)

    def function_def(self):
        if self._function_def is None:
            self._function_def = graph_serialization.function_def(self.graph, self.name, self._flat_outputs)
        return self._function_def

    def library_graph_def(self):
        return graph_serialization.library_graph_def(self)

    # ---------------------------------------------------------- calling
    def _get_executable(self):
        if self._executable is None:
            with self._lock:
                if self._executable is None:
                    data = self.library_graph_def().SerializeToString()
                    self._executable = _core.Executable.from_function(data, self.name)
        return self._executable

    def __call__(self, *args, **kwargs):
        return self._call_flat(self._flatten_call_args(args, kwargs))

    def _flatten_call_args(self, args, kwargs):
        """The tensor arguments of a call, checked against the traced FunctionType.
        Parameters traced as Python literals may be left out."""
        if self.function_type is None or self._signature is None:
            if kwargs:
                raise TypeError(f"{self.name} takes only positional tensor arguments")
            return [convert_to_tensor(a) for a in args]
        try:
            bound = self._signature.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}: {e}") from None
        arguments = {}
        for p in self.function_type.parameters:
            if p.name in bound.arguments:
                value = bound.arguments[p.name]
            elif isinstance(p.type, trace_type.Literal):
                value = p.type.value  # a literal the function was traced for
            else:
                default = self._signature.parameters[p.name].default
                if default is inspect.Parameter.empty:
                    raise TypeError(f"{self.name}: missing required argument '{p.name}'")
                value = default
            try:
                arguments[p.name] = p.type.cast(value)
            except (ValueError, TypeError) as e:
                raise TypeError(f"{self.name}: argument '{p.name}' does not match the traced type "
                                f"{p.type!r}: {e}") from None
        return self.function_type.flatten_tensors(arguments)

    def _call_flat(self, tensors):
        """Runs on the flat tensor arguments; returns the structured outputs."""
        captured = [external for external, _ in self.graph.captures.values()]
        graph = context.current_graph()
        if graph is not None or any(type(t) is not EagerTensor for t in tensors):
            flat_out = self._call_in_graph(graph, tensors + captured)
        else:
            flat_out = self._get_executable().run(tensors + [_read_capture(c) for c in captured])
        return self._pack_outputs(flat_out)

    def _call_in_graph(self, graph, inputs):
        """Adds a call of this function to the graph being traced."""
        from treadle.framework.ops import execute
        if graph is None:
            graph = next(t for t in inputs if type(t) is not EagerTensor).graph
        graph.add_function(self)
        op_type = "StatefulPartitionedCall" if self.graph.stateful_ops else "PartitionedCall"
        attrs = {
            "f": self.name,
            "Tin": [t.dtype for t in inputs],
            "Tout": [t.dtype for t in self._flat_outputs],
            "output_shapes": [t.shape.dims for t in self._flat_outputs],
        }
        return execute(op_type, list(inputs), attrs)

    def _pack_outputs(self, flat_out):
        it = iter(flat_out)
        leaves = [next(it) if isinstance(leaf, Tensor) else leaf for leaf in nest.flatten(self.structured_outputs)]
        return nest.pack_sequence_as(self.structured_outputs, leaves)

    # ---------------------------------------------------------- printing
    def pretty_printed_signature(self, verbose=True):
        from treadle.function.signature_printing import pretty_signature
        return pretty_signature(self, verbose)

    def __repr__(self):
        return f"<ConcreteFunction {self.name}>"

    def __str__(self):
        return self.pretty_printed_signature()


def _read_capture(value):
    """Captured values are eager tensors, or objects (variables) that give one."""
    return value if type(value) is EagerTensor else value._captured_value()
