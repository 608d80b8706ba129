"""One or more finite-difference cases per differentiable op: (op type, case
id, function of td tensors, input arrays). Float64 inputs are differentiated;
integer inputs are passed as constants. Inputs stay away from the points
where an op is not differentiable (ties, kinks, zeros of log)."""

import numpy as np

import treadle as td
from treadle.loom.library import add_to_current_graph

R = td.raw_ops
_rng = np.random.default_rng(1234)


def u(*shape, low=-2.0, high=2.0):
    return _rng.uniform(low, high, size=shape)


def away_from_zero(*shape, low=0.3, high=2.0):
    return u(*shape, low=low, high=high) * _rng.choice([-1.0, 1.0], size=shape)


def pos(*shape):
    return u(*shape, low=0.5, high=2.0)


def distinct(*shape):
    """Values far apart from each other (no ties for max/min/relu kinks)."""
    n = int(np.prod(shape)) if shape else 1
    v = _rng.permutation(n).astype(np.float64) * 0.37 - n * 0.15 + 0.05
    return v.reshape(shape)


BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((3,), ()), ((), (2, 3))]

CASES = []


def case(op_type, ident, fn, *inputs, **tol):
    CASES.append((op_type, ident, fn, list(inputs), tol))


# ---------------------------------------------------------------- binary arithmetic
for sx, sy in BROADCAST_SHAPES:
    tag = f"{sx}x{sy}"
    case("AddV2", tag, lambda x, y: x + y, u(*sx), u(*sy))
    case("Sub", tag, lambda x, y: x - y, u(*sx), u(*sy))
    case("Mul", tag, lambda x, y: x * y, u(*sx), u(*sy))
    case("RealDiv", tag, lambda x, y: x / y, u(*sx), away_from_zero(*sy))
    case("Pow", tag, lambda x, y: td.pow(x, y), pos(*sx), u(*sy))
    case("Maximum", tag, lambda x, y: td.maximum(x, y), distinct(*sx), distinct(*sy) + 0.11)
    case("Minimum", tag, lambda x, y: td.minimum(x, y), distinct(*sx), distinct(*sy) + 0.11)
    # x in [2.1, 2.4], y in [0.95, 1.05]: x / y stays between 2 and 3, away from floor's jumps.
    case("FloorMod", tag, lambda x, y: td.math.floormod(x, y), u(*sx, low=2.1, high=2.4), u(*sy, low=0.95, high=1.05))
case("Pow", "negative base, integer exponent", lambda x: td.pow(x, td.constant([2.0, 3.0, 1.0], td.float64)),
     -pos(3))
case("AddN", "three", lambda x, y, z: td.add_n([x, y, z]), u(2, 3), u(2, 3), u(2, 3))

# ---------------------------------------------------------------- unary math
case("Neg", "", lambda x: -x, u(3, 2))
case("Abs", "", lambda x: td.abs(x), away_from_zero(3, 2))
case("Sign", "", lambda x: td.sign(x) * x, away_from_zero(4))
case("Square", "", lambda x: td.square(x), u(3, 2))
case("Sqrt", "", lambda x: td.sqrt(x), pos(3, 2))
case("Rsqrt", "", lambda x: td.math.rsqrt(x), pos(3, 2))
case("Exp", "", lambda x: td.exp(x), u(3, 2))
case("Log", "", lambda x: td.math.log(x), pos(3, 2))
case("Reciprocal", "", lambda x: td.math.reciprocal(x), away_from_zero(3, 2))
case("Tanh", "", lambda x: td.tanh(x), u(3, 2))
case("Sigmoid", "", lambda x: td.sigmoid(x), u(3, 2, low=-4, high=4))
case("Relu", "", lambda x: td.nn.relu(x), away_from_zero(3, 4))
case("Cast", "float64 -> float32 -> float64",
     lambda x: td.cast(td.cast(x, td.float32), td.float64) * x, u(3), eps=1e-3, rtol=1e-4, atol=1e-4)
