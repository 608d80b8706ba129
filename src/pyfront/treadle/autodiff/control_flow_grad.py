"""Gradients of If and While.

If: the forward If is rewritten to also output the intermediates each
branch's backward function reads (the other branch outputs placeholders
values of the same dtypes), and the gradient is an If over the two branches'
backward functions.

While: the forward While is rewritten to carry an iteration counter and, for
each tensor the body's backward function reads (a loop variable at the start
of an iteration, or an intermediate of the body), a tensor list that
collects its value of every iteration. The gradient is a While that runs the
iterations backwards, reading those lists at index i and applying the body's
backward function to the loop variables' gradients. Loop variables the body
passes through unchanged (captured values) are read once, not collected.

Both rewrites happen in place, on graphs that have not run yet (a function
being traced, or a finished function graph being differentiated into its
backward function; finished graphs keep their serialized inference
function). A second-order gradient differentiates the rewritten op again,
which rewrites it once more."""

import weakref

from treadle.autodiff import helpers
from treadle.autodiff.backprop import dense
from treadle.autodiff.batching_registry import NotBatchable, RegisterBatchingRule, Unbatched
from treadle.autodiff.list_grad import tile_list
from treadle.autodiff.function_gradients import (
    GraphBackward, function_gradient, list_element_dtype, reopened, zeros_for)
from treadle.autodiff.registry import RegisterGradient
from treadle.framework import context, dtypes
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.graph_tensor import SymbolicTensor
from treadle.framework.tensor_shape import TensorShape
from treadle.function.concrete_function import finish_function
from treadle.ops.control_flow_ops import _body_function, cond, while_loop


class _Here:
    """Maps tensors of the graph `op` lives in to the graph the gradient is
    built in (the same graph, or the backward graph of op's graph)."""

    def __init__(self):
        self.graph = context.current_graph()

    def __call__(self, t):
        if self.graph is None or t.graph is self.graph:
            return t
        return self.graph._graph_input(t)


class _LazyValues:
    """values[i] mapped with `here` on first use."""

    def __init__(self, values, here):
        self._values, self._here = values, here

    def __getitem__(self, i):
        return self._here(self._values[i])

    def __len__(self):
        return len(self._values)


def _concrete(graph, name, outputs):
    return finish_function(graph, unique_function_name(name), outputs, finalize=False)


def _placeholder_value(graph, like):
    """A value of like's dtype added to (finished) `graph`: what a branch
    outputs in place of an intermediate `like` that only the other branch has."""
    dtype = like.dtype
    with reopened(graph):
        if dtype == dtypes.variant:
            try:
                element_dtype = list_element_dtype(like)
            except TypeError:
                element_dtype = dtypes.float32
            return helpers.run("TensorListReserve", [helpers.scalar(-1, dtypes.int32), helpers.scalar(0, dtypes.int32)],
                               {"element_dtype": element_dtype})
        if dtype == dtypes.resource:
            raise NotImplementedError("a branch intermediate that is a resource cannot be passed to the gradient")
        return helpers.scalar(False if dtype == dtypes.bool else 0, dtype)


# ---------------------------------------------------------------- If

_IF_STATES = weakref.WeakKeyDictionary()  # If op -> _IfState


