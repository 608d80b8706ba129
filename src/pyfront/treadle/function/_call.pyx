# cython: language_level=3
"""The first step of calling a td.function, in C: td.loom.autobatch records
every cell call its examples make (thousands per batch), and its
interceptor answers most of them without the interpreter. Here, before
any Python frame of the call is made, the last interceptor (if one is set)
gets the call; everything else is Function._call, in Python.

A call made from Python code reaches InterceptedCall by the vectorcall
protocol (the arguments as a C array): a positional call that the
recording interceptor answers in C then makes no tuple of its arguments
and no dictionary of keywords."""

from cpython.dict cimport PyDict_SetItem
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM


cdef extern from "Python.h":
    # The fields of a type that switch vectorcall on (not in Cython's PyTypeObject).
    ctypedef struct VectorcallType "PyTypeObject":
        unsigned long tp_flags
        Py_ssize_t tp_vectorcall_offset
        void* tp_call
    ctypedef struct TupleItems "PyTupleObject":
        PyObject* ob_item[1]
    unsigned long Py_TPFLAGS_HAVE_VECTORCALL
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)


# td.loom.autobatch records the calls made with its per-example values: while
# it records, the last entry is called first, as callable(function, args,
# kwargs), and returns the call's result, or NotImplemented to let it run.
call_interceptors = []
cdef list _interceptors = call_interceptors

# An interceptor type may also give its call of positional arguments as a C
# function (in a capsule named "treadle.function._call.vector_interceptor"),
# taking the arguments as a C array: then a call with no keyword arguments
# costs no Python call of the interceptor, and no argument tuple.
ctypedef object (*vector_interceptor)(object hook, object function, PyObject** args, Py_ssize_t nargs)
cdef object _c_type = None
cdef vector_interceptor _c_call = NULL


def register_c_interceptor(hook_type, capsule):
    """Calls of interceptors of exactly `hook_type` without keyword arguments
    go to the C function in `capsule` (named
    "treadle.function._call.vector_interceptor"), which behaves as calling
    the interceptor with an empty kwargs dictionary does. One type at a time
    (the last registered)."""
    global _c_type, _c_call
    if not isinstance(hook_type, type):
        raise TypeError(f"register_c_interceptor takes a type, got {hook_type!r}")
    _c_call = <vector_interceptor> PyCapsule_GetPointer(capsule, "treadle.function._call.vector_interceptor")
    _c_type = hook_type


cdef class InterceptedCall:
    """The base of Function: calling it (its C call slot, or vectorcall)
    offers the call to the last interceptor, then runs self._call(args,
    kwargs)."""

    cdef void* vectorcall  # this type's vectorcall function (its offset is the type's tp_vectorcall_offset)

    def __cinit__(self):
        self.vectorcall = <void*> _vectorcall
        # CPython gives a Python subclass (Function) the vectorcall offset
        # but not the flag that uses it (before 3.12): the instances of a
        # subclass that keeps this __call__ are called as the base's are.
        cdef VectorcallType* cls = <VectorcallType*> (<PyObject*> self).ob_type
        if not cls.tp_flags & Py_TPFLAGS_HAVE_VECTORCALL and cls.tp_call == _base.tp_call:
            cls.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL

    def __call__(self, *args, **kwargs):
        if _interceptors:
            hook = _interceptors[-1]
            if type(hook) is _c_type and not kwargs:
                result = _c_call(hook, self, (<TupleItems*> args).ob_item, PyTuple_GET_SIZE(args))
            else:
                result = hook(self, args, kwargs)
            if result is not NotImplemented:
                return result
        return self._call(args, kwargs)


cdef object _vectorcall(object self, PyObject** args, size_t nargsf, PyObject* kwnames):
    """InterceptedCall's call by the vectorcall protocol: the C interceptor
    reads the positional arguments in place; every other call gets its
    arguments as __call__ does (a tuple and a dictionary)."""
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef bint keywords = kwnames != NULL and PyTuple_GET_SIZE(<object> kwnames) > 0
    if _interceptors:
        hook = _interceptors[-1]
        if type(hook) is _c_type and not keywords:
            result = _c_call(hook, self, args, nargs)
            if result is not NotImplemented:
                return result
            return self._call(_tuple_of(args, nargs), {})
    positional = _tuple_of(args, nargs)
    named = _keywords_of(args + nargs, <object> kwnames) if keywords else {}
    if _interceptors:
        result = _interceptors[-1](self, positional, named)
        if result is not NotImplemented:
            return result
    return self._call(positional, named)


cdef tuple _tuple_of(PyObject** args, Py_ssize_t n):
    cdef tuple t = PyTuple_New(n)
    cdef Py_ssize_t i
    for i in range(n):
        Py_INCREF(<object> args[i])
        PyTuple_SET_ITEM(t, i, <object> args[i])
    return t


cdef dict _keywords_of(PyObject** values, tuple names):
    cdef dict d = {}
    cdef Py_ssize_t i
    for i in range(len(names)):
        PyDict_SetItem(d, names[i], <object> values[i])
    return d


cdef VectorcallType* _base = <VectorcallType*> InterceptedCall


cdef void _use_vectorcall():
    """Gives InterceptedCall its vectorcall offset (read off an instance)
    and flag, before any subclass copies the offset."""
    cdef InterceptedCall probe = InterceptedCall.__new__(InterceptedCall)
    _base.tp_vectorcall_offset = <char*> &probe.vectorcall - <char*> <PyObject*> probe
    _base.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL


_use_vectorcall()
