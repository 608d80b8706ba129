"""Gradients of traced functions: symbolic differentiation of a FuncGraph into
a backward graph, registered as a library function.

For a function graph G with outputs Y, `FunctionGradient` builds:

- the backward function: arguments (one dY per output that takes a
  gradient) + (the forward tensors the gradient rules read), results the
  gradients of G's inputs;
- the forward function with intermediates: G with the intermediate tensors
  the backward function reads appended to its outputs (a second
  ConcreteFunction over the same graph), so nothing is recomputed: a call
  recorded by a GradientTape, or a call op in a graph being differentiated,
  runs this forward function and hands its extra outputs to the backward one.

An input whose gradient is a td.IndexedSlices (a variable read through
gathers) gets three results (values, indices, dense_shape), which the caller
rebuilds into IndexedSlices, so sparsity survives nested function calls.

The set of intermediates is closed: differentiating the forward function
with respect to its extra outputs too (second derivatives, where an outer
tape differentiates the backward function) reads no tensor it does not
output.

`backward_function(concrete_fn)` packages the pair as one function of
(forward inputs, output gradients) for callers that do not keep the forward
run's intermediates (the Loom)."""

import threading

from treadle.autodiff import helpers
from treadle.autodiff.backprop import backward, dense
from treadle.autodiff.batching_registry import RegisterBatchingRule
from treadle.autodiff.registry import DIFFERENTIABLE_DTYPES, RegisterGradient
from treadle.framework import context, dtypes, indexed_slices
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.graph_tensor import SymbolicTensor
from treadle.framework.op_def_library import function_attrs
from treadle.function.concrete_function import finish_function

_lock = threading.RLock()


class BackwardGraph(FuncGraph):
    """The graph a backward function is built in. Tensors of the forward graph
    that gradient rules use become its arguments (`forward_captures`), in the
    order they were first used; constants are copied instead."""

    def __init__(self, name, forward):
        super().__init__(name)
        self.forward = forward
        self.forward_captures = {}  # id(forward tensor) -> (forward tensor, placeholder)

    def capture(self, value, name=None):
        if isinstance(value, SymbolicTensor) and value.graph is self.forward:
            entry = self.forward_captures.get(id(value))
            if entry is not None:
                return entry[1]
            if value.op.type == "Const":
                t = self.constant(value.op.value)
            else:
                t = self.add_placeholder(value.dtype, value.shape, "fwd_" + value.op.name)
            self.forward_captures[id(value)] = (value, t)
            return t
        return super().capture(value, name)


def gradient_dtype(t):
    """The dtype of the gradient of tensor t, or None when it takes none."""
    if t.dtype not in DIFFERENTIABLE_DTYPES:
        return None
    if t.dtype == dtypes.resource:
        read = _read_of_handle(t)
        return None if read is None else read.dtype
    return t.dtype


def _read_of_handle(handle):
    """A ReadVariableOp output reading variable handle `handle` (for the
    variable's dtype and shape), in its graph or in the functions it is passed
    to; None if none."""
    graph = getattr(handle, "graph", None)
    if graph is None:
        return None
    for op in graph.operations:
        for k, t in enumerate(op.inputs):
            if t is not handle:
                continue
            if op.type == "ReadVariableOp":
                return op.outputs[0]
            for fn, arg in _functions_taking(op, k):
                read = _read_of_handle(fn.graph.inputs[arg])
                if read is not None:
                    return read
    return None


def _functions_taking(op, k):
    """(function, argument index) for each library function graph op `op`
    passes its input k to, as the op registry describes the op's calls."""
    for f in function_attrs(op.type):
        name = op.attrs.get(f.attr) if op.attrs else None
        fn = op.graph.functions.get(name) if isinstance(name, str) else None
        arg = k - f.first_input
        if fn is not None and 0 <= arg < len(fn.graph.inputs):
            yield fn, arg


