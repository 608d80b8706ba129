"""td.Tensor: the common base of eager tensors (the C++ EagerTensor) and the
symbolic tensors of a graph being traced, plus conversion of Python values."""

import abc
import collections
import numbers

import numpy as np

from treadle import _core
from treadle.framework import context, dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor_shape import TensorShape

EagerTensor = _core.EagerTensor


class Tensor(metaclass=abc.ABCMeta):
    """A multi-dimensional array of one dtype. Eager tensors hold values;
    symbolic tensors stand for values a graph will compute."""

    # The operators, indexing and iteration of every tensor kind go through
    # the op functions of treadle/ops, which install them (register_operators).

    # No instance dictionary here: a subclass that wants one (or weak
    # references) declares it, or has it by not declaring __slots__. The
    # values td.loom.autobatch makes by the thousand then carry none.
    __slots__ = ()


Tensor.register(EagerTensor)
# The concrete tensor classes (graph_tensor.py adds SymbolicTensor). For them,
# `type(x) in TENSOR_CLASSES` answers isinstance(x, Tensor) without a call of
# ABCMeta.__instancecheck__ (Python code): the paths every traced op takes test first.
TENSOR_CLASSES = {EagerTensor}

# ---------------------------------------------------------------- conversion

_conversion_functions = []  # (type, fn(value, dtype) -> Tensor)
# Python number types no conversion function claims: while tracing, an
# operand of one of these types is a literal the graph caches (convert_operand).
_literal_types = {int, float}


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Lets objects of `base_type` be used where tensors are expected."""
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda item: item[0])
    _literal_types.difference_update([t for t in (int, float) if issubclass(t, base_type)])


def _python_to_numpy(value, dtype):
    """NumPy array for a Python value with TensorFlow's default dtypes: Python
    ints become int32 (int64 when they do not fit), floats float32."""
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    else:
        if isinstance(value, (list, tuple)) and _contains_tensor(value):
            return None  # packed with the Pack op instead
        try:
            arr = np.array(value)
        except ValueError as e:
            raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: {e}") from None
        if arr.dtype == np.int64 and dtype is None:
            if arr.size == 0 or (arr.min() >= -(2**31) and arr.max() < 2**31):
                arr = arr.astype(np.int32)
        elif arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)
        elif arr.dtype == object and arr.size and not _all_strings(arr):
            raise TypeError(f"Failed to convert elements of {value!r} to Tensor: unsupported element types")
        elif arr.dtype.kind in "SU":
            # NumPy's fixed-width strings drop trailing NUL bytes; keep elements exact.
            arr = np.array(value, dtype=object)
        elif arr.dtype == np.float64 and arr.size == 0 and dtype is None:
            arr = arr.astype(np.float32)
    if dtype is not None:
        arr = _cast_numpy(value, arr, dtype)
    return arr


def _all_strings(arr):
    return all(isinstance(x, (str, bytes)) for x in arr.ravel())


def _contains_tensor(seq):
    for x in seq:
        if isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and _contains_tensor(x)):
            return True
    return False


def _cast_numpy(value, arr, dtype):
    target = dtype.as_numpy_dtype
    if arr.size == 0 and arr.dtype.kind in "fiub" and dtype != dtypes.string:
        return arr.astype(target)  # [] has no element type of its own
    if dtype == dtypes.string:
        if arr.dtype.kind not in "USO":
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype string")
        return arr
    if arr.dtype.kind in "USO":
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
    if dtype.is_integer:
        from_python = not isinstance(value, (np.ndarray, np.generic))
        if from_python and arr.dtype.kind == "f":
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        if arr.dtype.kind in "iu" and arr.size:
            info = np.iinfo(target)
            if arr.min() < info.min or arr.max() > info.max:
                raise ValueError(f"Can't convert Python int to {dtype.name}: {value!r} is out of range")
    if dtype == dtypes.bool and arr.dtype.kind != "b" and not isinstance(value, np.ndarray):
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype bool")
    return arr.astype(target, copy=False)


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts tensors, variables, NumPy arrays and Python values to a tensor.

    `dtype` is required of the result (ValueError for a tensor of another
    dtype); `dtype_hint` is used only when the value has no dtype of its own."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if type(value) in TENSOR_CLASSES or isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                             f"{value.dtype.name}: {value!r}")
        return value
    for _, base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            return fn(value, dtype=dtype, name=name)
    if dtype is None and dtype_hint is not None and not isinstance(value, (np.ndarray, np.generic)):
        # A hint is for values without a dtype of their own (Python numbers and lists).
        hint = dtypes.as_dtype(dtype_hint)
        try:
            return _in_current_graph(_convert_value(value, hint))
        except (TypeError, ValueError):
            pass
    return _in_current_graph(_convert_value(value, dtype))


operand_interceptors = []  # td.loom.autobatch's: fn(literal, dtype, tensor beside it) -> its tensor, or None


def convert_operand(value, dtype, beside=None):
    """convert_to_tensor(value, dtype_hint=dtype), for the operand of an op
    beside a tensor of `dtype` (`beside`, when given). While tracing, a Python
    int or float (`x * 0.5`) comes from the graph's cache of literals, so
    tracing converts each literal once per graph."""
    if type(value) in TENSOR_CLASSES:
        return value
    if type(value) in _literal_types:
        if operand_interceptors and beside is not None:
            made = operand_interceptors[-1](value, dtype, beside)
            if made is not None:
                return made
        graph = context.current_graph()
        if graph is not None:
            return graph.literal(value, dtype)
    return convert_to_tensor(value, dtype_hint=dtype)


def _convert_value(value, dtype):
    if dtype is not None and isinstance(value, (numbers.Number, str, bytes)) and not isinstance(value, np.generic):
        return _core.scalar_tensor(value, dtype)
    arr = _python_to_numpy(value, dtype)
    if arr is None:
        return _array_functions["pack"]([convert_to_tensor(v, dtype=dtype) for v in value])
    return _core.tensor_from_numpy(arr, True)


constant_interceptors = []  # td.loom.autobatch's: fn(value, dtype, shape) -> a constant of one example, or None


def constant(value, dtype=None, shape=None, name="Const"):
    """A constant tensor from a Python value or NumPy array (always a copy)."""
    if constant_interceptors:
        made = constant_interceptors[-1](value, dtype, shape)
        if made is not None:
            return made
    if isinstance(value, EagerTensor):
        t = value if dtype is None or value.dtype == dtypes.as_dtype(dtype) else _cast_eager(value, dtype)
    elif isinstance(value, Tensor):
        t = convert_to_tensor(value, dtype)
    else:
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
        arr = _python_to_numpy(value, dtype)
        if arr is None:
            t = convert_to_tensor(value, dtype)
        else:
            if shape is not None:
                arr = _reshape_for_constant(arr, shape)
            t = _core.tensor_from_numpy(arr, True)  # copied into a treadle buffer (64-byte aligned)
            return _in_current_graph(t)
    if shape is not None:
        t = _array_functions["reshape"](t, shape)
    return _in_current_graph(t)


def _in_current_graph(t):
    """A value made while tracing becomes a Const node of the graph."""
    graph = context.current_graph()
    if graph is None or type(t) is not EagerTensor:
        return t
    return graph.constant(t)


def _cast_eager(t, dtype):
    return execute("Cast", [t], {"DstT": dtypes.as_dtype(dtype)})[0]


def _reshape_for_constant(arr, shape):
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape)) if shape else 1
    if arr.size == n:
        return arr.reshape(shape)
    if arr.size == 1:
        return np.broadcast_to(arr.reshape(()), shape)
    raise TypeError(f"Eager execution of td.constant with unsupported shape. Tried to convert a value of "
                    f"shape {arr.shape} ({arr.size} elements) to shape {shape} ({n} elements).")


# ---------------------------------------------------------------- methods

def _shape(self):
    return TensorShape(self._shape_tuple())


def _numpy(self):
    """A copy of the tensor's value as a NumPy array (a Python-free view is `np.asarray(t)`)."""
    view = self._numpy_view()
    return view.copy() if view.ndim else view[()]


