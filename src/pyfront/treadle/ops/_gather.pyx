# cython: language_level=3
"""td.gather's entry, in C. While td.loom.autobatch records, a per-example
leaf's td.gather(embedding, word_id) is answered by its interceptor, called
from here without a Python frame of td.gather (once per leaf of every
example); every other gather runs array_ops' op function."""

from cpython.pycapsule cimport PyCapsule_GetPointer

# While td.loom.autobatch records, its recorder's row gatherer is here:
# td.gather(params, index) along axis 0 with no batch dimensions calls the
# last entry with (params, index) first, which gives the gathered value, or
# NotImplemented to gather as usual. The list is empty otherwise, so a
# gather pays one truth test for it.
gather_interceptors = []
cdef list _interceptors = gather_interceptors
cdef object _gather_op = None

# An interceptor type may also give its call as a C function (in a capsule
# named "treadle.ops._gather.c_interceptor"): then offering it a leaf's
# gather costs no Python call.
ctypedef object (*c_interceptor)(object hook, object params, object indices)
cdef object _c_type = None
cdef c_interceptor _c_call = NULL


def register_c_interceptor(hook_type, capsule):
    """Calls of interceptors of exactly `hook_type` go to the C function in
    `capsule` (named "treadle.ops._gather.c_interceptor"), which behaves as
    calling the interceptor does. One type at a time (the last registered)."""
    global _c_type, _c_call
    if not isinstance(hook_type, type):
        raise TypeError(f"register_c_interceptor takes a type, got {hook_type!r}")
    _c_call = <c_interceptor> PyCapsule_GetPointer(capsule, "treadle.ops._gather.c_interceptor")
    _c_type = hook_type


def set_gather_op(gather_op):
    """The function gather runs when no interceptor answers:
    gather_op(params, indices, axis, batch_dims, name) (array_ops')."""
    global _gather_op
    _gather_op = gather_op


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` (default: `batch_dims`) at `indices`.
    An index outside [0, params.shape[axis]) is an InvalidArgumentError."""
    if _interceptors and type(batch_dims) is int and batch_dims == 0 and (
            axis is None or (type(axis) is int and axis == 0)):
        hook = _interceptors[-1]
        gathered = _c_call(hook, params, indices) if type(hook) is _c_type else hook(params, indices)
        if gathered is not NotImplemented:
            return gathered
    return _gather_op(params, indices, axis, batch_dims, name)
