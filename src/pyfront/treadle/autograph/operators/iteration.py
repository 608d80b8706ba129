"""What a staged `for` loop iterates over: a range with tensor bounds (a
td.range tensor, whose Range node gives start, limit and delta), the first
dimension of a tensor, or `enumerate` of a tensor. Each is a source
with a hidden index: first_index, has_next(i), element(i), next_index(i),
and static_count() when the number of iterations is known while tracing."""

from treadle.autograph.operators import tensors
from treadle.framework import context, dtypes
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.ops import array_ops, math_ops
from treadle.ragged.ragged_tensor import RaggedTensor

_ops = math_ops.OPERATOR_FUNCTIONS


class TensorEnumerate:
    """`enumerate(tensor)` inside converted code."""

    __slots__ = ("tensor", "start")

    def __init__(self, tensor, start):
        self.tensor, self.start = tensor, start


def _static_int(value):
    """The Python number a value is known to be while tracing, or None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if type(value) is EagerTensor:
        return value.numpy().item()
    op = getattr(value, "op", None)
    if op is not None and op.type == "Const" and op.value is not None:
        return op.value.numpy().item()
    return None


class RangeSource:
    """The index is the range's current value."""

    def __init__(self, start, limit, delta):
        bounds = (start, limit, delta)
        dtype = next((b.dtype for b in bounds if isinstance(b, Tensor)), dtypes.int32)
        self.static = tuple(_static_int(b) for b in bounds)
        if self.static[2] == 0:
            raise ValueError("range() arg 3 must not be zero")
        self.start, self.limit, self.delta = (convert_to_tensor(b, dtype_hint=dtype) for b in bounds)
        if len({self.start.dtype, self.limit.dtype, self.delta.dtype}) != 1:
            raise TypeError(f"range: start, limit and delta must have the same dtype, got {self.start.dtype.name}, "
                            f"{self.limit.dtype.name} and {self.delta.dtype.name}")

    def first_index(self):
        return self.start

    def has_next(self, i):
        step = self.static[2]
        if step is not None:
            return _ops["less"](i, self.limit) if step > 0 else _ops["greater"](i, self.limit)
        zero = convert_to_tensor(0, dtype=self.delta.dtype)
        up = _ops["and"](_ops["greater"](self.delta, zero), _ops["less"](i, self.limit))
        down = _ops["and"](_ops["less"](self.delta, zero), _ops["greater"](i, self.limit))
        return _ops["or"](up, down)

    def element(self, i):
        return i

    def next_index(self, i):
        return _ops["add"](i, self.delta)

    def static_count(self):
        start, limit, delta = self.static
        if None in self.static:
            return None
        if all(isinstance(v, int) for v in self.static):
            return len(range(start, limit, delta))
        n = -(-(limit - start) // delta)  # ceil division
        return max(int(n), 0)


class TensorSource:
    """The index counts elements along the first dimension."""

    def __init__(self, tensor):
        t = convert_to_tensor(tensor)
        if t.shape.rank == 0:
            raise TypeError("cannot iterate over a scalar tensor (a for loop over a tensor iterates over its first "
                            "dimension)")
        self.tensor = t
        self.count = t.shape[0] if t.shape.rank is not None else None
        self.length = self.count if self.count is not None else array_ops.shape(t)[0]

    def first_index(self):
        return convert_to_tensor(0, dtype=dtypes.int32)

    def has_next(self, i):
        return _ops["less"](i, self.length)

    def element(self, i):
        return array_ops.gather(self.tensor, i)

    def next_index(self, i):
        return _ops["add"](i, 1)

    def static_count(self):
        return self.count


class EnumerateSource(TensorSource):
    def __init__(self, tensor, start):
        super().__init__(tensor)
        self.start = start

    def element(self, i):
        count = i if not self.start else _ops["add"](i, self.start)
        return count, super().element(i)


class RaggedRowSource:
    """The index counts the rows of a RaggedTensor; each element is a row
    (a Tensor of that row's length)."""

    def __init__(self, rt):
        self.rt = rt
        n = rt.row_splits.shape[0]
        self.count = None if n is None else n - 1
        self.length = self.count if self.count is not None else rt.nrows(out_type=dtypes.int32)

    def first_index(self):
        return convert_to_tensor(0, dtype=dtypes.int32)

    def has_next(self, i):
        return _ops["less"](i, self.length)

    def element(self, i):
        return self.rt[i]

    def next_index(self, i):
        return _ops["add"](i, 1)

    def static_count(self):
        return self.count


def staged_source(iterable):
    """The source a staged for loop iterates over, or None to iterate in Python."""
    if isinstance(iterable, TensorEnumerate):
        return EnumerateSource(iterable.tensor, iterable.start)
    if isinstance(iterable, RaggedTensor) and context.current_graph() is not None:
        return RaggedRowSource(iterable)
    if tensors.is_symbolic(iterable):
        op = iterable.op
        if op.type == "Range" and len(op.inputs) == 3:
            return RangeSource(*op.inputs)
        return TensorSource(iterable)
    if type(iterable) is EagerTensor and context.current_graph() is not None:
        return TensorSource(iterable)  # a constant from outside: loop over it in the graph, do not unroll
    return None