def _array(self, dtype=None, copy=None):
    view = self._numpy_view()
    if dtype is not None and np.dtype(dtype) != view.dtype:
        return view.astype(dtype)
    if copy:
        return view.copy()
    return view


def _format_numpy(t):
    arr = t._numpy_view()
    return repr(arr[()]) if arr.ndim == 0 else repr(arr)


def _repr(self):
    if self.dtype in (dtypes.resource, dtypes.variant):
        return f"<td.Tensor: shape={self.shape}, dtype={self.dtype.name}, value=<handle>>"
    arr = self._numpy_view()
    value = arr[()] if arr.ndim == 0 else arr
    if arr.ndim == 0:
        shown = repr(value.item() if not isinstance(value, bytes) else value)
    else:
        # As TensorFlow's: on a new line only when the array takes several lines itself.
        shown = repr(value)
        shown = "\n" + shown if "\n" in shown else shown
    return f"<td.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={shown}>"


def _str(self):
    if self.dtype in (dtypes.resource, dtypes.variant):
        return _repr(self)
    arr = self._numpy_view()
    value = arr[()] if arr.ndim == 0 else arr
    return f"td.Tensor({value!s}, shape={self.shape}, dtype={self.dtype.name})"


def _len(self):
    shape = self._shape_tuple()
    if not shape:
        raise TypeError("len() of unsized object: scalar tensor")
    return shape[0]