class _IfState:
    """The gradients of an If's branches, and the layout of its outputs: the
    original n, then for each rewrite level a block of the then branch's
    extra outputs followed by the else branch's."""

    def __init__(self, op):
        graph = op.graph
        self.then_fn = graph.functions[op.attrs["then_branch"]]
        self.else_fn = graph.functions[op.attrs["else_branch"]]
        self.then_info, self.else_info = function_gradient(self.then_fn), function_gradient(self.else_fn)
        self.n = len(op.outputs)
        self.blocks = []  # per level: (then output indices, else output indices)

    def output_map(self, branch, k):
        """If-output indices of the branch's level-k forward outputs."""
        indices = list(range(self.n))
        for level in range(k + 1):
            indices += self.blocks[level][branch]
        return indices

    def rewrite(self, op):
        """Makes the If output one more level of intermediates."""
        graph = op.graph
        k = len(self.blocks)
        then_new = self.then_info.level(k).outputs[len(self.then_info.level(k).differentiated):]
        else_new = self.else_info.level(k).outputs[len(self.else_info.level(k).differentiated):]
        first = len(op.outputs)
        self.blocks.append((list(range(first, first + len(then_new))),
                            list(range(first + len(then_new), first + len(then_new) + len(else_new)))))
        then_outputs, else_outputs = list(self.then_fn._flat_outputs), list(self.else_fn._flat_outputs)
        for level in range(k + 1):
            tl, el = self.then_info.level(level), self.else_info.level(level)
            t_extra, e_extra = tl.outputs[len(tl.differentiated):], el.outputs[len(el.differentiated):]
            then_outputs += t_extra + [_placeholder_value(self.then_fn.graph, t) for t in e_extra]
            else_outputs += [_placeholder_value(self.else_fn.graph, t) for t in t_extra] + e_extra
        then2 = _concrete(self.then_fn.graph, "cond_true_fwd", then_outputs)
        else2 = _concrete(self.else_fn.graph, "cond_false_fwd", else_outputs)
        graph.add_function(then2)
        graph.add_function(else2)
        added = list(zip(then_outputs[first:], else_outputs[first:]))
        shapes = [a.shape.most_specific_compatible_shape(b.shape) for a, b in added]
        attrs = dict(op.attrs)
        attrs["then_branch"], attrs["else_branch"] = then2.name, else2.name
        attrs["Tout"] = list(attrs["Tout"]) + [a.dtype for a, _ in added]
        attrs["output_shapes"] = list(attrs["output_shapes"]) + [sh.dims for sh in shapes]
        op.attrs = attrs
        op.outputs.extend(SymbolicTensor(op, first + i, a.dtype, sh)
                          for i, ((a, _), sh) in enumerate(zip(added, shapes)))


def _branches(op, *names):
    return [op.graph.functions[op.attrs[n]] for n in names]


def _tiled(ctx, v):
    """Unbatched v for every example (a tensor list: a list of batched items)."""
    return tile_list(ctx, v) if v.dtype == dtypes.variant else ctx.tile(v)


def _all_batched(ctx, outs, flags):
    return [v if b else _tiled(ctx, v) for v, b in zip(outs, flags)]


@RegisterBatchingRule("If", "StatelessIf")
def _if_batched(ctx, op, inputs, batched):
    then_fn, else_fn = _branches(op, "then_branch", "else_branch")
    pred, args, flags = inputs[0], list(inputs[1:]), list(batched[1:])
    if not batched[0]:  # every example takes the same branch: an If of the batched branches
        def branch(fn):
            return lambda: _all_batched(ctx, *ctx.vectorize_function(fn, args, flags))
        return list(cond(pred, branch(then_fn), branch(else_fn)))
    if op.type == "If":
        raise NotBatchable("the condition differs per example and a branch has effects")
    for t in op.outputs:
        if t.dtype in (dtypes.variant, dtypes.resource):
            raise NotBatchable(f"a {t.dtype.name} result cannot be chosen per example")
    # The batch split by the condition, each part through its own branch
    # (no example computes the branch it does not take), and the results put
    # back in the examples' order.
    groups = [_rows_where(pred), _rows_where(helpers.run("LogicalNot", [pred]))]
    parts = []
    for fn, rows in zip((then_fn, else_fn), groups):
        part = ctx.for_examples(rows)
        part_args = [helpers.run("GatherV2", [a, rows, helpers.ints(0)]) if b else a for a, b in zip(args, flags)]
        outs, out_flags = part.vectorize_function(fn, part_args, flags)
        parts.append([v if b else part.tile(v) for v, b in zip(outs, out_flags)])
    back = helpers.run("InvertPermutation", [helpers.run("ConcatV2", groups + [helpers.ints(0)])])
    return [helpers.run("GatherV2", [helpers.run("ConcatV2", [t, e, helpers.ints(0)]), back, helpers.ints(0)])
            for t, e in zip(*parts)]


def _rows_where(mask):
    """The indices of the examples where `mask` ([batch] bool) holds, as a vector."""
    return helpers.run("Reshape", [helpers.run("Where", [mask]), helpers.ints([-1])])


