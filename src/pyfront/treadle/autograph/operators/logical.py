"""`and`, `or`, `not` and conditional expressions. On tensors they stage
conditionals, keeping Python's laziness: the right operand (or the branch
not taken) is only traced inside the branch of the If that needs it."""

from treadle.autograph.operators import tensors
from treadle.ops import control_flow_ops, math_ops


def and_(left, right):
    """`left() and right()`, where left and right are thunks."""
    a = left()
    if tensors.is_symbolic(a):
        a = tensors.as_condition(a, "an 'and' expression")
        return control_flow_ops.cond(a, lambda: tensors.as_condition(right(), "an 'and' expression"),
                                     lambda: False)
    return right() if a else a


def or_(left, right):
    """`left() or right()`, where left and right are thunks."""
    a = left()
    if tensors.is_symbolic(a):
        a = tensors.as_condition(a, "an 'or' expression")
        return control_flow_ops.cond(a, lambda: True,
                                     lambda: tensors.as_condition(right(), "an 'or' expression"))
    return a if a else right()


def not_(value):
    if tensors.is_symbolic(value):
        return math_ops.invert_(tensors.as_condition(value, "a 'not' expression"))
    return not value


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`."""
    if tensors.is_symbolic(cond):
        return control_flow_ops.cond(tensors.as_condition(cond, "a conditional expression"), if_true, if_false)
    return if_true() if cond else if_false()
