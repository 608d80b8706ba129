"""td.TensorArray: a list of tensors usable inside loops, stored as a tensor
list (a variant tensor) so that it flows through While and If like a value."""

from treadle.framework import context, dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.ops import array_ops


def _shape_tensor(shape):
    if shape.rank is None:
        return convert_to_tensor(-1, dtype=dtypes.int32)
    return convert_to_tensor([-1 if d is None else d for d in shape.dims], dtype=dtypes.int32)


class TensorArray:
    """Functional in graphs (use what write/unstack return); in eager code the
    array is also updated in place, as TensorFlow's eager TensorArray is."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = TensorShape(element_shape)
        if handle is None:
            handle = flow
        if handle is None:
            size = convert_to_tensor(0 if size is None else size, dtype=dtypes.int32)
            handle = execute("TensorListReserve", [_shape_tensor(self._element_shape), size],
                             {"element_dtype": self._dtype})[0]
        self._handle = handle

    # ---------------------------------------------------------- properties
    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def handle(self):
        return self._handle

    @property
    def flow(self):
        return self._handle

    def _with_handle(self, handle, element_shape=None):
        shape = self._element_shape if element_shape is None else element_shape
        if context.executing_eagerly() and type(handle).__name__ == "EagerTensor":
            self._handle = handle
            self._element_shape = shape
            return self
        return TensorArray(self._dtype, dynamic_size=self._dynamic_size, handle=handle, element_shape=shape.dims,
                           infer_shape=self._infer_shape)

    # Composite-value protocol used by td.while_loop / td.cond.
    def _to_components(self):
        return [self._handle]

    def _from_components(self, components):
        return TensorArray(self._dtype, dynamic_size=self._dynamic_size, handle=components[0],
                           element_shape=self._element_shape.dims, infer_shape=self._infer_shape)

    # ---------------------------------------------------------- operations
    def write(self, index, value, name=None):
        value = convert_to_tensor(value, dtype=self._dtype)
        if self._infer_shape and not self._element_shape.is_compatible_with(value.shape):
            raise ValueError(f"Incompatible shape for value ({value.shape}), expected ({self._element_shape})")
        shape = self._element_shape.merge_with(value.shape) if self._infer_shape else self._element_shape
        handle = execute("TensorListSetItem", [self._handle, convert_to_tensor(index, dtype=dtypes.int32), value],
                         {"element_dtype": self._dtype, "resize_if_index_out_of_bounds": self._dynamic_size})[0]
        return self._with_handle(handle, shape)

    def read(self, index, name=None):
        t = execute("TensorListGetItem", [self._handle, convert_to_tensor(index, dtype=dtypes.int32),
                                          _shape_tensor(self._element_shape)], {"element_dtype": self._dtype})[0]
        return t

    def stack(self, name=None):
        return execute("TensorListStack", [self._handle, _shape_tensor(self._element_shape)],
                       {"element_dtype": self._dtype})[0]

    def unstack(self, value, name=None):
        value = convert_to_tensor(value, dtype=self._dtype)
        elem = TensorShape(value.shape.dims[1:] if value.shape.rank is not None else None)
        shape = self._element_shape.merge_with(elem)
        handle = execute("TensorListFromTensor", [value, _shape_tensor(shape)], {"element_dtype": self._dtype})[0]
        return self._with_handle(handle, shape)

    def size(self, name=None):
        return execute("TensorListLength", [self._handle], None)[0]

    def gather(self, indices, name=None):
        return array_ops.gather(self.stack(), indices)

    def scatter(self, indices, value, name=None):
        result = self
        value = convert_to_tensor(value, dtype=self._dtype)
        for i, index in enumerate(indices):
            result = result.write(index, value[i])
        return result

    def close(self, name=None):
        return None

    def __repr__(self):
        return f"<td.TensorArray dtype={self._dtype.name} element_shape={self._element_shape}>"
