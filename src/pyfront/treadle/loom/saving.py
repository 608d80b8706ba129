"""td.save / td.load for looms: one file (the treadle container, of kind
KIND_LOOM) with the loom's metadata, its ops' batched functions and the values
it reads (variables saved as variables), so a saved loom runs without its
Python code. Registered with io's file kinds when treadle.loom is imported."""

from treadle import _core, errors, loom_pb2
from treadle.autodiff.custom_gradient import custom_gradient
from treadle.framework import context
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.io import file_kinds
from treadle.io.container import KIND_LOOM, file_kind, read_container, version_field, write_container
from treadle.io.saved_values import SavedValueWriter, read_value, restore_variables
from treadle.loom.library import LoadedFunction, add_to_current_graph
from treadle.loom.loom import Loom, type_shapes_of_metadata
from treadle.loom.loom_op import LoomOp, PassThroughLoomOp

FORMAT_VERSION = 1
_VERSION = version_field(KIND_LOOM, FORMAT_VERSION)


def save_loom(loom, path):
    if loom.dry_run:
        raise ValueError("td.save: a loom built with dry_run=True has no functions to save")
    saved = loom_pb2.SavedLoom()
    saved.loom.CopyFrom(loom.loom_def)
    writer = SavedValueWriter(saved.variables)
    inputs = loom.input_values
    for values, field in ((inputs.named_tensors, saved.named_tensors), (inputs.batch_inputs, saved.batch_inputs),
                          (inputs.captures, saved.captures)):
        for value in values:
            writer.write(value, field.add(), "the loom input")
    write_container(path, _VERSION, saved.SerializeToString())


def read_saved_loom(path):
    """The SavedLoom message of a file written by td.save(loom, path);
    DataLossError when the file or its payload is malformed."""
    kind = file_kind(path)
    if kind != KIND_LOOM:
        raise errors.DataLossError(None, None, f"{path}: not a saved loom (file kind {kind})")
    payload = read_container(path, _VERSION)
    saved = loom_pb2.SavedLoom()
    try:
        saved.ParseFromString(payload)
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"{path}: not a valid SavedLoom: {e}") from None
    return saved


def load_loom(path):
    """A td.loom.Loom from a file written by td.save(loom, path)."""
    saved = read_saved_loom(path)
    variables = restore_variables(saved.variables, path)

    def value(cap, what):
        return read_value(cap, variables, f"{path}: {what}")

    md = saved.loom.metadata
    if len(saved.named_tensors) != len(md.named_tensors) or \
            len(saved.batch_inputs) != len(md.batch_input_type_shapes):
        raise errors.DataLossError(None, None, f"{path}: the saved values do not match the loom's metadata")
    named = [value(c, f"named tensor {i}") for i, c in enumerate(saved.named_tensors)]
    batch = [value(c, f"batch input {i}") for i, c in enumerate(saved.batch_inputs)]
    captures = [value(c, f"captured value {i}") for i, c in enumerate(saved.captures)]
    _fingerprint_op_bodies(saved.loom)
    return restore_loom(saved.loom, named, batch, captures)


def restore_loom(loom_def, named, batch, captures):
    """A loom from a saved LoomDef and the values it reads (named tensors,
    batch inputs, captures), with a LoadedLoomOp for each of its ops;
    ValueError when the LoomDef's metadata or ops are invalid."""
    type_shapes = type_shapes_of_metadata(loom_def.metadata, "the saved loom's")
    library = _core.LoomLibrary.from_graph_def(loom_def.library.SerializeToString())
    functions = [LoadedFunction(f) for f in library.functions()]
    try:
        ops = loaded_ops(loom_def, type_shapes, captures, library, functions)
    except (IndexError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"the saved loom's ops are invalid: {e}") from None
    return Loom.from_loom_def(loom_def, ops, named, batch, captures, functions, library)


def check_loom_def(loom_def):
    """Builds and validates, in the core, the runtime of a LoomDef message
    (its metadata over its library); returns its capture specs."""
    library = _core.LoomLibrary.from_graph_def(loom_def.library.SerializeToString())
    return library.check(loom_def.metadata.SerializeToString())


