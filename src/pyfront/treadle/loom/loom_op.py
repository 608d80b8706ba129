"""LoomOp: an operation a loom runs on batches of values, and the
pass-through op that lifts a value to the next depth."""

from treadle.loom.type_shape import TypeShape


class LoomOp:
    """An op of a loom. Subclasses implement `instantiate_batch(inputs)`:
    given one batched tensor per input type shape (leading batch dimension),
    return a list with one batched tensor per output type shape. It is traced
    once, when the loom is built, into a function of the batch."""

    def __init__(self, input_type_shapes, output_type_shapes):
        self._input_type_shapes = _type_shape_list(input_type_shapes, "input_type_shapes")
        self._output_type_shapes = _type_shape_list(output_type_shapes, "output_type_shapes")
        if not self._output_type_shapes:
            raise ValueError("a LoomOp needs at least one output type shape")

    @property
    def input_type_shapes(self):
        return list(self._input_type_shapes)

    @property
    def output_type_shapes(self):
        return list(self._output_type_shapes)

    def instantiate_batch(self, inputs):
        raise NotImplementedError(f"{type(self).__name__} must implement instantiate_batch(inputs)")


class PassThroughLoomOp(LoomOp):
    """Returns its one input unchanged; the loom runs it natively (a gather)."""

    def __init__(self, type_shape):
        super().__init__([type_shape], [type_shape])

    def instantiate_batch(self, inputs):
        return [inputs[0]]


def _type_shape_list(values, what):
    out = []
    for v in values:
        if not isinstance(v, TypeShape):
            raise TypeError(f"LoomOp {what} must be TypeShapes, got {v!r}")
        out.append(v)
    return out
