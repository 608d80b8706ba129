"""Gradient rules of the array ops: reshaping, joining and splitting,
transposes, tiling, gathering, slicing and selection."""

import numpy as np

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule, RunsPerExample, Unbatched
from treadle.autodiff.helpers import ints, run, run_all, scalar
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes
from treadle.framework.indexed_slices import IndexedSlices
from treadle.framework.tensor import convert_to_tensor

NotDifferentiable(
    "Shape", "Size", "Rank", "OnesLike", "ZerosLike", "Const", "Placeholder", "NoOp", "Where", "OneHot", "Range",
)

RegisterBatchingRule("OnesLike", "ZerosLike")(bh.same_op)
RunsPerExample("the number of its results differs per example", "Where")
RunsPerExample("the length of its result may differ per example", "Range")


@RegisterBatchingRule("Const", "NoOp")
def _no_input_batched(ctx, op, inputs, batched):
    return [Unbatched(t) for t in ctx.reemit(op, inputs)]  # never batched: no inputs


@RegisterBatchingRule("Placeholder")
def _placeholder_batched(ctx, op, inputs, batched):
    raise ValueError(f"vectorized_map: placeholder {op.name} is not an argument of the function being vectorized")


def _int_vector(values, dtype):
    return convert_to_tensor(np.asarray(values, dtype=np.int64), dtype=dtype)


@RegisterBatchingRule("Shape")
def _shape_batched(ctx, op, inputs, batched):
    full = run("Shape", [inputs[0]], {"out_type": get_attr(op, "out_type")})
    one = _int_vector([1], full.dtype)
    return [Unbatched(run("StridedSlice", [full, one, _int_vector([0], full.dtype), one], {"end_mask": 1}))]


@RegisterBatchingRule("Size")
def _size_batched(ctx, op, inputs, batched):
    example_shape = _shape_batched(ctx, op, inputs, batched)[0].value
    return [Unbatched(run("Prod", [example_shape, ints([0])]))]


@RegisterBatchingRule("Rank")
def _rank_batched(ctx, op, inputs, batched):
    return [Unbatched(run("Sub", [run("Rank", [inputs[0]]), scalar(1, dtypes.int32)]))]


@RegisterBatchingRule("OneHot")
def _one_hot_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1, 2, 3], "the depth or on/off value")
    attrs = dict(op.attrs)
    attrs["axis"] = bh.shift_axis_value(get_attr(op, "axis"))
    return list(run_all("OneHot", list(inputs), attrs))


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _dims(t, begin, end=None):
    """t's dimensions [begin:end] as an int32 vector (a constant when known)."""
    s = helpers.static_shape(t)
    if s is not None:
        part = s[begin:end]
        if None not in part:
            return ints(part)
    shape = helpers.shape(t)
    stop = end if end is not None else 0
    return run("StridedSlice", [shape, ints([begin]), ints([stop]), ints([1])],
               {"end_mask": 0 if end is not None else 1})


def _dim(t, i):
    """Dimension i of t as an int32 scalar."""
    s = helpers.static_shape(t)
    if s is not None and s[i] is not None:
        return scalar(s[i], dtypes.int32)
    return run("StridedSlice", [helpers.shape(t), ints([i]), ints([i + 1]), ints([1])], {"shrink_axis_mask": 1})


def _concat(values, axis):
    return run("ConcatV2", list(values) + [axis])


def _axis_value(t, what):
    value = helpers.const_value(t)
    if value is None:
        raise NotImplementedError(f"the gradient of {what} needs a constant axis")
    return int(value)


def _grads_or_zeros(op, grads):
    return [g if g is not None else helpers.zeros_like(o) for g, o in zip(grads, op.outputs)]


# ---------------------------------------------------------------- shapes

RegisterBatchingRule("Identity")(bh.same_op)


