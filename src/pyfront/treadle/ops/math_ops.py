"""Math wrappers with TensorFlow's signatures and dtype rules."""

import numpy as np

from treadle.framework import dtypes, tensor
from treadle.framework.op_def_library import BINARY_DISPATCH, raw_ops
from treadle.framework.op_execution import execute
from treadle.framework.tensor import TENSOR_CLASSES, Tensor, convert_operand, convert_to_tensor


def _binary_inputs(x, y):
    """Converts a pair of operands the way TensorFlow's binary ops do: a Python
    value takes the dtype of the tensor beside it."""
    if type(x) in TENSOR_CLASSES or isinstance(x, Tensor):
        if type(y) in TENSOR_CLASSES or isinstance(y, Tensor):
            return x, y
        return x, convert_operand(y, x.dtype, x)
    if isinstance(y, Tensor):
        return convert_operand(x, y.dtype, y), y
    x = convert_to_tensor(x)
    return x, convert_to_tensor(y, dtype_hint=x.dtype)


def _run1(op_name, inputs, attrs=None, name=None):
    return execute(op_name, list(inputs), attrs, name=name)[0]


def cast(x, dtype, name=None):
    """Casts x to dtype. Floats to ints truncate toward zero, as in TensorFlow."""
    dtype = dtypes.as_dtype(dtype)
    x = convert_to_tensor(x)
    if x.dtype == dtype:
        return x
    return _run1("Cast", [x], {"DstT": dtype}, name)


def truediv(x, y, name=None):
    """x / y; integer inputs are cast to float64 first (int32 and int64 alike, as in TensorFlow)."""
    x, y = _binary_inputs(x, y)
    if x.dtype != y.dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got {x.dtype!r} != {y.dtype!r}.")
    if x.dtype.is_integer:
        x, y = cast(x, dtypes.float64), cast(y, dtypes.float64)
    return _run1("RealDiv", [x, y], name=name)


def divide(x, y, name=None):
    return truediv(x, y, name=name)


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    a, b = _binary_inputs(a, b)
    a_rank, b_rank = a.shape.rank, b.shape.rank
    if a_rank == 2 and b_rank == 2:
        return _run1("MatMul", [a, b], {"transpose_a": transpose_a, "transpose_b": transpose_b}, name)
    if a_rank is not None and a_rank < 2 or b_rank is not None and b_rank < 2:
        raise ValueError(f"matmul: inputs must be tensors of rank >= 2, got shapes {a.shape} and {b.shape}")
    return _run1("BatchMatMulV2", [a, b], {"adj_x": transpose_a, "adj_y": transpose_b}, name)


# ---------------------------------------------------------------- reductions

def _int_tensor(value, what):
    """An int32 (int64 where needed) tensor from an int, a list of ints, or a tensor."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer:
            raise TypeError(f"{what} must be an integer tensor, got dtype {value.dtype.name}")
        return value
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer or a list of integers, got {value!r}")
    if arr.size and (arr.min() < -(2**31) or arr.max() >= 2**31):
        return convert_to_tensor(arr.astype(np.int64))
    return convert_to_tensor(arr.astype(np.int32))


def _axis_input(x, axis):
    """The `axis` input of a reduction op; None means every axis."""
    if axis is not None:
        return _int_tensor(axis, "axis")
    rank = x.shape.rank
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32))
    # Rank known only when the graph runs: range(0, rank(x)).
    return _run1("Range", [convert_to_tensor(0), _run1("Rank", [x]), convert_to_tensor(1)])


# Reductions of other kinds of tensor (td.RaggedTensor): type -> fn(public_name,
# value, axis, keepdims), registered by their modules (a higher layer).
REDUCTION_DISPATCH = {}


def _make_reduction(op_name, public_name, doc):
    def reduction(input_tensor, axis=None, keepdims=False, name=None):
        other = REDUCTION_DISPATCH.get(type(input_tensor))
        if other is not None:
            return other(public_name, input_tensor, axis, keepdims)
        x = convert_to_tensor(input_tensor)
        keep = bool(keepdims) if keepdims is not None else False
        return _run1(op_name, [x, _axis_input(x, axis)], {"keep_dims": keep}, name)
    reduction.__name__ = reduction.__qualname__ = public_name
    reduction.__doc__ = doc + (
        "\n\n`axis`: an int, a list of ints or an integer tensor (negative counts from the end);"
        " None reduces every axis. `keepdims` keeps reduced axes with length 1.")
    return reduction


reduce_sum = _make_reduction("Sum", "reduce_sum", "Sum of elements across axes (0 for an empty reduction).")
reduce_mean = _make_reduction(
    "Mean", "reduce_mean", "Mean across axes; integer tensors use integer division, as in TensorFlow.")
reduce_max = _make_reduction(
    "Max", "reduce_max", "Maximum across axes (-inf, or the lowest integer, for an empty reduction).")
reduce_min = _make_reduction(
    "Min", "reduce_min", "Minimum across axes (inf, or the largest integer, for an empty reduction).")
reduce_prod = _make_reduction("Prod", "reduce_prod", "Product of elements across axes (1 for an empty reduction).")
reduce_all = _make_reduction("All", "reduce_all", "Logical and of bool elements across axes.")
reduce_any = _make_reduction("Any", "reduce_any", "Logical or of bool elements across axes.")


def _make_arg_reduction(op_name, public_name, doc):
    def arg_reduction(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002 (TF's name)
        x = convert_to_tensor(input)
        dimension = _int_tensor(0 if axis is None else axis, "axis")
        return _run1(op_name, [x, dimension], {"output_type": dtypes.as_dtype(output_type)}, name)
    arg_reduction.__name__ = arg_reduction.__qualname__ = public_name
    arg_reduction.__doc__ = doc
    return arg_reduction


argmax = _make_arg_reduction(
    "ArgMax", "argmax", "Index of the largest value along `axis` (default 0); the first one on ties.")
argmin = _make_arg_reduction(
    "ArgMin", "argmin", "Index of the smallest value along `axis` (default 0); the first one on ties.")


def add_n(inputs, name=None):
    """Elementwise sum of a list of tensors of the same shape and dtype."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape.")
    tensors = [convert_to_tensor(v) for v in inputs]  # each on its own, as TensorFlow does
    if len(tensors) == 1:
        return tensors[0]
    return _run1("AddN", tensors, name=name)


