"""Gradient rules of the segment reductions, and Repeat (the ops behind
td.RaggedTensor's rows). UnsortedSegmentSum's rule is with the gathers it
is the gradient of, in array_grad."""

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.batching_registry import RegisterBatchingRule
from treadle.autodiff.helpers import ints, run, scalar
from treadle.autodiff.array_grad import _concat, _dim, _segments_batched
from treadle.autodiff.registry import RegisterGradient, get_attr
from treadle.framework import dtypes

RegisterBatchingRule("UnsortedSegmentMax")(_segments_batched)


def _batch_axis_second(x, rank):
    """Batched x ([B, n, ...], per-example rank `rank`) as [n, B, ...] (or back)."""
    return run("Transpose", [x, ints([1, 0] + list(range(2, rank + 1)))])


@RegisterBatchingRule("SegmentSum", "RaggedRowSum")
def _rows_batched(ctx, op, inputs, batched):
    # Shared segments: every example's values reduce alike, so the batch
    # axis rides along behind the segmented axis.
    bh.unbatched_only(batched, [1], "the segmentation")
    rank = bh.per_example_rank(op, 0)
    out = run(op.type, [_batch_axis_second(inputs[0], rank), inputs[1]])
    return [_batch_axis_second(out, rank)]


@RegisterBatchingRule("Repeat")
def _repeat_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the repeat counts")
    axis = get_attr(op, "axis")
    return [run("Repeat", list(inputs), {"axis": bh.shift_axis_value(axis)})]


@RegisterGradient("SegmentSum")
def _sorted_segment_sum_grad(op, dz):
    # Every row went to the segment of its id (sorted, non-negative ids).
    return run("GatherV2", [dz, op.inputs[1], scalar(0, dtypes.int32)]), None


def _row_mask(mask, ids, like):
    """`mask` (shaped like ids) reshaped to broadcast against `like` (ids' shape then more dims)."""
    extra = helpers.sub(helpers.rank(like), helpers.rank(ids))
    ones = run("Fill", [helpers.reshape(extra, ints([1])), scalar(1, dtypes.int32)])
    return helpers.reshape(mask, _concat([helpers.shape(ids), ones], ints(0)))


@RegisterGradient("UnsortedSegmentMax")
def _unsorted_segment_max_grad(op, dz):
    # As TensorFlow: the gradient of a segment's max is shared equally by the
    # rows that reach it; dropped rows (negative ids) get none.
    data, ids, num = op.inputs
    out = op.outputs[0]
    zero = scalar(0, ids.dtype)
    clipped = run("Maximum", [ids, zero])
    kept = _row_mask(run("GreaterEqual", [ids, zero]), ids, data)
    axis0 = scalar(0, dtypes.int32)
    selected = run("LogicalAnd", [run("Equal", [data, run("GatherV2", [out, clipped, axis0])]), kept])
    count = run("UnsortedSegmentSum", [helpers.cast(selected, dz.dtype), ids, num])
    share = run("GatherV2", [helpers.div(dz, run("Maximum", [count, scalar(1, dz.dtype)])), clipped, axis0])
    return helpers.select(selected, share, scalar(0, dz.dtype)), None, None


@RegisterGradient("Repeat")
def _repeat_grad(op, dz):
    # Each entry's gradient is the sum of its copies' gradients: a segment sum
    # along the axis (moved to the front), the copies of entry i having id i.
    x, repeats = op.inputs
    axis = get_attr(op, "axis")
    static = helpers.static_shape(x)
    i32 = dtypes.int32
    if static is not None:
        rank = len(static)
        axis = axis + rank if axis < 0 else axis
        n = _dim(x, axis)
    else:
        rank = helpers.rank(x)
        axis = scalar(axis, i32) if axis >= 0 else helpers.add(scalar(axis, i32), rank)
        n = run("GatherV2", [helpers.shape(x), axis, scalar(0, i32)])
    if static is not None and axis == 0:
        # The copies of entry i are the contiguous rows splits[i]:splits[i + 1]
        # of dz: a ragged row sum, with no ids to make. A scalar `repeats`
        # repeats every entry alike.
        counts = run("BroadcastTo", [repeats, helpers.reshape(n, ints([1]))])
        zero = run("Reshape", [scalar(0, repeats.dtype), ints([1])])
        splits = _concat([zero, run("Cumsum", [counts, scalar(0, i32)])], ints(0))
        return run("RaggedRowSum", [dz, splits]), None
    ids = run("Repeat", [run("Range", [scalar(0, i32), n, scalar(1, i32)]), repeats], {"axis": 0})
    if static is not None:
        perm = ints([axis] + [d for d in range(rank) if d != axis])
    else:
        def span(lo, hi):
            return run("Range", [lo, hi, scalar(1, i32)])
        perm = _concat([helpers.reshape(axis, ints([1])), span(scalar(0, i32), axis),
                        span(helpers.add(axis, scalar(1, i32)), rank)], ints(0))
    g = run("UnsortedSegmentSum", [run("Transpose", [dz, perm]), ids, n])
    return run("Transpose", [g, run("InvertPermutation", [perm])]), None


@RegisterGradient("RaggedRowSum")
def _ragged_row_sum_grad(op, dz):
    # Each value row went to its row's sum: the row's gradient, repeated
    # row_length times (no ids to mask: a row is a run of values).
    splits = op.inputs[1]
    limits = run("StridedSlice", [splits, ints([1]), ints([0]), ints([1])], {"end_mask": 1})
    starts = run("StridedSlice", [splits, ints([0]), ints([-1]), ints([1])])
    return run("Repeat", [dz, helpers.sub(limits, starts)], {"axis": 0}), None
