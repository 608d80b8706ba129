"""td.Variable: mutable state, held by the C++ core as a resource and read or
assigned through ops, so it behaves the same eagerly and inside graphs."""

import itertools
import weakref

import numpy as np

from treadle.framework import context, dtypes
from treadle.framework import tensor as tensor_module
from treadle.framework.indexed_slices import IndexedSlices
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, _TensorRef, convert_to_tensor, register_tensor_conversion_function
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.variable_creators import VariableMetaclass
from treadle.function import trace_type

_ids = itertools.count(1)
# While a td.function traces for its first call: a function of a tensor of
# that trace (a variable's initial value) giving the list where the variable
# and its value are left for the call to compute and assign, or None to refuse.
_lifted_initializers = []
_by_handle = weakref.WeakValueDictionary()  # id(handle tensor) -> Variable, to recognise captured handles
_creation_hooks = []  # callables(variable) run when a variable is created (td.function's first-call rule)
_read_hooks = []  # callables(variable) run before each read while a GradientTape records (it may watch it)
# td.loom.autobatch stands in for variable reads: while it records, a read
# inside the per-example function gives a value it records; while a loom
# traces an op that maps a function over its batch, a read gives the op's own
# read (a value the op's graph captured, so nested graphs capture values, not
# handles). Each entry: callable(variable) -> a tensor, or None to read as usual.
read_overrides = []


