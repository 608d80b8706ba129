# cython: language_level=3
"""The first step of calling a td.function, in C: td.loom.autobatch records
every cell call its examples make (thousands per batch), and its
interceptor answers most of them without the interpreter. Here, before
any Python frame of the call is made, the last interceptor (if one is set)
gets the call; everything else is Function._call, in Python."""

from cpython.pycapsule cimport PyCapsule_GetPointer

# td.loom.autobatch records the calls made with its per-example values: while
# it records, the last entry is called first, as callable(function, args,
# kwargs), and returns the call's result, or NotImplemented to let it run.
call_interceptors = []
cdef list _interceptors = call_interceptors

# An interceptor type may also give its call as a C function (in a capsule
# named "treadle.function._call.c_interceptor"): then calling it costs no
# Python call (no argument tuple, no argument parsing) per cell call.
ctypedef object (*c_interceptor)(object hook, object function, tuple args, dict kwargs)
cdef object _c_type = None
cdef c_interceptor _c_call = NULL


def register_c_interceptor(hook_type, capsule):
    """Calls of interceptors of exactly `hook_type` go to the C function in
    `capsule` (named "treadle.function._call.c_interceptor"), which behaves as calling the
    interceptor does. One type at a time (the last registered)."""
    global _c_type, _c_call
    if not isinstance(hook_type, type):
        raise TypeError(f"register_c_interceptor takes a type, got {hook_type!r}")
    _c_call = <c_interceptor> PyCapsule_GetPointer(capsule, "treadle.function._call.c_interceptor")
    _c_type = hook_type


cdef class InterceptedCall:
    """The base of Function: its __call__ (the type's C call slot) offers
    the call to the last interceptor, then runs self._call(args, kwargs)."""

    def __call__(self, *args, **kwargs):
        if _interceptors:
            hook = _interceptors[-1]
            if type(hook) is _c_type:
                result = _c_call(hook, self, args, kwargs)
            else:
                result = hook(self, args, kwargs)
            if result is not NotImplemented:
                return result
        return self._call(args, kwargs)