@RegisterBatchingRule("Reshape")
def _reshape_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the target shape")
    value = bh.constant_int(inputs[1])
    if value is not None and -1 not in value:  # a constant shape, whatever the batch size
        return [run("Reshape", [inputs[0], bh.prepend(inputs[1], -1)])]
    return [run("Reshape", [inputs[0], bh.prepend(inputs[1], ctx.size())])]


@RegisterBatchingRule("ExpandDims")
def _expand_dims_batched(ctx, op, inputs, batched):
    return [run("ExpandDims", [inputs[0], bh.shift_axis_tensor(inputs[1], batched[1])])]


@RegisterBatchingRule("Squeeze")
def _squeeze_batched(ctx, op, inputs, batched):
    axes = list(get_attr(op, "axis"))
    if not axes:  # every axis of size 1 of the example, which must be known
        dims = op.inputs[0].shape.as_tuple() if op.inputs[0].shape.rank is not None else None
        if dims is None or None in dims:
            raise NotBatchable("squeezing every axis of size 1 needs the example's shape")
        axes = [i for i, d in enumerate(dims) if d == 1]
    return [run("Squeeze", [inputs[0]], {"axis": [bh.shift_axis_value(a) for a in axes]})]


@RegisterBatchingRule("Transpose")
def _transpose_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the permutation")
    perm = inputs[1]
    value = bh.constant_int(perm)
    if value is not None:
        rank = len(value)
        moved = _int_vector([0] + [int(p) % rank + 1 for p in value], perm.dtype)
    else:
        moved = bh.prepend(run("AddV2", [perm, scalar(1, perm.dtype)]), 0)
    return [run("Transpose", [inputs[0], moved])]


def _target_rank(op, i):
    n = op.inputs[i].shape.as_tuple()[0] if op.inputs[i].shape.rank == 1 else None
    if n is None:
        raise NotBatchable("the length of the target shape is unknown")
    return n


@RegisterBatchingRule("BroadcastTo")
def _broadcast_to_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the target shape")
    x = bh.expand_to_rank(inputs[0], bh.per_example_rank(op, 0), _target_rank(op, 1))
    return [run("BroadcastTo", [x, bh.prepend(inputs[1], ctx.size())])]


@RegisterBatchingRule("Fill")
def _fill_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [0], "the shape")
    value = bh.expand_to_rank(inputs[1], 0, _target_rank(op, 0))
    return [run("BroadcastTo", [value, bh.prepend(inputs[0], ctx.size())])]

@RegisterGradient("Identity")
def _identity_grad(op, dz):
    return [dz]


def _reshape_back(op, dz):
    return [helpers.reshape(dz, helpers.shape(op.inputs[0]))] + [None] * (len(op.inputs) - 1)


RegisterGradient("Reshape", "ExpandDims", "Squeeze")(_reshape_back)


@RegisterGradient("Transpose")
def _transpose_grad(op, dz):
    perm = op.inputs[1]
    value = helpers.const_value(perm)
    if value is not None:
        inverse = [0] * len(value)
        for i, p in enumerate(value):
            inverse[int(p)] = i
        inverse = ints(inverse)
    else:
        inverse = run("InvertPermutation", [perm])
    return run("Transpose", [dz, inverse]), None


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, dz):
    return helpers.reduce_to(dz, op.inputs[0]), None


@RegisterGradient("Fill")
def _fill_grad(op, dz):
    return None, helpers.reduce_sum(dz, helpers.all_axes(dz))


# ---------------------------------------------------------------- joining and splitting

@RegisterBatchingRule("ConcatV2")
def _concat_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [len(inputs) - 1], "the axis")
    values = ctx.batched_all(inputs[:-1], batched[:-1])
    return [run("ConcatV2", values + [bh.shift_axis_tensor(inputs[-1], False)])]


@RegisterBatchingRule("Pack")
def _pack_batched(ctx, op, inputs, batched):
    return [run("Pack", ctx.batched_all(inputs, batched), {"axis": bh.shift_axis_value(get_attr(op, "axis"))})]