def _fingerprint_op_bodies(loom_def):
    """Files saved before looms fingerprinted their ops' bodies have 0 there:
    the fingerprint of what each op's function computes is filled in, so that
    such a loom loads (and its fingerprint covers its bodies, as a new loom's
    does). A nonzero value is left to the runtime's check against the library."""
    library = None
    for op in loom_def.metadata.ops:
        if op.pass_through or op.body_fingerprint or not op.function_name:
            continue
        if library is None:
            library = loom_def.library.SerializeToString()
        op.body_fingerprint = _core.loom_body_fingerprint(library, op.function_name)


class LoadedLoomOp(LoomOp):
    """An op of a loaded loom: its type shapes and its saved batched function,
    with no Python code behind it. `instantiate_batch` calls that function on
    a batch (reading the variables it captured), eagerly or as a call node of
    the graph being traced, whose library then holds the loom's functions;
    where the loom has the op's gradient functions, gradients flow through it
    (to the batches and the captured variables)."""

    def __init__(self, name, input_type_shapes, output_type_shapes, op_def, library, functions, captures):
        super().__init__(input_type_shapes, output_type_shapes)
        self.name = name
        self.function_name = op_def.function_name
        self._training_function = op_def.training_function_name
        self._backward_function = op_def.backward_function_name
        self._backward = (list(op_def.backward_output_gradients), list(op_def.backward_saved),
                          list(op_def.backward_input_gradients))
        self._library = library
        self._functions = functions
        self._captures = captures

    def instantiate_batch(self, inputs):
        if len(inputs) != len(self._input_type_shapes):
            raise ValueError(f"loom op '{self.name}' takes {len(self._input_type_shapes)} input batches, "
                             f"got {len(inputs)}")
        batches = [convert_to_tensor(x, dtype=ts.dtype) for x, ts in zip(inputs, self._input_type_shapes)]
        captured = [c.read_value() if isinstance(c, Variable) else c for c in self._captures]
        if not self._backward_function:
            return self._call(self.function_name, batches + captured)
        return list(custom_gradient(self._differentiable_call)(*(batches + captured)))

    def _differentiable_call(self, *args):
        """The op's results by its training function, and their gradient by its backward function."""
        output_grads, saved, input_grads = self._backward
        values = list(args) + self._call(self._training_function, list(args))
        outputs = values[len(args):len(args) + len(self._output_type_shapes)]

        def grad(*dys):
            grads = self._call(self._backward_function, [dys[j] for j in output_grads] + [values[v] for v in saved])
            result = [None] * len(args)
            for i, g in zip(input_grads, grads):
                result[i] = g
            return result

        return outputs, grad

    def _call(self, name, args):
        """Library function `name` on `args`: run now, or a call node of the graph being traced."""
        executable = self._library.executable(name)
        if context.executing_eagerly():
            return list(executable.run(args))
        add_to_current_graph(self._functions)
        out_specs = executable.output_signature
        return execute("StatefulPartitionedCall", args,
                       {"Tin": [a.dtype for a in args], "Tout": [dtype for dtype, _ in out_specs],
                        "output_shapes": [shape for _, shape in out_specs], "f": name})

    def __repr__(self):
        return f"<loaded LoomOp '{self.name}': {self._input_type_shapes} -> {self._output_type_shapes}>"


def loaded_ops(loom_def, type_shapes, captures, library, functions):
    """[(name, LoomOp)] for a loaded loom's named ops, each with its share of
    `captures`; `library` and `functions` (LoadedFunctions) hold their functions."""
    ops, position = [], 0
    for op in loom_def.metadata.ops[len(type_shapes):]:
        inputs = [type_shapes[i] for i in op.input_type_shapes]
        outputs = [type_shapes[i] for i in op.output_type_shapes]
        if op.pass_through:
            ops.append((op.name, PassThroughLoomOp(inputs[0])))
            continue
        mine = list(captures[position:position + op.num_captures])
        position += op.num_captures
        ops.append((op.name, LoadedLoomOp(op.name, inputs, outputs, op, library, functions, mine)))
    return ops


file_kinds.register(KIND_LOOM, (Loom,), "a Loom", save_loom, load_loom)
