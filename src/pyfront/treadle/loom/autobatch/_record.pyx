# cython: language_level=3, boundscheck=False, wraparound=False
"""The hot paths of td.loom.autobatch, in Cython because they run once per
cell call, variable read or row gather of every example (or once per value
per round):

- Value: a per-example tensor, a C type (registered as a td.Tensor) whose
  fields (its example, where it comes from, its argument code) are C
  fields, made without the interpreter and kept on a free list.
- Round: the schedule being recorded, as growable int64 arrays (Int64s)
  that recording appends to in C and planning reads as NumPy arrays.
- RecorderFields: the recorder's example running now, round and thread,
  as C fields the hooks read.
- CallHook: a td.function called positionally with per-example values whose
  (function, signature numbers) was seen before is recorded without the
  interpreter (a td.function's vectorcall calls it as a C function, with
  the arguments in place), and so is one called with values and lists or
  tuples of them (a child-sum cell's children) whose lists' lengths and
  signature numbers were seen; every other call goes to Recorder.call,
  which fills the caches this path reads.
- ReadHook: a variable read inside an example gives its shared value.
- GatherHook: td.gather(variable, Python or NumPy int) inside an example
  is a row of the variable, before either argument becomes a tensor
  (td.gather's C entry calls it as a C function).
- ConstantHook: a floating-point td.constant made inside an example is a
  value whose NumPy copy is a constant row, without an eager tensor.
- OperandHook: a Python number beside a per-example value (`h * 0.5`) is a
  shared constant value, a constant row, without an eager tensor.
- create_op: a plain op seen before on values of the same signatures is
  recorded from a cache (registry.fast_ops), as CallHook records cells;
  td.gather(variable, id) with a known id is a row of the variable.
- live_values: the values a round must keep, by reference count."""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.pycapsule cimport PyCapsule_New
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.ref cimport Py_INCREF, Py_REFCNT, PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t


cdef extern from "Python.h":
    ctypedef struct TupleItems "PyTupleObject":
        PyObject* ob_item[1]  # a tuple's items, read in place

import numpy as np

from treadle.framework import context
from treadle.framework import dtypes
from treadle.framework import op_execution
from treadle.framework.tensor import TENSOR_CLASSES, EagerTensor, Tensor, _python_to_numpy, _TensorRef
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.variables import Variable
from treadle.function._call import register_c_interceptor
from treadle.loom.autobatch.registry import first_output, type_shape
from treadle.loom.autobatch.stack_switch import after_switch
from treadle.ops._gather import register_c_interceptor as register_c_gather
from treadle.loom.autobatch.values import CONST_ROW, CONSTANT, MAX_GROUPS, PENDING, STORED, VAR_ROW, VARIABLE

cdef object _thread_context = context._context  # its graph_stack: the graphs being built in this thread
cdef object _np_integer = np.integer
cdef int _PENDING = PENDING
cdef int _STORED = STORED
cdef int _VAR_ROW = VAR_ROW
cdef int _VARIABLE = VARIABLE
cdef int _CONST_ROW = CONST_ROW
cdef object _np_floating = np.floating
cdef object _np_float32 = np.float32
cdef object _np_ndarray = np.ndarray


# ------------------------------------------------------------------ values

