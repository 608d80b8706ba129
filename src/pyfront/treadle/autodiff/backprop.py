"""Reverse-mode accumulation over a list of ops: the one algorithm behind
GradientTape.gradient (ops a tape recorded, eager or symbolic) and the
symbolic differentiation of a traced graph (its operations).

Tensors are identified by object identity; the caller keeps every tensor of
`ops` alive while this runs.

A gradient is a tensor or a td.IndexedSlices (a gather's gradient with
respect to its params). Gradients of one tensor add up: slices by
concatenation, anything mixed densified first. Rules are handed dense
gradients, except the rules in SPARSE_PASS_THROUGH, which hand their
gradient on unchanged, so that a variable read only through gathers gets
IndexedSlices, as in TensorFlow."""

from treadle.autodiff import helpers
from treadle.autodiff.registry import DIFFERENTIABLE_DTYPES, call_rule, get_gradient_function
from treadle.framework import dtypes
from treadle.framework.indexed_slices import IndexedSlices, densify

# Op types whose rule passes the gradient of the output to the input as it is.
SPARSE_PASS_THROUGH = frozenset(["ReadVariableOp", "Identity"])


class EagerOp:
    """An op a GradientTape recorded while running eagerly, with the fields a
    graph Operation has that gradient rules read."""

    __slots__ = ("type", "inputs", "attrs", "outputs", "function", "__weakref__")
    graph = None

    def __init__(self, op_type, inputs, attrs, outputs, function=None):
        self.type = op_type
        self.inputs = inputs
        self.attrs = attrs
        self.outputs = outputs
        self.function = function  # the ConcreteFunction of a recorded function call

    def __repr__(self):
        return f"<recorded op {self.type}>"


def _connected_ops(ops, source_ids):
    """The ops that depend on a source, and the ids of every tensor that does."""
    connected = set(source_ids)
    path = []
    for op in ops:
        for t in op.inputs:
            if id(t) in connected:
                path.append(op)
                for o in op.outputs:
                    if o.dtype in DIFFERENTIABLE_DTYPES:
                        connected.add(id(o))
                break
    return path, connected


def dense(g):
    """g as a tensor (IndexedSlices densified)."""
    return densify(g) if isinstance(g, IndexedSlices) else g


def aggregate(grads):
    """The sum of several gradients of one tensor (None when there are none)."""
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, IndexedSlices) for g in grads):
        return _concat_slices(grads)
    return helpers.add_n([dense(g) for g in grads])


def _concat_slices(slices):
    """IndexedSlices that add up to the sum of `slices`: their rows one after
    another (int64 indices when the parts disagree)."""
    index_dtypes = {s.indices.dtype for s in slices}
    index_dtype = index_dtypes.pop() if len(index_dtypes) == 1 else dtypes.int64
    axis = helpers.scalar(0, dtypes.int32)
    values = helpers.run("ConcatV2", [s.values for s in slices] + [axis])
    indices = helpers.run("ConcatV2", [helpers.cast(s.indices, index_dtype) for s in slices] + [axis])
    dense_shape = next((s.dense_shape for s in slices if s.dense_shape is not None), None)
    return IndexedSlices(values, indices, dense_shape)


def backward(ops, targets, target_grads, sources):
    """Gradients of `targets` (weighted by `target_grads`) with respect to each
    of `sources`; None where a source is not connected.

    `ops` must be in an order where every op comes after the ops producing
    its inputs (the order they were made in)."""
    source_ids = {id(s) for s in sources if s.dtype in DIFFERENTIABLE_DTYPES}
    path, connected = _connected_ops(ops, source_ids)
    grads = {}  # id(tensor) -> gradients still to be added up
    for t, g in zip(targets, target_grads):
        if g is not None and id(t) in connected:
            grads.setdefault(id(t), []).append(g)
    for op in reversed(path):
        out_grads = []
        found = False
        for o in op.outputs:
            key = id(o)
            pending = grads.get(key)
            if pending is None:
                out_grads.append(None)
                continue
            g = pending[0] if len(pending) == 1 else aggregate(pending)
            if key in source_ids:
                grads[key] = [g]
            else:
                del grads[key]
            out_grads.append(g)
            found = True
        if not found:
            continue
        rule = get_gradient_function(op.type)
        if rule is None:
            continue
        if op.type not in SPARSE_PASS_THROUGH:
            for k, g in enumerate(out_grads):
                if type(g) is IndexedSlices:
                    out_grads[k] = densify(g)
        in_grads = call_rule(rule, op, out_grads, [id(t) in connected for t in op.inputs])
        inputs = op.inputs  # a rule may have rewritten the op (control flow exposes intermediates)
        if len(in_grads) != len(inputs):
            raise ValueError(f"the gradient rule of {op.type} returned {len(in_grads)} gradients for "
                             f"{len(inputs)} inputs")
        for t, g in zip(inputs, in_grads):
            if g is not None:
                key = id(t)
                if key in connected:
                    pending = grads.get(key)
                    if pending is None:
                        grads[key] = [g]
                    else:
                        pending.append(g)
    out = []
    for s in sources:
        pending = grads.get(id(s))
        out.append(None if pending is None else aggregate(pending))
    return out
