"""What an autobatched function keeps from call to call: the LoomOps it has
made (one per cell and signature, one per plain op and signature), what each
returns, and the loom of all of them (rebuilt only when an op is added)."""

import numpy as np

from treadle.framework.func_graph import FuncGraph
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.loom.autobatch.batched_ops import CellOp, PrimitiveOp, RaggedSumOp, Slot
from treadle.loom.autobatch.store import ARRAY_DTYPES
from treadle.loom.autobatch.values import MAX_OUTPUTS
from treadle.loom.loom import Loom
from treadle.loom.loom_op import PassThroughLoomOp
from treadle.loom.tracing import trace_op
from treadle.loom.type_shape import TypeShape
from treadle.util import nest


class OpInfo:
    """A LoomOp of the registry: its index, and its outputs' dtypes, shapes
    and signature numbers (Registry.signature), and how a call's outputs are packed."""

    __slots__ = ("index", "op", "outputs", "output_protos", "out_type_shapes", "in_type_shapes", "structure",
                 "pack")

    def __init__(self, index, op, registry, structure=None):
        self.index = index
        self.op = op
        self.in_type_shapes = op._input_plain_type_shapes  # a ragged input's element type shape
        self.out_type_shapes = op.output_type_shapes
        self.outputs = [(ts.dtype, ts.shape, registry.signature(ts.dtype, ts.shape)) for ts in self.out_type_shapes]
        # Per output k: (k, its part of the argument code, dtype, shape, signature), for recording.
        self.output_protos = [(k, k) + out for k, out in enumerate(self.outputs)]
        self.structure = structure  # a cell's structured outputs (None for a plain op)
        self.pack = _packer(structure)


def first_output(flat):
    """The packer of a cell that returns one tensor (recording knows it by identity)."""
    return flat[0]


def _packer(structure):
    """fn(flat output values) -> the cell's structured outputs."""
    if structure is None:
        return list
    if type(structure) in (tuple, list) and all(hasattr(t, "dtype") for t in structure):
        return type(structure)  # a flat tuple or list of tensors (td.split's)
    if hasattr(structure, "dtype") and not isinstance(structure, (list, tuple, dict)):
        return first_output

    def pack(flat):
        it = iter(flat)
        return nest.pack_sequence_as(structure, [next(it) if hasattr(leaf, "dtype") else leaf
                                                 for leaf in nest.flatten(structure)])
    return pack


_type_shapes = {}


def type_shape(dtype, shape):
    """The TypeShape of (dtype, shape), one object for each."""
    key = (dtype, shape)
    ts = _type_shapes.get(key)
    if ts is None:
        ts = _type_shapes[key] = TypeShape(dtype, tuple(shape))
    return ts


