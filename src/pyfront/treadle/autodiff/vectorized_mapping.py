"""td.vectorized_map: elems checked, fn traced once for one example (kept per
fn and element signature), and the vectorizer (vectorization.py) applied,
inline in the function being traced, or eagerly through a kept batched
function that takes any batch size."""

from treadle.autodiff.batching_registry import NeedsWholeFunction
from treadle.autodiff.vectorization import BatchContext, remember, vectorize_graph, warn_user
from treadle.framework import context
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.function.concrete_function import finish_function
from treadle.ops import functional_ops
from treadle.util import nest

PUBLIC = {"": ["vectorized_map"]}

_EXAMPLE_TRACES = {}  # (fn, structure, specs) -> the per-example ConcreteFunction
_EAGER_FUNCTIONS = {}  # (fn, structure, specs, options) -> the batched ConcreteFunction


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
        remember(_EXAMPLE_TRACES, key, traced)
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
    except NeedsWholeFunction as e:
        if warn:
            warn_user(f"{e}; the whole function will run once per example, in a loop over the batch")
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
        remember(_EAGER_FUNCTIONS, key, batched_fn)
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
