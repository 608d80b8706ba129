"""Errors of the math ops, with TensorFlow's exception types: TypeError for a
Python value that cannot take the tensor's dtype, InvalidArgumentError for
bad values and dtypes met while executing eagerly. Messages name the op."""

import operator

import numpy as np
import pytest

import treadle as td


# ---------------------------------------------------------------- integer division by zero

@pytest.mark.parametrize("dtype", [td.int32, td.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("fn,op_name", [(operator.floordiv, "FloorDiv"), (operator.mod, "FloorMod"),
                                        (td.floordiv, "FloorDiv"), (td.math.floordiv, "FloorDiv"),
                                        (td.math.floormod, "FloorMod"), (td.mod, "FloorMod")],
                         ids=["//", "%", "floordiv", "math.floordiv", "math.floormod", "mod"])
def test_integer_division_by_zero(dtype, fn, op_name):
    x = td.constant([4, 5, 6], dtype=dtype)
    for y in (td.constant([1, 0, 2], dtype=dtype), td.constant(0, dtype=dtype)):
        with pytest.raises(td.errors.InvalidArgumentError, match="Integer division by zero") as info:
            fn(x, y)
        assert op_name in str(info.value)
    with pytest.raises(td.errors.InvalidArgumentError, match="Integer division by zero"):
        fn(x, 0)


def test_integer_division_by_zero_in_an_empty_tensor_is_fine():
    out = td.constant(np.zeros((0,), np.int32)) // td.constant(np.zeros((0,), np.int32))
    assert out.shape == (0,)


def test_errors_are_op_errors():
    assert issubclass(td.errors.InvalidArgumentError, td.errors.OpError)
    with pytest.raises(td.errors.OpError):
        td.constant([1]) // 0


# ---------------------------------------------------------------- Python values that do not fit

@pytest.mark.parametrize("fn", [
    lambda t: t + 1.5, lambda t: 1.5 + t, lambda t: t - 0.5, lambda t: 2.5 * t, lambda t: t // 1.5,
    lambda t: t % 1.5, lambda t: t ** 0.5, lambda t: t < 1.5, lambda t: t >= 0.5, lambda t: t + "a",
], ids=["+", "r+", "-", "r*", "//", "%", "**", "<", ">=", "+str"])
def test_python_float_with_an_int_tensor_is_a_type_error(fn):
    with pytest.raises(TypeError, match="Cannot convert"):
        fn(td.constant([1]))


def test_python_int_out_of_range_for_the_tensor_dtype():
    with pytest.raises((TypeError, ValueError), match="int32"):
        td.constant([1], dtype=td.int32) + 2**40


def test_true_division_of_mixed_dtypes_is_a_type_error():
    with pytest.raises(TypeError, match="same dtype"):
        td.constant([1]) / 1.5
    with pytest.raises(TypeError, match="same dtype"):
        td.constant([1]) / td.constant([1.0])
    with pytest.raises(TypeError, match="same dtype"):
        td.divide(td.constant([1.0], dtype=td.float64), td.constant([1.0]))


def test_string_with_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="Cannot convert"):
        td.constant(["a"]) + 1


# ---------------------------------------------------------------- tensors of different dtypes

MIXED = [(td.int32, td.int64), (td.float32, td.float64), (td.int32, td.float32), (td.bool, td.int32),
         (td.string, td.int32)]


@pytest.mark.parametrize("a,b", MIXED, ids=lambda d: d.name)
@pytest.mark.parametrize("fn,op_name", [
    (operator.add, "AddV2"), (operator.sub, "Sub"), (operator.mul, "Mul"), (operator.floordiv, "FloorDiv"),
    (operator.mod, "FloorMod"), (operator.pow, "Pow"), (operator.lt, "Less"), (operator.ge, "GreaterEqual"),
    (operator.eq, "Equal"), (operator.ne, "NotEqual"), (td.add, "AddV2"), (td.maximum, "Maximum"),
    (td.equal, "Equal"), (td.less_equal, "LessEqual"),
], ids=["+", "-", "*", "//", "%", "**", "<", ">=", "==", "!=", "add", "maximum", "equal", "less_equal"])
def test_mismatched_tensor_dtypes_are_invalid_argument(a, b, fn, op_name):
    x = td.constant(np.zeros(2, a.as_numpy_dtype) if a != td.string else ["p", "q"], dtype=a)
    y = td.constant(np.zeros(2, b.as_numpy_dtype), dtype=b)
    with pytest.raises(td.errors.InvalidArgumentError) as info:
        fn(x, y)
    assert op_name in str(info.value)


# ---------------------------------------------------------------- unsupported dtypes

UNSUPPORTED = [
    (td.tanh, td.int32, "Tanh"), (td.math.tanh, td.int64, "Tanh"), (td.sqrt, td.int32, "Sqrt"),
    (td.exp, td.bool, "Exp"), (td.log, td.int64, "Log"), (td.sigmoid, td.int32, "Sigmoid"),
    (td.math.rsqrt, td.int32, "Rsqrt"), (td.math.reciprocal, td.int32, "Reciprocal"),
    (td.negative, td.bool, "Neg"), (operator.neg, td.bool, "Neg"), (td.abs, td.string, "Abs"),
    (abs, td.bool, "Abs"), (td.square, td.string, "Square"), (td.sign, td.bool, "Sign"),
    (td.nn.relu, td.bool, "Relu"), (td.logical_not, td.int32, "LogicalNot"),
    (td.bitwise.invert, td.float32, "Invert"), (operator.invert, td.float32, "Invert"),
]


def _value_of(dtype):
    return td.constant(["s"] if dtype == td.string else np.ones(1, dtype.as_numpy_dtype), dtype=dtype)


@pytest.mark.parametrize("fn,dtype,op_name", UNSUPPORTED, ids=[f"{o}-{d.name}" for _, d, o in UNSUPPORTED])
def test_unsupported_unary_dtype_names_the_op(fn, dtype, op_name):
    with pytest.raises(td.errors.InvalidArgumentError, match=op_name) as info:
        fn(_value_of(dtype))
    assert dtype.name in str(info.value)


BINARY_UNSUPPORTED = [
    (td.subtract, td.string, "Sub"), (operator.sub, td.string, "Sub"), (td.multiply, td.bool, "Mul"),
    (td.add, td.bool, "AddV2"), (operator.add, td.bool, "AddV2"), (td.math.realdiv, td.int32, "RealDiv"),
    (td.less, td.string, "Less"), (operator.gt, td.bool, "Greater"), (td.pow, td.bool, "Pow"),
    (td.logical_and, td.int32, "LogicalAnd"), (td.logical_or, td.float32, "LogicalOr"),
    (td.bitwise.bitwise_and, td.float32, "BitwiseAnd"), (operator.and_, td.float64, "BitwiseAnd"),
    (operator.or_, td.string, "BitwiseOr"), (td.maximum, td.bool, "Maximum"), (td.math.floormod, td.string,
                                                                              "FloorMod"),
]


@pytest.mark.parametrize("fn,dtype,op_name", BINARY_UNSUPPORTED,
                         ids=[f"{o}-{d.name}" for _, d, o in BINARY_UNSUPPORTED])
def test_unsupported_binary_dtype_names_the_op(fn, dtype, op_name):
    x = _value_of(dtype)
    with pytest.raises(td.errors.InvalidArgumentError, match=op_name) as info:
        fn(x, x)
    assert dtype.name in str(info.value)


def test_error_messages_carry_the_op_tag():
    with pytest.raises(td.errors.InvalidArgumentError, match=r"\[Op:Tanh\]"):
        td.tanh(td.constant([1]))
    with pytest.raises(td.errors.InvalidArgumentError, match=r"\[Op:AddV2\]"):
        td.constant([1.0, 2.0]) + td.constant([1.0, 2.0, 3.0])