def _iter(self):
    shape = self._shape_tuple()
    if not shape:
        raise TypeError("Cannot iterate over a scalar tensor.")
    return iterate(self, shape[0])


def _bool(self):
    if self._num_elements() != 1 or self.ndim != 0:
        raise ValueError("The truth value of a tensor with more than one element is ambiguous. "
                         "Use a.any() or a.all()" if self._num_elements() > 1 else
                         "The truth value of an empty tensor is ambiguous.")
    return bool(self._scalar_item())


def _float(self):
    return float(self._scalar_item())


def _int(self):
    return int(self._scalar_item())


def _index(self):
    if not self.dtype.is_integer or self.ndim != 0:
        raise TypeError(f"Only scalar integer tensors can be used as an index, got {self.dtype.name} "
                        f"of shape {self.shape}")
    return int(self._scalar_item())


def _get_shape(self):
    return self.shape


def _ref(self):
    return _TensorRef(self)


class _TensorRef:
    """A hashable reference to a tensor (`t.ref()`), since tensors are unhashable."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _TensorRef) and other._t is self._t


_EAGER_METHODS = {
    "shape": property(_shape),
    "numpy": _numpy,
    "__array__": _array,
    "__repr__": _repr,
    "__str__": _str,
    "__len__": _len,
    "__iter__": _iter,
    "__bool__": _bool,
    "__float__": _float,
    "__int__": _int,
    "__index__": _index,
    "get_shape": _get_shape,
    "ref": _ref,
    "__array_priority__": 100,
}
for _name, _value in _EAGER_METHODS.items():
    setattr(EagerTensor, _name, _value)


# ---------------------------------------------------------------- what treadle/ops installs

# framework/ sits below ops/: the functions behind Tensor's operators, indexing,
# iteration and list packing live in treadle/ops (math_ops.py, array_ops.py),
# which register them here when imported (treadle/__init__ imports them).

BinaryOperator = collections.namedtuple("BinaryOperator", "name dunder rdunder eager_op fn")
BinaryOperator.__doc__ = """A row of the operator table: `x <dunder> y` calls fn(x, y) (`rdunder`:
fn(y, x)); an eager tensor runs `eager_op` without leaving C++ when both operands
share its dtype (None: fn always decides). `name` names the operator."""
UnaryOperator = collections.namedtuple("UnaryOperator", "dunder eager_op fn")

_operator_functions = {}  # BinaryOperator.name -> fn, for the eager fallback
_operator_dunders = []  # every operator's dunder names, for delegate_operators
_delegating_classes = []  # (class, to_tensor) given by delegate_operators
_array_functions = {}  # "pack", "reshape", "unstack": installed by register_array_functions


def register_operators(binary, unary):
    """Installs the operator table on every tensor kind: EagerTensor's operators
    run in C++ (with _binary_fallback for what they leave), the others' (symbolic
    tensors) are Python methods of Tensor."""
    _core._install_eager_operators([(r.dunder, r.rdunder, r.name, r.eager_op) for r in binary],
                                   [(r.dunder, r.eager_op) for r in unary if r.eager_op])
    for row in binary:
        _operator_functions[row.name] = row.fn
        setattr(Tensor, row.dunder, _symbolic_operator(row))
        if row.rdunder:
            setattr(Tensor, row.rdunder, _symbolic_reflected(row.fn))
    for row in unary:
        setattr(Tensor, row.dunder, row.fn)
        if row.eager_op is None:
            setattr(EagerTensor, row.dunder, row.fn)
    _operator_dunders.extend([r.dunder for r in binary] + [r.rdunder for r in binary if r.rdunder] +
                             [r.dunder for r in unary])
    for cls, to_tensor in _delegating_classes:
        _install_delegates(cls, to_tensor)


def delegate_operators(cls, to_tensor):
    """Gives `cls` (a class standing for a tensor, such as Variable) every
    operator of the table, applied to `to_tensor(self)`."""
    _delegating_classes.append((cls, to_tensor))
    _install_delegates(cls, to_tensor)


def _install_delegates(cls, to_tensor):
    hash_method = cls.__dict__.get("__hash__")  # defining __eq__ must not change how cls hashes
    for dunder in _operator_dunders:
        setattr(cls, dunder, _delegate(dunder, to_tensor))
    if hash_method is not None:
        cls.__hash__ = hash_method


def _delegate(dunder, to_tensor):
    def method(self, *args):
        return getattr(to_tensor(self), dunder)(*args)
    method.__name__ = dunder
    return method


def register_array_functions(pack, reshape, unstack, getitem):
    """Installs list packing (`pack(tensors)`, for lists holding tensors),
    `constant(..., shape)`'s reshape, iteration and indexing."""
    _array_functions.update(pack=pack, reshape=reshape, unstack=unstack)
    Tensor.__getitem__ = getitem
    EagerTensor.__getitem__ = getitem


