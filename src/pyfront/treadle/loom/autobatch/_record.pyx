# cython: language_level=3, boundscheck=False, wraparound=False
"""The hot paths of td.loom.autobatch, in Cython because they run once per
cell call, variable read or row gather of every example (or once per value
per round):

- CallHook: a td.function called positionally with per-example values whose
  (function, signature numbers) was seen before is recorded without the
  interpreter; every other call goes to Recorder.call, which fills the
  cache this path reads.
- ReadHook: a variable read inside an example gives its shared value.
- GatherHook: td.gather(variable, Python or NumPy int) inside an example
  is a row of the variable, before either argument becomes a tensor.
- create_op: td.gather(variable, id) with a known id is a row of the variable.
- live_values: the values a round must keep, by reference count."""

from cpython.ref cimport Py_REFCNT

from threading import get_ident

import numpy as np

from treadle.framework import context
from treadle.framework.variables import Variable
from treadle.framework.tensor import EagerTensor
from treadle.loom.autobatch.values import PENDING, STORED, VAR_ROW, VARIABLE, Value

cdef object _graph_being_built = context.graph_being_built
cdef object _new = Value.__new__
cdef object _np_integer = np.integer
cdef int _PENDING = PENDING
cdef int _STORED = STORED
cdef int _VAR_ROW = VAR_ROW
cdef int _VARIABLE = VARIABLE


cdef class CallHook:
    """Function.__call__'s interceptor while `recorder` records: records a
    known cell call (the fast path) or hands it to recorder.call."""

    cdef object recorder
    cdef dict fast_calls  # (function, argument signature numbers) -> OpInfo
    cdef object general   # recorder.call
    cdef object thread

    def __init__(self, recorder):
        self.recorder = recorder
        self.fast_calls = recorder.registry.fast_calls
        self.general = recorder.call
        self.thread = recorder.thread

    def __call__(self, function, tuple args, dict kwargs):
        rec = self.recorder
        current = rec.current
        if current is None or kwargs or get_ident() != self.thread or _graph_being_built() is not None:
            return self.general(function, args, kwargs)
        cdef Py_ssize_t n = len(args), i
        cdef list key = [function]
        for i in range(n):
            x = args[i]
            if type(x) is not Value:
                return self.general(function, args, kwargs)
            sig = x._autobatch_sig
            if sig is None:  # a variable read inside the function: the general path
                return self.general(function, args, kwargs)
            key.append(sig)
        info = self.fast_calls.get(tuple(key))
        if info is None:
            return self.general(function, args, kwargs)
        return info.pack(add_call_node(rec, info, args))


cdef class ReadHook:
    """Variable.read_value's override while `recorder` records: inside an
    example (not while tracing, not in another thread) reading a variable
    gives its shared Value; elsewhere the variable is read as usual."""

    cdef object recorder
    cdef dict values  # id(variable) -> its shared Value
    cdef object thread

    def __init__(self, recorder):
        self.recorder = recorder
        self.values = recorder._variable_values
        self.thread = recorder.thread

    def __call__(self, var):
        if self.recorder.current is None or get_ident() != self.thread or _graph_being_built() is not None:
            return None
        value = self.values.get(id(var))
        if value is None:
            value = self.recorder.shared_variable_value(var)
        return value


cdef class GatherHook:
    """td.gather's interceptor while `recorder` records: inside an example
    (not while tracing, not in another thread), td.gather(variable, row)
    with a Python or NumPy integer row in range is the row's Value, as
    variable_row gives it after the arguments became tensors; any other
    gather (and a row out of range, for the usual error) is NotImplemented,
    gathered as usual."""

    cdef object recorder
    cdef dict values  # id(variable) -> its shared Value (ReadHook's)
    cdef object thread

    def __init__(self, recorder):
        self.recorder = recorder
        self.values = recorder._variable_values
        self.thread = recorder.thread

    def __call__(self, params, index):
        rec = self.recorder
        if rec.current is None or get_ident() != self.thread or _graph_being_built() is not None:
            return NotImplemented
        if type(index) is not int:
            if not isinstance(index, _np_integer):
                return NotImplemented
            index = int(index)
        if type(params) is Variable:  # what reading it inside the example gives (ReadHook)
            var = params
            params = self.values.get(id(var))
            if params is None:
                params = rec.shared_variable_value(var)
        elif type(params) is not Value or params.src[0] != _VARIABLE:
            return NotImplemented
        value = _row_value(rec, params, index)
        return NotImplemented if value is None else value


