"""The vectorizer behind td.vectorized_map (vectorized_mapping.py): it walks
the ops of `fn` traced for one example, in order, and builds with each op's
batching rule (batching_registry) the computation of the whole batch.

It tracks, for every traced value, whether it has the batch dimension.
Values that depend on no batched input (variables, captures, constants and
what is computed from them alone) stay unbatched: a weight is never tiled,
and `x @ W` for a batched x and an unbatched W is one matmul. An op that has
no rule for its inputs runs once per example (a loop over the batch), with a
warning that names it."""

import os
import sys
import warnings

from treadle.autodiff import batching_registry
from treadle.autodiff.batching_registry import NeedsWholeFunction, NotBatchable, Unbatched
from treadle.framework import context, dtypes
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.graph_serialization import ops_needed
from treadle.framework.op_def_library import SIGNATURES, function_attrs
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.function.concrete_function import finish_function
from treadle.ops import functional_ops

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_user(message):
    """A warning attributed to the first caller outside treadle (the user's
    vectorized_map call, or the td.function being traced)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        level += 1
        frame = frame.f_back
    warnings.warn(message, stacklevel=level)


def _key(t):
    return (id(t.op.graph), t.op._node, t.value_index)


def _int32(value):
    return convert_to_tensor(value, dtype=dtypes.int32)


class BatchContext:
    """What batching rules need besides their op: the batch size, tiling, and
    the ways out (vectorize a library function, run an op once per example)."""

    def __init__(self, static_size, fallback, warn, example=None):
        self.static_size = static_size  # a Python int, or None when only known when run
        self.fallback = fallback
        self.warn = warn
        self._example = example  # a batched tensor, to read the batch size from
        self._sizes = {}  # graph -> the batch size as an int32 scalar tensor of that graph

    def note_batched(self, t):
        if self._example is None and isinstance(t, Tensor):
            self._example = t

    def size(self):
        """The batch size: a Python int when static, else an int32 scalar tensor."""
        if self.static_size is not None:
            return self.static_size
        return self.size_tensor()

    def size_tensor(self):
        """The batch size as an int32 scalar tensor of the graph being built."""
        if self.static_size is not None:
            return _int32(self.static_size)
        key = context.current_graph()
        t = self._sizes.get(key)
        if t is None:
            shape = execute("Shape", [self._example], {"out_type": dtypes.int32})[0]
            t = self._sizes[key] = execute("StridedSlice", [shape, _int32([0]), _int32([1]), _int32([1])],
                                           {"shrink_axis_mask": 1})[0]
        return t

    def size_vector(self):
        """[batch size] as an int32 vector (to prepend to a shape)."""
        if self.static_size is not None:
            return _int32([self.static_size])
        return execute("Reshape", [self.size_tensor(), _int32([1])])[0]

    def tile(self, t):
        """Unbatched `t` repeated for every example: [batch, *t.shape]."""
        t = convert_to_tensor(t)
        if t.dtype in (dtypes.resource, dtypes.variant):
            raise NotBatchable(f"a {t.dtype.name} value cannot be repeated per example")
        expanded = execute("ExpandDims", [t, _int32(0)])[0]
        if self.static_size == 1:
            return expanded
        t_shape = execute("Shape", [t], {"out_type": dtypes.int32})[0]
        shape = execute("ConcatV2", [self.size_vector(), t_shape, _int32(0)])[0]
        return execute("BroadcastTo", [expanded, shape])[0]

    def batched_all(self, inputs, batched):
        """Every input with the batch dimension (the unbatched ones tiled)."""
        return [v if b else self.tile(v) for v, b in zip(inputs, batched)]

    def for_examples(self, rows):
        """A context for the examples `rows` (an index vector) of this batch."""
        return BatchContext(None, self.fallback, self.warn, example=rows)

    # ---------------------------------------------------------- ways out
    def vectorize_function(self, fn, inputs, batched):
        """Builds the batched computation of library function `fn` (a
        ConcreteFunction) on `inputs` here; returns (outputs, batched flags)."""
        return vectorize_graph(self, fn.graph, fn.outputs, inputs, batched)

    def reemit(self, op, inputs):
        """`op` as it is, on `inputs` (none of which has the batch dimension)."""
        return reemit(op, inputs)

    def call_vectorized(self, fn, inputs, batched):
        """A call of `fn`'s batched form (traced once per signature and kept),
        on `inputs`: its outputs as a rule returns them."""
        if not any(batched):
            raise NotBatchable(f"{fn.name} draws per example but none of its inputs is batched")
        entry = _vectorized_callee(fn, inputs, batched, self.fallback, self.warn)
        outs = entry[0]._call_in_graph(context.current_graph(), list(inputs))
        return [v if b else Unbatched(v) for v, b in zip(outs, entry[1])]

    def batched_outputs(self, fn, batched):
        """Which outputs of library function `fn` depend on a batched input (or
        on an op that draws per example), without building anything."""
        return depends_on_batched(fn.graph, fn.outputs, batched)

    def per_example(self, op, inputs, batched, why):
        """Runs `op` once per example, in a loop over the batch."""
        if not self.fallback:
            raise ValueError(f"vectorized_map: op {op.type} ('{op.name}') cannot be vectorized ({why}), and "
                             "fallback_to_while_loop is False")
        if self.warn:
            warn_user(f"vectorized_map: op {op.type} ('{op.name}') has no batched form here ({why}); it will run once "
                  "per example, in a loop over the batch")
        for t in op.outputs:
            if t.dtype in (dtypes.resource, dtypes.variant):
                raise NeedsWholeFunction(
                    f"vectorized_map: op {op.type} ('{op.name}') cannot be vectorized ({why}) and cannot run once "
                    f"per example on its own either: it returns a {t.dtype.name} value, which cannot be stacked")
        where = [i for i, b in enumerate(batched) if b]
        elems = tuple(inputs[i] for i in where)
        if not elems:  # an op with effects and no batched input: one run per example all the same
            elems = (execute("Range", [_int32(0), self.size_tensor(), _int32(1)])[0],)
        specs = tuple(TensorSpec(t.shape, t.dtype) for t in op.outputs)

        def one_example(xs):
            merged = list(inputs)
            for i, x in zip(where, xs):
                merged[i] = x
            return tuple(reemit(op, merged))

        outs = functional_ops.map_fn(one_example, elems, fn_output_signature=specs)
        return list(outs), [True] * len(outs)


# ---------------------------------------------------------------- walking a graph

def reemit(op, inputs):
    """`op` as it is, on `inputs`, in the graph being built (or eagerly)."""
    graph = context.current_graph()
    if op.type == "Const":  # a Const node that rules can read the value of
        return [graph.constant(op.value) if graph is not None else op.value]
    attrs = op.attrs
    if graph is not None:
        for fa in function_attrs(op.type):
            graph.add_function(op.graph.functions[attrs[fa.attr]])
    return execute(op.type, list(inputs), attrs)


def _needed_ops(graph, outputs):
    """The ops that the outputs depend on, or that have effects, in graph order."""
    return ops_needed(graph, [t.op for t in outputs] + list(graph.stateful_ops))


def vectorize_graph(ctx, graph, outputs, inputs, batched):
    """The batched computation of `graph` (its inputs given as `inputs`, with
    `batched` flags) built in the current graph: (values of `outputs`, flags)."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"vectorizing {graph.name}: {len(inputs)} inputs for {len(graph.inputs)} placeholders")
    env = {}
    for ph, v, b in zip(graph.inputs, inputs, batched):
        env[_key(ph)] = (v, b)
        if b:
            ctx.note_batched(v)
    for op in _needed_ops(graph, outputs):
        if op.type == "Placeholder":
            if _key(op.outputs[0]) not in env:
                raise ValueError(f"vectorizing {graph.name}: placeholder {op.name} is not an input")
            continue
        values = [env[_key(t)] for t in op.inputs]
        outs, flags = apply_rule(ctx, op, [v for v, _ in values], [b for _, b in values])
        for t, v, b in zip(op.outputs, outs, flags):
            env[_key(t)] = (v, b)
    found = [env[_key(t)] for t in outputs]
    return [v for v, _ in found], [b for _, b in found]