# ---------------------------------------------------------------- operators

def logical_and_or_bitwise(op_bool, op_int):
    def fn(x, y, name=None):
        x, y = _binary_inputs(x, y)
        if x.dtype == dtypes.bool:
            return _run1(op_bool, [x, y], name=name)
        return _run1(op_int, [x, y], name=name)
    return fn


_and = logical_and_or_bitwise("LogicalAnd", "BitwiseAnd")
_or = logical_and_or_bitwise("LogicalOr", "BitwiseOr")


def invert_(x, name=None):
    """~x: logical not for bool tensors, bitwise inversion for integers."""
    x = convert_to_tensor(x)
    if x.dtype == dtypes.bool:
        return _run1("LogicalNot", [x], name=name)
    return _run1("Invert", [x], name=name)


def _op2(op_name, node_name=None):
    """The function of a binary op; `node_name` is the graph node name
    TensorFlow gives the Python operator (`a + b` makes node "add")."""
    def fn(x, y, name=None):
        other = BINARY_DISPATCH.get(type(x)) or BINARY_DISPATCH.get(type(y))
        if other is not None:
            return other(fn, x, y)
        x, y = _binary_inputs(x, y)
        return _run1(op_name, [x, y], name=name or node_name)
    fn.__name__ = op_name
    return fn


def _operator_add(x, y, name=None):
    """x + y. As in TensorFlow, strings use the op Add (numbers AddV2)."""
    x, y = _binary_inputs(x, y)
    op_name = "Add" if x.dtype == dtypes.string and y.dtype == dtypes.string else "AddV2"
    return _run1(op_name, [x, y], name=name or "add")


def _named(fn, node_name):
    def named(x, y, name=None):
        return fn(x, y, name=name or node_name)
    named.__name__ = fn.__name__
    return named


def _op1(op_name):
    def fn(x, name=None):
        return _run1(op_name, [convert_to_tensor(x)], name=name)
    fn.__name__ = op_name
    return fn


# Tensor's operators, one table for every tensor kind (framework/tensor.py
# installs it): an eager tensor runs the row's op straight from C++ when both
# operands share its dtype; everything else goes through the row's function.
_B = tensor.BinaryOperator
BINARY_OPERATORS = (
    _B("add", "__add__", "__radd__", "AddV2", _operator_add),
    _B("subtract", "__sub__", "__rsub__", "Sub", _op2("Sub", "sub")),
    _B("multiply", "__mul__", "__rmul__", "Mul", _op2("Mul", "mul")),
    _B("truediv", "__truediv__", "__rtruediv__", None, _named(truediv, "truediv")),
    _B("floordiv", "__floordiv__", "__rfloordiv__", "FloorDiv", _op2("FloorDiv", "floordiv")),
    _B("mod", "__mod__", "__rmod__", "FloorMod", _op2("FloorMod", "mod")),
    _B("pow", "__pow__", "__rpow__", "Pow", _op2("Pow", "pow")),
    _B("matmul", "__matmul__", "__rmatmul__", None, _named(matmul, "matmul")),
    _B("and", "__and__", "__rand__", None, _and),
    _B("or", "__or__", "__ror__", None, _or),
    _B("less", "__lt__", None, "Less", _op2("Less")),
    _B("greater", "__gt__", None, "Greater", _op2("Greater")),
    _B("less_equal", "__le__", None, "LessEqual", _op2("LessEqual")),
    _B("greater_equal", "__ge__", None, "GreaterEqual", _op2("GreaterEqual")),
    _B("equal", "__eq__", None, "Equal", _op2("Equal")),
    _B("not_equal", "__ne__", None, "NotEqual", _op2("NotEqual")),
)
UNARY_OPERATORS = (
    tensor.UnaryOperator("__neg__", "Neg", _op1("Neg")),
    tensor.UnaryOperator("__abs__", "Abs", _op1("Abs")),
    tensor.UnaryOperator("__invert__", None, invert_),
)
tensor.register_operators(BINARY_OPERATORS, UNARY_OPERATORS)

# Operator name -> function, for the op wrappers built on the operators.
OPERATOR_FUNCTIONS = {row.name: row.fn for row in BINARY_OPERATORS}

_REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all", "reduce_any",
               "argmax", "argmin", "add_n"]
__all__ = ["cast", "truediv", "divide", "matmul", "invert_"] + _REDUCTIONS
del raw_ops
PUBLIC = {"": ["cast", "truediv", "divide", "matmul"] + _REDUCTIONS,
          "math": ["cast", "truediv", "divide", "matmul"] + _REDUCTIONS}