case("Identity", "", lambda x: td.identity(x) * x, u(3))

# ---------------------------------------------------------------- matmul
for ta in (False, True):
    for tb in (False, True):
        a = u(4, 3) if ta else u(3, 4)
        b = u(2, 4) if tb else u(4, 2)
        case("MatMul", f"ta={ta} tb={tb}", lambda a, b, ta=ta, tb=tb: td.matmul(a, b, transpose_a=ta, transpose_b=tb),
             a, b)
case("BatchMatMulV2", "same batch", lambda a, b: td.matmul(a, b), u(2, 3, 4), u(2, 4, 2))
case("BatchMatMulV2", "broadcast batch", lambda a, b: td.matmul(a, b), u(2, 1, 3, 4), u(3, 4, 2))
case("BatchMatMulV2", "adjoints", lambda a, b: td.matmul(a, b, transpose_a=True, transpose_b=True),
     u(2, 4, 3), u(1, 2, 4))
case("BatchMatMulV2", "adj_x", lambda a, b: td.matmul(a, b, transpose_a=True), u(2, 4, 3), u(2, 4, 2))
case("BatchMatMulV2", "adj_y", lambda a, b: td.matmul(a, b, transpose_b=True), u(2, 3, 4), u(2, 2, 4))

# ---------------------------------------------------------------- reductions
for axis, keep in [(None, False), (0, False), (1, True), (-1, False), ([0, 2], True), ([], False)]:
    tag = f"axis={axis} keepdims={keep}"
    case("Sum", tag, lambda x, axis=axis, keep=keep: td.reduce_sum(x, axis, keepdims=keep), u(2, 3, 4))
    case("Mean", tag, lambda x, axis=axis, keep=keep: td.reduce_mean(x, axis, keepdims=keep), u(2, 3, 4))
    case("Max", tag, lambda x, axis=axis, keep=keep: td.reduce_max(x, axis, keepdims=keep), distinct(2, 3, 4))
    case("Min", tag, lambda x, axis=axis, keep=keep: td.reduce_min(x, axis, keepdims=keep), distinct(2, 3, 4))
    case("Prod", tag, lambda x, axis=axis, keep=keep: td.reduce_prod(x, axis, keepdims=keep), u(2, 3, 4))
_with_zero = u(3, 4)
_with_zero[0, 1] = 0.0
_two_zeros = u(3, 4)
_two_zeros[1, 0] = _two_zeros[1, 2] = 0.0
# At a zero the rule's second derivative is not exact (as TensorFlow's): first order only.
case("Prod", "one zero", lambda x: td.reduce_prod(x, 1), _with_zero, first_order_only=True)
case("Prod", "two zeros", lambda x: td.reduce_prod(x, 1), _two_zeros, first_order_only=True)
case("Max", "ties share the gradient", lambda x: td.reduce_max(td.concat([x, x], 0), 0), distinct(2, 3),
     atol=1e-6)

# ---------------------------------------------------------------- shapes
case("Reshape", "", lambda x, w=u(4, 3): td.reshape(x, [4, 3]) * td.constant(w), u(2, 6))
case("ExpandDims", "", lambda x, w=u(3, 2, 1): td.expand_dims(x, 1) * td.constant(w), u(3, 1))
case("Squeeze", "", lambda x: td.squeeze(x, [1]), u(3, 1, 2))
case("Transpose", "perm", lambda x: td.transpose(x, [2, 0, 1]), u(2, 3, 4))
case("Transpose", "matrix", lambda x: td.transpose(x), u(2, 3))
case("BroadcastTo", "", lambda x: td.broadcast_to(x, [2, 3, 4]), u(3, 1))
case("Fill", "", lambda v: td.fill([2, 3], v), u())
case("Tile", "", lambda x: td.tile(x, [2, 1, 3]), u(2, 3, 1))