class GraphBackward:
    """The backward function of `graph` with respect to `outputs`. With
    `dense_results`, an IndexedSlices gradient is densified in the backward graph
    (one result per gradient, for callers that only take tensors)."""

    def __init__(self, graph, outputs, name, dense_results=False):
        self.graph = graph
        self.outputs = list(outputs)
        bwd = BackwardGraph(unique_function_name(name + "_backward"), graph)
        # dY for every output that takes a gradient: a resource output (a
        # variable handle passed through) takes its variable's gradient.
        self.dy_dtypes = [gradient_dtype(y) for y in self.outputs]
        with bwd:
            dys = []
            for y, dt in zip(self.outputs, self.dy_dtypes):
                if dt is None:
                    continue
                shape = y.shape if y.dtype != dtypes.resource else _read_of_handle(y).shape
                dys.append(bwd.add_placeholder(dt, shape, "dy"))
            targets = [y for y, dt in zip(self.outputs, self.dy_dtypes) if dt is not None]
            grads = backward(graph.operations, targets, dys, graph.inputs)
            # Each gradient as results [grad_index[i], ...): one tensor, or an
            # IndexedSlices' parts (values, indices, dense_shape), rebuilt by call().
            results, self.grad_index, self.grad_like = [], [], []
            for g in grads:
                if dense_results:
                    g = dense(g)
                self.grad_like.append(g)
                if g is None:
                    self.grad_index.append(None)
                else:
                    self.grad_index.append(len(results))
                    results.extend(bwd._graph_input(t) for t in indexed_slices.flatten(g))
        fwd_entries = list(bwd.forward_captures.values())
        self.needed = [fwd for fwd, ph in fwd_entries if ph.op.type == "Placeholder"]
        needed_phs = [ph for fwd, ph in fwd_entries if ph.op.type == "Placeholder"]
        capture_phs = [ph for _, ph in bwd.captures.values()]
        bwd.inputs = dys + needed_phs + capture_phs
        bwd.structured_outputs = list(results)
        bwd.outputs = list(results)
        self.function = finish_function(bwd, bwd.name, results)
        input_index = {id(t): i for i, t in enumerate(graph.inputs)}
        # For each needed forward tensor: ("input", i) or ("intermediate", tensor).
        self.needed_kinds = [("input", input_index[id(t)]) if id(t) in input_index else ("intermediate", t)
                             for t in self.needed]

    def intermediates(self):
        return [t for kind, t in self.needed_kinds if kind == "intermediate"]

    def call(self, dys, forward_inputs, output_values, intermediate_value):
        """Runs the backward function: `dys` one per output (None: zeros of
        the matching `output_values`), `forward_inputs` the values of the
        forward graph's inputs, `intermediate_value(t)` the value of
        intermediate t. Returns one gradient (or None) per forward input."""
        args = []
        for y, dt, dy, value in zip(self.outputs, self.dy_dtypes, dys, output_values):
            if dt is None:
                continue
            args.append(dy if dy is not None else zeros_for(value, y, dt))
        for kind, v in self.needed_kinds:
            args.append(forward_inputs[v] if kind == "input" else intermediate_value(v))
        results = self.function._call_flat(args)
        return [None if i is None else indexed_slices.rebuild(like, results[i:i + indexed_slices.num_components(like)])
                for i, like in zip(self.grad_index, self.grad_like)]


def zeros_for(value, like, grad_dtype):
    """A zero gradient for `value`, whose forward-graph counterpart is `like`
    (used to tell a list's element dtype) and whose gradient has `grad_dtype`."""
    if value.dtype == dtypes.resource:
        return helpers.zeros_like(helpers.run("ReadVariableOp", [value], {"dtype": grad_dtype}))
    return helpers.zeros_like(value)


def list_element_dtype(t):
    """The element dtype of the tensor list t, found from the ops that make or use it."""
    seen = set()
    todo = [t]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        op = getattr(t, "op", None)
        if op is None:
            continue
        if "element_dtype" in (op.attrs or {}):
            return op.attrs["element_dtype"]
        graph = op.graph
        for consumer in graph.operations:
            if consumer.type != "TensorListAddN" and "element_dtype" in (consumer.attrs or {}) and \
                    any(x is t for x in consumer.inputs):
                return consumer.attrs["element_dtype"]
        for f in function_attrs(op.type):
            if not f.returns_outputs:
                continue
            fn = graph.functions[op.attrs[f.attr]]
            if f.loop_body:  # the output is the loop variable: follow what enters the loop and the body
                todo.append(op.inputs[f.first_input + t.value_index])
                todo.append(fn.graph.inputs[t.value_index])
            else:
                todo.append(fn._flat_outputs[t.value_index])
        if op.type == "Placeholder":
            for ext, ph in graph.captures.values():
                if ph is t:
                    todo.append(ext)
            for fwd, ph in getattr(graph, "forward_captures", {}).values():
                if ph is t:
                    todo.append(fwd)
    raise TypeError("cannot tell the element dtype of a tensor list whose gradient is needed")


