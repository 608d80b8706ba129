"""Gradients through a loom. Each op's backward function (the graph gradient
of its batched function) goes into the loom's library; LoomRun's gradient
rule runs LoomRunGrad, the C++ backward loop over the depths in reverse, so
GradientTape and graph gradients both reach named tensors, batch inputs and
the variables the ops read. A batch input's gradient is a td.IndexedSlices of
the rows the schedule read (the unrolled mode's stays dense)."""

from treadle import _core

# The attrs that describe a loom on every Loom op (src/cpp/loom/loom_attrs.h).
_LOOM_ATTRS = tuple(_core.loom_node_attrs(b""))
from treadle.autodiff import helpers as _ops
from treadle.autodiff.batching_registry import RunsPerExample
from treadle.autodiff.function_gradients import GRADIENT_ERRORS, GraphBackward, function_gradient
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes
from treadle.framework.indexed_slices import IndexedSlices
from treadle.framework.op_execution import execute
from treadle.loom.library import add_to_current_graph, functions_of


def attach_backward_functions(traced_ops):
    """Gives each traced op its gradient functions: a training function (the
    op's function also returning the intermediates the gradient reads, so the
    backward pass recomputes nothing) and the backward function reading them.
    `traced_ops` holds (the op's LoomOpDef in the metadata, its
    ConcreteFunction); the LoomOpDef is told their names. Returns those
    functions, for the loom's library. An op whose function cannot be
    differentiated keeps none: running it works, asking for its gradient
    raises an error naming it."""
    functions = []
    for op_def, fn in traced_ops:
        backward = _backward_of(fn)
        if backward is None:
            continue
        level, bwd = backward
        n_forward = len(fn.graph.inputs)
        op_def.training_function_name = level.forward.name
        op_def.backward_function_name = bwd.function.name
        op_def.backward_output_gradients.extend(i for i, d in enumerate(bwd.dy_dtypes) if d is not None)
        op_def.backward_saved.extend(v if kind == "input" else n_forward + level.position[id(v)]
                                     for kind, v in bwd.needed_kinds)
        op_def.backward_input_gradients.extend(i for i, g in enumerate(bwd.grad_index) if g is not None)
        functions.extend((level.forward, bwd.function))
    return functions


def _backward_of(fn):
    """(the gradient level of `fn`, its GraphBackward) when the loom can run
    its gradient, else None. Cached on `fn`: a loom built again with more
    ops (td.loom.autobatch's, which keeps its ops' functions) reuses it."""
    try:
        return fn._loom_backward
    except AttributeError:
        pass
    fn._loom_backward = backward = _make_backward(fn)
    return backward


def _make_backward(fn):
    try:
        level = function_gradient(fn).level(0)
        # The runtime adds up dense gradients: a capture read through a
        # gather (an IndexedSlices gradient) is densified in the graph.
        bwd = GraphBackward(fn.graph, level.differentiated, fn.name + "_loom", dense_results=True)
    except GRADIENT_ERRORS:
        return None
    if len(bwd.function.graph.inputs) != sum(d is not None for d in bwd.dy_dtypes) + len(bwd.needed):
        return None  # the backward graph captured values of its own: not supported by the loom
    if any(id(t) not in level.position for t in bwd.intermediates()):
        return None  # reads a value the training function does not return: cannot happen for one graph
    return level, bwd


def _shape_dims(t):
    shape = t.shape
    return shape.dims if hasattr(shape, "dims") else list(shape)