# Values freed (a round's, once planned) are kept for the next ones made, up
# to 4096 of them: a call records thousands, the next call as many again.
@cython.freelist(4096)
cdef class Value:
    """A tensor of one example inside td.loom.autobatch: it has a dtype and a
    static shape; its value is known once the batch has computed it.

    A C type (not a Python subclass of td.Tensor, which it is registered
    as): recording makes and frees two or three per cell call, each then
    without a heap type's allocation and deallocation. Its fields: `graph`
    (the recorder: execute() hands an op with this input to
    graph.create_op), the example's index (-1: a value every example may
    use), where the value comes from (its `src`, values.py; a pending
    value's is kept as fields, the tuple made only when asked for), its
    dtype, shape and signature number. Its operators and indexing are
    td.Tensor's (the functions treadle/ops installs there)."""

    cdef public object graph
    cdef Py_ssize_t example
    cdef int kind
    cdef Py_ssize_t node          # PENDING: the node computing it
    cdef Py_ssize_t output        # PENDING: which output of the node
    cdef int64_t code             # PENDING, STORED: its argument code
    cdef object round             # PENDING: the round of the node
    cdef object other_src         # VAR_ROW, VARIABLE, CONST_ROW (and STORED when set whole): the src tuple
    cdef object stored_ts         # STORED: the type shape of its store column
    cdef Py_ssize_t row           # STORED: its row there
    cdef public object _dtype
    cdef public object _shape_tuple_
    cdef public object _autobatch_sig  # the registry's number for (dtype, shape): cheap keys for the calls it feeds
    cdef object __weakref__            # a tensor may be weakly referenced (td.custom_gradient's outputs are)

    __array_priority__ = 100  # NumPy operators defer to the tensor's

    def __init__(self, recorder, example, src, dtype, shape, sig=None):
        self.graph = recorder
        self._example = example
        self.src = src
        self._dtype = dtype
        self._shape_tuple_ = shape
        self._autobatch_sig = sig

    @property
    def _example(self):
        """The example's index, or None for a value every example may use."""
        return None if self.example < 0 else self.example

    @_example.setter
    def _example(self, example):
        self.example = -1 if example is None else example

    @property
    def src(self):
        """Where the value comes from (values.py)."""
        if self.kind == _PENDING:
            return (_PENDING, self.node, self.output, self.round, self.code)
        if self.kind == _STORED:
            return (_STORED, self.stored_ts, self.row, self.code)
        return self.other_src

    @src.setter
    def src(self, tuple src):
        kind = src[0]
        if kind == _PENDING:
            self.node, self.output, self.round, self.code = src[1], src[2], src[3], src[4]
            self.other_src = None
        else:
            self.round = None
            self.other_src = src
            if kind == _STORED:
                self.stored_ts, self.row, self.code = src[1], src[2], src[3]
                self.other_src = None
        self.kind = kind

    # -------------------------------------------------- as a tensor
    @property
    def dtype(self):
        """The value's dtype."""
        return self._dtype

    @property
    def shape(self):
        """The value's static shape (one example's: no batch dimension)."""
        return TensorShape(self._shape_tuple_)

    def get_shape(self):
        """The value's static shape."""
        return self.shape

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._shape_tuple_)

    @property
    def name(self):
        """A name unique to the value (it is no graph's tensor)."""
        return f"autobatch_value_{id(self):x}"

    def __repr__(self):
        owner = "shared" if self.example < 0 else f"example {self.example}"
        return f"<td.loom.autobatch value ({owner}) shape={self.shape} dtype={self._dtype.name}>"

    def __str__(self):
        return self.__repr__()

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def ref(self):
        """A hashable reference to the value."""
        return _TensorRef(self)

    # -------------------------------------------------- reading the value
    def numpy(self):
        """The value, once computed (reading it suspends the example until then)."""
        value = _read(self)
        return value.copy() if value.ndim else value[()]

    def __array__(self, dtype=None, copy=None):
        value = _read(self)
        return value.astype(dtype) if dtype is not None else value

    def __bool__(self):
        value = _read(self)
        if value.size != 1:
            raise ValueError("The truth value of a tensor with more than one element is ambiguous. "
                             "Use a.any() or a.all()" if value.size > 1 else
                             "The truth value of an empty tensor is ambiguous.")
        return bool(value.reshape(()))

    def __float__(self):
        value = _read(self)  # a NumPy scalar when the value is a scalar (a decoder's probability)
        return float(value if isinstance(value, np.generic) else value.reshape(()))

    def __int__(self):
        return int(_read(self).reshape(()))

    def __index__(self):
        if not self._dtype.is_integer or self._shape_tuple_:
            raise TypeError(f"Only scalar integer tensors can be used as an index, got {self._dtype.name} "
                            f"of shape {self.shape}")
        return int(_read(self).reshape(()))

    def __len__(self):
        if not self._shape_tuple_:
            raise TypeError("len() of unsized object: scalar tensor")
        return self._shape_tuple_[0]

    # -------------------------------------------------- td.Tensor's operators and indexing
    # (looked up on td.Tensor when called: the functions treadle/ops installed there)
    def __getitem__(self, key):
        return Tensor.__getitem__(self, key)

    def __add__(self, other):
        out = _recorded_binary(self, other, "AddV2")
        return Tensor.__add__(self, other) if out is None else out

    def __radd__(self, other):
        return Tensor.__radd__(self, other)

    def __sub__(self, other):
        out = _recorded_binary(self, other, "Sub")
        return Tensor.__sub__(self, other) if out is None else out

    def __rsub__(self, other):
        return Tensor.__rsub__(self, other)

    def __mul__(self, other):
        out = _recorded_binary(self, other, "Mul")
        return Tensor.__mul__(self, other) if out is None else out

    def __rmul__(self, other):
        return Tensor.__rmul__(self, other)

    def __truediv__(self, other):
        return Tensor.__truediv__(self, other)

    def __rtruediv__(self, other):
        return Tensor.__rtruediv__(self, other)

    def __floordiv__(self, other):
        return Tensor.__floordiv__(self, other)

    def __rfloordiv__(self, other):
        return Tensor.__rfloordiv__(self, other)

    def __mod__(self, other):
        return Tensor.__mod__(self, other)

    def __rmod__(self, other):
        return Tensor.__rmod__(self, other)

    def __pow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return Tensor.__pow__(self, other)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return Tensor.__rpow__(self, other)

    def __matmul__(self, other):
        return Tensor.__matmul__(self, other)

    def __rmatmul__(self, other):
        return Tensor.__rmatmul__(self, other)

    def __and__(self, other):
        return Tensor.__and__(self, other)

    def __rand__(self, other):
        return Tensor.__rand__(self, other)

    def __or__(self, other):
        return Tensor.__or__(self, other)

    def __ror__(self, other):
        return Tensor.__ror__(self, other)

    def __lt__(self, other):
        return Tensor.__lt__(self, other)

    def __gt__(self, other):
        return Tensor.__gt__(self, other)

    def __le__(self, other):
        return Tensor.__le__(self, other)

    def __ge__(self, other):
        return Tensor.__ge__(self, other)

    def __eq__(self, other):
        return Tensor.__eq__(self, other)

    def __ne__(self, other):
        return Tensor.__ne__(self, other)

    def __neg__(self):
        return Tensor.__neg__(self)

    def __abs__(self):
        return Tensor.__abs__(self)

    def __invert__(self):
        return Tensor.__invert__(self)


Tensor.register(Value)
TENSOR_CLASSES.add(Value)  # `type(x) in TENSOR_CLASSES` answers isinstance(x, Tensor) without ABCMeta


# What a waiting example hands the scheduler (scheduler.py): not a result.
WAITING = object()


