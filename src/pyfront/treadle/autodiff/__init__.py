"""Automatic differentiation: gradient rules (one per op, registry.py and the
*_grad modules), the reverse-mode algorithm (backprop.py), GradientTape
(tape.py) and the symbolic differentiation of traced functions and control
flow (function_gradients.py, control_flow_grad.py)."""

from treadle.autodiff import (  # noqa: F401  (importing registers the rules)
    array_grad, control_flow_grad, custom_gradient, extra_grad, list_grad, math_grad, nn_grad, resource_grad,
    segment_grad, sparse_grad, string_grad)
from treadle.autodiff.function_gradients import backward_function, function_gradient  # noqa: F401
from treadle.autodiff.registry import NotDifferentiable, RegisterGradient  # noqa: F401
from treadle.autodiff.tape import GradientTape, UnconnectedGradients  # noqa: F401

__all__ = ["GradientTape", "UnconnectedGradients", "RegisterGradient", "NotDifferentiable", "backward_function",
           "function_gradient"]