@RegisterGradient("If", "StatelessIf")
def _if_grad(op, *dys):
    state = _IF_STATES.get(op)
    if state is None:
        state = _IF_STATES[op] = _IfState(op)
    here = _Here()
    dys = list(dys) + [None] * (len(op.outputs) - len(dys))
    current = len(state.blocks) - 1
    infos = (state.then_info, state.else_info)
    levels = []
    for b, info in enumerate(infos):
        mapping = state.output_map(b, current) if current >= 0 else list(range(state.n))
        levels.append(info.level_for([dys[i] for i in mapping]))
    while len(state.blocks) <= max(levels):
        state.rewrite(op)
    dys += [None] * (len(op.outputs) - len(dys))
    inputs = _LazyValues(op.inputs[1:], here)
    plans = []
    for b, info in enumerate(infos):
        mapping = state.output_map(b, levels[b])
        lvl = info.level(levels[b])
        plans.append((info, levels[b], [dys[i] for i in mapping], _LazyValues([op.outputs[i] for i in mapping], here),
                      lvl.bwd))
    wanted = sorted({j for *_, bwd in plans for j, k in enumerate(bwd.grad_index) if k is not None})
    if not wanted:
        return [None] * len(op.inputs)
    then_graph = state.then_info.graph

    def grad_dtype(j):
        for *_, bwd in plans:
            k = bwd.grad_index[j]
            if k is not None:
                return bwd.function._flat_outputs[k].dtype
        return None

    def branch(info, level, branch_dys, values, _):
        def fn():
            # Branch results are tensors: sparse gradients are densified.
            grads = [dense(g) for g in info.call_level(level, branch_dys, inputs, values)]
            return [grads[j] if grads[j] is not None else zeros_for(inputs[j], then_graph.inputs[j], grad_dtype(j))
                    for j in wanted]
        return fn

    results = cond(here(op.inputs[0]), branch(*plans[0]), branch(*plans[1]))
    grads = [None] * len(op.inputs)
    for j, g in zip(wanted, results):
        grads[1 + j] = g
    return grads


# ---------------------------------------------------------------- While

_WHILE_STATES = weakref.WeakKeyDictionary()  # While op -> [_WhileState per rewrite, oldest first]


class _WhileState:
    """One rewrite of a While op: its loop variables before the rewrite (n),
    the body's backward function, the counter's output index, and for each
    tensor that function reads: ("list", output index) for the tensors
    collected per iteration, ("invariant", j) for unchanged loop variables."""

    def __init__(self, n, body_graph, bwd, counter, sources):
        self.n, self.body_graph, self.bwd, self.counter, self.sources = n, body_graph, bwd, counter, sources


def _insert_before(graph, op, new_ops):
    """Moves `new_ops` (just appended to graph.operations) in front of `op`, so
    that the list stays in an order where producers come first."""
    for o in new_ops:
        graph.operations.remove(o)
    at = graph.operations.index(op)
    graph.operations[at:at] = new_ops


