"""LoomOp: an operation a loom runs on batches of values, and the
pass-through op that lifts a value to the next depth."""

from treadle.loom.type_shape import TypeShape


class Ragged:
    """`td.loom.Ragged(type_shape)`: an input of a LoomOp that takes any number
    of results of `type_shape` in one call, zero included. The Weaver takes a
    list or tuple of results there; `instantiate_batch` gets a td.RaggedTensor
    of shape [batch, None, *type_shape.shape] (row i: call i's results)."""

    __slots__ = ("_type_shape",)

    def __init__(self, type_shape):
        if not isinstance(type_shape, TypeShape):
            raise TypeError(f"td.loom.Ragged takes a TypeShape, got {type_shape!r}")
        self._type_shape = type_shape

    @property
    def type_shape(self):
        """The TypeShape of each of the ragged input's elements."""
        return self._type_shape

    def __eq__(self, other):
        return type(other) is Ragged and other._type_shape == self._type_shape

    def __hash__(self):
        return hash(("Ragged", self._type_shape))

    def __repr__(self):
        return f"Ragged({self._type_shape!r})"


class LoomOp:
    """An op of a loom. Subclasses implement `instantiate_batch(inputs)`:
    given one batched tensor per input type shape (leading batch dimension;
    a td.RaggedTensor for a td.loom.Ragged input), return a list with one
    batched tensor per output type shape. It is traced once, when the loom is
    built, into a function of the batch."""

    def __init__(self, input_type_shapes, output_type_shapes):
        self._input_type_shapes = _type_shape_list(input_type_shapes, "input_type_shapes", ragged_ok=True)
        self._output_type_shapes = _type_shape_list(output_type_shapes, "output_type_shapes")
        if not self._output_type_shapes:
            raise ValueError("a LoomOp needs at least one output type shape")

    @property
    def input_type_shapes(self):
        """The inputs' types: TypeShapes, and td.loom.Ragged for ragged inputs."""
        return list(self._input_type_shapes)

    @property
    def _input_plain_type_shapes(self):
        """Each input's TypeShape (a ragged input's element type shape)."""
        return [t.type_shape if type(t) is Ragged else t for t in self._input_type_shapes]

    @property
    def _ragged_inputs(self):
        return [i for i, t in enumerate(self._input_type_shapes) if type(t) is Ragged]

    @property
    def output_type_shapes(self):
        """The outputs' TypeShapes, in order."""
        return list(self._output_type_shapes)

    def instantiate_batch(self, inputs):
        """The batched computation: gets one tensor per input (leading batch dimension, one row per call; a
        `td.RaggedTensor` of shape [batch, None, ...] for a `td.loom.Ragged` input) and returns a list of
        one tensor per output, with as many rows. Traced once, when the loom is built."""
        raise NotImplementedError(f"{type(self).__name__} must implement instantiate_batch(inputs)")


class PassThroughLoomOp(LoomOp):
    """Returns its one input unchanged; the loom runs it natively (a gather)."""

    def __init__(self, type_shape):
        super().__init__([type_shape], [type_shape])

    def instantiate_batch(self, inputs):
        """Returns the input unchanged."""
        return [inputs[0]]


def _type_shape_list(values, what, ragged_ok=False):
    out = []
    for v in values:
        if not (isinstance(v, TypeShape) or (ragged_ok and type(v) is Ragged)):
            kinds = "TypeShapes or td.loom.Ragged" if ragged_ok else "TypeShapes"
            raise TypeError(f"LoomOp {what} must be {kinds}, got {v!r}")
        out.append(v)
    return out
