"""The vectorizer behind td.vectorized_map: it traces `fn` once on one
example's shapes, then walks the traced ops in order and builds, with each
op's batching rule (batching_registry), the computation of the whole batch.

It tracks, for every traced value, whether it has the batch dimension.
Values that depend on no batched input (variables, captures, constants and
what is computed from them alone) stay unbatched: a weight is never tiled,
and `x @ W` for a batched x and an unbatched W is one matmul. An op that has
no rule for its inputs runs once per example (a loop over the batch), with a
warning that names it."""

import warnings

from treadle.autodiff import batching_registry
from treadle.autodiff.batching_registry import NotBatchable, Unbatched
from treadle.framework import context, dtypes
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.op_def_library import SIGNATURES, function_attrs
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.function.concrete_function import finish_function
from treadle.ops import functional_ops
from treadle.util import nest

PUBLIC = {"": ["vectorized_map"]}


def _key(t):
    return (id(t.op.graph), t.op._node, t.value_index)


def _int32(value):
    return convert_to_tensor(value, dtype=dtypes.int32)


class CannotRunPerExample(ValueError):
    """An op with no batched form whose results cannot be stacked either:
    vectorized_map then runs the whole function once per example."""


class BatchContext:
    """What batching rules need besides their op: the batch size, tiling, and
    the ways out (vectorize a library function, run an op once per example)."""

    def __init__(self, static_size, fallback, warn, example=None):
        self.static_size = static_size  # a Python int, or None when only known when run
        self.fallback = fallback
        self.warn = warn
        self._example = example  # a batched tensor, to read the batch size from
        self._sizes = {}  # id(graph) -> the batch size as an int32 scalar tensor of that graph

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
        key = id(context.current_graph())
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

    # ---------------------------------------------------------- ways out
    def vectorize_function(self, fn, inputs, batched):
        """Builds the batched computation of library function `fn` (a
        ConcreteFunction) on `inputs` here; returns (outputs, batched flags)."""
        return vectorize_graph(self, fn.graph, fn.outputs, inputs, batched)

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
            warnings.warn(f"vectorized_map: op {op.type} ('{op.name}') has no batched form here ({why}); it will "
                          "run once per example, in a loop over the batch", stacklevel=4)
        for t in op.outputs:
            if t.dtype in (dtypes.resource, dtypes.variant):
                raise CannotRunPerExample(
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
    attrs = op.attrs
    if graph is not None:
        for fa in function_attrs(op.type):
            graph.add_function(op.graph.functions[attrs[fa.attr]])
    return execute(op.type, list(inputs), attrs)


def _needed_ops(graph, outputs):
    """The ops that the outputs depend on, or that have effects, in graph order."""
    needed = set()
    stack = [t.op for t in outputs] + list(graph.stateful_ops)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op for op in graph.operations if id(op) in needed]


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
        b = batching_registry.runs_even_unbatched(op.type) or any(flags.get(_key(t), False) for t in op.inputs)
        if not b and function_attrs(op.type):  # a call: what its callee does
            b = _calls_per_example_ops(op)
        for t in op.outputs:
            flags[_key(t)] = b
    return [flags[_key(t)] for t in outputs]


def _calls_per_example_ops(op):
    for fa in function_attrs(op.type):
        callee = op.graph.functions[op.attrs[fa.attr]]
        if any(depends_on_batched(callee.graph, callee.outputs, [False] * len(callee.graph.inputs))):
            return True
    return False


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
    _remember(_CALLEES, key, entry)
    return entry


def apply_rule(ctx, op, inputs, batched):
    """The outputs of `op` on `inputs` and whether each has the batch dimension."""
    op_type = op.type
    if not any(batched) and not batching_registry.runs_even_unbatched(op_type):
        reason = batching_registry.per_example_reason(op_type)
        if (reason is None or not SIGNATURES[op_type].stateful) and not (
                function_attrs(op_type) and _calls_per_example_ops(op)):
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


# ---------------------------------------------------------------- vectorized_map

_EXAMPLE_TRACES = {}  # (fn, structure, specs) -> the per-example ConcreteFunction
_EAGER_FUNCTIONS = {}  # (fn, structure, specs, options) -> the batched ConcreteFunction
_CACHE_LIMIT = 256


def _remember(cache, key, value):
    if len(cache) >= _CACHE_LIMIT:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _flat_elems(elems):
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("vectorized_map: elems must be a tensor or a non-empty structure of tensors")
    sizes = set()
    for t in flat:
        if t.shape.rank == 0:
            raise ValueError("vectorized_map: elements of elems must have rank >= 1 (fn is applied to their "
                             "slices along axis 0), got a scalar")
        if t.shape.rank is not None and t.shape[0] is not None:
            sizes.add(t.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"vectorized_map: the tensors of elems must have the same first dimension, got sizes "
                         f"{sorted(sizes)}")
    return flat, (sizes.pop() if sizes else None)


def _structure_key(elems):
    return repr(nest.map_structure(lambda _: None, elems))


