"""Cases for td.vectorized_map: every op with a batching rule, as (op type,
case id, function of td tensors, per-example input arrays). The gradient
cases of op_cases.py cover the differentiable ops; the ones here cover the
others (comparisons, integer ops, shapes, random draws, variables, lists)."""

import numpy as np

import treadle as td

from .op_cases import CASES as GRADIENT_CASES

R = td.raw_ops
_rng = np.random.default_rng(77)


def u(*shape, low=-2.0, high=2.0):
    return _rng.uniform(low, high, size=shape)


def ints(*shape, high=5):
    return _rng.integers(0, high, size=shape).astype(np.int32)


CASES = [(op, ident, fn, inputs) for op, ident, fn, inputs, _ in GRADIENT_CASES]


def case(op_type, ident, fn, *inputs):
    CASES.append((op_type, ident, fn, list(inputs)))


# ---------------------------------------------------------------- comparisons and logic
for _op, _fn in [("Equal", td.equal), ("NotEqual", td.not_equal), ("Less", td.less),
                 ("LessEqual", td.less_equal), ("Greater", td.greater), ("GreaterEqual", td.greater_equal)]:
    case(_op, "broadcast", lambda x, y, f=_fn: f(x, y), ints(3, 4), ints(4))
case("LogicalAnd", "", lambda x, y: td.logical_and(x > 0, y > 0), u(3, 2), u(2))
case("LogicalOr", "", lambda x, y: td.logical_or(x > 0, y > 0), u(3, 2), u(3, 2))
case("LogicalNot", "", lambda x: td.logical_not(x > 0), u(3, 2))
case("BitwiseAnd", "", lambda x, y: td.bitwise.bitwise_and(x, y), ints(3, 2, high=16), ints(2, high=16))
case("BitwiseOr", "", lambda x, y: td.bitwise.bitwise_or(x, y), ints(3, 2, high=16), ints(3, 2, high=16))
case("Invert", "", lambda x: td.bitwise.invert(x), ints(4, high=16))
case("FloorDiv", "", lambda x, y: td.math.floordiv(x, y), ints(3, 4, high=20), ints(4, high=4) + 1)
case("All", "axis 1", lambda x: td.reduce_all(x > 0, 1), u(3, 4))
case("Any", "axis -1", lambda x: td.reduce_any(x > 1, -1), u(3, 4))
case("ArgMax", "axis 0", lambda x: td.argmax(x, 0), u(3, 4))
case("ArgMin", "axis 1", lambda x: td.argmin(x, 1), u(3, 4))
case("InvertPermutation", "", lambda p: td.math.invert_permutation(p), np.array([2, 0, 3, 1], np.int32))

# ---------------------------------------------------------------- shapes and constants
case("Shape", "", lambda x: td.cast(td.shape(x), td.float64) * td.reduce_sum(x), u(3, 2))
case("Size", "", lambda x: td.cast(td.size(x), td.float64) * x, u(3, 2))
case("Rank", "", lambda x: td.cast(td.rank(x), td.float64) * x, u(3, 2))
case("OnesLike", "", lambda x: td.ones_like(x) + x, u(3))
case("ZerosLike", "", lambda x: td.zeros_like(x) + x, u(3))
case("OneHot", "axis -1", lambda i: td.one_hot(i, 5), ints(3))
case("OneHot", "axis 0", lambda i: td.one_hot(i, 5, axis=0), ints(3))
case("StopGradient", "", lambda x: td.stop_gradient(x) * 2.0, u(3))


def _assert(x):
    td.debugging.Assert(td.reduce_all(x > -10.0), [x])
    return x * 1.0


case("Assert", "", _assert, u(3))

case("StridedSlice", "new and size-1 axes only", lambda x: x[:, None][0][None] * 2.0, u(1, 3))
case("StridedSlice", "whole axes", lambda x: x[:, 0:3, None, :] + 1.0, u(2, 3, 2))

# ---------------------------------------------------------------- variables
VAR = td.Variable(u(3, 2), name="vectorize_var")
case("ReadVariableOp", "captured", lambda x: td.matmul(x, VAR.read_value(), transpose_b=True), u(2, 2))

# ---------------------------------------------------------------- tensor lists


def _list_length(x):
    ta = td.TensorArray(td.float64, size=3, element_shape=[2]).unstack(x)
    return td.cast(ta.size(), td.float64) * ta.read(0)


def _list_zeros_like(x):
    lst = R.TensorListFromTensor(tensor=x, element_shape=[2], element_dtype=td.float64)
    zeros = R.TensorListZerosLike(input_handle=lst)
    return R.TensorListStack(input_handle=R.TensorListAddN(inputs=[lst, zeros]), element_shape=[2],
                             element_dtype=td.float64)