# ---------------------------------------------------------------- joining and splitting
for axis in (0, 1, -1):
    case("ConcatV2", f"axis={axis}", lambda x, y, axis=axis: td.concat([x, y, x], axis), u(2, 3), u(2, 3))
case("ConcatV2", "different sizes", lambda x, y: td.concat([x, y], 1), u(2, 3), u(2, 1))
case("Pack", "axis=0", lambda x, y: td.stack([x, y]), u(2, 3), u(2, 3))
case("Pack", "axis=-1", lambda x, y: td.stack([x, y], axis=-1), u(2, 3), u(2, 3))
case("Unpack", "all used", lambda x: [t * float(i + 1) for i, t in enumerate(td.unstack(x, axis=1))], u(2, 3))
case("Unpack", "one used", lambda x: td.unstack(x)[1], u(3, 2))
case("Split", "", lambda x: td.split(x, 3, axis=1), u(2, 6))
case("Split", "one used", lambda x: td.split(x, 2, axis=0)[0], u(4, 3))
case("SplitV", "", lambda x: td.split(x, [1, 3], axis=1), u(2, 4))

# ---------------------------------------------------------------- gathering, slicing, selection
_idx = np.array([2, 0, 2, 1], dtype=np.int32)
case("GatherV2", "axis=0 repeated", lambda p, i: td.gather(p, i), u(3, 2), _idx)
case("GatherV2", "axis=0 2-D indices", lambda p, i: td.gather(p, i), u(3, 2),
     np.array([[0, 2], [2, 2]], dtype=np.int64))
case("GatherV2", "axis=1", lambda p, i: td.gather(p, i, axis=1), u(2, 3, 2), _idx)
case("GatherV2", "batch_dims=1", lambda p, i: td.gather(p, i, axis=1, batch_dims=1), u(2, 3, 2),
     np.array([[2, 0], [1, 1]], dtype=np.int32))
case("GatherV2", "batch_dims=1 axis=2", lambda p, i: td.gather(p, i, axis=2, batch_dims=1), u(2, 2, 3),
     np.array([[2, 0, 0], [1, 1, 2]], dtype=np.int32))
case("UnsortedSegmentSum", "", lambda d, s: td.math.unsorted_segment_sum(d, s, 4), u(5, 2),
     np.array([3, 0, 3, -1, 1], dtype=np.int32))
case("SegmentSum", "", lambda d, s: td.math.segment_sum(d, s), u(5, 2), np.array([0, 0, 2, 2, 3], dtype=np.int32))
case("UnsortedSegmentMax", "", lambda d, s: td.math.unsorted_segment_max(d, s, 4), distinct(6, 2),
     np.array([3, 0, 3, -1, 1, 2], dtype=np.int64), first_order_only=True)
case("Repeat", "axis 0", lambda x, r: td.repeat(x, r, axis=0), u(3, 2), np.array([2, 0, 3], dtype=np.int32))
case("Repeat", "negative axis, scalar repeats", lambda x: td.repeat(x, 2, axis=-1), u(2, 3))
case("Repeat", "axis 0, scalar int64 repeats", lambda x: td.repeat(x, np.int64(2), axis=0), u(3, 2))
case("Repeat", "axis 0, 3-D, int64 repeats", lambda x, r: td.repeat(x, r, axis=0), u(3, 2, 2),
     np.array([1, 3, 0], dtype=np.int64))
case("RaggedRowSum", "empty rows", lambda v, s: R.RaggedRowSum(values=v, row_splits=s), u(5, 2),
     np.array([0, 0, 3, 3, 5], dtype=np.int64))
case("RaggedRowSum", "int32 splits, 3-D", lambda v, s: R.RaggedRowSum(values=v, row_splits=s), u(4, 2, 3),
     np.array([0, 1, 4], dtype=np.int32))
