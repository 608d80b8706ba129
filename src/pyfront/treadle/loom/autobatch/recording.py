"""Recording one call of an autobatched function: the plain ops and cell
calls the examples make on per-example values become nodes of the current
round's schedule (kept as the arrays of Weaver.weave, filled as they come),
and the shared inputs they read (constants, rows of variables, values
computed by earlier rounds) rows of the round's batch inputs."""

import weakref

import numpy as np

from treadle.framework import context
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.loom.autobatch.batched_ops import Slot
from treadle.loom.autobatch.registry import type_shape
from treadle.loom.autobatch.values import CONSTANT, PENDING, STORED, VAR_ROW, VARIABLE, Value
from treadle.util import nest

NODE_SOURCE, BATCH_INPUT_SOURCE = 0, 1  # Weaver.NODE, Weaver.BATCH_INPUT
_SMALL_INT_STATIC = 8  # an integer eager tensor of at most this many elements is an attribute-like input


class CrossExampleError(ValueError):
    """A value of one example was used by another example's computation."""


class Round:
    """The schedule being recorded: Weaver.weave's arrays, and the rows the
    nodes read from batch inputs, by group (a type shape and where the rows
    come from: constants, a variable's rows, or the store)."""

    def __init__(self):
        self.node_op = []
        self.node_example = []
        self.arg_splits = [0]
        self.arg_input = []
        self.arg_source = []
        self.arg_value = []
        self.arg_output = []
        self.arg_group = []   # -1: the value is final; else the group whose rows it numbers
        self.groups = []      # (type shape, kind, variable or None, rows list)
        self.group_index = {}
        self.fresh = []       # weakrefs to the PENDING values made this round

    def __len__(self):
        return len(self.node_op)

    def group(self, ts, kind, var):
        key = (ts, kind, None if var is None else id(var))
        g = self.group_index.get(key)
        if g is None:
            g = self.group_index[key] = len(self.groups)
            self.groups.append((ts, kind, var, []))
        return g