cdef object _read(Value v):
    """The value's NumPy value, as its recorder's read() gives it. The common
    case, an example reading its own value, computed or still pending, is
    answered here without that Python call and its numpy_of() (a decoder
    reads thousands per call); anything else (a read outside an example,
    after the call, of another example's value) takes read() and its errors."""
    rec = v.graph
    if not isinstance(rec, RecorderFields):
        return rec.read(v)
    cdef RecorderFields f = <RecorderFields> rec
    if (f.finished or f.example < 0 or (v.example >= 0 and v.example != f.example)
            or PyThread_get_thread_ident() != f.thread):
        return rec.read(v)
    if v.kind == _PENDING:  # resumed once the round computing it ran: then it is stored
        if after_switch is None and f.switch_to_scheduler is not None:
            f.switch_to_scheduler(WAITING)  # what rec.wait does, without its Python frame
        else:
            rec.wait(v)
    if v.kind == _STORED:
        return rec.store[v.stored_ts].numpy_row(v.row)
    return rec.numpy_of(v)


cdef object _recorded_binary(Value a, b, op_name):
    """`a + b`, `a - b` or `a * b` (op_name AddV2, Sub or Mul) of two values
    of the example running now, recorded from registry.fast_ops as
    create_op would, once the general path (td.Tensor's operator: its
    conversions, then execute) has recorded that op on values of these
    signatures (the key and the node's arguments as create_op makes them);
    None otherwise, for the general path. A plain operator then costs
    about a cell call, not the five Python calls of the general path (a
    decoder adds its subtrees' sums at every node)."""
    if type(b) is not Value or (<Value> b).graph is not a.graph or not isinstance(a.graph, RecorderFields):
        return None
    rec = a.graph
    cdef RecorderFields f = <RecorderFields> rec
    if f.example < 0 or PyThread_get_thread_ident() != f.thread or _thread_context.graph_stack:
        return None
    inputs = (a, b)
    key = _op_key(op_name, inputs, None)
    if key is None:
        return None
    entry = rec.registry.fast_ops.get(key)
    if entry is None:
        return None
    args = _node_arguments(inputs)
    out = _record_call(rec, <CallEntry> entry, _items(args), len(args))
    recorders = op_execution.op_recorders
    if recorders:  # a tape sees the op, as execute() shows it
        for record in recorders:
            record(op_name, list(inputs), None, list(out), rec)
    return out[0]


cdef inline Value _pending_value(rec, Py_ssize_t example, Py_ssize_t node, Py_ssize_t k, r, int64_t code,
                                       dtype, shape, sig):
    cdef Value v = Value.__new__(Value)
    v.graph = rec
    v.example = example
    v.kind = _PENDING
    v.node = node
    v.output = k
    v.code = code
    v.round = r
    v._dtype = dtype
    v._shape_tuple_ = shape
    v._autobatch_sig = sig
    return v


# ------------------------------------------------------------------ the round

