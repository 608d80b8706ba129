"""td.cond and td.while_loop. Eagerly they run Python control flow; while
tracing they build If/While nodes whose branches and bodies are library
functions traced from the Python callables."""

from treadle.framework import context, dtypes
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.function.concrete_function import finish_function
from treadle.ops import math_ops
from treadle.util import nest

PUBLIC = {"": ["cond", "while_loop"]}


def _in_graph(*values):
    if context.current_graph() is not None:
        return True
    return any(isinstance(v, Tensor) and type(v) is not EagerTensor for v in nest.flatten(values))


def _body_function(graph, name, outputs):
    graph.structured_outputs = list(outputs)
    return finish_function(graph, unique_function_name(name), outputs)


def _trace_graph(name, fn, arg_specs, arg_names=None):
    """Traces fn on placeholders of `arg_specs` (dtype, shape) in a new graph
    nested in the current one; returns (graph, structured result)."""
    graph = FuncGraph(name, outer_graph=context.current_graph())
    with graph:
        args = [graph.add_placeholder(d, s, (arg_names[i] if arg_names else f"arg{i}"))
                for i, (d, s) in enumerate(arg_specs)]
        result = fn(*args)
    return graph, args, result


def _components(leaves):
    """Tensors standing for a list of leaves: composite values (TensorArray)
    contribute their component tensors, anything else is converted."""
    out = []
    for v in leaves:
        if hasattr(v, "_to_components"):
            out.extend(v._to_components())
        else:
            out.append(convert_to_tensor(v))
    return out


def _from_components(templates, tensors):
    """Leaves like `templates` rebuilt from `tensors` (inverse of _components)."""
    it = iter(tensors)
    leaves = []
    for v in templates:
        if hasattr(v, "_to_components"):
            n = len(v._to_components())
            leaves.append(v._from_components([next(it) for _ in range(n)]))
        else:
            leaves.append(next(it))
    return leaves


def _to_graph_tensors(graph, structure, what):
    """Converts a branch's or body's outputs to tensors of `graph`."""
    with graph:
        leaves = nest.flatten(structure)
        for v in leaves:
            if v is None:
                raise ValueError(f"{what} returned None; every output of a staged cond/while_loop must be a "
                                 "tensor or a value convertible to one")
        flat = [graph._graph_input(t) for t in _components(leaves)]
    return flat


def _unify_captures(graphs, n_args):
    """Gives every graph the same inputs: its own arguments, then one
    placeholder per value captured by any of them, in one common order."""
    externals, seen = [], set()
    for g in graphs:
        for key, (ext, _) in g.captures.items():
            if key not in seen:
                seen.add(key)
                externals.append(ext)
    for g in graphs:
        args = g.inputs[:n_args]
        placeholders = []
        for ext in externals:
            entry = g.captures.get(id(ext))
            if entry is None:
                ph = g.add_placeholder(ext.dtype, ext.shape, "unused_capture")
                entry = g.captures[id(ext)] = (ext, ph)
            placeholders.append(entry[1])
        g.inputs = args + placeholders
        g.captures = {id(e): g.captures[id(e)] for e in externals}
    return externals


# ------------------------------------------------------------------- cond

_STATELESS_CONTROL_FLOW = frozenset(["StatelessIf", "StatelessWhile"])


