"""TensorFlow's higher-order functions and control-dependency helpers:
map_fn, scan, foldl, foldr,
switch_case, case, control_dependencies and group. The loops are td.while_loop
over TensorArrays (a While node in a graph, a Python loop eagerly), the
branches td.cond, so gradients come from those."""

import contextlib

from treadle.framework import context, dtypes
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_array import TensorArray
from treadle.framework.tensor_spec import TensorSpec
from treadle.ops import array_ops, debugging_ops, math_ops
from treadle.ops.control_flow_ops import cond, while_loop
from treadle.util import nest

_less = math_ops.OPERATOR_FUNCTIONS["less"]
_add = math_ops.OPERATOR_FUNCTIONS["add"]
_sub = math_ops.OPERATOR_FUNCTIONS["subtract"]
_equal = math_ops.OPERATOR_FUNCTIONS["equal"]


def _flat_elems(elems, what):
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{what}: elems must be a tensor or a non-empty structure of tensors")
    for t in flat:
        if t.shape.rank == 0:
            raise ValueError(f"{what}: elements of elems must have rank >= 1 (they are unstacked along axis 0), "
                             f"got a scalar")
    return flat


def _length(flat):
    n = flat[0].shape[0] if flat[0].shape.rank is not None else None
    return n if n is not None else array_ops.shape(flat[0])[0]


def _readers(flat):
    return [TensorArray(t.dtype, size=_length(flat), element_shape=t.shape[1:]).unstack(t) for t in flat]


def _output_dtypes(signature, elems):
    """The flat dtypes and the structure of fn's results (fn_output_signature, else elems')."""
    if signature is None:
        return [t.dtype for t in _flat_elems(elems, "map_fn")], elems
    leaves = nest.flatten(signature)
    return [s.dtype if isinstance(s, TensorSpec) else dtypes.as_dtype(s) for s in leaves], signature


# ---------------------------------------------------------------- map_fn

def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """[fn(elems[0]), fn(elems[1]), ...] stacked: fn maps each slice of elems
    (a tensor or structure of tensors, unstacked along axis 0) to a result
    with the structure and dtypes of fn_output_signature (elems' by default)."""
    signature = fn_output_signature if fn_output_signature is not None else dtype
    flat = _flat_elems(elems, "map_fn")
    n = _length(flat)
    readers = _readers(flat)
    out_dtypes, out_structure = _output_dtypes(signature, elems)
    writers = [TensorArray(d, size=n) for d in out_dtypes]

    def body(i, outs):
        x = nest.pack_sequence_as(elems, [r.read(i) for r in readers])
        y = [convert_to_tensor(v) for v in nest.flatten(fn(x))]
        if len(y) != len(outs):
            raise ValueError(f"map_fn: fn returned {len(y)} tensors where fn_output_signature has {len(outs)}")
        return _add(i, 1), [w.write(i, v) for w, v in zip(outs, y)]

    _, writers = while_loop(lambda i, outs: _less(i, n), body, [convert_to_tensor(0), writers],
                            parallel_iterations=parallel_iterations or 10)
    return nest.pack_sequence_as(out_structure, [w.stack() for w in writers])


# ---------------------------------------------------------------- scan and folds

def _fold(fn, elems, initializer, reverse, collect, what):
    """The loop of scan/foldl/foldr: acc = fn(acc, x) over elems (from the end
    when reverse); returns the final acc and, if `collect`, the stacked accs."""
    flat = _flat_elems(elems, what)
    n = _length(flat)
    readers = _readers(flat)
    seeded = initializer is None
    if seeded:
        # The first element (the last, reversed) is the initial accumulator,
        # and the first result of a scan.
        first = _sub(n, 1) if reverse else convert_to_tensor(0)
        initializer = nest.pack_sequence_as(elems, [r.read(first) for r in readers])
    start = convert_to_tensor(1 if seeded else 0)
    init = nest.map_structure(convert_to_tensor, initializer)
    acc_flat = nest.flatten(init)
    writers = [TensorArray(t.dtype, size=n) for t in acc_flat] if collect else []
    if collect and seeded:
        writers = [w.write(first, a) for w, a in zip(writers, acc_flat)]

    def body(i, acc, outs):
        j = _index(i, n, reverse)
        x = nest.pack_sequence_as(elems, [r.read(j) for r in readers])
        new = fn(nest.pack_sequence_as(init, acc), x)
        try:
            nest.assert_same_structure(init, new, check_types=False)
        except (ValueError, TypeError) as e:
            raise TypeError(f"{what}: fn must return the structure of the accumulator: {e}") from None
        new = [convert_to_tensor(v) for v in nest.flatten(new)]
        return _add(i, 1), new, [w.write(j, v) for w, v in zip(outs, new)]

    _, acc, writers = while_loop(lambda i, acc, outs: _less(i, n), body, [start, acc_flat, writers])
    final = nest.pack_sequence_as(init, acc)
    if not collect:
        return final
    return nest.pack_sequence_as(init, [w.stack() for w in writers])


