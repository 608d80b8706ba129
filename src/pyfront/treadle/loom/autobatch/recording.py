"""Recording one call of an autobatched function: the plain ops and cell
calls the examples make on per-example values become nodes of the current
round's schedule (kept as the arrays of Weaver.weave, filled as they come),
and the shared inputs they read (constants, rows of variables, values
computed by earlier rounds) rows of the round's batch inputs."""

from operator import attrgetter
from threading import get_ident

import numpy as np

from treadle.framework import context
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.loom.autobatch._record import (Round, RecorderFields, Value, add_call_node, call_entry, create_op,
                                            list_call_key, op_entry, op_key)
from treadle.loom.autobatch.batched_ops import Slot
from treadle.loom.autobatch.registry import type_shape
from treadle.loom.autobatch.values import CONST_ROW, CONSTANT, PENDING, STORED, VAR_ROW, VARIABLE
from treadle.util import nest

_signature_of = attrgetter("_autobatch_sig")  # a Value's signature number; AttributeError for other arguments

_SMALL_INT_STATIC = 8  # an integer eager tensor of at most this many elements is an attribute-like input


class CrossExampleError(ValueError):
    """A value of one example was used by another example's computation."""


class Recorder(RecorderFields):
    """One call of an autobatched function: what it records, and the store of
    the values earlier rounds computed (per type shape, a tensor of rows).
    The fields every recorded call reads (the example running now, the
    round, the recording thread) are C fields (_record.RecorderFields)."""

    def __init__(self, registry):
        self.registry = registry
        self.current = None       # the index of the example running now (None: no example runs)
        self.finished = False
        self.round = Round()
        self.store = {}           # type shape -> ArrayColumn or StoreColumn of the rows so far (store.py)
        self.replay = None        # under a tape: the Replay of every round's nodes (replay.py)
        self.wait = None          # set by the scheduler: wait(value) suspends the running example
        self.stats = []           # per round: {"nodes", "loom_depth", and with count_launches launch_counts'}
        self.count_launches = False
        self.recording_seconds = 0.0  # time the examples ran (recording), rounds excluded
        self.thread = get_ident()     # the thread whose examples record (others' calls run as usual)
        self.schedule = "depth"       # or "agenda": the order a round's nodes run in (agenda.py)
        self._variable_values = {}    # id(variable) -> its shared Value
        self._row_type_shapes = {}    # id(variable) -> (TypeShape of a row, its signature number)
        self._variable_rows = {}      # id(variable) -> per row, its Value (None until gathered)
        self._axis_zero = None        # the axis tensor last seen to be 0 (td.gather passes the same one)

    def finish(self):
        """The call returned: its values may no longer be used, and the
        shared values it kept (which reference it) are dropped, so that
        reference counting frees the recorder (no cycle is left for the
        collector)."""
        self.finished = True
        self._variable_values.clear()
        self._variable_rows.clear()

    # -------------------------------------------------- values
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
            return self.store[src[1]].numpy_row(src[2])
        if src[0] == VAR_ROW:
            return self._variable_value(src[2])[src[3]]
        if src[0] == VARIABLE:
            return self._variable_value(src[1])
        if src[0] == CONST_ROW:
            return src[2]
        raise AssertionError("a pending value is read before its round ran")

    def _variable_value(self, var):
        """The variable's value now (a real read, not the shared value recording gives)."""
        current, self.current = self.current, None
        try:
            return np.asarray(var.read_value())
        finally:
            self.current = current

    def eager_of(self, value):
        """The value as an eager tensor (outside recording; a tape sees the ops)."""
        src = value.src
        if src[0] == STORED:
            return self.store[src[1]].eager_row(src[2])
        if src[0] == VAR_ROW:
            return src[2].read_value()[src[3]]
        if src[0] == VARIABLE:
            return src[1].read_value()
        if src[0] == CONST_ROW:
            return convert_to_tensor(src[2], dtype=src[1].dtype)
        raise AssertionError("a pending value is read before its round ran")

    def shared_variable_value(self, var):
        """(_record.ReadHook) The shared Value a variable read inside the
        function gives (one per variable and call)."""
        value = self._variable_values.get(id(var))
        if value is None:
            value = Value(self, None, (VARIABLE, var), var.dtype, tuple(var.shape.as_list()))
            self._variable_values[id(var)] = value
        return value

    # -------------------------------------------------- recording a plain op
    create_op = create_op  # execute() of an op with a per-example input (gathered rows in Cython)

    def record_op(self, op_name, inputs, attrs):
        """(_record.create_op) Records an op with a per-example input (or runs
        it eagerly when it reads only shared values); returns its outputs."""
        if self.current is None:
            self._check_inputs(op_name, inputs)
        slots, specs, per_example, key_parts = [], [], False, []
        for x in inputs:
            if type(x) is Value:
                self.check_owner(x, f"op {op_name}")
                if x.src[0] == VARIABLE:
                    slots.append(x.src[1])
                    key_parts.append(("v", id(x.src[1])))
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
        if not per_example:
            return self._run_shared(op_name, inputs, attrs)
        key = ("op", op_name, _freeze(attrs), tuple(key_parts))
        info = self.registry.by_key.get(key)
        if info is None and op_name == "AddN":
            info = self._ragged_sum(inputs)
        if info is None:
            info = self.registry.primitive(key, op_name, attrs, slots,
                                           [TensorSpec(_shape_of(x), x.dtype) for x in specs])
        fast = op_key(op_name, inputs, attrs)
        if fast is not None:  # inputs all values (per-example or variables): create_op records the next such op
            self.registry.fast_ops[fast] = op_entry(info)
        return self._add_node(info, specs)

    def _ragged_sum(self, inputs):
        """The registry's sum of any count (registry.ragged_sum) for td.add_n
        of per-example values and rows of variables of one signature; None
        for any other AddN (an eager tensor or a variable among its inputs)."""
        sigs = {getattr(x, "_autobatch_sig", None) for x in inputs}
        if len(sigs) != 1 or None in sigs or any(type(x) is not Value for x in inputs):
            return None
        return self.registry.ragged_sum(type_shape(inputs[0].dtype, inputs[0]._shape_tuple_))

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

    def _row_values(self, params):
        """(_record.variable_row) The list to hold one Value per row of the
        variable (None until gathered), kept for the rest of the call."""
        var = params.src[1]
        shape = params._shape_tuple_[1:]
        self._row_type_shapes[id(var)] = (type_shape(var.dtype, shape), self.registry.signature(var.dtype, shape))
        rows = self._variable_rows[id(var)] = [None] * params._shape_tuple_[0]
        return rows

    # -------------------------------------------------- recording a cell call
    def call(self, function, args, kwargs):
        """A td.function called inside the per-example function with tensors:
        one node. The general path (_record.CallHook records the calls it
        caches in registry.fast_calls, positional per-example values, and
        in registry.list_calls, values and lists of values)."""
        if self.current is None or get_ident() != self.thread or context.graph_being_built() is not None:
            return NotImplemented  # not an example's call: between examples, while tracing, another thread
        info = self._call_info(function, args, kwargs)
        if info is NotImplemented:
            return info
        if not kwargs:
            try:
                key = (function, *map(_signature_of, args))
            except AttributeError:  # not a Value: an eager tensor, a Python value
                key = None
            if key is not None and None not in key:
                self.registry.fast_calls[key] = call_entry(info)
                return info.pack(add_call_node(self, info, args))
            listed = list_call_key(function, args)
            if listed is not None:  # cell(x, [values], ...): CallHook records the next such call from the cache
                self.registry.list_calls[listed[0]] = call_entry(info)
                return info.pack(add_call_node(self, info, listed[1]))
        return info.pack(self._add_node(info, [x for x in nest.flatten((args, kwargs)) if _per_example(x)]))

    def _call_info(self, function, args, kwargs):
        """The OpInfo of a cell call (NotImplemented for a call without tensors)."""
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
        return info

    # -------------------------------------------------- nodes
    def _add_node(self, info, inputs):
        """Appends a node of op `info` reading `inputs` (values and eager
        tensors, in the op's input order); returns its output values."""
        r = self.round
        node = len(r.node_op)
        current = self.current
        r.node_op.append(info.index)
        append = r.args.append
        for j, x in enumerate(inputs):
            if type(x) is not Value:  # an eager tensor: a constant row
                g = r.group(info.in_type_shapes[j], CONSTANT, None)
                rows = r.groups[g][3]
                append(-1 - ((len(rows) << 16) | (g + 1)))  # row_code(len(rows), g), inline: the hot path
                rows.append(x)  # stacked with the round's other rows (by a taped op when a tape records)
                continue
            if x._example is not None and x._example != current:
                self.check_owner(x, info.op.what)
            src = x.src
            kind = src[0]
            if kind == PENDING:
                if src[3] is not r:
                    raise RuntimeError("td.loom.autobatch: a value was not kept by the round that computed it "
                                       "(it seemed unreferenced then); please report this")
                append(src[4])
            elif kind == STORED:
                append(src[3])
            elif kind == CONST_ROW:  # a td.constant made inside an example: a constant row
                g = r.group(src[1], CONSTANT, None)
                rows = r.groups[g][3]
                append(-1 - ((len(rows) << 16) | (g + 1)))
                rows.append(src[2])
            else:  # VAR_ROW (a variable itself is a shared input, never a node's argument)
                g = r.group(src[1], VAR_ROW, src[2])
                rows = r.groups[g][3]
                append(-1 - ((len(rows) << 16) | (g + 1)))
                rows.append(src[3])
        r.arg_splits.append(len(r.args))
        fresh = r.fresh
        outputs = [Value(self, current, (PENDING, node, k, r, (node << 8) | k), dtype, shape, sig)
                   for k, (dtype, shape, sig) in enumerate(info.outputs)]
        fresh.extend(outputs)
        return outputs


def _shape_of(x):
    return x._shape_tuple_ if type(x) is Value else x._shape_tuple()


def _per_example(x):
    return (type(x) is Value and x.src[0] != VARIABLE) or type(x) is EagerTensor


def _template(structure):
    """`structure` with each per-example argument (a value or an eager tensor) replaced by its Slot."""
    counter = [0]

    def leaf(x):
        if _per_example(x):
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


