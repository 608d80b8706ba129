"""Every differentiable op's gradient rule against central differences
(float64, with broadcasting), first and second order, eagerly and inside a
td.function; and the coverage of the rule table."""

import pytest

import treadle as td
from treadle.autodiff import registry

from .gradcheck import GradCheck, forward_traces_with, traced_op_types
from .op_cases import CASES

IDS = [f"{op}-{ident}" if ident else op for op, ident, *_ in CASES]


@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", CASES, ids=IDS)
def test_first_order_eager(op_type, ident, fn, inputs, tol):
    GradCheck(fn, inputs, **_tol(tol)).check_first()


@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", CASES, ids=IDS)
def test_first_order_in_function(op_type, ident, fn, inputs, tol):
    GradCheck(fn, inputs, **_tol(tol)).check_first(in_function=True)


@pytest.mark.parametrize("how", ["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", CASES, ids=IDS)
def test_first_order_in_function_with_unknown_shapes(op_type, ident, fn, inputs, tol, how):
    """Graph gradients when static shapes are unknown (shapes come from shape ops at run time)."""
    if not forward_traces_with(fn, inputs, how):
        pytest.skip(f"the forward computation itself needs static shapes ({how})")
    GradCheck(fn, inputs, **_tol(tol)).check_first(in_function=how)


SECOND_ORDER = [c for c in CASES if not c[4].get("first_order_only")]
SECOND_IDS = [f"{op}-{ident}" if ident else op for op, ident, *_ in SECOND_ORDER]


def _tol(tol):
    return {k: v for k, v in tol.items() if k != "first_order_only"}


@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", SECOND_ORDER, ids=SECOND_IDS)
def test_second_order_eager(op_type, ident, fn, inputs, tol):
    GradCheck(fn, inputs, **tol).check_second()


@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", SECOND_ORDER, ids=SECOND_IDS)
def test_second_order_in_function(op_type, ident, fn, inputs, tol):
    GradCheck(fn, inputs, **tol).check_second(in_function=True)


@pytest.mark.parametrize("op_type,ident,fn,inputs,tol", CASES, ids=IDS)
def test_case_exercises_its_op(op_type, ident, fn, inputs, tol):
    assert op_type in traced_op_types(fn, inputs)


CONTROL_FLOW = {"If", "While", "StatelessIf", "StatelessWhile"}  # checked in test_control_flow_gradients.py


def test_every_op_has_a_rule_or_is_declared_non_differentiable():
    all_ops = {d["name"] for d in td._core.op_defs()}
    rules = set(registry.registered_rules())
    flat = registry.non_differentiable_ops()
    assert not (rules & flat)
    assert all_ops - rules - flat == set()
    assert (rules | flat) - all_ops == set(), "rules for ops that do not exist"


def test_every_rule_has_a_finite_difference_case():
    covered = {op for op, *_ in CASES}
    assert set(registry.registered_rules()) - covered - CONTROL_FLOW == set()


def test_unknown_op_raises_lookup_error():
    with pytest.raises(LookupError, match="No gradient defined"):
        registry.get_gradient_function("NoSuchOp")