case("StridedSlice", "basic", lambda x: x[1:, ::2], u(3, 5))
case("StridedSlice", "negative stride, new axis, shrink", lambda x: x[::-1, None, 2, 1:], u(3, 4, 3))
case("StridedSlice", "ellipsis", lambda x: x[..., 1], u(2, 3, 2))
case("StridedSliceGrad", "", lambda dy, w=u(4, 3): R.StridedSliceGrad(shape=[4, 3], begin=[1, 0], end=[4, 3],
                                                                       strides=[2, 2], dy=dy) * td.constant(w),
     u(2, 2))
case("SelectV2", "broadcast", lambda c, t, e: td.where(c, t, e), np.array([True, False, True]), u(2, 3), u(3))
case("SelectV2", "scalar branch", lambda c, t, e: td.where(c, t, e), np.array([[True], [False]]), u(), u(2, 3))

# ---------------------------------------------------------------- nn
case("Softmax", "last axis", lambda x: td.nn.softmax(x), u(3, 4))
case("Softmax", "axis 0", lambda x: td.nn.softmax(x, axis=0), u(3, 4))
case("LogSoftmax", "", lambda x: td.nn.log_softmax(x), u(3, 4))
case("L2Loss", "", lambda x: td.nn.l2_loss(x), u(3, 4))
case("SigmoidGrad", "", lambda y, dy: R.SigmoidGrad(y=y, dy=dy), u(3, 4, low=0.1, high=0.9), u(3, 4))
case("TanhGrad", "", lambda y, dy: R.TanhGrad(y=y, dy=dy), u(3, 4, low=-0.9, high=0.9), u(3, 4))
case("ReluGrad", "", lambda g, f: R.ReluGrad(gradients=g, features=f) * f, u(3, 4), away_from_zero(3, 4))
case("SparseSoftmaxCrossEntropyWithLogits", "loss",
     lambda x, y: td.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x), u(4, 3),
     np.array([0, 2, 1, 2], dtype=np.int32))
case("SparseSoftmaxCrossEntropyWithLogits", "both outputs",
     lambda x, y: list(R.SparseSoftmaxCrossEntropyWithLogits(features=x, labels=y)), u(4, 3),
     np.array([0, 2, 1, 2], dtype=np.int64))


# ---------------------------------------------------------------- tensor lists
def _list_roundtrip(x):
    ta = td.TensorArray(td.float64, size=3)
    ta = ta.unstack(x)
    return ta.read(1) * ta.read(2) + ta.read(1)


def _list_write_stack(x, y):
    ta = td.TensorArray(td.float64, size=3, element_shape=[2])
    ta = ta.write(0, x * 2.0).write(2, y).write(1, x * y)
    return ta.stack()


def _list_overwrite(x, y):
    ta = td.TensorArray(td.float64, size=2, element_shape=[2])
    ta = ta.write(0, x).write(1, x)
    ta = ta.write(0, y)  # x's first write is overwritten: no gradient through it
    return ta.stack()


def _list_add(x, y, w=u(3, 2)):
    a = R.TensorListFromTensor(tensor=x, element_shape=[2], element_dtype=td.float64)
    b = R.TensorListFromTensor(tensor=y, element_shape=[2], element_dtype=td.float64)
    s = R.TensorListAddN(inputs=[a, b])
    return R.TensorListStack(input_handle=s, element_shape=[2], element_dtype=td.float64) * td.constant(w)


case("TensorListFromTensor", "unstack then read", _list_roundtrip, u(3, 2))
case("TensorListGetItem", "unstack then read", _list_roundtrip, u(3, 2))
case("TensorListSetItem", "write then stack", _list_write_stack, u(2), u(2))
case("TensorListSetItem", "overwrite", _list_overwrite, u(2), u(2))
case("TensorListStack", "write then stack", _list_write_stack, u(2), u(2))
case("TensorListAddN", "", _list_add, u(3, 2), u(3, 2))

# ---------------------------------------------------------------- variables and calls
_var = td.Variable(u(3, 2), name="gradcheck_var")


def _read_var(x):
    return td.reduce_sum(_var.read_value() * x, 1)


