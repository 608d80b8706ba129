"""Gradient rules of the tensor-list ops behind td.TensorArray. The gradient
of a list is a list of the gradients of its items (unwritten items standing
for zeros); lists of gradients add up item by item (TensorListAddN)."""

from treadle.autodiff import batching_helpers as bh
from treadle.autodiff import helpers
from treadle.autodiff.helpers import ints, run
from treadle.autodiff.array_grad import _dims
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule, Unbatched
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr

NotDifferentiable("TensorListReserve", "TensorListLength", "TensorListZerosLike")

# A batched list is a list of batched items: item i of every example,
# stacked. Indices must be the same for every example.


def _swap_first_axes(x, rank=None):
    """x with its first two axes swapped ([n, B, ...] <-> [B, n, ...]); its
    rank read when it runs where it is not given."""
    if rank is not None:
        return run("Transpose", [x, ints([1, 0] + list(range(2, rank)))])
    rest = run("Range", [ints(2), helpers.rank(x), ints(1)])
    return run("Transpose", [x, run("ConcatV2", [ints([1, 0]), rest, ints(0)])])


def _batched_list(ctx, dtype, lst, item_shape):
    """An unbatched list as a batched one (each example starts with the same items)."""
    items = run("TensorListStack", [lst, item_shape], {"element_dtype": dtype})
    known = helpers.static_shape(items)
    tiled = _swap_first_axes(ctx.tile(items), None if known is None else len(known) + 1)
    return run("TensorListFromTensor", [tiled, _batched_item_shape(item_shape)], {"element_dtype": dtype})


def _batched_item_shape(shape):
    """An item shape with the batch axis in front (-1, an unknown shape, stays)."""
    return shape if shape.shape.rank == 0 else bh.prepend(shape, -1)


def tile_list(ctx, lst):
    """An unbatched list as a batched one: a reserved list reserved again for
    batched items, any other stacked, repeated and unstacked."""
    producer = getattr(lst, "op", None)
    if producer is not None and producer.type == "TensorListReserve":
        shape, count = producer.inputs
        return run("TensorListReserve", [_batched_item_shape(shape), count], {"element_dtype": producer.attrs["element_dtype"]})
    return _batched_list(ctx, _item_dtype(lst), lst, ints(-1))


@RegisterBatchingRule("TensorListReserve")
def _reserve_batched(ctx, op, inputs, batched):
    raise NotBatchable("the list's length or item shape differs per example")


@RegisterBatchingRule("TensorListFromTensor")
def _from_tensor_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the item shape")
    tensor = _swap_first_axes(inputs[0], bh.per_example_rank(op, 0) + 1)
    return bh.reemit(op, [tensor, _batched_item_shape(inputs[1])])


@RegisterBatchingRule("TensorListStack")
def _stack_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the item shape")
    out = bh.reemit(op, [inputs[0], _batched_item_shape(inputs[1])])[0]
    rank = op.outputs[0].shape.rank
    return [_swap_first_axes(out, None if rank is None else rank + 1)]


@RegisterBatchingRule("TensorListGetItem")
def _get_item_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1, 2], "the index or item shape")
    return bh.reemit(op, [inputs[0], inputs[1], _batched_item_shape(inputs[2])])


@RegisterBatchingRule("TensorListSetItem")
def _set_item_batched(ctx, op, inputs, batched):
    bh.unbatched_only(batched, [1], "the index")
    lst, index, item = inputs
    if not batched[0]:
        item_shape = helpers.shape(item if not batched[2] else op.inputs[2])
        lst = _batched_list(ctx, get_attr(op, "element_dtype"), lst, item_shape)
    if not batched[2]:
        item = ctx.tile(item)
    return bh.reemit(op, [lst, index, item])


@RegisterBatchingRule("TensorListLength")
def _length_batched(ctx, op, inputs, batched):
    return [Unbatched(bh.reemit(op, inputs)[0])]


@RegisterBatchingRule("TensorListZerosLike")
def _zeros_like_list_batched(ctx, op, inputs, batched):
    return bh.reemit(op, inputs)


def _item_dtype(lst):
    producer = getattr(lst, "op", None)
    if producer is not None and "element_dtype" in producer.attrs:
        return producer.attrs["element_dtype"]
    raise NotBatchable("the dtype of the list's items is not known here")


@RegisterBatchingRule("TensorListAddN")
def _add_n_lists_batched(ctx, op, inputs, batched):
    # The items' dtype is the one of the lists that came from the per-example graph.
    dtype = _item_dtype(op.inputs[0])
    lists = [lst if b else _batched_list(ctx, dtype, lst, ints(-1)) for lst, b in zip(inputs, batched)]
    return bh.reemit(op, lists)


@RegisterGradient("TensorListFromTensor")
def _from_tensor_grad(op, dlist):
    tensor = op.inputs[0]
    s = helpers.static_shape(tensor)
    n = s[0] if s is not None and s[0] is not None else -1
    g = run("TensorListStack", [dlist, _dims(tensor, 1)], {"element_dtype": tensor.dtype, "num_elements": n})
    return g, None


@RegisterGradient("TensorListStack")
def _stack_grad(op, dz):
    return run("TensorListFromTensor", [dz, _dims(dz, 1)], {"element_dtype": dz.dtype}), None


@RegisterGradient("TensorListGetItem")
def _get_item_grad(op, dz):
    lst, index, _ = op.inputs
    return run("TensorListSetItem", [helpers.zeros_like(lst), index, dz], {"element_dtype": dz.dtype}), None, None


@RegisterGradient("TensorListSetItem")
def _set_item_grad(op, dlist):
    _, index, item = op.inputs
    dtype = get_attr(op, "element_dtype")
    ditem = run("TensorListGetItem", [dlist, index, helpers.shape(item)], {"element_dtype": dtype})
    dlist_in = run("TensorListSetItem", [dlist, index, helpers.zeros_like(item)], {"element_dtype": dtype})
    return dlist_in, None, ditem


@RegisterGradient("TensorListAddN")
def _list_add_n_grad(op, dlist):
    return [dlist] * len(op.inputs)