class Registry:
    def __init__(self):
        self.ops = []          # OpInfo, by index
        self.by_key = {}       # signature key -> OpInfo
        self.fast_calls = {}   # (td.function, its arguments' signature numbers) -> OpInfo (the recording fast path)
        self.fast_ops = {}     # (op name, attributes, its inputs' signature numbers) -> CallEntry (_record.create_op)
        self.list_calls = {}   # _record.list_call_key's keys -> CallEntry (cells called with lists of values)
        self._signatures = {}  # (dtype, shape) -> a small int naming it in keys (cheap to hash)
        self._loom = None
        self._loom_size = 0
        self._traces = {}  # op name -> (LoomOp, its TracedOp): kept for the next loom
        self._tables = None
        self._only_input = None  # (number of ops, the type shape all their inputs have, or None)
        self._ragged = None      # (number of ops, per op whether its one input is ragged: a bool array)
        self._array_dtypes = None  # (number of ops, whether all their type shapes' dtypes are ARRAY_DTYPES)
        self.store_capacities = {}  # type shape -> rows of the largest ArrayColumn so far (store.py)

    def signature(self, dtype, shape):
        key = (dtype, shape)
        sig = self._signatures.get(key)
        if sig is None:
            sig = self._signatures[key] = len(self._signatures)
        return sig

    # -------------------------------------------------- ops
    def cell(self, key, function, template, specs):
        """The OpInfo of td.function `function` called on `specs` (TensorSpecs
        of the per-example arguments, in slot order; `template` holds Slots)."""
        info = self.by_key.get(key)
        if info is None:
            args, kwargs = nest.map_structure(lambda leaf: specs[leaf.index] if _is_slot(leaf) else leaf, template)
            concrete = function.get_concrete_function(*args, **kwargs)
            outputs = [t for t in nest.flatten(concrete.structured_outputs) if hasattr(t, "dtype")]
            op = CellOp(function, template, concrete, [type_shape(s.dtype, tuple(s.shape.as_list())) for s in specs],
                        [type_shape(t.dtype, _static_shape(t, function)) for t in outputs])
            info = self._add(key, op, concrete.structured_outputs)
        return info

    def delay_op(self, ts):
        """The OpInfo of the pass-through op of type shape `ts` (agenda order's delays)."""
        key = ("delay", ts)
        info = self.by_key.get(key)
        if info is None:
            info = self._add(key, PassThroughLoomOp(ts))
            info.op.what = f"pass-through of {ts}"
        return info

    def primitive(self, key, op_name, attrs, inputs, specs):
        """The OpInfo of op `op_name` on `inputs` (Slots for the per-example
        inputs, whose TensorSpecs are `specs`, and shared values)."""
        info = self.by_key.get(key)
        if info is None:
            scratch = FuncGraph(f"autobatch_{op_name}")
            with scratch:
                placeholders = [scratch.add_placeholder(s.dtype, s.shape) for s in specs]
                args = [placeholders[x.index] if _is_slot(x) else
                        (x.read_value() if isinstance(x, Variable) else scratch.constant(x)) for x in inputs]
                outputs = scratch.create_op(op_name, args, attrs)
            op = PrimitiveOp(op_name, attrs, inputs, [type_shape(s.dtype, tuple(s.shape.as_list())) for s in specs],
                             [type_shape(t.dtype, _static_shape(t, op_name)) for t in outputs])
            info = self._add(key, op)
        return info

    def ragged_sum(self, ts):
        """The OpInfo of the sum of any number of values of type shape `ts`
        (td.add_n's AddN): one op for every count, so that the sums of
        lists of different lengths run in one launch."""
        key = ("ragged sum", ts)
        info = self.by_key.get(key)
        if info is None:
            info = self._add(key, RaggedSumOp(ts))
        return info

    def ragged_ops(self):
        """Per op, whether it takes one ragged input (all of a node's
        arguments feed its input 0), as a bool array; None when no op does."""
        if self._ragged is None or self._ragged[0] != len(self.ops):
            mask = np.array([isinstance(info.op, RaggedSumOp) for info in self.ops], bool)
            self._ragged = (len(self.ops), mask if mask.any() else None)
        return self._ragged[1]

    def into_ragged_inputs(self, node_op, arg_splits, arg_input):
        """Every argument of a node of a ragged op feeds that op's one input,
        0, not the input of its position: `arg_input` (positions within
        each node's arguments, decode_arguments') is set so in place."""
        ragged = self.ragged_ops()
        if ragged is not None:
            nodes = ragged[node_op]
            if nodes.any():
                arg_input[np.repeat(nodes, np.diff(arg_splits))] = 0

    def argument_type_shapes(self, node_op, arg_splits, arg_input, at):
        """(numbers, type shapes): the type shape of each argument at the
        positions `at`, numbered in the list `type shapes`, from the input
        of its node's op it feeds."""
        table, _, type_shapes = self.type_shape_tables()
        nodes = np.searchsorted(arg_splits, at, side="right") - 1
        return table[np.asarray(node_op, np.int64)[nodes], arg_input[at]], type_shapes

    def _add(self, key, op, structure=None):
        if len(op.output_type_shapes) > MAX_OUTPUTS:
            raise ValueError(f"td.loom.autobatch: {getattr(op, 'what', 'an op')} returns "
                             f"{len(op.output_type_shapes)} tensors; at most {MAX_OUTPUTS} are supported")
        info = OpInfo(len(self.ops), op, self, structure)
        self.ops.append(info)
        self.by_key[key] = info
        return info

    # -------------------------------------------------- the loom
    def op_names(self):
        return [f"op{i:05d}" for i in range(len(self.ops))]

    def loom(self):
        """The loom of every op so far (built again when ops were added).
        Every type shape an op reads has a batch input, given at each run."""
        if self._loom is None or self._loom_size != len(self.ops):
            ops = dict(zip(self.op_names(), (info.op for info in self.ops)))
            inputs = {ts for info in self.ops for ts in info.in_type_shapes}
            batch = {ts: _empty_batch(ts) for ts in inputs}
            self._loom = _RegistryLoom(self._traces, named_ops=ops, batch_inputs=batch)
            self._loom_size = len(self.ops)
            self._loom_op_indices = np.array([self._loom._op_index(name) for name in ops], np.int32)
        return self._loom

    def type_shape_tables(self):
        """(inputs, outputs, type shapes): inputs[op, j] (outputs[op, k])
        numbers the type shape of input j (output k) of op `op` of the
        registry in the list `type shapes`."""
        if self._tables is None or len(self._tables[0]) != len(self.ops):
            type_shapes, number = [], {}

            def table(lists):
                out = np.zeros((len(lists), max(1, max(map(len, lists)))), np.int64)
                for i, shapes in enumerate(lists):
                    for k, ts in enumerate(shapes):
                        if ts not in number:
                            number[ts] = len(type_shapes)
                            type_shapes.append(ts)
                        out[i, k] = number[ts]
                return out
            self._tables = (table([info.in_type_shapes for info in self.ops]),
                            table([info.out_type_shapes for info in self.ops]), type_shapes)
        return self._tables

    def array_dtypes_only(self):
        """Whether every type shape of the registry's ops has a dtype that
        NumPy holds as it is (store.ARRAY_DTYPES): the store may be arrays."""
        if self._array_dtypes is None or self._array_dtypes[0] != len(self.ops):
            type_shapes = {ts for info in self.ops for ts in (*info.in_type_shapes, *info.out_type_shapes)}
            numpy_dtypes = (np.dtype(ts.dtype.as_numpy_dtype) for ts in type_shapes)
            self._array_dtypes = (len(self.ops), all(d in ARRAY_DTYPES for d in numpy_dtypes))
        return self._array_dtypes[1]

    def only_input_type_shape(self):
        """The type shape that every input of every op of the registry has,
        or None (a decoder's ops all read its state: a round's store reads
        then need no lookup per argument)."""
        if self._only_input is None or self._only_input[0] != len(self.ops):
            shapes = {ts for info in self.ops for ts in info.in_type_shapes}
            self._only_input = (len(self.ops), shapes.pop() if len(shapes) == 1 else None)
        return self._only_input[1]

    def loom_op_indices(self):
        """Per op of the registry, its index in the loom (for a bulk weave)."""
        self.loom()
        return self._loom_op_indices