case("ReadVariableOp", "", _read_var, u(3, 2))


@td.function
def _called(x, y):
    return td.tanh(x) * y + td.exp(y), x * 2.0


def _call(x, y):
    a, b = _called(x, y)
    return a + td.reduce_sum(b)


@td.function
def _stateful_called(x):
    _var.assign_add(td.zeros_like(_var))  # a write makes the call a StatefulPartitionedCall
    return td.tanh(x) * _var.read_value()


case("PartitionedCall", "", _call, u(3, 2), u(3, 2))
case("StatefulPartitionedCall", "", _stateful_called, u(3, 2))

# ---------------------------------------------------------------- TensorFlow's porting names (issue 17)
case("Add", "numbers", lambda x, y: R.Add(x=x, y=y), u(3, 2), u(2))
case("Log1p", "", lambda x: td.math.log1p(x), u(3, 2, low=-0.5, high=2.0))
case("Softplus", "", lambda x: td.nn.softplus(x), u(3, 2, low=-4, high=4))
case("Erf", "", lambda x: td.math.erf(x), u(3, 2))
for _excl in (False, True):
    for _rev in (False, True):
        case("Cumsum", f"exclusive={_excl} reverse={_rev}",
             lambda x, e=_excl, r=_rev: td.cumsum(x, axis=1, exclusive=e, reverse=r), u(3, 4))
        case("Cumprod", f"exclusive={_excl} reverse={_rev}",
             lambda x, e=_excl, r=_rev: td.math.cumprod(x, axis=0, exclusive=e, reverse=r), away_from_zero(4, 2))
case("ReverseV2", "", lambda x: td.reverse(x, [0, 2]), u(2, 3, 2))
case("Roll", "", lambda x: td.roll(x, [1, -1], [0, 1]), u(3, 4))
case("PadV2", "", lambda x: td.pad(x, [[1, 0], [0, 2]]), u(2, 3))
case("PadV2", "constant value", lambda x, c: R.PadV2(input=x, paddings=[[0, 1], [2, 0]], constant_values=c) * 1.5,
     u(2, 3), u())
case("GatherNd", "", lambda x: td.gather_nd(x, [[0, 1], [2, 0], [0, 1]]), u(3, 2))
case("GatherNd", "slices", lambda x: td.gather_nd(x, [[1], [0]]), u(3, 2))
case("ScatterNd", "", lambda v: td.scatter_nd([[1], [0], [1]], v, [3, 2]), u(3, 2))
case("TensorScatterUpdate", "", lambda x, v: td.tensor_scatter_nd_update(x, [[2], [0]], v), u(3, 2), u(2, 2))
case("TensorScatterAdd", "", lambda x, v: td.tensor_scatter_nd_add(x, [[2, 1], [2, 1]], v), u(3, 2), u(2))
case("TensorScatterSub", "", lambda x, v: td.tensor_scatter_nd_sub(x, [[1]], v), u(3, 2), u(1, 2))
case("EnsureShape", "", lambda x: td.ensure_shape(x, [None, 2]) * x, u(3, 2))
case("IdentityN", "", lambda x, y: td.identity_n([x, y])[0] * td.identity_n([x, y])[1], u(3), u(3))
case("CheckNumerics", "", lambda x: td.debugging.check_numerics(x, "checked") * x, u(3))
case("TopKV2", "", lambda x: td.math.top_k(x, 2).values, distinct(3, 4))
_WELL_CONDITIONED = np.eye(3) * 3.0


def _spd(x):
    """A symmetric positive definite matrix that depends on every entry of x."""
    return td.linalg.matmul(x, x, transpose_b=True) + td.constant(_WELL_CONDITIONED)


case("MatrixInverse", "", lambda x: td.linalg.inv(x), u(2, 3, 3) + _WELL_CONDITIONED)
case("MatrixSolve", "", lambda a, b: td.linalg.solve(a, b), u(3, 3) + _WELL_CONDITIONED, u(3, 2))
case("MatrixDeterminant", "", lambda x: td.linalg.det(x), u(2, 3, 3) + _WELL_CONDITIONED)
case("Cholesky", "", lambda x: td.linalg.cholesky(_spd(x)), u(3, 3))