case("TensorListLength", "", _list_length, u(3, 2))
case("TensorListReserve", "write then stack", lambda x: td.TensorArray(td.float64, size=2, element_shape=[2])
     .write(1, x).write(0, x * 2.0).stack(), u(2))
case("TensorListZerosLike", "", _list_zeros_like, u(3, 2))

# ---------------------------------------------------------------- control flow


def _cond_per_example(x):
    return td.cond(td.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)


def _cond_shared(x, y):
    return td.cond(td.reduce_sum(y) > 0, lambda: x * y, lambda: x - y)


def _while_per_example(x):
    # Each example doubles until its sum passes 10: a different trip count.
    return td.while_loop(lambda v: td.reduce_sum(td.abs(v)) < 10.0, lambda v: v * 2.0, [x])[0]


def _while_shared(x):
    _, out = td.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, td.tanh(v) + 1.0), [0, x])
    return out


def _while_counter(x):
    # The counter is per example (examples stop at different iterations).
    i, v = td.while_loop(lambda i, v: td.reduce_sum(v) < 5.0, lambda i, v: (i + 1, v + 1.0), [0, x])
    return td.cast(i, td.float64) + v


case("StatelessIf", "per-example condition", _cond_per_example, u(3))
case("StatelessIf", "shared condition", _cond_shared, u(3), u(3))
case("StatelessWhile", "per-example trip count", _while_per_example, u(3, low=0.1, high=1.0))
case("StatelessWhile", "shared trip count", _while_shared, u(3))
case("StatelessWhile", "per-example counter", _while_counter, u(2, low=0.0, high=2.0))

# ---------------------------------------------------------------- strings (compared through equality)
def _matches(strings, want):
    return td.cast(td.equal(strings, want), td.int32)


_WORDS = np.array([b"x", b"z"])
case("AsString", "", lambda x: _matches(td.strings.as_string(x), "3"), ints(4))
case("StringJoin", "same shapes", lambda a, b: _matches(td.strings.join([a, b], separator="-"), "x-y"),
     _WORDS, np.array([b"y", b"y"]))
case("ReduceJoin", "", lambda a: _matches(td.strings.reduce_join(a, axis=0), "xz"), _WORDS)

# ---------------------------------------------------------------- where each example's own sizes differ
# (these run once per example, with a warning)
RUNS_PER_EXAMPLE_CASES = []


def per_example_case(op_type, ident, fn, *inputs):
    RUNS_PER_EXAMPLE_CASES.append((op_type, ident, fn, list(inputs)))


per_example_case("Range", "per-example limit", lambda n: td.cast(td.range(n % 1 + 3), td.float64), ints(1)[0])
per_example_case("Where", "", lambda x: td.where(x > 10.0), u(3))
per_example_case("StatelessRandomNormal", "per-example seed",
                 lambda s: td.random.stateless_normal([2], s, dtype=td.float64), np.array([1, 2], np.int32))
per_example_case("BroadcastGradientArgs", "", lambda s: td.size(R.BroadcastGradientArgs(s0=s, s1=[1, 1])[0]) + s,
                 np.array([2, 3], np.int32))
per_example_case("PyFunc", "", lambda x: td.py_function(lambda a: a * 2.0, [x], td.float64), u(3))

# Ops whose rules the vectorizer uses without a case of their own here, and why.
NO_CASE = {
    "Placeholder": "a function's arguments; the vectorizer maps them to its inputs",
    "NoOp": "no inputs or outputs (td.group inside a function)",
    "Const": "every case has constants",
    "VarHandleOp": "variables are created outside vectorized_map",
    "If": "a stateful branch with a per-example condition runs per example: test_vectorize.py",
    "While": "a stateful body: test_vectorize.py",
    "AssignVariableOp": "test_vectorize.py (variable writes)",
    "AssignAddVariableOp": "test_vectorize.py (variable writes)",
    "AssignSubVariableOp": "test_vectorize.py (variable writes)",
    "ResourceScatterAdd": "test_vectorize.py (variable writes)",
    "ResourceScatterSub": "test_vectorize.py (variable writes)",
    "RandomStandardNormal": "random: test_vectorize.py",
    "RandomUniform": "random: test_vectorize.py",
    "RandomUniformInt": "random: test_vectorize.py",
    "StatelessRandomUniform": "like StatelessRandomNormal",
    "Print": "test_vectorize.py (prints once per example)",
    "LoomRunGrad": "the backward pass of LoomRun, not called inside a per-example function",
    "LoomInitialStateGrad": "the backward pass of a Loom, not called inside a per-example function",
    "LoomLayerGrad": "the backward pass of a Loom, not called inside a per-example function",
    "LoomGatherOutputsGrad": "the backward pass of a Loom, not called inside a per-example function",
    "SparseAddGrad": "the backward pass of SparseAdd; sparse ops run per example (test_sparse cases)",
}
