"""`and`, `or`, `not` and conditional expressions. On tensors they stage
conditionals, keeping Python's laziness: the right operand (or the branch
not taken) is only traced inside the branch of the If that needs it."""

from treadle.autograph.operators import errors, tensors
from treadle.ops import control_flow_ops, math_ops
from treadle.util import nest


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
        return _staged_if_exp(tensors.as_condition(cond, "a conditional expression"), if_true, if_false)
    return if_true() if cond else if_false()


def _staged_if_exp(pred, if_true, if_false):
    """A conditional expression on a tensor: td.cond of its two values,
    which must have one nested structure (TensorFlow's message if not)."""
    values = {}

    def keep(side, thunk):
        def branch():
            values[side] = thunk()
            return values[side]
        return branch

    try:
        return control_flow_ops.cond(pred, keep("true", if_true), keep("false", if_false))
    except ValueError:
        if len(values) != 2:
            raise
        try:
            nest.assert_same_structure(values["true"], values["false"], check_types=False)
        except (ValueError, TypeError) as e:
            raise errors.located(ValueError, "a conditional expression (`a if cond else b`) on a tensor must "
                                             f"return the same nested structure in both branches: {e}") from None
        raise