def depends_on_batched(graph, outputs, batched):
    """For each of `outputs`, whether it depends on an input flagged in
    `batched` or on an op whose rule runs even unbatched (a conservative
    reading of which outputs a vectorization makes batched)."""
    flags = {_key(ph): b for ph, b in zip(graph.inputs, batched)}
    for op in _needed_ops(graph, outputs):
        if op.type == "Placeholder":
            continue
        b = any(flags.get(_key(t), False) for t in op.inputs) or _runs_per_example_anyway(op)
        for t in op.outputs:
            flags[_key(t)] = b
    return [flags[_key(t)] for t in outputs]


def _runs_per_example_anyway(op):
    """Whether `op` gives per-example results even with no batched input: a
    random draw, an effect that runs once per example, or a call of a
    function that has one of those."""
    op_type = op.type
    if batching_registry.runs_even_unbatched(op_type):
        return True
    if batching_registry.per_example_reason(op_type) is not None and SIGNATURES[op_type].stateful:
        return True
    return bool(function_attrs(op_type)) and _calls_per_example_ops(op)


def _calls_per_example_ops(op):
    for fa in function_attrs(op.type):
        callee = op.graph.functions[op.attrs[fa.attr]]
        if any(depends_on_batched(callee.graph, callee.outputs, [False] * len(callee.graph.inputs))):
            return True
    return False