class _Level:
    """One level of a function's gradient: the backward function with respect
    to `differentiated` outputs, and the forward function whose outputs
    (`outputs`) add the intermediates that backward function reads."""

    def __init__(self, differentiated, bwd, forward, outputs):
        self.differentiated, self.bwd, self.forward, self.outputs = differentiated, bwd, forward, outputs
        self.position = {}
        for i, t in enumerate(outputs):
            self.position.setdefault(id(t), i)


class FunctionGradient:
    """The gradient of one function graph with respect to its outputs.

    Level 0 differentiates the function's own outputs; its forward function
    appends the intermediates that needs (the "hidden" outputs). Level k+1
    differentiates every output of level k's forward function (a second
    derivative reaches the hidden outputs through the first derivative's
    backward function) and appends what that needs. Levels are made when
    first asked for."""

    def __init__(self, graph, outputs, name):
        self.graph = graph
        self.outputs = list(outputs)
        self.name = name
        self.levels = []
        self._add_level(self.outputs)

    def _add_level(self, differentiated):
        bwd = GraphBackward(self.graph, differentiated, self.name)
        outputs = list(differentiated)
        known = {id(t) for t in outputs}
        for t in bwd.intermediates():
            if id(t) not in known:
                known.add(id(t))
                outputs.append(t)
        forward = finish_function(self.graph, unique_function_name(f"{self.name}_forward{len(self.levels)}"),
                                  outputs, finalize=False)
        forward._gradient_info = self
        self.levels.append(_Level(differentiated, bwd, forward, outputs))

    def level(self, k):
        with _lock:
            while len(self.levels) <= k:
                self._add_level(self.levels[-1].outputs)
        return self.levels[k]

    @property
    def forward(self):
        return self.levels[0].forward

    @property
    def hidden(self):
        return self.levels[0].outputs[len(self.outputs):]

    def level_of(self, fn):
        """The level whose forward function is fn; -1 for the function itself."""
        for k, lvl in enumerate(self.levels):
            if lvl.forward is fn:
                return k
        return -1

    def level_for(self, dys):
        """The lowest level differentiating every output that has a gradient in `dys`."""
        last = max((i for i, g in enumerate(dys) if g is not None), default=-1)
        k = 0
        while len(self.level(k).differentiated) <= last:
            if len(self.level(k).outputs) == len(self.level(k).differentiated):
                raise ValueError(f"{self.name}: a gradient was given for output {last}, which it does not have")
            k += 1
        return k

    def call_level(self, k, dys, forward_inputs, values):
        """Input gradients from level k's backward function: `dys` for (a prefix
        of) its differentiated outputs, None for zeros; `values` the values of
        level k's forward outputs (list-like)."""
        lvl = self.level(k)
        n = len(lvl.differentiated)
        dys = list(dys[:n]) + [None] * (n - min(len(dys), n))
        return lvl.bwd.call(dys, forward_inputs, values, lambda t: values[lvl.position[id(t)]])


# What building a function's gradient raises when the function cannot be
# differentiated (an op without a rule, a rule's unsupported case).
GRADIENT_ERRORS = (LookupError, NotImplementedError, TypeError, ValueError)


def function_gradient(fn):
    """The FunctionGradient of ConcreteFunction `fn` (cached on it, as is a
    failure to build one). A forward function made by a FunctionGradient
    gives that FunctionGradient."""
    info = getattr(fn, "_gradient_info", None)
    if info is None:
        with _lock:
            info = getattr(fn, "_gradient_info", None)
            if info is None:
                error = getattr(fn, "_gradient_error", None)
                if error is not None:
                    raise error
                try:
                    info = FunctionGradient(fn.graph, fn._flat_outputs, fn.name)
                except GRADIENT_ERRORS as e:
                    fn._gradient_error = e
                    raise
                fn._gradient_info = info
    return info


# ---------------------------------------------------------------- calls of functions

def _called_function(op):
    if op.graph is None:
        return op.function
    return op.graph.functions[op.attrs["f"]]


def _retarget_call(op, forward):
    """Makes the call op `op` (in a graph not yet run) call `forward`, a
    forward function whose outputs extend the ones op has."""
    graph = op.graph
    graph.add_function(forward)
    attrs = dict(op.attrs)
    outputs = forward._flat_outputs
    n = len(op.outputs)
    attrs["f"] = forward.name
    attrs["Tout"] = [t.dtype for t in outputs]
    attrs["output_shapes"] = list(attrs.get("output_shapes") or [t.shape.dims for t in outputs[:n]]) + \
        [t.shape.dims for t in outputs[n:]]
    op.attrs = attrs
    op.outputs.extend(SymbolicTensor(op, i, t.dtype, t.shape) for i, t in enumerate(outputs[n:], n))