# ---------------------------------------------------------------- the Loom
# A loom whose named tensors are the differentiated inputs: its run (LoomRun)
# and its unrolled steps (LoomInitialState, LoomLayer per depth,
# LoomGatherOutputs) take them as op inputs like any other op.
_VEC = td.loom.TypeShape("float64", (3,))


class _BinaryLoomOp(td.loom.LoomOp):
    def __init__(self, fn):
        self._fn = fn
        super().__init__([_VEC, _VEC], [_VEC])

    def instantiate_batch(self, inputs):
        return [self._fn(inputs[0], inputs[1])]


def _gradcheck_loom(max_depth):
    loom = td.loom.Loom(max_depth=max_depth, named_tensors={"x": np.zeros(3), "y": np.zeros(3)},
                        named_ops={"add": _BinaryLoomOp(td.add), "mul": _BinaryLoomOp(lambda a, b: a * td.tanh(b))})
    w = loom.make_weaver()
    x, y = w.named_tensor("x"), w.named_tensor("y")
    a = w.add(x, w(np.array([0.5, -1.0, 2.0])))
    w.add_output(w.mul(w.mul(a, y), x))  # depth 3, x passed through to depth 2
    w.add_output(w.add(a, y))
    w.add_output(y)
    return loom, w.serialize()


_LOOP_LOOM, _LOOP_MESSAGE = _gradcheck_loom(None)
_UNROLLED_LOOM, _UNROLLED_MESSAGE = _gradcheck_loom(4)  # a layer beyond the schedule's depth


def _loom_run(x, y):
    add_to_current_graph(_LOOP_LOOM.functions)  # the functions LoomRun's attrs name, in a traced graph's library
    return td.raw_ops.LoomRun(schedule=td.constant(_LOOP_MESSAGE), inputs=[x, y],
                              **{k: v for k, v in _LOOP_LOOM._run_attrs.items()})[:-1]


def _loom_unrolled(x, y):
    return _UNROLLED_LOOM._run_unrolled(td.constant(_UNROLLED_MESSAGE), [x, y])


case("LoomRun", "", _loom_run, u(3), u(3), first_order_only=True)
for _op in ("LoomInitialState", "LoomLayer", "LoomGatherOutputs"):
    case(_op, "", _loom_unrolled, u(3), u(3), first_order_only=True)

# ---------------------------------------------------------------- sparse tensors (values at fixed indices)
_SP_INDICES = np.array([[0, 1], [1, 0], [1, 2]])
_SP_OTHER = np.array([[0, 1], [0, 2]])


def _sp(values, indices=_SP_INDICES):
    return td.SparseTensor(indices, values, [2, 3])


case("SparseToDense", "", lambda v, d: td.sparse.to_dense(_sp(v), default_value=d), u(3), u())
case("SparseTensorDenseAdd", "", lambda v, x: td.sparse.add(_sp(v), x), u(3), u(2, 3))
case("SparseTensorDenseMatMul", "", lambda v, m: td.sparse.sparse_dense_matmul(_sp(v), m), u(3), u(3, 2))
case("SparseTensorDenseMatMul", "adjoints",
     lambda v, m: td.sparse.sparse_dense_matmul(_sp(v), m, adjoint_a=True, adjoint_b=True), u(3), u(2, 2))
case("SparseAdd", "", lambda v, w: td.sparse.add(_sp(v), _sp(w, _SP_OTHER)).values, u(3), u(2))
case("SparseReduceSum", "", lambda v: td.sparse.reduce_sum(_sp(v), axis=1), u(3))
case("SparseReorder", "", lambda v: td.sparse.reorder(_sp(v, _SP_INDICES[::-1])).values, u(3))