_CACHE_LIMIT = 256


def remember(cache, key, value):
    """cache[key] = value, the oldest entry dropped when the cache is full."""
    if len(cache) >= _CACHE_LIMIT:
        cache.pop(next(iter(cache)))
    cache[key] = value


_CALLEES = {}  # (function name, input signature, flags, options) -> (batched ConcreteFunction, output flags)


def _vectorized_callee(fn, inputs, batched, fallback, warn):
    """The batched form of library function `fn` for inputs of this signature."""
    shapes = tuple((t.dtype, tuple(t.shape.dims[1:] if b else t.shape.dims) if t.shape.rank is not None else None)
                   for t, b in zip(inputs, batched))
    key = (fn.name, shapes, tuple(batched), fallback, warn)
    entry = _CALLEES.get(key)
    if entry is not None:
        return entry
    graph = FuncGraph(f"vectorized_{fn.name}", outer_graph=None)
    with graph:
        args = []
        for i, ((dtype, dims), b) in enumerate(zip(shapes, batched)):
            shape = None if dims is None else ((None,) + dims if b else dims)
            args.append(graph.add_placeholder(dtype, shape, f"arg{i}"))
        example = next((a for a, b in zip(args, batched) if b), None)
        ctx = BatchContext(None, fallback, warn, example=example)
        outs, flags = vectorize_graph(ctx, fn.graph, fn.outputs, args, batched)
        flat_out = [execute("Identity", [graph._graph_input(v)])[0] for v in outs]
    graph.structured_outputs = list(flat_out)
    entry = (finish_function(graph, unique_function_name(f"vectorized_{fn.name}"), flat_out), tuple(flags))
    remember(_CALLEES, key, entry)
    return entry


def apply_rule(ctx, op, inputs, batched):
    """The outputs of `op` on `inputs` and whether each has the batch dimension."""
    op_type = op.type
    if not any(batched) and not _runs_per_example_anyway(op):
        outs = reemit(op, inputs)
        return outs, [False] * len(outs)
    rule = batching_registry.get_batching_rule(op_type)
    if rule is None:
        return ctx.per_example(op, inputs, batched, batching_registry.per_example_reason(op_type))
    try:
        outs = rule(ctx, op, inputs, batched)
    except NotBatchable as e:
        return ctx.per_example(op, inputs, batched, str(e))
    if len(outs) != len(op.outputs):
        raise RuntimeError(f"the batching rule of {op_type} returned {len(outs)} outputs for {len(op.outputs)}")
    values, flags = [], []
    for out in outs:
        if isinstance(out, Unbatched):
            values.append(out.value)
            flags.append(False)
        else:
            values.append(out)
            flags.append(True)
    return values, flags