class Recorder:
    """One call of an autobatched function: what it records, and the store of
    the values earlier rounds computed (per type shape, a tensor of rows)."""

    def __init__(self, registry):
        self.registry = registry
        self.current = None       # the index of the example running now (None: no example runs)
        self.finished = False
        self.round = Round()
        self.rounds_run = 0
        self.store = {}           # type shape -> tensor of the rows computed so far
        self.wait = None          # set by the scheduler: wait(value) suspends the running example
        self.stats = []           # per round: {"nodes", "loom_depth", and with count_launches launch_counts'}
        self.count_launches = False

    # -------------------------------------------------- values
    def new_value(self, src, dtype, shape, example):
        v = Value(self, example, src, dtype, shape)
        if src[0] == PENDING:
            self.round.fresh.append(weakref.ref(v))
        return v

    def check_owner(self, value, what):
        """A value of example i may only be used by example i's computation."""
        owner = value._example
        if owner is not None and owner != self.current:
            if self.finished:
                raise ValueError(f"td.loom.autobatch: a tensor of example {owner} is used ({what}) after the "
                                 "autobatched call returned; use the call's outputs instead")
            if self.current is None:
                raise CrossExampleError(f"td.loom.autobatch: a tensor of example {owner} is used outside the "
                                        f"per-example function ({what}) while the batch is recording")
            raise CrossExampleError(f"td.loom.autobatch: a tensor of example {owner} is used by example "
                                    f"{self.current}'s computation ({what}); each example may only use its own "
                                    "tensors (and shared ones: variables, constants)")

    def read(self, value):
        """The value's NumPy value; suspends the running example until its batch has run."""
        if self.finished or self.current is None:
            owner = "a shared value" if value._example is None else f"a value of example {value._example}"
            if self.finished:
                raise ValueError(f"td.loom.autobatch: {owner} is read after the autobatched call returned; use "
                                 "the call's outputs instead")
            raise ValueError(f"td.loom.autobatch: {owner} is read outside the per-example function while the "
                             "batch is still recording")
        self.check_owner(value, "reading its value")
        if value.src[0] == PENDING:
            self.wait(value)
        return self.numpy_of(value)

    def numpy_of(self, value):
        src = value.src
        if src[0] == STORED:
            return np.asarray(self.store[src[1]])[src[2]]
        if src[0] == CONSTANT:
            return src[2]
        if src[0] == VAR_ROW:
            return np.asarray(src[2].numpy())[src[3]]
        if src[0] == VARIABLE:
            return np.asarray(src[1].numpy())
        raise AssertionError("a pending value is read before its round ran")

    def eager_of(self, value):
        """The value as an eager tensor (outside recording; a tape sees the ops)."""
        src = value.src
        if src[0] == STORED:
            return self.store[src[1]][src[2]]
        if src[0] == CONSTANT:
            return convert_to_tensor(src[2])
        if src[0] == VAR_ROW:
            return src[2].read_value()[src[3]]
        if src[0] == VARIABLE:
            return src[1].read_value()
        raise AssertionError("a pending value is read before its round ran")

    def read_override(self, var):
        """While an example runs (not while tracing), reading a variable gives a shared value."""
        if self.current is None or context.graph_being_built() is not None:
            return None
        return Value(self, None, (VARIABLE, var), var.dtype, tuple(var.shape.as_list()))

    # -------------------------------------------------- recording a plain op
    def create_op(self, op_name, inputs, attrs, name=None):
        """execute() of an op with a per-example input: records it (or runs it
        eagerly when it reads only shared values); returns its outputs."""
        if self.current is None:
            self._check_inputs(op_name, inputs)
        slots, specs, shared, per_example, key_parts = [], [], [], False, []
        for x in inputs:
            if type(x) is Value:
                self.check_owner(x, f"op {op_name}")
                if x.src[0] == VARIABLE:
                    slots.append(x.src[1])
                    key_parts.append(("v", id(x.src[1])))
                    shared.append(x)
                    continue
                per_example = True
            elif type(x) is EagerTensor and x.dtype.is_integer and x._num_elements() <= _SMALL_INT_STATIC:
                slots.append(x)
                key_parts.append(("i", x.dtype, x._numpy_view().tobytes(), x._shape_tuple()))
                continue
            elif type(x) is not EagerTensor:
                raise TypeError(f"td.loom.autobatch: op {op_name} got {x!r}, not a tensor")
            slots.append(Slot(len(specs)))
            specs.append(x)
            key_parts.append(("s", x.dtype, _shape_of(x)))
        gathered = self._variable_row(op_name, inputs, attrs)
        if gathered is not None:
            return [gathered]
        if not per_example:
            return self._run_shared(op_name, inputs, attrs)
        key = ("op", op_name, _freeze(attrs), tuple(key_parts))
        info = self.registry.by_key.get(key)
        if info is None:
            info = self.registry.primitive(key, op_name, attrs, slots,
                                           [TensorSpec(_shape_of(x), x.dtype) for x in specs])
        return self._add_node(info, specs)

    def _check_inputs(self, op_name, inputs):
        for x in inputs:
            if type(x) is Value:
                self.check_owner(x, f"op {op_name}")

    def _run_shared(self, op_name, inputs, attrs):
        """An op reading only shared values (variables, constants) runs now."""
        args = [x.src[1].read_value() if type(x) is Value else x for x in inputs]
        current, self.current = self.current, None  # reads below are real reads
        try:
            return execute(op_name, args, attrs)
        finally:
            self.current = current

    def _variable_row(self, op_name, inputs, attrs):
        """td.gather(variable, id) with a known id: a row of the variable,
        read through the round's batch input (one gather for all of them)."""
        if op_name != "GatherV2" or len(inputs) != 3:
            return None
        params, indices, axis = inputs
        if not (type(params) is Value and params.src[0] == VARIABLE and type(indices) is EagerTensor
                and indices.dtype.is_integer and not indices._shape_tuple() and type(axis) is EagerTensor
                and int(axis._numpy_view()) == 0 and not (attrs or {}).get("batch_dims", 0)):
            return None
        var = params.src[1]
        row = int(indices._numpy_view())
        rows = params._shape_tuple_[0]
        if not 0 <= row < rows:
            raise IndexError(f"td.gather: index {row} is out of range for a variable of {rows} rows")
        shape = params._shape_tuple_[1:]
        return Value(self, None, (VAR_ROW, type_shape(var.dtype, shape), var, row), var.dtype, shape)

    # -------------------------------------------------- recording a cell call
    def call(self, function, args, kwargs):
        """A td.function called inside the per-example function with tensors: one node."""
        if self.current is None:
            return NotImplemented
        leaves = nest.flatten((args, kwargs))
        specs, key_parts, has_value = [], [], False
        for x in leaves:
            t = type(x)
            if t is Value:
                self.check_owner(x, f"td.function '{function.__name__}'")
                has_value = True
                if x.src[0] == VARIABLE:
                    key_parts.append(("v", id(x.src[1])))
                    continue
                specs.append(x)
                key_parts.append((x._dtype, x._shape_tuple_))
            elif t is EagerTensor:  # a constant of this example: a row of a batch input
                specs.append(x)
                key_parts.append((x.dtype, x._shape_tuple()))
                has_value = True
            else:
                key_parts.append(_static_key(x))
        if not has_value:
            return NotImplemented
        key = ("cell", function, _structure_key(args, kwargs), tuple(key_parts))
        info = self.registry.by_key.get(key)
        if info is None:
            template = _template((args, kwargs))
            info = self.registry.cell(key, function, template, [TensorSpec(_shape_of(x), x.dtype) for x in specs])
        outputs = self._add_node(info, specs)
        it = iter(outputs)
        return nest.pack_sequence_as(info.structure, [next(it) if hasattr(leaf, "dtype") else leaf
                                                      for leaf in nest.flatten(info.structure)])

    # -------------------------------------------------- nodes
    def _add_node(self, info, inputs):
        """Appends a node of op `info` reading `inputs` (values and eager
        tensors, in the op's input order); returns its output values."""
        r = self.round
        node = len(r.node_op)
        r.node_op.append(info.index)
        r.node_example.append(self.current)
        for j, x in enumerate(inputs):
            r.arg_input.append(j)
            src = x.src if type(x) is Value else None
            if src is None:  # an eager tensor: a constant row
                g = r.group(info.in_type_shapes[j], CONSTANT, None)
                rows = r.groups[g][3]
                r.arg_source.append(BATCH_INPUT_SOURCE)
                r.arg_value.append(len(rows))
                r.arg_output.append(0)
                r.arg_group.append(g)
                rows.append(x)  # stacked with the round's other rows (by a taped op when a tape records)
            elif src[0] == PENDING:
                r.arg_source.append(NODE_SOURCE)
                r.arg_value.append(src[1])
                r.arg_output.append(src[2])
                r.arg_group.append(-1)
            elif src[0] == STORED:
                r.arg_source.append(BATCH_INPUT_SOURCE)
                r.arg_value.append(src[2])
                r.arg_output.append(0)
                r.arg_group.append(-1)
            else:
                kind, var, row = (CONSTANT, None, src[2]) if src[0] == CONSTANT else (VAR_ROW, src[2], src[3])
                g = r.group(src[1], kind, var)
                rows = r.groups[g][3]
                r.arg_source.append(BATCH_INPUT_SOURCE)
                r.arg_value.append(len(rows))
                r.arg_output.append(0)
                r.arg_group.append(g)
                rows.append(row)
        r.arg_splits.append(len(r.arg_input))
        example = self.current
        fresh = r.fresh
        outputs = []
        for k, (dtype, shape) in enumerate(zip(info.out_dtypes, info.out_shapes)):
            v = Value(self, example, (PENDING, node, k), dtype, shape)
            fresh.append(weakref.ref(v))
            outputs.append(v)
        return outputs


def _shape_of(x):
    return x._shape_tuple_ if type(x) is Value else x._shape_tuple()


def _template(structure):
    """`structure` with each per-example argument (a value or an eager tensor) replaced by its Slot."""
    counter = [0]

    def leaf(x):
        if (type(x) is Value and x.src[0] != VARIABLE) or type(x) is EagerTensor:
            s = Slot(counter[0])
            counter[0] += 1
            return s
        if type(x) is Value:  # a variable read inside the function: the variable itself
            return x.src[1]
        return x
    return nest.map_structure(leaf, structure)


def _structure_key(args, kwargs):
    return (tuple(_shape_key(a) for a in args), tuple(sorted(kwargs)) if kwargs else ())


def _shape_key(a):
    if isinstance(a, (list, tuple)):
        return (type(a), tuple(_shape_key(x) for x in a))
    if isinstance(a, dict):
        return (dict, tuple(sorted(a)))
    return None


def _static_key(x):
    try:
        hash(x)
        return ("=", type(x), x)
    except TypeError:
        return ("id", id(x))


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


