"""Symbolic tensors and operations: what tracing builds instead of running ops."""

import sys

from treadle.errors import OperatorNotAllowedInGraphError
from treadle.framework import dtypes
from treadle.framework.tensor import TENSOR_CLASSES, Tensor, _TensorRef, iterate
from treadle.framework.tensor_shape import TensorShape


class Operation:
    """One node of a FuncGraph, a handle on its node in the graph's C++
    builder (`_node`): its op type, inputs, attributes and outputs."""

    __slots__ = ("graph", "_node", "name", "type", "inputs", "_attrs", "outputs", "control_inputs", "value",
                 "_origin", "__weakref__")

    def __init__(self, graph, node, name, op_type, inputs, control_inputs):
        """`inputs` and `control_inputs` are lists the Operation takes over."""
        self.graph = graph
        self._node = node
        self.name = name
        self.type = op_type
        self.inputs = inputs
        self._attrs = None  # read from the builder when first asked for
        self.outputs = []
        self.control_inputs = control_inputs
        self.value = None  # the EagerTensor of a Const node
        self._origin = None  # (code, instruction offset) of the user's line that made it; see `origin`

    @property
    def origin(self):
        """(file, line, function name) of the user's code that made this op
        (the innermost frame outside treadle when it was traced), or None."""
        if self._origin is None:
            return None
        code, offset = self._origin
        return code.co_filename, _line_at(code, offset), code.co_name

    @property
    def attrs(self):
        """The canonical attributes (defaults filled in), as a dict."""
        if self._attrs is None:
            self._attrs = self.graph._builder.attrs(self._node)
        return self._attrs

    @attrs.setter
    def attrs(self, attrs):
        # A rewrite in place (gradients of control flow) gives the op new attrs
        # and then new inputs or outputs: the graph re-types its node once the
        # rewrite is over, before the node is next read.
        self._attrs = attrs
        self.graph._rewritten(self)

    def __repr__(self):
        return f"<td.Operation '{self.name}' type={self.type}>"


def _line_at(code, offset):
    """The source line of instruction `offset` of `code` (what frame.f_lineno
    was then; worked out only when an error asks for it)."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


class SymbolicTensor(Tensor):
    """A tensor of a graph being traced: it has a dtype and a static shape,
    and stands for a value the graph computes when it runs."""

    __slots__ = ("op", "value_index", "_dtype", "_shape", "__dict__", "__weakref__")

    def __init__(self, op, value_index, dtype, shape):
        self.op = op
        self.value_index = value_index
        self._dtype = dtype
        if shape is None or type(shape) is tuple:
            self._shape = _inferred_shape(shape)  # straight from shape inference
        else:
            self._shape = TensorShape(shape)

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        self._shape = self._shape.merge_with(shape)
        self.op.graph._refine_shape(self)

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def graph(self):
        return self.op.graph

    @property
    def name(self):
        return f"{self.op.name}:{self.value_index}"

    def ref(self):
        return _TensorRef(self)

    def __repr__(self):
        return f"<td.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self):
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def __bool__(self):
        raise OperatorNotAllowedInGraphError(
            f"Using a symbolic `td.Tensor` ({_where_used_as_bool(self)}) as a Python `bool` is not allowed. "
            "You can attempt the following "
            "resolutions to the problem: If you are running in Graph mode, use Eager execution mode or "
            "decorate this function with @td.function. If you are using AutoGraph, you can try decorating "
            "this function with @td.function. If that does not work, then you may be using an unsupported "
            "feature or your source code may not be visible to AutoGraph.")

    def __len__(self):
        if self._shape.rank is None or self._shape[0] is None:
            raise TypeError(f"len is not well defined for a symbolic Tensor ({self.name}) whose first dimension "
                            "is not known. Please call `x.shape` rather than `len(x)` for shape information.")
        return self._shape[0]

    def __iter__(self):
        # TensorFlow's error class (a TypeError) where the iteration cannot be unrolled.
        if self._shape.rank is None:
            raise OperatorNotAllowedInGraphError("Cannot iterate over a tensor with unknown shape.")
        if self._shape.rank == 0:
            raise OperatorNotAllowedInGraphError("Cannot iterate over a scalar tensor.")
        if self._shape[0] is None:
            raise OperatorNotAllowedInGraphError("Cannot iterate over a tensor with unknown first dimension.")
        return iterate(self, self._shape[0])

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic td.Tensor ({self.name}) to a numpy array. This error may indicate that "
            "you're trying to pass a Tensor to a NumPy call, which is not supported.")


TENSOR_CLASSES.add(SymbolicTensor)

# TensorShapes are immutable, so the tensors a trace makes share one per shape
# (most of a graph's tensors have one of a few shapes); bounded, as a process
# may trace many shapes.
_inferred_shapes = {}
_MAX_INFERRED_SHAPES = 4096


def _inferred_shape(dims):
    """The TensorShape of `dims`, a tuple of ints and None (or None) from shape inference."""
    shape = _inferred_shapes.get(dims)
    if shape is None:
        shape = TensorShape._from_tuple(dims)
        if len(_inferred_shapes) < _MAX_INFERRED_SHAPES:
            _inferred_shapes[dims] = shape
    return shape


def _where_used_as_bool(tensor):
    """Names the tensor (by a local variable bound to it, if any) and the line
    that used it as a bool: the frame that called __bool__."""
    frame = sys._getframe(2)
    names = [k for k, v in frame.f_locals.items() if v is tensor]
    what = f"'{names[0]}', " if names else ""
    return f"{what}{tensor.name}, at {frame.f_code.co_filename}:{frame.f_lineno}"


__all__ = ["Operation", "SymbolicTensor", "dtypes"]