def _has_effects(graph):
    """Whether a branch or loop body has ops with effects (a nested stateless
    conditional or loop has none of its own)."""
    return any(op.type not in _STATELESS_CONTROL_FLOW for op in graph.stateful_ops)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Runs true_fn() if pred else false_fn(): in a graph, as an If node."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable")
    if not _in_graph(pred):
        value = bool(pred) if not isinstance(pred, Tensor) else bool(pred)
        return true_fn() if value else false_fn()
    pred = convert_to_tensor(pred)
    if pred.dtype != dtypes.bool:
        raise TypeError(f"cond: pred must be a bool tensor, got {pred.dtype.name}")
    if pred.shape.rank not in (0, None):
        raise ValueError(f"cond: pred must be a scalar, got shape {pred.shape}")
    true_graph, _, true_out = _trace_graph("cond_true", true_fn, [])
    false_graph, _, false_out = _trace_graph("cond_false", false_fn, [])
    try:
        nest.assert_same_structure(true_out, false_out, check_types=False)
    except (ValueError, TypeError) as e:
        raise ValueError(f"true_fn and false_fn arguments to td.cond must have the same number, type, and "
                         f"overall structure of return values: {e}") from None
    true_flat = _to_graph_tensors(true_graph, true_out, "true_fn")
    false_flat = _to_graph_tensors(false_graph, false_out, "false_fn")
    for i, (a, b) in enumerate(zip(true_flat, false_flat)):
        if a.dtype != b.dtype:
            raise TypeError(f"true_fn and false_fn return different dtypes for output {i}: "
                            f"{a.dtype.name} vs {b.dtype.name}")
    externals = _unify_captures([true_graph, false_graph], 0)
    then_fn = _body_function(true_graph, "cond_true", true_flat)
    else_fn = _body_function(false_graph, "cond_false", false_flat)
    outer = context.current_graph() or pred.graph
    outer.add_function(then_fn)
    outer.add_function(else_fn)
    shapes = [a.shape.most_specific_compatible_shape(b.shape).dims for a, b in zip(true_flat, false_flat)]
    # As TensorFlow: StatelessIf when neither branch has effects.
    op_type = "If" if _has_effects(true_graph) or _has_effects(false_graph) else "StatelessIf"
    outputs = execute(op_type, [pred] + list(externals), {
        "Tin": [e.dtype for e in externals], "Tout": [t.dtype for t in true_flat],
        "then_branch": then_fn.name, "else_branch": else_fn.name, "output_shapes": shapes}, name=name)
    return nest.pack_sequence_as(true_out, _from_components(nest.flatten(true_out), outputs))


# ------------------------------------------------------------------- while