class Variable(metaclass=VariableMetaclass):
    """A tensor-valued variable: `assign`, `assign_add`, `assign_sub`, `read_value`."""

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None, shape=None, validate_shape=True):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        # The initial value is checked before anything else: a refused one
        # leaves no variable (a half-built one would reach creation hooks).
        lifted = None  # where a traced initial value goes to be computed by the first call
        if isinstance(initial_value, Tensor) and not hasattr(initial_value, "_numpy_view"):
            lifted = _lifted_initializers[-1](initial_value) if _lifted_initializers else None
            if lifted is None:
                raise ValueError(
                    "A td.Variable created inside a td.function cannot take its initial value from a tensor "
                    "computed in that function. Create the variable outside, or pass a Python value or callable.")
            if dtype is not None and dtypes.as_dtype(dtype) != initial_value.dtype:
                raise ValueError(f"initial value of dtype {initial_value.dtype.name} is not of the variable's dtype "
                                 f"{dtypes.as_dtype(dtype).name}")
        with context.init_scope():
            if callable(initial_value):
                initial_value = initial_value()
            value = initial_value if lifted is not None else convert_to_tensor(initial_value, dtype=dtype)
            if shape is not None:
                var_shape = TensorShape(shape)
            elif validate_shape:
                var_shape = value.shape
            else:
                var_shape = TensorShape(None)
            if not var_shape.is_compatible_with(value.shape):
                raise ValueError(f"initial value of shape {value.shape} is not compatible with shape {var_shape}")
        self._dtype = value.dtype
        self._shape = var_shape
        self._unique_id = next(_ids)
        self._name = name or "Variable"
        self._trainable = bool(trainable)
        for hook in _creation_hooks:
            hook(self)
        with context.init_scope():
            self._handle = execute("VarHandleOp", [], {"dtype": self._dtype, "shape": self._shape.dims,
                                                       "shared_name": self._name})[0]
            if lifted is None:
                execute("AssignVariableOp", [self._handle, value], {"dtype": self._dtype})
            _by_handle[id(self._handle)] = self
        if lifted is not None:  # assigned by the trace, as its first call runs it
            execute("AssignVariableOp", [self._handle, value], {"dtype": self._dtype})
            lifted.append((self, value))

    # ---------------------------------------------------------- properties
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def name(self):
        return f"{self._name}:0"

    @property
    def trainable(self):
        return self._trainable

    @property
    def device(self):
        """Where the variable lives: treadle keeps every variable on the one CPU."""
        return CPU_DEVICE

    @property
    def handle(self):
        return self._handle

    def _captured_value(self):
        return self._handle

    # ---------------------------------------------------------- reading
    def read_value(self):
        if read_overrides:
            value = read_overrides[-1](self)
            if value is not None:
                return value
        if _read_hooks:
            for hook in _read_hooks:
                hook(self)
        t = execute("ReadVariableOp", [self._handle], {"dtype": self._dtype})[0]
        if hasattr(t, "set_shape"):
            t.set_shape(self._shape)
        return t

    def value(self):
        return self.read_value()

    def numpy(self):
        return self.read_value().numpy()

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.read_value().numpy(), dtype=dtype)

    # ---------------------------------------------------------- writing
    def _update(self, op_name, value, read_value):
        value = convert_to_tensor(value, dtype=self._dtype)
        execute(op_name, [self._handle, value], {"dtype": self._dtype})
        return self if read_value else None

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._update("AssignVariableOp", value, read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("AssignAddVariableOp", delta, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("AssignSubVariableOp", delta, read_value)

    def _scatter(self, op_name, sparse_delta):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta!r}")
        updates = convert_to_tensor(sparse_delta.values, dtype=self._dtype)
        execute(op_name, [self._handle, sparse_delta.indices, updates])
        return self

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """Adds the IndexedSlices `sparse_delta` to the rows it names (ResourceScatterAdd)."""
        return self._scatter("ResourceScatterAdd", sparse_delta)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        """Subtracts the IndexedSlices `sparse_delta` from the rows it names (ResourceScatterSub)."""
        return self._scatter("ResourceScatterSub", sparse_delta)

    # ---------------------------------------------------------- misc
    def ref(self):
        return _TensorRef(self)

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def __tf_tracing_type__(self, context):
        """As a td.function argument: its dtype, shape and trainability."""
        return VariableType.of(self)

    @classmethod
    def _of_handle(cls, handle, dtype, shape, trainable, name):
        """A variable of a handle that is a traced function's argument (the
        variable a call passes), made without creating a resource."""
        var = cls.__new__(cls)
        var._dtype = dtype
        var._shape = TensorShape(shape)
        var._unique_id = next(_ids)
        var._name = name
        var._trainable = trainable
        var._handle = handle
        return var

    def __repr__(self):
        if not hasattr(self, "_handle"):  # seen by a creation hook, or its creation failed
            return f"<td.Variable '{getattr(self, '_name', 'Variable')}:0' (not created)>"
        if context.executing_eagerly():
            return (f"<td.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}, "
                    f"numpy={self.numpy()!r}>")
        return f"<td.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __bool__(self):
        return bool(self.read_value())

    def __len__(self):
        return len(self.read_value())

    def __iter__(self):
        return iter(self.read_value())

    def __getitem__(self, key):
        return self.read_value()[key]

    def __float__(self):
        return float(self.read_value())

    def __int__(self):
        return int(self.read_value())

    def __index__(self):
        return self.read_value().__index__()


# TensorFlow's full name of this process's CPU, as its tensors and variables report it.
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class VariableType(trace_type.TraceType):
    """A td.Variable as a td.function argument, as TensorFlow's VariableSpec:
    its dtype, shape and trainability, not its identity. The trace sees a
    variable of its own whose handle is an argument of the graph, and each
    call passes the handle of the variable it is given, so two variables of
    one dtype and shape share a trace and each call reads and assigns the
    variable passed."""

    __slots__ = ("dtype", "shape", "trainable")

    def __init__(self, dtype, shape, trainable):
        self.dtype = dtype
        self.shape = TensorShape(shape)
        self.trainable = trainable

    def is_subtype_of(self, other):
        return (type(other) is VariableType and self.dtype == other.dtype and self.trainable == other.trainable
                and self.shape.is_subtype_of(other.shape))

    def most_specific_common_supertype(self, others):
        shape = self.shape
        for o in others:
            if type(o) is not VariableType or o.dtype != self.dtype or o.trainable != self.trainable:
                return None
            shape = shape.most_specific_compatible_shape(o.shape)
        return VariableType(self.dtype, shape, self.trainable)

    def placeholder_value(self, placeholder_context=None):
        handle = placeholder_context.graph.add_placeholder(dtypes.resource, TensorShape([]),
                                                           placeholder_context.name)
        return Variable._of_handle(handle, self.dtype, self.shape, self.trainable, placeholder_context.name)

    def to_tensors(self, value):
        return [value.handle]

    def cast(self, value, casting_context=None):
        if isinstance(value, Variable) and VariableType.of(value).is_subtype_of(self):
            return value
        raise ValueError(f"Can not cast {value!r} to {self!r}")

    @staticmethod
    def of(variable):
        return VariableType(variable.dtype, variable.shape, variable.trainable)

    def __eq__(self, other):
        return (type(other) is VariableType and self.dtype == other.dtype and self.shape == other.shape
                and self.trainable == other.trainable)

    def __hash__(self):
        return hash((self.dtype, self.shape, self.trainable))

    def __repr__(self):
        return f"VariableSpec(shape={self.shape}, dtype={self.dtype!r}, trainable={self.trainable})"


# A variable's operators are its value's (the operator table's, installed by treadle/ops).
tensor_module.delegate_operators(Variable, lambda variable: variable.read_value())


def _variable_to_tensor(var, dtype=None, name=None):
    if dtype is not None and dtypes.as_dtype(dtype) != var.dtype:
        raise ValueError(f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for "
                         f"variable of type '{var.dtype.name}'")
    return var.read_value()


register_tensor_conversion_function(Variable, _variable_to_tensor)


def variable_for_handle(tensor):
    """The Variable whose handle is `tensor`, or None."""
    var = _by_handle.get(id(tensor))
    return var if var is not None and var._handle is tensor else None
