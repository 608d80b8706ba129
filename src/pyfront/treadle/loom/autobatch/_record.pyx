# cython: language_level=3, boundscheck=False, wraparound=False
"""The hot path of td.loom.autobatch's recording, in Cython because it runs
once per cell call of every example: a td.function called positionally with
per-example values whose (function, signature numbers) was seen before is
recorded here, without the interpreter. Everything else (first calls,
keywords, eager tensors, Python values) goes to Recorder.call, which fills
the cache this path reads."""

from threading import get_ident

from treadle.framework import context
from treadle.loom.autobatch.values import PENDING, STORED, Value

cdef object _graph_being_built = context.graph_being_built
cdef object _new = Value.__new__
cdef int _PENDING = PENDING
cdef int _STORED = STORED


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


def add_call_node(rec, info, tuple args):
    """Appends a node of op `info` reading `args` (per-example values and
    rows of variables, in the op's input order) to the recorder's round;
    returns its output values."""
    r = rec.round
    current = rec.current
    cdef list node_op = r.node_op
    cdef list codes = r.args
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
            codes.append(rec._argument_code(r, x))
    r.arg_splits.append(len(codes))
    cdef list outputs = []
    cdef long base = node << 8
    for k, code, dtype, shape, sig in info.output_protos:
        v = _new(Value)
        v._recorder = rec
        v._example = current
        v.src = (_PENDING, node, k, r, base + code)
        v._dtype = dtype
        v._shape_tuple_ = shape
        v._autobatch_sig = sig
        outputs.append(v)
    r.fresh.extend(outputs)
    return outputs
