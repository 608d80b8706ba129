# cython: language_level=3
"""td.gather's entry, in C. While td.loom.autobatch records, a per-example
leaf's td.gather(embedding, word_id) is answered by its interceptor, called
from here without a Python frame of td.gather (once per leaf of every
example); every other gather runs array_ops' op function."""

# While td.loom.autobatch records, its recorder's row gatherer is here:
# td.gather(params, index) along axis 0 with no batch dimensions calls the
# last entry with (params, index) first, which gives the gathered value, or
# NotImplemented to gather as usual. The list is empty otherwise, so a
# gather pays one truth test for it.
gather_interceptors = []
cdef list _interceptors = gather_interceptors
cdef object _gather_op = None


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
        gathered = _interceptors[-1](params, indices)
        if gathered is not NotImplemented:
            return gathered
    return _gather_op(params, indices, axis, batch_dims, name)