@RegisterBatchingRule("Unpack")
def _unpack_batched(ctx, op, inputs, batched):
    attrs = dict(op.attrs)
    attrs["axis"] = bh.shift_axis_value(get_attr(op, "axis"))
    return list(run_all("Unpack", [inputs[0]], attrs))


@RegisterBatchingRule("Split")
def _split_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [0], "the axis")
    return bh.reemit(op, [bh.shift_axis_tensor(inputs[0], False), inputs[1]])


@RegisterBatchingRule("SplitV")
def _split_v_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1, 2], "the sizes or the axis")
    return bh.reemit(op, [inputs[0], inputs[1], bh.shift_axis_tensor(inputs[2], False)])


@RegisterBatchingRule("Tile")
def _tile_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the multiples")
    return [run("Tile", [inputs[0], bh.prepend(inputs[1], 1)])]

@RegisterGradient("ConcatV2")
def _concat_grad(op, dz):
    values, axis = op.inputs[:-1], op.inputs[-1]
    axis_value = helpers.const_value(axis)
    sizes = None
    if axis_value is not None:
        a = int(axis_value)
        dims = []
        for v in values:
            s = helpers.static_shape(v)
            dims.append(s[a] if s is not None and -len(s) <= a < len(s) else None)
        if None not in dims:
            sizes = ints(dims)
    if sizes is None:
        parts = []
        for v in values:
            r = helpers.rank(v)
            parts.append(run("GatherV2", [helpers.shape(v), run("FloorMod", [helpers.cast(axis, dtypes.int32), r]),
                                          scalar(0, dtypes.int32)]))
        sizes = run("Pack", parts, {"axis": 0})
    pieces = run_all("SplitV", [dz, sizes, axis], {"num_split": len(values)})
    return list(pieces) + [None]


@RegisterGradient("Pack")
def _pack_grad(op, dz):
    return run_all("Unpack", [dz], {"num": len(op.inputs), "axis": get_attr(op, "axis")})


@RegisterGradient("Unpack")
def _unpack_grad(op, *dzs):
    return [run("Pack", _grads_or_zeros(op, dzs), {"axis": get_attr(op, "axis")})]


@RegisterGradient("Split")
def _split_grad(op, *dzs):
    axis = op.inputs[0]
    return None, _concat(_grads_or_zeros(op, dzs), axis)


@RegisterGradient("SplitV")
def _split_v_grad(op, *dzs):
    axis = op.inputs[2]
    return _concat(_grads_or_zeros(op, dzs), axis), None, None


@RegisterGradient("Tile")
def _tile_grad(op, dz):
    # Reshape dz to [m0, d0, m1, d1, ...] and sum over the m axes.
    x, multiples = op.inputs
    xs, mv = helpers.static_shape(x), helpers.const_value(multiples)
    if helpers.fully_known(xs) and mv is not None:
        split = []
        for m, d in zip(mv, xs):
            split += [int(m), d]
        g = helpers.reduce_sum(helpers.reshape(dz, ints(split)), ints(range(0, len(split), 2)))
    else:
        pairs = run("Pack", [helpers.cast(multiples, dtypes.int32), helpers.shape(x)], {"axis": 1})
        split = helpers.reshape(pairs, ints([-1]))
        size = run("Size", [split], {"out_type": dtypes.int32})
        axes = run("Range", [scalar(0, dtypes.int32), size, scalar(2, dtypes.int32)])
        g = helpers.reduce_sum(helpers.reshape(dz, split), axes)
    return g, None


# ---------------------------------------------------------------- gathering and slicing