def _rewrite_while(op):
    graph = op.graph
    body_fn = graph.functions[op.attrs["body"]]
    cond_fn = graph.functions[op.attrs["cond"]]
    body_graph = body_fn.graph
    n = len(op.inputs)
    body_outputs = body_fn._flat_outputs
    bwd = GraphBackward(body_graph, body_outputs, body_fn.name)
    # What the backward function reads: collect per iteration, except
    # loop variables the body passes through unchanged.
    collected, sources = [], []
    for kind, ref in bwd.needed_kinds:
        if kind == "input" and body_outputs[ref] is body_graph.inputs[ref]:
            sources.append(("invariant", ref))
        else:
            tensor = body_graph.inputs[ref] if kind == "input" else ref
            sources.append(("list", len(collected)))
            collected.append((kind, ref, tensor))
    intermediates = [t for kind, _, t in collected if kind == "intermediate"]
    fwd_body = _concrete(body_graph, "while_body_fwd", list(body_outputs) + intermediates)
    specs = [(t.dtype, t.shape) for t in body_graph.inputs]

    new_body = FuncGraph("while_body_grad_fwd", outer_graph=graph)
    with new_body:
        phs = [new_body.add_placeholder(d, s, f"arg{i}") for i, (d, s) in enumerate(specs)]
        k = new_body.add_placeholder(dtypes.int32, [], "iteration")
        lists = [new_body.add_placeholder(dtypes.variant, [], "collected") for _ in collected]
        outs = fwd_body._call_in_graph(new_body, phs)
        values = iter(outs[n:])
        new_lists = []
        for (kind, ref, t), lst in zip(collected, lists):
            value = phs[ref] if kind == "input" else next(values)
            new_lists.append(helpers.run("TensorListSetItem", [lst, k, value],
                                         {"element_dtype": t.dtype, "resize_if_index_out_of_bounds": True}))
        next_k = helpers.add(k, helpers.scalar(1, dtypes.int32))
        body_out = list(outs[:n]) + [next_k] + new_lists
    new_cond = FuncGraph("while_cond_grad_fwd", outer_graph=graph)
    with new_cond:
        cphs = [new_cond.add_placeholder(d, s, f"arg{i}") for i, (d, s) in enumerate(specs)]
        new_cond.add_placeholder(dtypes.int32, [], "iteration")
        for _ in collected:
            new_cond.add_placeholder(dtypes.variant, [], "collected")
        cond_out = cond_fn._call_in_graph(new_cond, cphs)
    body2 = _body_function(new_body, "while_body_grad_fwd", body_out)
    cond2 = _body_function(new_cond, "while_cond_grad_fwd", cond_out)
    graph.add_function(body2)
    graph.add_function(cond2)

    before = len(graph.operations)
    with reopened(graph):
        k0 = helpers.scalar(0, dtypes.int32)
        minus_one, zero = helpers.scalar(-1, dtypes.int32), helpers.scalar(0, dtypes.int32)
        starts = [helpers.run("TensorListReserve", [minus_one, zero], {"element_dtype": t.dtype})
                  for _, _, t in collected]
    _insert_before(graph, op, graph.operations[before:])
    attrs = dict(op.attrs)
    attrs["T"] = list(attrs["T"]) + [dtypes.int32] + [dtypes.variant] * len(collected)
    attrs["body"], attrs["cond"] = body2.name, cond2.name
    shapes = list(attrs.get("output_shapes") or [t.shape.dims for t in op.outputs])
    attrs["output_shapes"] = shapes + [[]] * (1 + len(collected))
    op.attrs = attrs
    op.inputs.extend([k0] + starts)
    op.outputs.append(SymbolicTensor(op, n, dtypes.int32, []))
    op.outputs.extend(SymbolicTensor(op, n + 1 + i, dtypes.variant, []) for i in range(len(collected)))
    resolved = [("list", n + 1 + ref) if kind == "list" else (kind, ref) for kind, ref in sources]
    return _WhileState(n, body_graph, bwd, n, resolved)


def _while_state(op, dys):
    """The rewrite whose backward function covers the outputs that have gradients."""
    last = max((i for i, g in enumerate(dys) if g is not None), default=-1)
    states = _WHILE_STATES.setdefault(op, [])
    for state in states:
        if state.n > last:
            return state
    state = _rewrite_while(op)
    states.append(state)
    return state


def _grad_shape_invariant(t):
    if t.dtype == dtypes.variant:
        return TensorShape([])
    if t.dtype == dtypes.resource:
        return TensorShape(None)
    return t.shape


def _loop_flags(ctx, body_fn, batched):
    """The loop variables that are batched on every iteration: those that
    enter batched, and those the body makes batched (a fixed point)."""
    flags = list(batched)
    while True:
        after = ctx.batched_outputs(body_fn, flags)
        merged = [a or b for a, b in zip(flags, after)]
        if merged == flags:
            return flags
        flags = merged


def _passed_through(body_fn, i):
    out = body_fn.outputs[i]
    return out is body_fn.graph.inputs[i] or (out.op.type == "Identity" and out.op.inputs[0] is body_fn.graph.inputs[i])


def _invariants(op, flags):
    shapes = []
    for dims, b, t in zip(op.attrs["output_shapes"], flags, op.inputs):
        shape = TensorShape(dims)
        # A batched list is still one list (of batched items).
        shapes.append(TensorShape([None]).concatenate(shape) if b and t.dtype != dtypes.variant else shape)
    return shapes