cdef class Int64s:
    """A growable array of int64 (array.array('q')'s interface that the
    round needs: append, len, indexing, the buffer NumPy reads), appended
    to in C by the recording hot path. It cannot grow while viewed."""

    cdef int64_t* data
    cdef Py_ssize_t n
    cdef Py_ssize_t capacity
    cdef int exports

    def __init__(self, values=()):
        for x in values:
            self.push(x)

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef int push(self, int64_t x) except -1:
        cdef int64_t* grown
        if self.n == self.capacity:
            if self.exports:
                raise BufferError("td.loom.autobatch: a round's arrays cannot grow while NumPy views them")
            self.capacity = 64 if self.capacity == 0 else 2 * self.capacity
            grown = <int64_t*> PyMem_Realloc(self.data, self.capacity * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self.data = grown
        self.data[self.n] = x
        self.n += 1
        return 0

    def append(self, int64_t x):
        self.push(x)

    def extend(self, const int64_t[:] values):
        """Appends every value of an int64 array (replay.py's whole graph)."""
        cdef Py_ssize_t i
        for i in range(values.shape[0]):
            self.push(values[i])

    def __len__(self):
        return self.n

    def __getitem__(self, Py_ssize_t i):
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("index out of range")
        return self.data[i]

    def __getbuffer__(self, Py_buffer* view, int flags):
        view.buf = <void*> self.data
        view.obj = self
        view.len = self.n * sizeof(int64_t)
        view.readonly = 0
        view.itemsize = sizeof(int64_t)
        view.format = "q"
        view.ndim = 1
        view.shape = &self.n
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self.exports += 1

    def __releasebuffer__(self, Py_buffer* view):
        self.exports -= 1


cdef class Round:
    """The schedule being recorded: per node its op, per argument an int
    code (values.py: a node's output, or a row of a batch input numbered in
    its group: a type shape and where its rows come from, constants or a
    variable's rows; or a row of the store, final). NumPy reads the int64
    arrays without a conversion when the round is planned (rounds.plan_round)."""

    cdef public Int64s node_op
    cdef public Int64s arg_splits
    cdef public Int64s args
    cdef public list groups       # (type shape, kind, variable or None, rows list)
    cdef public dict group_index
    cdef public object fresh      # the PENDING values made this round (live ones are outputs); None once planned
    cdef object rows_type_shape   # the group of a variable's rows last looked up (_var_row_code):
    cdef object rows_variable     # (type shape, variable) and its number
    cdef Py_ssize_t rows_group

    def __init__(self):
        self.node_op = Int64s()
        self.arg_splits = Int64s((0,))
        self.args = Int64s()
        self.groups = []
        self.group_index = {}
        self.fresh = []

    def __len__(self):
        return self.node_op.n

    def group(self, ts, kind, var):
        key = (id(ts), kind, id(var))
        g = self.group_index.get(key)
        if g is None:
            if len(self.groups) >= MAX_GROUPS:
                raise ValueError(f"td.loom.autobatch: more than {MAX_GROUPS} kinds of batch input rows in one round")
            g = self.group_index[key] = len(self.groups)
            self.groups.append((ts, kind, var, []))
        return g


# ------------------------------------------------------------------ the recorder's fields

cdef class RecorderFields:
    """The fields of a Recorder (recording.py) that every recorded call
    reads, as C fields: the example running now, the round being recorded
    and the thread whose examples record."""

    cdef Py_ssize_t example   # the example running now; -1: none
    cdef public Round round
    cdef public unsigned long thread
    cdef public bint finished  # the call returned: its values may no longer be used
    cdef public object switch_to_scheduler  # the scheduler's greenlet's switch: an example waits by calling it

    def __cinit__(self):
        self.example = -1

    @property
    def current(self):
        """The index of the example running now (None: no example runs)."""
        return None if self.example < 0 else self.example

    @current.setter
    def current(self, example):
        if example is None:
            self.example = -1
        elif example < 0:
            raise ValueError(f"an example's index is never negative, got {example}")
        else:
            self.example = example


# ------------------------------------------------------------------ the hooks

cdef list _graphs_being_built():
    """The recording thread's stack of graphs being built (context.py's),
    taken once per hook: a thread's stack is one list, mutated in place
    (only a replica thread of td.distribute binds its own, as it starts),
    so the hooks test it without the thread-local lookup per call."""
    return _thread_context.graph_stack


cdef class CallEntry:
    """What the fast path needs of a cell's OpInfo, as C fields."""

    cdef object info
    cdef int64_t index
    cdef tuple outputs   # per output: (dtype, shape, signature number)
    cdef object pack
    cdef bint as_tuple   # pack is tuple: the outputs are packed here
    cdef bint single     # the cell returns one tensor: the value itself, with no packer call
    cdef tuple key       # a cell's: its key in registry.fast_calls, once CallHook found it there

    def __init__(self, info):
        self.info = info
        self.index = info.index
        self.outputs = tuple(info.outputs)
        self.pack = info.pack
        self.as_tuple = info.pack is tuple
        self.single = info.pack is first_output and len(self.outputs) == 1


def call_entry(info):
    """The entry Recorder.call keeps in registry.fast_calls for `info`."""
    return CallEntry(info)


cdef class ExampleHook:
    """What every hook below shares: its recorder, and whether a call it sees
    comes from inside an example (the recording thread, an example running,
    no graph being traced); anything else is left to run as usual."""

    cdef RecorderFields recorder
    cdef unsigned long thread
    cdef list graphs      # the recording thread's graphs being built (_graphs_being_built)

    def __init__(self, RecorderFields recorder):
        self.recorder = recorder
        self.thread = recorder.thread
        self.graphs = _graphs_being_built()

    cdef inline bint outside_example(self):
        return (self.recorder.example < 0 or PyThread_get_thread_ident() != self.thread
                or bool(self.graphs))


cdef class CallHook(ExampleHook):
    """Function.__call__'s interceptor while `recorder` records: records a
    known cell call (the fast path) or hands it to recorder.call."""

    cdef dict fast_calls  # (function, argument signature numbers) -> CallEntry
    cdef dict list_calls  # list_call_key's keys -> CallEntry (cells called with lists of values)
    cdef object general   # recorder.call
    cdef list recent      # the entries of the last RECENT_CALLS distinct calls (their keys compared in place)
    cdef Py_ssize_t next_recent  # the one replaced next
    cdef list recent_lists  # (key, entry) of the last RECENT_CALLS distinct list calls (keys compared in place)
    cdef Py_ssize_t next_recent_list

    def __init__(self, recorder):
        ExampleHook.__init__(self, recorder)
        self.fast_calls = recorder.registry.fast_calls
        self.list_calls = recorder.registry.list_calls
        self.general = recorder.call
        self.recent = []
        self.recent_lists = []

    def __call__(self, function, tuple args, dict kwargs):
        if kwargs:
            return self.general(function, args, kwargs)
        return _intercept_call(self, function, _items(args), len(args))


# A model calls a few cells in turn (a TreeLSTM's leaf and node): their
# entries are found by comparing the arguments' signature numbers with the
# keys of the last few calls', without making and hashing a key.
cdef Py_ssize_t RECENT_CALLS = 4


cdef object _intercept_call(hook, function, PyObject** args, Py_ssize_t n):
    """CallHook's call of positional arguments `args[:n]`, as InterceptedCall
    calls it from C (no Python call, no tuple of the arguments)."""
    cdef CallHook self = <CallHook> hook
    if self.outside_example():
        return self.general(function, _tuple_of(args, n), {})
    cdef Py_ssize_t i
    for i in range(n):
        x = <object> args[i]
        # not a value (a list of values, an eager tensor, a Python value),
        # or a variable read inside the function (no signature number)
        if type(x) is not Value or (<Value> x)._autobatch_sig is None:
            return _list_call(self, function, args, n)
    cdef CallEntry entry
    for e in self.recent:
        entry = <CallEntry> e
        if entry.key[0] is function and _same_signatures(entry.key, args, n):
            return _record_call(self.recorder, entry, args, n)
    key = PyTuple_New(n + 1)
    Py_INCREF(function)
    PyTuple_SET_ITEM(key, 0, function)
    for i in range(n):
        sig = (<Value> args[i])._autobatch_sig
        Py_INCREF(sig)
        PyTuple_SET_ITEM(key, i + 1, sig)
    found = self.fast_calls.get(key)
    if found is None:
        return self.general(function, _tuple_of(args, n), {})
    entry = <CallEntry> found
    if entry.key is None:
        entry.key = key
    if len(self.recent) < RECENT_CALLS:
        self.recent.append(entry)
    else:
        self.recent[self.next_recent] = entry
        self.next_recent = (self.next_recent + 1) % RECENT_CALLS
    return _record_call(self.recorder, entry, args, n)


# The most flat arguments a list call matched in place may have (more: keyed and looked up).
cdef enum:
    MAX_LIST_ARGUMENTS = 256


cdef object _list_call(CallHook self, function, PyObject** args, Py_ssize_t n):
    """A call whose arguments are values and lists or tuples of them (a
    child-sum TreeLSTM's cell takes its children's states so), recorded
    from the entry of its key (_list_call_key) without walking its
    structure; the general path takes any other call, and the first call of
    a key (it adds the key's entry). The last few keys are compared with
    the call in place first (a child-sum tree's cells have a few list
    lengths in turn)."""
    cdef PyObject* flat[MAX_LIST_ARGUMENTS]
    cdef Py_ssize_t m
    for pair in self.recent_lists:  # a recent call's key, compared in place: no key made, no lookup
        m = _flatten_matching(<tuple> (<tuple> pair)[0], function, args, n, flat)
        if m >= 0:
            return _record_call(self.recorder, <CallEntry> (<tuple> pair)[1], flat, m)
    listed = _list_call_key(function, args, n)
    if listed is not None:
        found = self.list_calls.get((<tuple> listed)[0])
        if found is not None:
            if len(self.recent_lists) < RECENT_CALLS:
                self.recent_lists.append(((<tuple> listed)[0], found))
            else:
                self.recent_lists[self.next_recent_list] = ((<tuple> listed)[0], found)
                self.next_recent_list = (self.next_recent_list + 1) % RECENT_CALLS
            flat_args = <tuple> (<tuple> listed)[1]
            return _record_call(self.recorder, <CallEntry> found, _items(flat_args), len(flat_args))
    return self.general(function, _tuple_of(args, n), {})


cdef Py_ssize_t _flatten_matching(tuple key, function, PyObject** args, Py_ssize_t n, PyObject** flat):
    """When `function` called with `args[:n]` has the key `key` (as
    _list_call_key makes it; signature numbers compared by identity, as
    _same_signatures does), the number of its flat arguments, written to
    `flat` (borrowed: the call's lists hold them); otherwise -1."""
    if len(key) != n + 1 or key[0] is not function:
        return -1
    cdef Py_ssize_t i, k, m, total = 0
    cdef tuple part, sigs
    for i in range(n):
        a = <object> args[i]
        p = key[i + 1]
        t = type(a)
        if t is Value:
            if (<Value> a)._autobatch_sig is not p or p is None or total == MAX_LIST_ARGUMENTS:
                return -1
            flat[total] = args[i]
            total += 1
        elif (t is list or t is tuple) and type(p) is tuple:
            part = <tuple> p
            if part[0] is not t:
                return -1
            sigs = <tuple> part[1]
            m = len(a)
            if len(sigs) != m or total + m > MAX_LIST_ARGUMENTS:
                return -1
            for k in range(m):
                x = a[k]
                if type(x) is not Value or (<Value> x)._autobatch_sig is not sigs[k]:
                    return -1
                flat[total] = <PyObject*> x
                total += 1
        else:
            return -1
    return total


cdef object _list_call_key(function, PyObject** args, Py_ssize_t n):
    """(key, flat per-example arguments) of a positional call whose
    arguments are per-example values (each with a signature number) or
    lists or tuples of them; None for any other call. The key holds a
    value's signature number, or a list's type and its elements' numbers
    (so its length): what the general path's key tells apart."""
    cdef list parts = [function]
    cdef list flat = []
    cdef Py_ssize_t i, k, m
    for i in range(n):
        a = <object> args[i]
        t = type(a)
        if t is Value:
            sig = (<Value> a)._autobatch_sig
            if sig is None:  # a variable read inside the function
                return None
            parts.append(sig)
            flat.append(a)
        elif t is list or t is tuple:
            m = len(a)
            sigs = PyTuple_New(m)
            for k in range(m):
                x = a[k]
                if type(x) is not Value or (<Value> x)._autobatch_sig is None:
                    return None
                sig = (<Value> x)._autobatch_sig
                Py_INCREF(sig)
                PyTuple_SET_ITEM(sigs, k, sig)
                flat.append(x)
            parts.append((t, sigs))
        else:
            return None
    return tuple(parts), tuple(flat)


def list_call_key(function, tuple args):
    """(key, flat per-example arguments) of a positional call of `function`
    with `args` (values, and lists or tuples of values), as CallHook keys
    such a call in registry.list_calls; None for any other call."""
    return _list_call_key(function, _items(args), len(args))


cdef inline PyObject** _items(tuple t):
    return (<TupleItems*> t).ob_item


cdef tuple _tuple_of(PyObject** items, Py_ssize_t n):
    cdef tuple t = PyTuple_New(n)
    cdef Py_ssize_t i
    for i in range(n):
        Py_INCREF(<object> items[i])
        PyTuple_SET_ITEM(t, i, <object> items[i])
    return t


cdef inline bint _same_signatures(tuple key, PyObject** args, Py_ssize_t n):
    """Whether the values `args` have the signature numbers of `key` (after
    its function); the numbers are the registry's own objects, compared by
    identity (an equal number that is another object only misses here)."""
    if len(key) != n + 1:
        return False
    cdef Py_ssize_t i
    for i in range(n):
        if (<Value> args[i])._autobatch_sig is not key[i + 1]:
            return False
    return True


register_c_interceptor(CallHook, PyCapsule_New(<void*> _intercept_call, "treadle.function._call.vector_interceptor",
                                                NULL))


cdef class ReadHook(ExampleHook):
    """Variable.read_value's override while `recorder` records: inside an
    example (not while tracing, not in another thread) reading a variable
    gives its shared Value; elsewhere the variable is read as usual."""

    cdef dict values  # id(variable) -> its shared Value

    def __init__(self, recorder):
        ExampleHook.__init__(self, recorder)
        self.values = recorder._variable_values

    def __call__(self, var):
        if self.outside_example():
            return None
        value = self.values.get(id(var))
        if value is None:
            value = self.recorder.shared_variable_value(var)
        return value


cdef class GatherHook(ExampleHook):
    """td.gather's interceptor while `recorder` records (td.gather's C entry
    calls it as a C function, _gather_row): inside an example (not while tracing, not in another thread),
    td.gather(variable, row) with a Python or NumPy integer row in range is
    the row's Value, as variable_row gives it after the arguments became
    tensors; any other gather (and a row out of range, for the usual
    error) is NotImplemented, gathered as usual."""

    cdef dict values  # id(variable) -> its shared Value (ReadHook's)
    cdef object last_variable  # the variable gathered last (a leaf's embedding), and for it:
    cdef list last_rows        # its row values (None: not gathered yet in this call),
    cdef object last_type_shape  # a row's TypeShape (a tuple: dtype, shape) and signature
    cdef object last_sig         # number: a row is made or answered here without a Python call

    def __init__(self, recorder):
        ExampleHook.__init__(self, recorder)
        self.values = recorder._variable_values

    def __call__(self, params, index):
        return _gather_row(self, params, index)

    cdef object row(self, params, index):
        if self.outside_example():
            return NotImplemented
        if type(index) is not int:
            if not isinstance(index, _np_integer):
                return NotImplemented
            index = int(index)
        if params is self.last_variable:
            return self.last_variable_row(params, index)
        rec = self.recorder
        if type(params) is Variable:  # what reading it inside the example gives (ReadHook)
            var = params
            params = self.values.get(id(var))
            if params is None:
                params = rec.shared_variable_value(var)
        elif type(params) is not Value or (<Value> params).kind != _VARIABLE:
            return NotImplemented
        else:
            var = (<Value> params).other_src[1]
        value = _row_value(rec, params, index)
        if value is None:
            return NotImplemented
        if type(var) is Variable:
            self.last_variable = var
            self.last_rows = rec._variable_rows[id(var)]
            ts, self.last_sig = rec._row_type_shapes[id(var)]
            self.last_type_shape = ts
        return value

    cdef object last_variable_row(self, var, index):
        """Row `index` (a Python int) of the variable gathered last: its
        Value (made here at its first gather, as _row_value makes it), or
        NotImplemented for a row out of range."""
        cdef Py_ssize_t i
        try:
            i = index
        except OverflowError:
            return NotImplemented
        if not 0 <= i < len(self.last_rows):
            return NotImplemented
        value = self.last_rows[i]
        if value is None:
            value = self.last_rows[i] = _new_row_value(self.recorder, self.last_type_shape, var, index, self.last_sig)
        return value


cdef object _gather_row(hook, params, index):
    """GatherHook's call, as td.gather's C entry calls it (no Python call)."""
    return (<GatherHook> hook).row(params, index)


register_c_gather(GatherHook, PyCapsule_New(<void*> _gather_row, "treadle.ops._gather.c_interceptor", NULL))


cdef class ConstantHook(ExampleHook):
    """td.constant's interceptor while `recorder` records: inside an example
    (not while tracing, not in another thread), a floating-point constant
    of a Python float or a NumPy value (no `shape` argument) is a value of
    the example whose NumPy copy becomes a row of the round's constant
    batch input where an op reads it: no eager tensor is made. Every other
    constant (integers, which ops may read as attributes; strings; tensors)
    is None, made as usual."""

    cdef object registry
    cdef dict kinds  # (NumPy dtype, shape) -> (dtype, shape, type shape, signature number)

    def __init__(self, recorder):
        ExampleHook.__init__(self, recorder)
        self.registry = recorder.registry
        self.kinds = {}

    def __call__(self, value, dtype, shape):
        if shape is not None or self.outside_example():
            return None
        t = type(value)
        if dtype is None and t is float:  # the common cases first: float32, as _python_to_numpy makes it
            arr = np.array(value).astype(_np_float32)
        elif dtype is None and t is _np_ndarray:
            if value.dtype.kind != "f":
                return None
            arr = value.copy()  # td.constant copies the user's array
        else:
            if t is _np_ndarray:
                if value.dtype.kind != "f":
                    return None
            elif t is not float and not isinstance(value, _np_floating):
                return None
            if dtype is not None:
                dtype = dtypes.as_dtype(dtype)
                if not dtype.is_floating:
                    return None
            arr = _python_to_numpy(value, dtype)
            if arr is value or arr.base is not None:  # the user's array (or a view of it): td.constant copies
                arr = arr.copy()
        return self.value_of(arr)

    cdef Value value_of(self, arr):
        """The example's constant value holding `arr` (a float NumPy array of its own)."""
        key = (arr.dtype, arr.shape)
        kind = self.kinds.get(key)
        if kind is None:
            dtype = dtypes.as_dtype(arr.dtype)
            ts = type_shape(dtype, arr.shape)
            kind = self.kinds[key] = (dtype, arr.shape, ts, self.registry.signature(dtype, arr.shape))
        cdef Value v = Value.__new__(Value)
        v.graph = self.recorder
        v.example = self.recorder.example
        v.kind = _CONST_ROW
        v.other_src = (_CONST_ROW, kind[2], arr)
        v._dtype = kind[0]
        v._shape_tuple_ = kind[1]
        v._autobatch_sig = kind[3]
        return v


cdef class OperandHook(ExampleHook):
    """convert_operand's interceptor while `recorder` records: inside an
    example (not while tracing, not in another thread), a Python number
    beside a per-example value of a floating-point dtype (`h * 0.5`) is a
    constant value shared by the examples (one per number and dtype in the
    call), a row of the round's constants where an op reads it: no eager
    tensor is made, and the op takes the plain-op fast path. A number beside
    an eager tensor or a variable is None, converted as usual (the op runs
    eagerly, as before)."""

    cdef object registry
    cdef dict literals    # (number, dtype) -> its shared value

    def __init__(self, recorder):
        ExampleHook.__init__(self, recorder)
        self.registry = recorder.registry
        self.literals = {}

    def __call__(self, value, dtype, beside):
        rec = self.recorder
        if type(beside) is not Value or (<Value> beside).graph is not rec:
            return None
        if (<Value> beside).kind == _VARIABLE or type(value) is bool or not dtype.is_floating:
            return None
        if self.outside_example():
            return None
        key = (type(value), value, dtype)
        made = self.literals.get(key)
        if made is None:
            try:
                np_dtype = dtype.as_numpy_dtype
            except TypeError:  # bfloat16 without ml_dtypes: converted as usual (with its message)
                return None
            arr = np.asarray(value, np_dtype)
            ts = type_shape(dtype, ())
            made = self.literals[key] = _shared_value(rec, (_CONST_ROW, ts, arr), dtype, (),
                                                      self.registry.signature(dtype, ()))
        return made


cdef object _record_call(rec, CallEntry entry, PyObject** args, Py_ssize_t n_args):
    """Appends a node of the entry's op reading `args[:n_args]` (per-example
    values and rows of variables, in the op's input order) to the
    recorder's round; returns the call's outputs, packed."""
    cdef Round r = (<RecorderFields> rec).round
    cdef Py_ssize_t example = (<RecorderFields> rec).example
    cdef Py_ssize_t node = r.node_op.n
    cdef Value x
    r.node_op.push(entry.index)
    cdef Int64s codes = r.args
    cdef Py_ssize_t j
    for j in range(n_args):
        x = <Value> args[j]
        if x.example >= 0 and x.example != example:
            rec.check_owner(x, entry.info.op.what)
        if (x.kind == _PENDING and x.round is r) or x.kind == _STORED:
            codes.push(x.code)
        elif x.kind == _VAR_ROW:
            codes.push(_var_row_code(r, x))
        else:
            codes.push(_row_code(r, x.src))
    r.arg_splits.push(codes.n)
    cdef Py_ssize_t k, n_out = len(entry.outputs)
    cdef int64_t base = (<int64_t> node) << 8
    outputs = PyTuple_New(n_out)
    fresh = r.fresh
    for k in range(n_out):
        dtype, shape, sig = entry.outputs[k]
        v = _pending_value(rec, example, node, k, r, base + k, dtype, shape, sig)
        Py_INCREF(v)
        PyTuple_SET_ITEM(outputs, k, v)
        fresh.append(v)
    if entry.as_tuple:
        return outputs
    return <object> PyTuple_GET_ITEM(outputs, 0) if entry.single else entry.pack(list(outputs))


def add_call_node(rec, info, tuple args):
    """Appends a node of op `info` reading `args` (per-example values and
    rows of variables, in the op's input order) to the recorder's round;
    returns its output values (a list)."""
    return list(_record_call(rec, _unpacked(info), _items(args), len(args)))


cdef CallEntry _unpacked(info):
    cdef CallEntry entry = CallEntry(info)
    entry.as_tuple = True
    return entry


cdef int64_t _var_row_code(Round r, Value x) except? -1:
    """_row_code of a row of a variable (a leaf's embedding, read by many
    calls): its group in the round is kept in the value's fields (`round`
    and `node`, which only a pending value uses otherwise), so that each
    further read of it in the round costs no group lookup, and the round
    keeps the group of the variable's rows last looked up (the next row
    read is most often of the same variable)."""
    cdef tuple src = x.other_src
    if x.round is not r:
        ts, var = src[1], src[2]
        if ts is not r.rows_type_shape or var is not r.rows_variable:
            g = r.group_index.get((id(ts), _VAR_ROW, id(var)))  # Round.group's key: its lookup, inline
            if g is None:
                g = r.group(ts, _VAR_ROW, var)
            r.rows_group = g
            r.rows_type_shape = ts
            r.rows_variable = var
        x.node = r.rows_group
        x.round = r
    return _append_row(r, x.node, src[3])


cdef int64_t _row_code(Round r, tuple src) except? -1:
    """The argument code of a node's input that is neither this round's node
    output, nor stored, nor a row of a variable (_var_row_code): a
    td.constant made inside an example, a row of the round's constants."""
    if src[0] == _PENDING:
        raise RuntimeError("td.loom.autobatch: a value was not kept by the round that computed it "
                           "(it seemed unreferenced then); please report this")
    if src[0] != _CONST_ROW:
        raise AssertionError(f"a value of source {src[0]} is a node's argument")
    return _append_row(r, r.group(src[1], CONSTANT, None), src[2])


cdef inline int64_t _append_row(Round r, Py_ssize_t group, row) except? -1:
    """Appends `row` to the rows of the round's group `group`; the argument
    code that reads it there (values.row_code)."""
    cdef list rows = r.groups[group][3]
    rows.append(row)
    return -1 - ((<int64_t> (len(rows) - 1) << 16) | (group + 1))


def create_op(RecorderFields rec, op_name, inputs, attrs, name=None):
    """Recorder.create_op: execute() of an op with a per-example input. An
    op seen before on values of the same signatures (registry.fast_ops) and
    a gathered variable row are recorded here; every other op by
    rec.record_op, which fills registry.fast_ops."""
    if rec.example >= 0:
        key = _op_key(op_name, inputs, attrs)
        if key is not None:
            entry = rec.registry.fast_ops.get(key)
            if entry is not None:
                args = _node_arguments(inputs)
                return list(_record_call(rec, <CallEntry> entry, _items(args), len(args)))
    if op_name == "GatherV2" and rec.example >= 0 and len(inputs) == 3:
        gathered = variable_row(rec, inputs[0], inputs[1], inputs[2], attrs)
        if gathered is not None:
            return [gathered]
    return rec.record_op(op_name, inputs, attrs)


cdef object _op_key(op_name, inputs, attrs):
    """registry.fast_ops's key of an op whose inputs are per-example values,
    variable rows (each with a signature number) or variables read inside
    the example (`h @ w_out`: their shared values, which the op reads as a
    whole): (op name, attributes, per input its signature number or
    ("v", the variable's id), as Recorder.record_op's key names it); None
    for any other op (an eager tensor among the inputs, unhashable
    attributes), recorded by the general path. A variable's id names it
    for as long as the entry lives: the entry's op holds the variable."""
    cdef Py_ssize_t n = len(inputs), i
    if attrs:
        try:
            frozen = frozenset(attrs.items())
        except TypeError:  # a list-valued attribute: the general path freezes it
            return None
    else:
        frozen = None
    key = PyTuple_New(n + 2)
    Py_INCREF(op_name)
    PyTuple_SET_ITEM(key, 0, op_name)
    Py_INCREF(frozen)
    PyTuple_SET_ITEM(key, 1, frozen)
    for i in range(n):
        x = inputs[i]
        if type(x) is not Value:
            return None
        sig = (<Value> x)._autobatch_sig
        if sig is None:  # a variable's shared value: a slot of the op, not an argument
            if (<Value> x).kind != _VARIABLE:
                return None
            sig = ("v", id((<Value> x).other_src[1]))
        Py_INCREF(sig)
        PyTuple_SET_ITEM(key, i + 2, sig)
    return key


cdef tuple _node_arguments(inputs):
    """An op's inputs (as _op_key keyed them) that are its node's arguments:
    all but the variables' shared values, which the op reads itself."""
    cdef Py_ssize_t n = len(inputs), i, kept = 0
    for i in range(n):
        if (<Value> inputs[i]).kind != _VARIABLE:
            kept += 1
    if kept == n:
        return tuple(inputs)
    args = PyTuple_New(kept)
    kept = 0
    for i in range(n):
        x = inputs[i]
        if (<Value> x).kind != _VARIABLE:
            Py_INCREF(x)
            PyTuple_SET_ITEM(args, kept, x)
            kept += 1
    return args


def op_key(op_name, inputs, attrs):
    """(Recorder.record_op) registry.fast_ops's key for the op, or None."""
    return _op_key(op_name, inputs, attrs)


def op_entry(info):
    """The entry Recorder.record_op keeps in registry.fast_ops for `info`."""
    return _unpacked(info)


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
    var = (<Value> params).other_src[1]
    cdef list rows = rec._variable_rows.get(id(var))
    if rows is None:
        rows = rec._row_values(params)
    if not 0 <= row < len(rows):
        return None
    value = rows[row]
    if value is None:
        ts, sig = rec._row_type_shapes[id(var)]
        value = rows[row] = _new_row_value(rec, ts, var, row, sig)
    return value


cdef inline Value _new_row_value(rec, ts, var, row, sig):
    """The shared Value of row `row` of variable `var`, whose rows have
    TypeShape `ts` (a tuple (dtype, shape, tag): its items are read in
    place, not by a Python call of TypeShape's __getitem__) and signature
    number `sig`."""
    return _shared_value(rec, (_VAR_ROW, ts, var, row), <object> PyTuple_GET_ITEM(ts, 0),
                         <object> PyTuple_GET_ITEM(ts, 1), sig)


cdef Value _shared_value(rec, tuple src, dtype, shape, sig):
    """A value every example may use (not PENDING: its src is kept whole)."""
    cdef Value v = Value.__new__(Value)
    v.graph = rec
    v.example = -1
    v.kind = src[0]
    v.other_src = src
    v._dtype = dtype
    v._shape_tuple_ = shape
    v._autobatch_sig = sig
    return v


def live_values(list fresh):
    """The values of `fresh` referenced from anywhere else (an example's
    frame, another value's structure, an output): only they need their
    value after the round. A value held only by `fresh` has two references
    here: the list's and the loop's. Returns them and their argument codes
    (node << 8 | output, an Int64s): the round's outputs."""
    cdef list live = []
    cdef Int64s codes = Int64s()
    for v in fresh:
        if Py_REFCNT(v) > 2:
            live.append(v)
            codes.push((<Value> v).code)
    return live, codes


def store_rows(list live, positions, ts, Py_ssize_t first):
    """The values live[p] for p in `positions` (a range or a list) become
    rows first, first + 1, ... of the store's column of type shape `ts`
    (rounds._store, once per value a round computed that is still in use):
    their fields are set here, and their src tuple, (STORED, ts, row, its
    row code), is made only when asked for."""
    cdef Value v
    cdef Py_ssize_t row = first, p, n = len(live)
    for p in positions:
        if not 0 <= p < n:
            raise IndexError(f"position {p} of a live value, of {n}")
        v = <Value?> live[p]
        v.kind = _STORED
        v.round = None
        v.other_src = None
        v.stored_ts = ts
        v.row = row
        v.code = -1 - ((<int64_t> row) << 16)  # values.row_code(row): a final row of the store
        row += 1