def add_call_node(rec, info, tuple args):
    """Appends a node of op `info` reading `args` (per-example values and
    rows of variables, in the op's input order) to the recorder's round;
    returns its output values."""
    r = rec.round
    current = rec.current
    node_op = r.node_op  # int64 arrays (array.array)
    codes = r.args
    cdef Py_ssize_t node = len(node_op)
    node_op.append(info.index)
    for x in args:
        example = x._example
        if example is not None and example != current:
            rec.check_owner(x, info.op.what)
        src = x.src
        kind = src[0]
        if kind == _PENDING and src[3] is r:
            codes.append(src[4])
        elif kind == _STORED:
            codes.append(src[3])
        else:
            codes.append(_row_code(r, src))
    r.arg_splits.append(len(codes))
    cdef list outputs = []
    cdef long base = node << 8
    for k, code, dtype, shape, sig in info.output_protos:
        v = _new(Value)
        v.graph = rec
        v._example = current
        v.src = (_PENDING, node, k, r, base + code)
        v._dtype = dtype
        v._shape_tuple_ = shape
        v._autobatch_sig = sig
        outputs.append(v)
    r.fresh.extend(outputs)
    return outputs


cdef long _row_code(r, tuple src) except? -1:
    """The argument code of a node's input that is neither this round's node
    output nor stored: a row of a variable (numbered in its group of rows)."""
    if src[0] == _PENDING:
        raise RuntimeError("td.loom.autobatch: a value was not kept by the round that computed it "
                           "(it seemed unreferenced then); please report this")
    if src[0] != _VAR_ROW:
        raise AssertionError(f"a value of source {src[0]} is a node's argument")
    g = r.group_index.get((id(src[1]), _VAR_ROW, id(src[2])))  # Round.group's key: its lookup, inline
    if g is None:
        g = r.group(src[1], _VAR_ROW, src[2])
    cdef list rows = r.groups[g][3]
    rows.append(src[3])
    cdef long group = g
    return -1 - (((len(rows) - 1) << 16) | (group + 1))


def create_op(rec, op_name, inputs, attrs, name=None):
    """Recorder.create_op: execute() of an op with a per-example input. A
    gathered variable row is recorded here; every other op by
    rec.record_op."""
    if op_name == "GatherV2" and rec.current is not None and len(inputs) == 3:
        gathered = variable_row(rec, inputs[0], inputs[1], inputs[2], attrs)
        if gathered is not None:
            return [gathered]
    return rec.record_op(op_name, inputs, attrs)


def variable_row(rec, params, indices, axis, attrs):
    """td.gather(variable, id) with a known id (GatherV2 of the variable's
    shared value, a scalar integer eager tensor, axis 0): the row's Value, a
    row of the round's batch input (one gather for all of them); None for
    any other gather. A row's value is shared (every example may use it), so
    each row has one Value per call, made at its first gather."""
    if type(params) is not Value or params.src[0] != _VARIABLE or type(indices) is not EagerTensor:
        return None
    if indices._shape_tuple() or not indices.dtype.is_integer:
        return None
    if axis is not rec._axis_zero:  # the same cached tensor each time (ops' index constants)
        if type(axis) is not EagerTensor or axis._shape_tuple() or int(axis) != 0:
            return None
        rec._axis_zero = axis
    if attrs and attrs.get("batch_dims", 0):
        return None
    row = int(indices)
    value = _row_value(rec, params, row)
    if value is None:
        n = len(rec._variable_rows[id(params.src[1])])
        raise IndexError(f"td.gather: index {row} is out of range for a variable of {n} rows")
    return value


cdef object _row_value(rec, params, row):
    """Row `row` (a Python int) of the variable whose shared value is
    `params`: its Value, made at its first gather in this call; None for a
    row out of range."""
    var = params.src[1]
    cdef list rows = rec._variable_rows.get(id(var))
    if rows is None:
        rows = rec._row_values(params)
    if not 0 <= row < len(rows):
        return None
    value = rows[row]
    if value is None:
        ts, sig = rec._row_type_shapes[id(var)]
        value = rows[row] = Value(rec, None, (_VAR_ROW, ts, var, row), ts[0], ts[1], sig)
    return value


def live_values(list fresh):
    """The values of `fresh` referenced from anywhere else (an example's
    frame, another value's structure, an output): only they need their
    value after the round. A value held only by `fresh` has two references
    here: the list's and the loop's."""
    cdef list live = []
    for v in fresh:
        if Py_REFCNT(v) > 2:
            live.append(v)
    return live