@RegisterBatchingRule("GatherV2")
def _gather_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [2], "the axis")
    axis = bh.constant_int(inputs[2])
    if axis is None:
        raise NotBatchable("the axis is not a constant")
    params, indices = inputs[:2]
    axis = int(axis) % max(bh.per_example_rank(op, 0), 1)
    batch_dims = get_attr(op, "batch_dims")
    if batch_dims < 0:
        batch_dims += bh.per_example_rank(op, 1)
    if batch_dims == 0 and not batched[1]:  # one table per example, shared indices
        return [run("GatherV2", [params, indices, ints(axis + 1)])]
    if batch_dims == 0 and not batched[0]:  # one shared table: one gather of every example's indices
        out = run("GatherV2", [params, indices, ints(axis)])
        if axis == 0:
            return [out]
        rank = bh.out_rank(op) + 1  # the batch axis sits at `axis`: move it to the front
        return [run("Transpose", [out, ints([axis] + [i for i in range(rank) if i != axis])])]
    params, indices = ctx.batched_all([params, indices], batched[:2])
    return [run("GatherV2", [params, indices, ints(axis + 1)], {"batch_dims": batch_dims + 1})]


def _segments_batched(ctx, op, inputs, batched):
    """Rule of the unsorted segment reductions: example b's segment s becomes
    segment b * num_segments + s of one reduction over the whole batch."""
    bh.unbatched_only(batched, [2], "the number of segments")
    data, ids = ctx.batched_all(inputs[:2], batched[:2])
    count = helpers.cast(inputs[2], ids.dtype)
    rows = run("Range", [scalar(0, ids.dtype), helpers.cast(ctx.size_tensor(), ids.dtype), scalar(1, ids.dtype)])
    offsets = bh.expand_to_rank(run("Mul", [rows, count]), 0, bh.per_example_rank(op, 1))
    total = run("Mul", [count, helpers.cast(ctx.size_tensor(), ids.dtype)])
    # Negative ids (dropped values) stay negative.
    moved = run("SelectV2", [run("Less", [ids, scalar(0, ids.dtype)]), ids, run("AddV2", [ids, offsets])])
    out = run(op.type, [data, moved, total])
    shape = run("ConcatV2", [ints([-1]), run("Reshape", [helpers.cast(count, dtypes.int32), ints([1])]),
                             _dims(out, 1), scalar(0, dtypes.int32)])
    return [run("Reshape", [out, shape])]


RegisterBatchingRule("UnsortedSegmentSum")(_segments_batched)


def _shifted_masks(op):
    """A strided slice's masks with a full slice of the batch axis in front."""
    attrs = {m: get_attr(op, m) << 1 for m in _MASKS}
    attrs["begin_mask"] |= 1
    attrs["end_mask"] |= 1
    return attrs


def _slice_spec(inputs):
    begin, end, strides = inputs
    return [bh.prepend(begin, 0), bh.prepend(end, 0), bh.prepend(strides, 1)]


@RegisterBatchingRule("StridedSlice")
def _strided_slice_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1, 2, 3], "the slice bounds")
    if _only_reshapes(op):  # x[None], x[0] of a size-1 axis, x[:, None]: a reshape, no copy
        return [run("Reshape", [inputs[0], ints([-1] + list(op.outputs[0].shape.as_tuple()))])]
    return [run("StridedSlice", [inputs[0]] + _slice_spec(inputs[1:]), _shifted_masks(op))]


def _only_reshapes(op):
    """Whether a strided slice only adds axes, drops axes of size 1 and takes
    whole axes (known shapes, constant bounds, no ellipsis)."""
    dims = op.inputs[0].shape.as_tuple() if op.inputs[0].shape.rank is not None else None
    out = op.outputs[0].shape.as_tuple() if op.outputs[0].shape.rank is not None else None
    bounds = [bh.constant_int(t) for t in op.inputs[1:]]
    if dims is None or out is None or None in dims or None in out or any(b is None for b in bounds):
        return False
    masks = {m: get_attr(op, m) for m in _MASKS}
    if masks["ellipsis_mask"]:
        return False
    axis = 0
    for j, (begin, end, stride) in enumerate(zip(*bounds)):
        bit = 1 << j
        if masks["new_axis_mask"] & bit:
            continue
        if axis >= len(dims):
            return False
        size = dims[axis]
        if masks["shrink_axis_mask"] & bit:
            if size != 1 or begin not in (0, -1):
                return False
        elif stride != 1 or not (masks["begin_mask"] & bit or begin in (0, -size)) or \
                not (masks["end_mask"] & bit or end >= size):
            return False
        axis += 1
    return True


