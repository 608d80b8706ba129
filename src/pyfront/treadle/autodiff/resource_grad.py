"""Gradient rules of the variable (resource) ops. The gradient of a variable
is the gradient of its handle: reads pass it through, writes stop it."""

from treadle.autodiff.registry import NotDifferentiable, RegisterGradient

NotDifferentiable("VarHandleOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                  "ResourceScatterAdd", "ResourceScatterSub")

# Ops that run Python or random number generators: no gradient, as in TensorFlow.
NotDifferentiable("Print", "PyFunc", "RandomStandardNormal", "RandomUniform", "RandomUniformInt")


@RegisterGradient("ReadVariableOp")
def _read_variable_grad(op, dz):
    return [dz]  # dense or IndexedSlices alike (backprop.SPARSE_PASS_THROUGH)