def _index(i, n, reverse):
    return _sub(_sub(n, 1), i) if reverse else i


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, infer_shape=True,
         reverse=False, name=None):
    """The accumulators of acc = fn(acc, x) over elems, stacked (the first
    element, or the last when reverse, starts them when there is no initializer)."""
    return _fold(fn, elems, initializer, reverse, True, "scan")


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """acc = fn(acc, x) over elems from the first; the final acc."""
    return _fold(fn, elems, initializer, False, False, "foldl")


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """acc = fn(acc, x) over elems from the last; the final acc."""
    return _fold(fn, elems, initializer, True, False, "foldr")


# ---------------------------------------------------------------- switch_case and case

def switch_case(branch_index, branch_fns, default=None, name=None):
    """branch_fns[branch_index]() (a list, or a dict of int keys); an index with
    no branch runs `default`, or the last branch when there is none."""
    pairs = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(enumerate(branch_fns))
    if not pairs:
        raise ValueError("switch_case: branch_fns must not be empty")
    for key, fn in pairs:
        if not isinstance(key, int) or not callable(fn):
            raise TypeError("switch_case: branch_fns must be callables, or a dict from ints to callables")
    if default is None:
        default = pairs[-1][1]
    index = convert_to_tensor(branch_index)
    if not index.dtype.is_integer:
        raise TypeError(f"switch_case: branch_index must be an integer tensor, got {index.dtype.name}")

    def chain(k):
        if k == len(pairs):
            return default()
        key, fn = pairs[k]
        return cond(_equal(index, convert_to_tensor(key, dtype=index.dtype)), fn, lambda: chain(k + 1))
    return chain(0)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name=None):
    """The fn of the first (pred, fn) pair whose pred is true, else default();
    with no default, the last pair's fn, whose pred is then checked to hold
    (InvalidArgumentError otherwise). exclusive=True checks that at most one
    pred is true."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs must not be empty")
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[1])):
            raise TypeError("case: pred_fn_pairs must be (predicate, callable) pairs")
    preds = [convert_to_tensor(p, dtype=dtypes.bool) for p, _ in pairs]
    if exclusive:
        count = math_ops.reduce_sum(math_ops.cast(array_ops.stack(preds), dtypes.int32))
        debugging_ops.Assert(_less(count, 2), ["Input error: exclusive=True: more than 1 conditions evaluated as "
                                               "True:", array_ops.stack(preds)])
    fns = [fn for _, fn in pairs]
    if default is None:
        # As TensorFlow: the last fn is the default, run only when some pred holds.
        debugging_ops.Assert(math_ops.reduce_any(array_ops.stack(preds)),
                             ["case: no predicate is true and there is no default: preds =",
                              array_ops.stack(preds)])
        preds, fns, default_fn = preds[:-1], fns[:-1], fns[-1]
    else:
        default_fn = default

    def chain(k):
        if k == len(preds):
            return default_fn()
        return cond(preds[k], fns[k], lambda: chain(k + 1))
    return chain(0)


# ---------------------------------------------------------------- control dependencies

@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Ops created inside run after `control_inputs` (tensors or ops) in the
    function being traced; eagerly, ops run in order anyway and this does nothing."""
    graph = context.current_graph()
    if graph is None:
        yield None
        return
    ops = []
    for c in control_inputs or ():
        if c is None:
            continue
        if hasattr(c, "assign") and hasattr(c, "read_value"):
            # A Variable (what assign_add returns): after the writes traced so
            # far, which the graph runs in order.
            if graph.stateful_ops:
                ops.append(graph.stateful_ops[-1])
            continue
        op = getattr(c, "op", c) if isinstance(c, Tensor) else c
        if getattr(op, "graph", None) is not graph:
            if isinstance(c, Tensor):  # an outer value: its capture is ready before the function runs
                continue
            raise ValueError(f"control_dependencies: {c!r} is not an op or tensor of the function being traced")
        ops.append(op)
    graph._control_dependencies.append(ops)
    try:
        yield None
    finally:
        graph._control_dependencies.pop()


def group(*inputs, name=None):
    """An op that runs after all `inputs` (a NoOp with control inputs) in a
    traced function; None eagerly, where everything has run already."""
    graph = context.current_graph()
    if graph is None:
        return None
    flat = [t for t in nest.flatten(list(inputs)) if t is not None]
    with control_dependencies(flat):
        return graph.create_noop(name or "group_deps")


PUBLIC = {"": ["map_fn", "scan", "foldl", "foldr", "switch_case", "case", "control_dependencies",
               "group"]}