def _shape_str(s):
    return str(TensorShape(s))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, maximum_iterations=None,
               name=None):
    """Repeats body while cond is true: in a graph, as a While node.

    As in TensorFlow, cond and body take the loop variables as separate
    arguments when loop_vars is a list or tuple, and as one argument otherwise."""
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body must be callable")
    single = not isinstance(loop_vars, (list, tuple))
    structure = (loop_vars,) if single else tuple(loop_vars)
    if not _in_graph(loop_vars, maximum_iterations):
        return _repack(loop_vars, single, _eager_while(cond, body, structure, maximum_iterations, single))
    leaves = nest.flatten(structure)
    flat = _components(leaves)
    given = None if shape_invariants is None else nest.flatten((shape_invariants,) if single else shape_invariants)
    if given is not None and len(given) == len(flat):
        invariants = [TensorShape(s) for s in given]  # one per component (as AutoGraph's loops give them)
    elif any(hasattr(v, "_component_invariants") for v in leaves):
        invariants = _composite_invariants(leaves, given)
    elif given is not None:
        invariants = [TensorShape(s) for s in given]
    else:
        invariants = [t.shape for t in flat]
    counter = maximum_iterations is not None
    if counter:
        max_iter = convert_to_tensor(maximum_iterations, dtype_hint=dtypes.int32)
        flat = [convert_to_tensor(0, dtype=max_iter.dtype)] + flat
        invariants = [TensorShape([])] + invariants

    def unpack(args):
        return nest.pack_sequence_as(structure, _from_components(leaves, list(args[1:] if counter else args)))

    def cond_wrapper(*args):
        result = convert_to_tensor(cond(*unpack(args)))
        if counter:
            less = math_ops.OPERATOR_FUNCTIONS["less"](args[0], max_iter)
            result = math_ops.OPERATOR_FUNCTIONS["and"](less, result)
        return result

    def body_wrapper(*args):
        out = _normalize_body_output(body(*unpack(args)), single)
        try:
            nest.assert_same_structure(structure, out, check_types=False)
        except (ValueError, TypeError) as e:
            raise ValueError(f"body of td.while_loop must return the same structure as loop_vars: {e}") from None
        new = _components(nest.flatten(out))
        return [args[0] + 1] + new if counter else new

    specs = [(t.dtype, s.dims) for t, s in zip(flat, invariants)]
    cond_graph, _, cond_out = _trace_graph("while_cond", cond_wrapper, specs)
    body_graph, _, body_out = _trace_graph("while_body", body_wrapper, specs)
    cond_flat = _to_graph_tensors(cond_graph, cond_out, "cond")
    if len(cond_flat) != 1 or cond_flat[0].dtype != dtypes.bool or cond_flat[0].shape.rank not in (0, None):
        raise TypeError("cond of td.while_loop must return a scalar bool tensor")
    body_flat = _to_graph_tensors(body_graph, body_out, "body")
    for i, (before, after, inv) in enumerate(zip(flat, body_flat, invariants)):
        if before.dtype != after.dtype:
            raise TypeError(f"Loop variable {i} enters the loop with type {before.dtype.name}, but has type "
                            f"{after.dtype.name} after one iteration.")
        if not after.shape.is_subtype_of(inv):
            raise ValueError(f"Loop variable {i} has shape {_shape_str(inv.dims)} before the loop, but shape "
                             f"{after.shape} after one iteration. Provide shape invariants using either the "
                             "`shape_invariants` argument of td.while_loop or set_shape() on the loop variables.")
    n = len(flat)
    externals = _unify_captures([cond_graph, body_graph], n)
    with body_graph:
        body_flat = body_flat + body_graph.inputs[n:]  # captures pass through unchanged
    cond_fn = _body_function(cond_graph, "while_cond", cond_flat)
    body_fn = _body_function(body_graph, "while_body", body_flat)
    outer = context.current_graph()
    if outer is None:
        outer = next(t for t in flat if type(t) is not EagerTensor).graph
    outer.add_function(cond_fn)
    outer.add_function(body_fn)
    inputs = flat + list(externals)
    op_type = "While" if _has_effects(cond_graph) or _has_effects(body_graph) else "StatelessWhile"
    outputs = execute(op_type, inputs, {
        "T": [t.dtype for t in inputs], "cond": cond_fn.name, "body": body_fn.name,
        "output_shapes": [s.dims for s in invariants] + [e.shape.dims for e in externals],
        "parallel_iterations": int(parallel_iterations)}, name=name)
    results = outputs[1:n] if counter else outputs[:n]
    return _repack(loop_vars, single, nest.pack_sequence_as(structure, _from_components(leaves, list(results))))


def _composite_invariants(leaves, given):
    """One shape per component, where some loop variable (a SparseTensor)
    says which of its components' dimensions may change between iterations;
    `given` has one entry per loop variable (a composite's is the shape of
    the value it stands for)."""
    if given is not None and len(given) != len(leaves):
        raise ValueError(f"shape_invariants has {len(given)} entries for {len(leaves)} loop variables")
    out = []
    for i, v in enumerate(leaves):
        inv = None if given is None else given[i]
        if hasattr(v, "_component_invariants"):
            out.extend(v._component_invariants(inv))
        elif hasattr(v, "_to_components"):
            out.extend(c.shape for c in v._to_components())
        else:
            out.append(convert_to_tensor(v).shape if inv is None else TensorShape(inv))
    return out


def _normalize_body_output(out, single):
    """The body's result as a tuple matching the loop variables' tuple."""
    if single:
        return (out,)
    if isinstance(out, (list, tuple)):
        return tuple(out)
    return (out,)


def _repack(loop_vars, single, values):
    """The loop's result in the form loop_vars had (a value, list, tuple or namedtuple)."""
    if single:
        return values[0]
    if isinstance(loop_vars, list):
        return list(values)
    if hasattr(type(loop_vars), "_fields"):
        return type(loop_vars)(*values)
    return tuple(values)


def _eager_while(cond, body, structure, maximum_iterations, single):
    values = structure
    i = 0
    while maximum_iterations is None or i < int(maximum_iterations):
        if not bool(cond(*values)):
            break
        values = _normalize_body_output(body(*values), single)
        i += 1
    return values
