"""What gradient code learns about an op's inputs: how ops that call library
functions pass their inputs (from the C++ op registry), and which inputs a
rule must differentiate (the `wanted` argument)."""

import numpy as np
import pytest

import treadle as td
from treadle import _core
from treadle.autodiff import registry
from treadle.framework.op_def_library import FunctionAttr, function_attrs


def test_registry_describes_how_control_flow_passes_inputs():
    # TensorFlow's layouts: If's first input is the condition; While's inputs are
    # the loop variables, which its body returns; a call passes all its inputs.
    for op in ("If", "StatelessIf"):
        assert function_attrs(op) == (FunctionAttr("then_branch", 1, True, False),
                                      FunctionAttr("else_branch", 1, True, False))
    for op in ("While", "StatelessWhile"):
        assert function_attrs(op) == (FunctionAttr("cond", 0, False, False), FunctionAttr("body", 0, True, True))
    for op in ("PartitionedCall", "StatefulPartitionedCall"):
        assert function_attrs(op) == (FunctionAttr("f", 0, True, False),)
    assert function_attrs("AddV2") == ()


def test_registry_names_an_unknown_op():
    with pytest.raises(td.errors.NotFoundError, match="NoSuchOp"):
        _core.op_function_attrs("NoSuchOp")


def test_call_rule_tells_only_rules_that_declare_wanted():
    calls = []

    def with_wanted(op, dy, *, wanted):
        calls.append(tuple(wanted))
        return [dy, None]

    def without(op, dy):
        calls.append("plain")
        return [dy, None]

    def positional_wanted(op, dy, wanted=None):  # not keyword-only: an ordinary argument
        calls.append(wanted)
        return [dy, None]

    for rule in (with_wanted, without, positional_wanted):
        assert registry.call_rule(rule, None, ["g"], [True, False]) == ["g", None]
    assert calls == [(True, False), "plain", None]


def test_matmul_gradient_for_one_input_builds_one_product():
    # Only w is a source: the rule is told x takes no gradient and skips dz @ w^T.
    x = td.constant(np.ones((2, 3), np.float32))

    @td.function
    def grad_w(w):
        with td.GradientTape() as tape:
            tape.watch(w)
            y = td.reduce_sum(td.matmul(x, w))
        return tape.gradient(y, w)

    w = td.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_allclose(grad_w(w).numpy(), np.ones((2, 3)).T @ np.ones((2, 4)))
    graph = grad_w.get_concrete_function(w).graph
    assert [op.type for op in graph.operations].count("MatMul") == 2  # the product and its gradient for w
