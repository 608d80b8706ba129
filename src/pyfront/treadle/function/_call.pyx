# cython: language_level=3
"""The first step of calling a td.function, in C: td.loom.autobatch records
every cell call its examples make (thousands per batch), and its
interceptor answers most of them without the interpreter. Here, before
any Python frame of the call is made, the last interceptor (if one is set)
gets the call; everything else is Function._call, in Python."""

# td.loom.autobatch records the calls made with its per-example values: while
# it records, the last entry is called first, as callable(function, args,
# kwargs), and returns the call's result, or NotImplemented to let it run.
call_interceptors = []
cdef list _interceptors = call_interceptors


cdef class InterceptedCall:
    """The base of Function: its __call__ (the type's C call slot) offers
    the call to the last interceptor, then runs self._call(args, kwargs)."""

    def __call__(self, *args, **kwargs):
        if _interceptors:
            result = _interceptors[-1](self, args, kwargs)
            if result is not NotImplemented:
                return result
        return self._call(args, kwargs)