class _RegistryLoom(Loom):
    """The loom of a registry's ops, whose traces (each op's batched
    function, traced by vectorized_map) are kept in `traces` ({op name:
    (op, TracedOp)}): a loom built again because ops were added traces only
    those. (A call whose examples make new ops, a list call of a new length
    say, builds the loom again; tracing every op again cost most of it.)"""

    def __init__(self, traces, **kwargs):
        self._kept_traces = traces
        super().__init__(**kwargs)

    def _trace_ops(self):
        traced = {}
        for name, op in self._ops:
            if type(op) is PassThroughLoomOp:
                continue
            kept = self._kept_traces.get(name)
            if kept is None or kept[0] is not op:
                kept = self._kept_traces[name] = (op, trace_op(name, op))
            traced[name] = kept[1]
        return traced


def _is_slot(leaf):
    return type(leaf) is Slot


def _empty_batch(ts):
    return convert_to_tensor(np.zeros((0,) + ts.shape, ts.dtype.as_numpy_dtype))


def _static_shape(t, what):
    dims = t.shape.dims if hasattr(t.shape, "dims") else list(t.shape)
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"td.loom.autobatch: {getattr(what, '__name__', what)} returns a tensor of shape {t.shape}; "
                         "its shape must be known from the shapes of its per-example inputs")
    return tuple(dims)