def iterate(t, num):
    """An iterator over t's `num` slices along its first dimension."""
    return iter(_array_functions["unstack"](t, num=num))


def _symbolic_operator(row):
    def forward(self, other):
        try:
            if type(other) not in TENSOR_CLASSES:
                other = convert_operand(other, self.dtype, self)
        except (TypeError, ValueError):
            if row.name in ("equal", "not_equal"):
                return row.name == "not_equal"
            return NotImplemented
        return row.fn(self, other)
    forward.__name__ = row.dunder
    return forward


def _symbolic_reflected(fn):
    def reflected(self, other):
        try:
            if type(other) not in TENSOR_CLASSES:
                other = convert_operand(other, self.dtype, self)
        except (TypeError, ValueError):
            return NotImplemented
        return fn(other, self)
    return reflected


def _binary_fallback(name, x, y, reflected):
    """Operators the C++ fast path did not take: other operand types, dtype
    mismatches, and the operators whose op depends on dtypes."""
    fn = _operator_functions[name]
    if isinstance(y, Tensor) and type(y) is not EagerTensor and not reflected:
        return NotImplemented  # a symbolic operand: its reflected operator builds the node
    try:
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    except (TypeError, ValueError):
        if name in ("equal", "not_equal"):
            return name == "not_equal"
        raise
    return fn(y, x) if reflected else fn(x, y)


_core._set_binary_fallback(_binary_fallback)