@RegisterBatchingRule("StridedSliceGrad")
def _strided_slice_grad_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [0, 1, 2, 3], "the shape or the slice bounds")
    shape = bh.prepend(inputs[0], ctx.size())
    return [run("StridedSliceGrad", [shape] + _slice_spec(inputs[1:4]) + [inputs[4]], _shifted_masks(op))]


RegisterBatchingRule("SelectV2")(bh.elementwise)

@RegisterGradient("GatherV2")
def _gather_grad(op, dz):
    params, indices, axis_t = op.inputs
    axis = _axis_value(axis_t, "GatherV2")
    batch_dims = get_attr(op, "batch_dims")
    if axis == 0 and batch_dims == 0:
        # As TensorFlow: the rows of dz (shape indices.shape + params.shape[1:])
        # as IndexedSlices of params' shape, densified only where needed.
        values = helpers.reshape(dz, _concat([ints([-1]), _dims(params, 1)], ints(0)))
        flat_indices = helpers.reshape(indices, ints([-1]))
        return IndexedSlices(values, flat_indices, helpers.shape(params)), None, None
    ps, ids = helpers.static_shape(params), helpers.static_shape(indices)
    if ps is None or ids is None:
        return _gather_grad_unknown_rank(params, indices, dz, axis, batch_dims), None, None
    pr, ir = len(ps), len(ids)
    b = batch_dims + ir if batch_dims < 0 else batch_dims
    a = axis + pr if axis < 0 else axis
    # dz dims: [B (b), O (a - b), I (ir - b), R (pr - a - 1)]; move I before O so
    # that indices (with batch offsets) index dz's leading dimensions.
    n_o, n_i = a - b, ir - b
    perm = list(range(b)) + list(range(b + n_o, b + n_o + n_i)) + list(range(b, b + n_o)) + \
        list(range(b + n_o + n_i, b + n_o + n_i + pr - a - 1))
    dzt = run("Transpose", [dz, ints(perm)])
    p = _dim(params, a)
    ids_t = helpers.cast(indices, dtypes.int32) if indices.dtype != dtypes.int64 else indices
    idt = ids_t.dtype
    if b > 0:
        batch_shape = _dims(params, 0, b)
        nb = run("Prod", [batch_shape, ints([0])], {"keep_dims": False})
        flat_batch = run("Range", [scalar(0, dtypes.int32), nb, scalar(1, dtypes.int32)])
        offsets = helpers.reshape(flat_batch, _concat([batch_shape, ints([1] * n_i)], ints(0)))
        ids_t = helpers.add(ids_t, helpers.cast(helpers.mul(offsets, p), idt))
        num = helpers.mul(nb, p)
    else:
        batch_shape = ints([])
        num = p
    g = run("UnsortedSegmentSum", [dzt, ids_t, num])  # [nb * P, O..., R...]
    g = helpers.reshape(g, _concat([batch_shape, helpers.reshape(p, ints([1])), _dims(params, b, a),
                                    _dims(params, a + 1)], ints(0)))  # [B, P, O, R]
    back = list(range(b)) + list(range(b + 1, b + 1 + n_o)) + [b] + list(range(b + 1 + n_o, pr))
    return run("Transpose", [g, ints(back)]), None, None