@RegisterGradient("LoomRun")
def _loom_run_grad(op, *grads):
    output_types = get_attr(op, "output_types")
    outputs = op.outputs[:len(output_types)]
    output_grads = [g if g is not None else _ops.zeros_like(y) for g, y in zip(grads, outputs)]
    inputs = op.inputs[1:]
    input_types = list(get_attr(op, "Tinputs"))
    # LoomRunGrad runs the forward run's runtime (its record); the attrs only count the inputs.
    num_named = len(get_attr(op, "loom_named_tensors"))
    num_batch = len(get_attr(op, "loom_batch_input_type_shapes"))
    results = iter(execute("LoomRunGrad", [op.outputs[-1]] + output_grads,
                           {"Tgrads": list(output_types), "Tinputs": input_types,
                            "input_shapes": [_shape_dims(t) for t in inputs],
                            "num_named_tensors": num_named, "num_batch_inputs": num_batch}))
    # A batch input's gradient is sparse (the rows the schedule read), as a
    # gather's is; named tensors and captures get dense gradients.
    in_grads = [None]
    for i, (t, x) in enumerate(zip(input_types, inputs)):
        g = next(results)
        if num_named <= i < num_named + num_batch:
            g = IndexedSlices(g, next(results), _ops.shape(x))
        in_grads.append(g if dtypes.as_dtype(t).is_floating else None)
    return in_grads


def _loom_attrs(op):
    """The attrs describing the loom of Loom op `op`, with its functions added
    to the graph the gradient is built in."""
    attrs = {name: get_attr(op, name) for name in _LOOM_ATTRS}
    add_to_current_graph(functions_of(getattr(op, "graph", None), attrs["functions"]))
    return attrs


def _zeros_for_none(grads, outputs):
    return [g if g is not None else _ops.zeros_like(y) for g, y in zip(grads, outputs)]


def _unrolled_grad(op, grad_op, grads, extra_inputs, extra_attrs):
    """Runs `grad_op` on [schedule] + extra_inputs + grads; one gradient per
    input of `op` after the schedule (None for integer inputs)."""
    inputs = op.inputs[1:]
    types = list(get_attr(op, "Tinputs"))
    tout = [t.dtype for t in extra_inputs] + [t.dtype for t in grads]
    results = execute(grad_op, [op.inputs[0]] + list(extra_inputs) + list(grads),
                      dict(Tinputs=tout, Tout=types, output_shapes=[_shape_dims(t) for t in inputs],
                           **_loom_attrs(op), **extra_attrs))
    return [None] + [g if dtypes.as_dtype(t).is_floating else None for g, t in zip(results, types)]


@RegisterGradient("LoomInitialState")
def _loom_initial_state_grad(op, *grads):
    # Gradients of the states (not of the schedule handle, output 0) come first.
    state_grads = _zeros_for_none(grads[1:], op.outputs[1:])
    inputs = op.inputs[1:]
    types = list(get_attr(op, "Tinputs"))
    results = execute("LoomInitialStateGrad", [op.outputs[0]] + state_grads + list(inputs),
                      dict(Tinputs=[g.dtype for g in state_grads] + types, Tout=types,
                           output_shapes=[_shape_dims(t) for t in inputs], **_loom_attrs(op)))
    return [None] + [g if dtypes.as_dtype(t).is_floating else None for g, t in zip(results, types)]


@RegisterGradient("LoomLayer")
def _loom_layer_grad(op, *grads):
    return _unrolled_grad(op, "LoomLayerGrad", _zeros_for_none(grads, op.outputs), op.inputs[1:],
                          {"depth": get_attr(op, "depth")})


@RegisterGradient("LoomGatherOutputs")
def _loom_gather_outputs_grad(op, *grads):
    return _unrolled_grad(op, "LoomGatherOutputsGrad", _zeros_for_none(grads, op.outputs), [],
                          {"num_depths": get_attr(op, "num_depths")})


NotDifferentiable("LoomRunGrad", "LoomInitialStateGrad", "LoomLayerGrad", "LoomGatherOutputsGrad")
RunsPerExample("a Loom batches the work of its own schedule; each example's schedule runs on its own",
               "LoomRun", "LoomRunGrad", "LoomInitialState", "LoomInitialStateGrad", "LoomLayer", "LoomLayerGrad",
               "LoomGatherOutputs", "LoomGatherOutputsGrad")
