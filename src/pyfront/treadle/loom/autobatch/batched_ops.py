"""The LoomOps td.loom.autobatch runs: one per cell (td.function) and input
signature, and one per plain op, attributes and signature. Each maps the
per-example computation over its batch with td.vectorized_map, so the
batching rules of td.vectorized_map decide how fast it runs; the variables
the computation reads are read once by the op (so the loom captures their
values, and gradients reach them)."""

from treadle.framework import variables
from treadle.framework.op_execution import execute
from treadle.framework.variables import Variable, variable_for_handle
from treadle.loom.autobatch.horizontal_fusion import FusedPerExample
from treadle.loom.loom_op import LoomOp, Ragged
from treadle.ops import math_ops
from treadle.autodiff.vectorized_mapping import vectorized_map
from treadle.util import nest


class _MappedOp(LoomOp):
    """A LoomOp whose batch runs `self._per_example(slices)` through
    td.vectorized_map; `self._variables` are the variables it reads."""

    def __init__(self, input_type_shapes, output_type_shapes, variables_read, what):
        super().__init__(input_type_shapes, output_type_shapes)
        self._variables = list(variables_read)
        self.what = what  # names the op in messages (and vectorized_map's per-example fallback)

    def instantiate_batch(self, inputs):
        batched = self._batched_function()
        if batched is not None:
            return list(batched(*inputs))
        values = {id(v): v.read_value() for v in self._variables}  # captured by the loom op's graph
        def override(var):
            return values.get(id(var))
        variables.read_overrides.append(override)
        try:
            per_example = self._per_example_function()
            results = vectorized_map(per_example, tuple(inputs))
        finally:
            variables.read_overrides.remove(override)
        return list(results)

    def _batched_function(self):
        return None


class CellOp(_MappedOp):
    """A td.function called with per-example values: `template` is its
    (args, kwargs) with each per-example argument replaced by its slot
    number; `concrete` the trace for this signature, whose flat outputs the op returns."""

    def __init__(self, function, template, concrete, input_type_shapes, output_type_shapes):
        captured = [variable_for_handle(ext) for ext, _ in concrete.graph.captures.values()]
        super().__init__(input_type_shapes, output_type_shapes, [v for v in captured if v is not None],
                         f"td.function '{getattr(function, '__name__', function)}'")
        # What the td.function traces: its Python function as AutoGraph converted it.
        self._python_function = function._converted_function()
        self._template = template
        # Not public: a benchmark may give a cell the function of its whole
        # batch (`cell._autobatch_batched`), to time everything else while
        # td.vectorized_map runs as map_fn.
        self._batched = getattr(function, "_autobatch_batched", None)

    def _batched_function(self):
        return self._batched

    def _per_example_function(self):
        fn, template = self._python_function, self._template

        def per_example(slices):
            args, kwargs = nest.map_structure(lambda leaf: slices[leaf.index] if type(leaf) is Slot else leaf,
                                              template)
            return tuple(t for t in nest.flatten(fn(*args, **kwargs)) if hasattr(t, "dtype"))
        per_example.__name__ = self.what
        # Its products by one shared matrix (a Python loop over a list
        # argument unrolled) are stacked into one before it is batched.
        return FusedPerExample(per_example)


class PrimitiveOp(_MappedOp):
    """A plain op (`op_name` with `attrs`) on per-example inputs; `inputs`
    lists, per input of the op, a Slot (the batched input of that number) or
    a value every example shares (an eager tensor, or a td.Variable read inside)."""

    def __init__(self, op_name, attrs, inputs, input_type_shapes, output_type_shapes):
        super().__init__(input_type_shapes, output_type_shapes, [v for v in inputs if isinstance(v, Variable)],
                         f"op {op_name}")
        self._op_name, self._attrs, self._inputs = op_name, attrs, inputs

    def _per_example_function(self):
        op_name, attrs, inputs = self._op_name, self._attrs, self._inputs

        def per_example(slices):
            args = [slices[x.index] if type(x) is Slot else (x.read_value() if isinstance(x, Variable) else x)
                    for x in inputs]
            return tuple(execute(op_name, args, attrs))
        per_example.__name__ = op_name
        return per_example


class RaggedSumOp(LoomOp):
    """td.add_n of any number of per-example values of one type shape: a
    node's arguments are the rows of its one ragged input, summed. Made
    one op per count, the sums of lists of different lengths (a decoder's
    leaves, a node's children) would each be a launch of their own."""

    def __init__(self, ts):
        super().__init__([Ragged(ts)], [ts])
        self.what = f"op AddN of {ts}"

    def instantiate_batch(self, inputs):
        return [math_ops.reduce_sum(inputs[0], axis=1)]


class Slot:
    """Stands for the per-example argument number `index` in a template."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"Slot({self.index})"