def _gather_grad_unknown_rank(params, indices, dz, axis, batch_dims):
    """_gather_grad's general case with the ranks known only at run time: the
    same permutations and reshapes, computed by ops."""
    i32 = dtypes.int32

    def const(v):
        return scalar(v, i32)

    def vec(t):
        return helpers.reshape(t, ints([1]))

    def span(lo, hi):
        return run("Range", [lo, hi, const(1)])

    def dims(begin, end):
        return run("StridedSlice", [helpers.shape(params), vec(begin), vec(end), ints([1])])

    pr, ir = helpers.rank(params), helpers.rank(indices)
    b = helpers.add(const(batch_dims), ir) if batch_dims < 0 else const(batch_dims)
    a = helpers.add(const(axis), pr) if axis < 0 else const(axis)
    n_o, n_i = helpers.sub(a, b), helpers.sub(ir, b)
    b_o, b_o_i = helpers.add(b, n_o), helpers.add(helpers.add(b, n_o), n_i)
    perm = _concat([span(const(0), b), span(b_o, b_o_i), span(b, b_o), span(b_o_i, run("Rank", [dz]))], ints(0))
    dzt = run("Transpose", [dz, perm])
    p = run("GatherV2", [helpers.shape(params), a, const(0)])
    ids_t = indices if indices.dtype == dtypes.int64 else helpers.cast(indices, i32)
    batch_shape = dims(const(0), b)
    nb = run("Prod", [batch_shape, ints([0])], {"keep_dims": False})
    ones = run("Fill", [vec(n_i), const(1)])
    offsets = helpers.reshape(span(const(0), nb), _concat([batch_shape, ones], ints(0)))
    ids_t = helpers.add(ids_t, helpers.cast(helpers.mul(offsets, p), ids_t.dtype))
    g = run("UnsortedSegmentSum", [dzt, ids_t, helpers.mul(nb, p)])
    g = helpers.reshape(g, _concat([batch_shape, vec(p), dims(b, a), dims(helpers.add(a, const(1)), pr)], ints(0)))
    b1 = helpers.add(b, const(1))
    back = _concat([span(const(0), b), span(b1, helpers.add(b1, n_o)), vec(b), span(helpers.add(b1, n_o), pr)], ints(0))
    return run("Transpose", [g, back])


@RegisterGradient("UnsortedSegmentSum")
def _segment_sum_grad(op, dz):
    ids = op.inputs[1]
    values = helpers.const_value(ids)
    if values is not None and (values.size == 0 or values.min() >= 0):
        return run("GatherV2", [dz, ids, scalar(0, dtypes.int32)]), None, None
    # Negative ids were dropped: they get zero gradient.
    zero = scalar(0, ids.dtype)
    g = run("GatherV2", [dz, run("Maximum", [ids, zero]), scalar(0, dtypes.int32)])
    keep = run("GreaterEqual", [ids, zero])
    extra = helpers.sub(helpers.rank(g), helpers.rank(ids))
    ones = run("Fill", [helpers.reshape(extra, ints([1])), scalar(1, dtypes.int32)])
    keep = helpers.reshape(keep, _concat([helpers.shape(ids), ones], ints(0)))
    return helpers.select(keep, g, scalar(0, g.dtype)), None, None


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, dz):
    x, begin, end, strides = op.inputs
    attrs = {m: get_attr(op, m) for m in _MASKS}
    shape = helpers.cast(helpers.shape(x), begin.dtype)
    return run("StridedSliceGrad", [shape, begin, end, strides, dz], attrs), None, None, None


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, dz):
    _, begin, end, strides, _ = op.inputs
    attrs = {m: get_attr(op, m) for m in _MASKS}
    return None, None, None, None, run("StridedSlice", [dz, begin, end, strides], attrs)


@RegisterGradient("SelectV2")
def _select_grad(op, dz):
    cond, t, e = op.inputs
    zero = scalar(0, dz.dtype)
    gt = helpers.reduce_to(helpers.select(cond, dz, zero), t)
    ge = helpers.reduce_to(helpers.select(cond, zero, dz), e)
    return None, gt, ge