def _trace_example(fn, elems, flat):
    """fn traced on one example (placeholders of the elements' shapes without
    their first dimension), cached when it captures no tensor of a graph."""
    specs = tuple((t.dtype, tuple(t.shape.dims[1:]) if t.shape.rank is not None else None) for t in flat)
    key = (fn, _structure_key(elems), specs)
    try:
        cached = _EXAMPLE_TRACES.get(key)
    except TypeError:  # an unhashable callable
        key, cached = None, None
    if cached is not None:
        return cached
    traced = _trace(fn, elems, flat)
    if key is not None and all(type(ext) is EagerTensor for ext in traced.captured_inputs):
        _remember(_EXAMPLE_TRACES, key, traced)
    return traced


def _trace(fn, elems, flat):
    get_concrete_function = getattr(fn, "get_concrete_function", None)
    if get_concrete_function is not None:
        # A td.function: its own trace for one example, whose ops are then
        # built here for the batch (rather than a call of a batched copy).
        specs = [TensorSpec(t.shape[1:] if t.shape.rank is not None else None, t.dtype) for t in flat]
        traced = get_concrete_function(nest.pack_sequence_as(elems, specs))
        if len(traced.graph.inputs) - len(traced.graph.captures) == len(flat):
            return traced
    graph = FuncGraph("vectorized_map_fn", outer_graph=context.current_graph())
    with graph:
        args = [graph.add_placeholder(t.dtype, t.shape[1:] if t.shape.rank is not None else None, f"elem{i}")
                for i, t in enumerate(flat)]
        result = fn(nest.pack_sequence_as(elems, args))
        leaves = nest.flatten(result)
        for leaf in leaves:
            if leaf is None:
                raise ValueError("vectorized_map: fn returned None; every output must be a tensor or a value "
                                 "convertible to one")
        flat_out = [execute("Identity", [graph._graph_input(convert_to_tensor(v))])[0] for v in leaves]
    graph.structured_outputs = nest.pack_sequence_as(result, flat_out)
    return finish_function(graph, unique_function_name("vectorized_map_fn"), flat_out)


def _vectorize_here(fn, elems, flat, static_size, fallback, warn):
    """The batched outputs of fn over elems, built in the current graph."""
    traced = _trace_example(fn, elems, flat)
    ctx = BatchContext(static_size, fallback, warn, example=flat[0])
    captured = traced.captured_inputs
    try:
        outs, flags = vectorize_graph(ctx, traced.graph, traced.outputs, flat + captured,
                                      [True] * len(flat) + [False] * len(captured))
    except CannotRunPerExample as e:
        if warn:
            warnings.warn(f"{e}; the whole function will run once per example, in a loop over the batch",
                          stacklevel=3)
        structure = traced._pack_outputs([TensorSpec(t.shape, t.dtype) for t in traced.outputs])
        return functional_ops.map_fn(fn, nest.pack_sequence_as(elems, flat), fn_output_signature=structure)
    return traced._pack_outputs([v if b else ctx.tile(v) for v, b in zip(outs, flags)])


def _eager_function(fn, elems, flat, fallback, warn):
    """The batched computation as a function of elems with any batch size
    (cached per fn and element signature), to run eagerly."""
    specs = tuple((t.dtype, tuple(t.shape.dims[1:])) for t in flat)
    key = (fn, _structure_key(elems), specs, fallback, warn)
    try:
        cached = _EAGER_FUNCTIONS.get(key)
    except TypeError:
        key, cached = None, None
    if cached is not None:
        return cached
    graph = FuncGraph("vectorized_map", outer_graph=None)
    with graph:
        args = [graph.add_placeholder(t.dtype, (None,) + tuple(t.shape.dims[1:]), f"elems{i}")
                for i, t in enumerate(flat)]
        result = _vectorize_here(fn, elems, args, None, fallback, warn)
        flat_out = [execute("Identity", [graph._graph_input(v)])[0] for v in nest.flatten(result)]
    graph.structured_outputs = nest.pack_sequence_as(result, flat_out)
    batched_fn = finish_function(graph, unique_function_name("vectorized_map"), flat_out)
    if key is not None:
        _remember(_EAGER_FUNCTIONS, key, batched_fn)
    return batched_fn


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """fn applied to each slice of elems along axis 0, with results stacked, as
    td.map_fn, but computed for the whole batch at once: fn is traced once on
    one example and each op is replaced by its batched form. An op with no
    batched form runs once per example in a loop (with a warning when `warn`),
    or raises ValueError when fallback_to_while_loop is False."""
    flat, static_size = _flat_elems(elems)
    if context.current_graph() is None and all(type(t) is EagerTensor for t in flat):
        if any(t.shape.rank is None for t in flat):
            raise ValueError("vectorized_map: elems must have known ranks")
        batched_fn = _eager_function(fn, elems, flat, fallback_to_while_loop, warn)
        return batched_fn._call_flat(flat)
    return _vectorize_here(fn, elems, flat, static_size, fallback_to_while_loop, warn)