@RegisterBatchingRule("PartitionedCall", "StatefulPartitionedCall")
def _call_batched(ctx, op, inputs, batched):
    # The callee vectorized on its own (once per signature) and called.
    return ctx.call_vectorized(_called_function(op), inputs, batched)


@RegisterGradient("PartitionedCall", "StatefulPartitionedCall")
def _call_grad(op, *dys):
    fn = _called_function(op)
    info = function_gradient(fn)
    dys = list(dys) + [None] * (len(op.outputs) - len(dys))
    k = info.level_for(dys)
    lvl = info.level(k)
    if info.level_of(fn) >= k:
        values = op.outputs
    elif op.graph is not None:
        _retarget_call(op, lvl.forward)
        values = op.outputs
    else:
        # An eager call ran an earlier level's forward function: run this
        # level's to get the values its backward function reads (a higher
        # derivative through a function call recomputes the function).
        values = lvl.forward._get_executable().run(list(op.inputs))
    return info.call_level(k, dys, op.inputs, values)


def run_forward(fn, args):
    """Runs fn's level-0 forward function on eager `args` (arguments, then
    captured values): (that forward function, all its outputs)."""
    info = function_gradient(fn)
    return info.forward, info.forward._get_executable().run(list(args))


# ---------------------------------------------------------------- for other callers

def backward_function(concrete_fn):
    """The backward function of `concrete_fn` as a library function.

    Returns a ConcreteFunction whose arguments are the forward function's
    inputs (`concrete_fn.graph.inputs`: its arguments, then its captured
    values) followed by one output gradient per output of `concrete_fn` that
    takes a gradient (float outputs; `.output_gradient_indices` lists which),
    and whose results are the gradients of the inputs connected to an output
    (`.input_gradient_indices` lists which inputs, in order; a captured
    variable's handle gets the gradient of the variable's value).

    It reruns the forward computation to get the intermediates it needs (it
    takes only the forward inputs), so the forward function's stateful ops
    (variable writes, random numbers) run again. Its FunctionDef and library
    come from `.function_def()` and `.library_graph_def()`; in C++ it runs
    with `_core.Executable.from_function(fn.library_graph_def().SerializeToString(), fn.name)`.
    """
    cached = getattr(concrete_fn, "_backward_function", None)
    if cached is not None:
        return cached
    info = function_gradient(concrete_fn)
    fwd_graph = info.graph
    graph = FuncGraph(unique_function_name(concrete_fn.name + "_grad"))
    with graph:
        xs = [graph.add_placeholder(t.dtype, t.shape, "x") for t in fwd_graph.inputs]
        out_idx = [i for i, t in enumerate(info.outputs) if gradient_dtype(t) is not None]
        dy_phs = {}
        for i in out_idx:
            y = info.outputs[i]
            dy_phs[i] = graph.add_placeholder(gradient_dtype(y), y.shape, "dy")
        outs = info.forward._call_in_graph(graph, xs)
        dys = [dy_phs.get(i) for i in range(len(info.outputs))]
        grads = info.call_level(0, dys, xs, outs)
        input_idx = [i for i, g in enumerate(grads) if g is not None]
        results = [graph._graph_input(dense(grads[i])) for i in input_idx]
    graph.inputs = xs + [dy_phs[i] for i in out_idx] + [ph for _, ph in graph.captures.values()]
    graph.structured_outputs = list(results)
    graph.outputs = list(results)
    fn = finish_function(graph, graph.name, results)
    fn.input_gradient_indices = input_idx
    fn.output_gradient_indices = out_idx
    concrete_fn._backward_function = fn
    return fn


def reopened(graph):
    """Context manager: adds ops to `graph` even if it is finished (used to
    rewrite ops of a graph whose library functions are already serialized)."""
    return _Reopened(graph)


class _Reopened:
    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        self.was_finalized = self.graph.finalized
        self.graph.finalized = False
        context.push_graph(self.graph)
        return self.graph

    def __exit__(self, *exc):
        context.pop_graph(self.graph)
        self.graph.finalized = self.was_finalized
        return False


__all__ = ["backward_function", "function_gradient", "FunctionGradient", "GraphBackward", "BackwardGraph"]
