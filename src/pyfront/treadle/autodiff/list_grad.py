"""Gradient rules of the tensor-list ops behind td.TensorArray. The gradient
of a list is a list of the gradients of its items (unwritten items standing
for zeros); lists of gradients add up item by item (TensorListAddN)."""

from treadle.autodiff import helpers
from treadle.autodiff.helpers import run
from treadle.autodiff.array_grad import _dims
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr

NotDifferentiable("TensorListReserve", "TensorListLength", "TensorListZerosLike")


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
