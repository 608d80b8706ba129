"""Math wrappers with TensorFlow's signatures and dtype rules."""

from treadle.framework import dtypes
from treadle.framework.op_def_library import raw_ops
from treadle.framework.ops import execute
from treadle.framework.tensor import Tensor, convert_to_tensor


def _binary_inputs(x, y):
    """Converts a pair of operands the way TensorFlow's binary ops do: a Python
    value takes the dtype of the tensor beside it."""
    if isinstance(x, Tensor):
        return x, convert_to_tensor(y, dtype_hint=x.dtype)
    if isinstance(y, Tensor):
        return convert_to_tensor(x, dtype_hint=y.dtype), y
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


def _op2(op_name):
    def fn(x, y, name=None):
        x, y = _binary_inputs(x, y)
        return _run1(op_name, [x, y], name=name)
    fn.__name__ = op_name
    return fn


# Python operator name -> function, used by the operators of every tensor kind.
OPERATOR_FUNCTIONS = {
    "add": _op2("AddV2"),
    "subtract": _op2("Sub"),
    "multiply": _op2("Mul"),
    "truediv": truediv,
    "floordiv": _op2("FloorDiv"),
    "mod": _op2("FloorMod"),
    "pow": _op2("Pow"),
    "matmul": matmul,
    "and": _and,
    "or": _or,
    "less": _op2("Less"),
    "greater": _op2("Greater"),
    "less_equal": _op2("LessEqual"),
    "greater_equal": _op2("GreaterEqual"),
    "equal": _op2("Equal"),
    "not_equal": _op2("NotEqual"),
}

__all__ = ["cast", "truediv", "divide", "matmul", "invert_"]
del raw_ops
PUBLIC = {"": ["cast", "truediv", "divide", "matmul"], "math": ["cast", "truediv", "divide", "matmul"]}