@RegisterBatchingRule("While", "StatelessWhile")
def _while_batched(ctx, op, inputs, batched):
    cond_fn, body_fn = _branches(op, "cond", "body")
    flags = _loop_flags(ctx, body_fn, batched)
    masked = ctx.batched_outputs(cond_fn, flags)[0]
    if masked:
        if op.type == "While":
            raise NotBatchable("the loop condition differs per example and the body has effects")
        # Examples stop at different iterations: the loop runs while any runs,
        # each iteration on the examples still running, and a finished example
        # keeps its values. Every variable the body changes is then per example.
        flags = [b or not _passed_through(body_fn, i) for i, b in enumerate(flags)]
        for v, f in zip(op.inputs, flags):
            if f and v.dtype in (dtypes.variant, dtypes.resource):
                raise NotBatchable(f"a {v.dtype.name} loop variable cannot be kept per example")
    start = [v if b == f else _tiled(ctx, v) for v, b, f in zip(inputs, batched, flags)]

    def running(*values):
        outs, _ = ctx.vectorize_function(cond_fn, list(values), flags)
        return outs[0]

    def body(*values):
        if not masked:
            outs, out_flags = ctx.vectorize_function(body_fn, list(values), flags)
            return [_tiled(ctx, v) if f and not b else v for v, f, b in zip(outs, flags, out_flags)]
        rows = _rows_where(running(*values))
        part = ctx.for_examples(rows)
        part_values = [helpers.run("GatherV2", [v, rows, helpers.ints(0)]) if f else v for v, f in zip(values, flags)]
        outs, out_flags = part.vectorize_function(body_fn, part_values, flags)
        at = helpers.run("ExpandDims", [rows, helpers.ints(1)])
        new_values = []
        for i, (new, old, f, b) in enumerate(zip(outs, values, flags, out_flags)):
            if not f or _passed_through(body_fn, i):
                new_values.append(new if not f else old)
            else:  # the running examples' new values, written over their old ones
                new_values.append(helpers.run("TensorScatterUpdate", [old, at, new if b else part.tile(new)]))
        return new_values

    def any_running(*values):
        return helpers.run("Any", [running(*values), helpers.ints(0)])

    outs = while_loop(any_running if masked else running, body, start, shape_invariants=_invariants(op, flags),
                      parallel_iterations=op.attrs.get("parallel_iterations", 10))
    return [v if f else Unbatched(v) for v, f in zip(outs, flags)]


@RegisterGradient("While", "StatelessWhile")
def _while_grad(op, *dys):
    dys = list(dys) + [None] * (len(op.outputs) - len(dys))
    state = _while_state(op, dys)
    here = _Here()
    bwd, body_graph, n = state.bwd, state.body_graph, state.n
    diff = [j for j in range(n) if bwd.dy_dtypes[j] is not None]
    if not diff:
        return [None] * len(op.inputs)
    initial = []
    for j in diff:
        g = dys[j]
        initial.append(g if g is not None else
                       zeros_for(here(op.outputs[j]), body_graph.inputs[j], bwd.dy_dtypes[j]))
    count = here(op.outputs[state.counter])

    def read_sources(i):
        """The values the body's backward function reads, for iteration i."""
        values = []
        needed = iter(bwd.needed_kinds)
        for source in state.sources:
            kind, ref = next(needed)
            dtype = (body_graph.inputs[ref] if kind == "input" else ref).dtype
            if source[0] == "invariant":
                values.append(here(op.inputs[source[1]]))
            else:
                values.append(helpers.run("TensorListGetItem", [here(op.outputs[source[1]]), i,
                                                                helpers.scalar(-1, dtypes.int32)],
                                          {"element_dtype": dtype}))
        return values

    def body(i, *dv):
        i = helpers.sub(i, helpers.scalar(1, dtypes.int32))
        values = read_sources(i)
        position = {}
        for p, (kind, ref) in enumerate(bwd.needed_kinds):
            position[("input", ref) if kind == "input" else ("t", id(ref))] = p
        forward_inputs = _Indexed(lambda j: values[position[("input", j)]])
        dys_full = [None] * n
        for j, g in zip(diff, dv):
            dys_full[j] = g
        grads = bwd.call(dys_full, forward_inputs, [None] * n, lambda t: values[position[("t", id(t))]])
        grads = [dense(g) for g in grads]  # loop variables are tensors
        out = []
        for j, g in zip(diff, dv):
            if grads[j] is not None:
                out.append(grads[j])
            else:
                out.append(helpers.zeros_like(g))
        # A loop variable's gradient has the variable's shape, also where the
        # rules computed it through shape ops that hide it (unknown batch sizes).
        for g, shape in zip(out, invariants[1:]):
            if isinstance(g, SymbolicTensor) and g.shape.is_compatible_with(shape):
                g.set_shape(shape)
        return [i] + out

    invariants = [TensorShape([])] + [_grad_shape_invariant(body_graph.inputs[j]) for j in diff]
    results = while_loop(lambda i, *dv: helpers.run("Greater", [i, helpers.scalar(0, dtypes.int32)]), body,
                         [count] + initial, shape_invariants=invariants)
    grads = [None] * len(op.inputs)
    for j, g in zip(diff, results[1:]):
        grads[j] = g
    return grads


class _Indexed:
    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, j):
        return self._fn(j)
