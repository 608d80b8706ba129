"""Gradients through a loom. Each op's backward function (the graph gradient
of its batched function) goes into the loom's library; LoomRun's gradient
rule runs LoomRunGrad, the C++ backward loop over the depths in reverse, so
GradientTape and graph gradients both reach named tensors, batch inputs and
the variables the ops read."""

from treadle.autodiff import _ops
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient, get_attr
from treadle.framework import dtypes
from treadle.framework.ops import execute


def attach_backward_functions(loom, library):
    """Sets each traced op's backward function in the loom's metadata and adds
    it to `library`. An op whose function cannot be differentiated keeps none:
    running it works, asking for its gradient raises an error naming it."""
    from treadle.autodiff.function_gradients import backward_function
    seen = {f.signature.name for f in library.library.function}
    traced = iter(loom._traced)
    for k, (name, _) in enumerate(loom._ops):
        op_def = loom._metadata.ops[len(loom._type_shapes) + k]
        if op_def.pass_through:
            continue
        fn = next(traced).function
        try:
            bwd = backward_function(fn)
        except (NotImplementedError, LookupError, TypeError):
            continue
        n_forward = len(fn.graph.inputs)
        if len(bwd.graph.inputs) != n_forward + len(bwd.output_gradient_indices):
            continue  # the backward graph captured values of its own: not supported by the loom
        op_def.backward_function_name = bwd.name
        op_def.backward_output_gradients.extend(bwd.output_gradient_indices)
        op_def.backward_input_gradients.extend(bwd.input_gradient_indices)
        for fdef in bwd.library_graph_def().library.function:
            if fdef.signature.name not in seen:
                seen.add(fdef.signature.name)
                library.library.function.append(fdef)


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
    results = execute("LoomRunGrad", [op.outputs[-1]] + output_grads,
                      {"Tgrads": list(output_types), "Tinputs": input_types,
                       "input_shapes": [_shape_dims(t) for t in inputs]})
    return [None] + [g if dtypes.as_dtype(t).is_floating else None for g, t in zip(results, input_types)]


NotDifferentiable("LoomRunGrad")
