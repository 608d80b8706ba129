"""Tracing a LoomOp's instantiate_batch once into a library function of its
batched inputs. Variables the op reads are captured by value: the loom reads
each variable once per run and passes the value in, so gradients reach the
variable through that read, eagerly and inside graphs alike."""

from treadle import _core
from treadle.framework import dtypes
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.graph_serialization import library_functions
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.variables import variable_for_handle
from treadle.function.concrete_function import finish_function
from treadle.ragged.ragged_tensor import RaggedTensor

_VARIABLE_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")


class _LoomOpGraph(FuncGraph):
    """A FuncGraph in which reading a variable captures its value."""

    def __init__(self, name):
        super().__init__(name)
        self.variable_captures = {}  # id(variable) -> (variable, placeholder)

    def create_op(self, op_type, inputs, attrs=None, name=None):
        if inputs and type(inputs[0]) is EagerTensor:
            var = variable_for_handle(inputs[0])
            if var is not None:
                if op_type == "ReadVariableOp":
                    return [self._capture_variable(var)]
                if op_type in _VARIABLE_WRITES:
                    raise ValueError(f"a LoomOp may read variables but not assign them (it assigns {var.name})")
        return super().create_op(op_type, inputs, attrs, name)

    def _capture_variable(self, var):
        entry = self.variable_captures.get(id(var))
        if entry is None:
            placeholder = self.add_placeholder(var.dtype, var.shape.dims, name="variable")
            entry = self.variable_captures[id(var)] = (var, placeholder)
        return entry[1]


class TracedOp:
    """An op's batched function, the fingerprint of its body, and the outside
    values (eager tensors, or variables to read at run time) it captured, in
    argument order."""

    def __init__(self, function, captures):
        self.function = function
        self.captures = captures
        self.body_fingerprint = _core.loom_function_fingerprint(library_functions([function]), function.name)

    @property
    def name(self):
        return self.function.name


def trace_op(op_name, op):
    """Traces `op.instantiate_batch` on placeholders of its input batches."""
    graph = _LoomOpGraph(f"loom_{op_name}")
    ragged = set(op._ragged_inputs)
    with graph:
        inputs, arguments = [], []
        for i, ts in enumerate(op._input_plain_type_shapes):
            values = graph.add_placeholder(ts.dtype, (None,) + ts.shape, name=f"input_{i}")
            arguments.append(values)
            if i in ragged:  # values, then row splits: the function's arguments for a ragged input
                splits = graph.add_placeholder(dtypes.int64, (None,), name=f"input_{i}_row_splits")
                arguments.append(splits)
                values = RaggedTensor.from_row_splits(values, splits, validate=False)
            inputs.append(values)
        results = op.instantiate_batch(list(inputs))
        if isinstance(results, Tensor) or not isinstance(results, (list, tuple)):
            raise TypeError(f"LoomOp '{op_name}': instantiate_batch must return a list of tensors, got "
                            f"{type(results).__name__}")
        results = list(results)
        if len(results) != len(op.output_type_shapes):
            raise ValueError(f"LoomOp '{op_name}': instantiate_batch returned {len(results)} tensors but the op "
                             f"has {len(op.output_type_shapes)} output type shapes")
        outputs = []
        for j, (value, ts) in enumerate(zip(results, op.output_type_shapes)):
            t = graph._graph_input(convert_to_tensor(value))
            if t.dtype != ts.dtype:
                raise TypeError(f"LoomOp '{op_name}': output {j} is {t.dtype.name} but its type shape is {ts}")
            if not t.shape.is_compatible_with((None,) + ts.shape):
                raise ValueError(f"LoomOp '{op_name}': output {j} has shape {t.shape}, not a batch of {ts} "
                                 f"(expected (None,) + {ts.shape})")
            outputs.append(t)
        graph.outputs = outputs
    by_placeholder = {}
    for external, placeholder in graph.captures.values():
        if external.dtype.name == "resource":
            raise ValueError(f"LoomOp '{op_name}' uses a resource handle other than by reading a variable; "
                             "a LoomOp may only read variables")
        by_placeholder[id(placeholder)] = external
    for var, placeholder in graph.variable_captures.values():
        by_placeholder[id(placeholder)] = var
    captures = [by_placeholder[id(p)] for p in graph.inputs[len(arguments):]]
    function = finish_function(graph, unique_function_name(f"loom_{op_name}"), outputs, arg_structure=None)
    return TracedOp(function, captures)
