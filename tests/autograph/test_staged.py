"""Each statement kind under td.function: staged (If/While in the graph) when
its condition or iterable is a tensor, plain Python (unrolled, one path
traced) when it is a Python value; results checked by running the graph."""

import numpy as np
import pytest

import treadle as td

I32 = td.TensorSpec([], td.int32)


def _kind(op_type):
    """If and While whether stateless or not (TensorFlow's StatelessIf/StatelessWhile
    are the forms without effects; tests/function/test_tf_fidelity.py checks the names)."""
    return op_type[len("Stateless"):] if op_type in ("StatelessIf", "StatelessWhile") else op_type


def _graph_ops(fn, *specs):
    """Op types of the traced graph of `fn` (top level only)."""
    return [_kind(op.type) for op in td.function(fn).get_concrete_function(*specs).graph.operations]


def _all_ops(fn, *specs):
    """Op types of the traced graph and of every branch and loop body in it."""
    graph = td.function(fn).get_concrete_function(*specs).graph
    found, seen, stack = [], set(), [graph]
    while stack:
        g = stack.pop()
        found.extend(_kind(op.type) for op in g.operations)
        for f in g.functions.values():
            if id(f.graph) not in seen:
                seen.add(id(f.graph))
                stack.append(f.graph)
    return found


def _value(t):
    return t.numpy() if hasattr(t, "numpy") else t


# ---------------------------------------------------------------- if

def if_else(x):
    if x > 0:
        y = x * 2
    else:
        y = -x
    return y


def test_if_on_a_tensor_is_an_if_node():
    assert _graph_ops(if_else, I32).count("If") == 1
    f = td.function(if_else)
    assert _value(f(td.constant(4))) == 8
    assert _value(f(td.constant(-3))) == 3


def test_if_on_a_python_value_traces_one_branch():
    assert "If" not in _graph_ops(if_else, 5)
    assert _value(td.function(if_else)(5)) == 10


def elif_chain(x):
    if x > 10:
        r = 3
    elif x > 5:
        r = 2
    elif x > 0:
        r = 1
    else:
        r = 0
    return r


def test_elif_chain_is_nested_ifs():
    assert _all_ops(elif_chain, I32).count("If") == 3
    f = td.function(elif_chain)
    assert [_value(f(td.constant(v))) for v in (20, 7, 3, -1)] == [3, 2, 1, 0]


def if_only_side_effect(x):
    if x > 0:
        td.print("positive", x)
    return x


def test_if_without_outputs_still_runs_its_branch(capfd):
    f = td.function(if_only_side_effect)
    f(td.constant(2))
    f(td.constant(-2))
    assert capfd.readouterr().err == "positive 2\n"


def keeps_python_values(x):
    mode = "a"
    y = 0
    if x > 0:
        y = 1
    else:
        y = 2
    return mode, y


def test_python_values_equal_in_both_branches_pass_through():
    mode, y = td.function(keeps_python_values)(td.constant(1))
    assert mode == "a" and _value(y) == 1


def python_number_and_tensor_branches(x):
    if x > 0:
        y = x * 1.5
    else:
        y = 0
    return y


def test_a_python_number_takes_the_dtype_of_the_other_branch():
    f = td.function(python_number_and_tensor_branches)
    assert f(td.constant(2.0)).dtype == td.float32
    assert _value(f(td.constant(2.0))) == 3.0 and _value(f(td.constant(-2.0))) == 0.0


def structure_in_branches(x):
    if x > 0:
        pair = (x, x + 1)
    else:
        pair = (-x, x)
    return pair


def test_nested_structures_merge_leaf_by_leaf():
    a, b = td.function(structure_in_branches)(td.constant(3))
    assert (_value(a), _value(b)) == (3, 4)


def non_bool_condition(x):
    if x:
        return 1
    return 2


def test_a_number_condition_is_true_when_non_zero():
    f = td.function(non_bool_condition)
    assert _value(f(td.constant(5))) == 1 and _value(f(td.constant(0))) == 2


# ---------------------------------------------------------------- while

def while_sum(n):
    i, s = 0, 0
    while i < n:
        s += i
        i += 1
    return s


def test_while_on_a_tensor_is_a_while_node():
    assert _graph_ops(while_sum, I32).count("While") == 1
    assert _value(td.function(while_sum)(td.constant(5))) == 10


def test_while_on_python_values_unrolls():
    assert "While" not in _graph_ops(while_sum, 4)
    assert _value(td.function(while_sum)(4)) == 6


def while_with_tensor_state_python_condition(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def test_python_condition_with_tensor_state_unrolls():
    ops = _graph_ops(while_with_tensor_state_python_condition, I32)
    assert "While" not in ops and ops.count("Mul") == 3
    assert _value(td.function(while_with_tensor_state_python_condition)(td.constant(1))) == 8


def loop_variable_only_read_after(n):
    i = 0
    last = 0
    while i < n:
        last = i * 10
        i += 1
    return last


def test_loop_variables_come_from_liveness():
    graph = td.function(loop_variable_only_read_after).get_concrete_function(I32).graph
    loop = next(op for op in graph.operations if op.type in ("While", "StatelessWhile"))
    # i and last (n is captured, not a loop variable)
    assert len(loop.attrs["T"]) - len(loop.inputs[2:]) <= 2
    assert _value(td.function(loop_variable_only_read_after)(td.constant(4))) == 30


def temporaries_are_not_loop_variables(n):
    i, s = 0, 0
    while i < n:
        tmp = i * i
        s += tmp
        i += 1
    return s


def test_temporaries_of_the_body_are_not_loop_variables():
    graph = td.function(temporaries_are_not_loop_variables).get_concrete_function(I32).graph
    loop = next(op for op in graph.operations if op.type in ("While", "StatelessWhile"))
    assert len(loop.outputs) == 3  # i, s and the captured n
    assert _value(td.function(temporaries_are_not_loop_variables)(td.constant(4))) == 14


def defined_only_in_loop(n):
    i = 0
    while i < n:
        y = i * 3
        i += 1
    return y


def test_a_variable_first_defined_in_a_staged_loop():
    assert _value(td.function(defined_only_in_loop)(td.constant(4))) == 9


# ---------------------------------------------------------------- for

def for_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


def test_for_over_range_with_a_tensor_bound_is_a_while_node():
    assert _graph_ops(for_range, I32).count("While") == 1
    assert _value(td.function(for_range)(td.constant(5))) == 10
    assert _value(td.function(for_range)(td.constant(0))) == 0


def test_for_over_a_python_range_unrolls():
    ops = _graph_ops(for_range, 3)
    assert "While" not in ops
    assert td.function(for_range)(3) == 3  # all Python: no tensor at all


def for_td_range(n):
    s = 0
    for i in td.range(2, n, 3):
        s += i
    return s


def test_for_over_td_range_uses_start_limit_delta():
    f = td.function(for_td_range)
    assert _value(f(td.constant(12))) == 2 + 5 + 8 + 11
    assert _value(f(td.constant(2))) == 0


def for_negative_step(n):
    out = 0
    for i in range(n, 0, -2):
        out = out * 10 + i
    return out


def test_for_over_range_with_a_negative_step():
    assert _value(td.function(for_negative_step)(td.constant(7))) == 7531


def for_tensor_delta(n, step):
    s = 0
    for i in range(0, n, step):
        s += 1
    return s


def test_for_over_range_with_a_tensor_step():
    f = td.function(for_tensor_delta)
    assert _value(f(td.constant(10), td.constant(3))) == 4
    assert _value(f(td.constant(-10), td.constant(-4))) == 3


def constant_range():
    s = 0
    for i in td.range(5):
        s += i
    return s


def test_known_iteration_count_becomes_maximum_iterations():
    graph = td.function(constant_range).get_concrete_function().graph
    loop = next(op for op in graph.operations if op.type in ("While", "StatelessWhile"))
    # the iteration counter of maximum_iterations is the first loop variable
    assert len(loop.inputs) == len(loop.attrs["T"])
    assert _value(td.function(constant_range)()) == 10


def for_over_tensor(xs):
    s = 0
    for x in xs:
        s += x
    return s


def sum_rows(m):
    s = td.zeros([2], td.int32)
    for row in m:
        s += row
    return s


def test_for_over_a_tensor_iterates_its_first_dimension():
    assert _value(td.function(for_over_tensor)(td.constant([1, 2, 3, 4]))) == 10
    assert _value(td.function(sum_rows)(td.constant([[1, 2], [3, 4], [5, 6]]))).tolist() == [9, 12]


def test_for_over_a_tensor_of_unknown_length():
    f = td.function(for_over_tensor, input_signature=[td.TensorSpec([None], td.int32)])
    assert {"While", "StatelessWhile"} & set([op.type for op in f.get_concrete_function().graph.operations])
    assert _value(f(td.constant([5, 6, 7]))) == 18
    assert _value(f(td.constant(np.zeros([0], np.int32)))) == 0


def for_over_python_list_of_tensors(a, b):
    s = 0
    for x in [a, b, a]:
        s += x
    return s


def test_for_over_a_python_list_unrolls():
    ops = _graph_ops(for_over_python_list_of_tensors, I32, I32)
    assert "While" not in ops and ops.count("AddV2") == 3


def enumerate_tensor(xs):
    s = 0
    for i, x in enumerate(xs, 1):
        s += i * x
    return s


def test_enumerate_over_a_tensor_is_staged():
    f = td.function(enumerate_tensor)
    assert {"While", "StatelessWhile"} & set(_graph_ops(enumerate_tensor, td.TensorSpec([3], td.int32)))
    assert _value(f(td.constant([10, 20, 30]))) == 10 + 40 + 90


def len_of_tensor(xs):
    return len(xs)


def test_len_of_a_tensor():
    assert td.function(len_of_tensor)(td.constant([1, 2, 3])) == 3
    f = td.function(len_of_tensor, input_signature=[td.TensorSpec([None], td.int32)])
    assert _value(f(td.constant([1, 2, 3, 4]))) == 4


# ---------------------------------------------------------------- break / continue

def break_in_staged_for(xs, limit):
    s = 0
    for x in xs:
        if x > limit:
            break
        s += x
    return s


def test_break_in_a_staged_for_loop():
    f = td.function(break_in_staged_for)
    assert _value(f(td.constant([1, 2, 9, 3]), td.constant(5))) == 3
    assert _value(f(td.constant([1, 2]), td.constant(5))) == 3


def continue_in_staged_while(n):
    i, s = 0, 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        s += i
    return s


def test_continue_in_a_staged_while_loop():
    assert _value(td.function(continue_in_staged_while)(td.constant(7))) == 1 + 3 + 5 + 7


def break_in_python_loop_on_python_value(x):
    s = x
    for k in [1, 2, 3, 4]:
        if k == 3:
            break
        s = s + k
    return s


def test_break_on_a_python_condition_in_a_python_loop():
    ops = _graph_ops(break_in_python_loop_on_python_value, I32)
    assert "If" not in ops and ops.count("AddV2") == 2
    assert _value(td.function(break_in_python_loop_on_python_value)(td.constant(10))) == 13


def loop_else_staged(n, stop):
    i = 0
    while i < n:
        if i == stop:
            break
        i += 1
    else:
        i = 100
    return i


def test_loop_else_runs_only_without_break():
    f = td.function(loop_else_staged)
    assert _value(f(td.constant(5), td.constant(2))) == 2
    assert _value(f(td.constant(5), td.constant(9))) == 100


# ---------------------------------------------------------------- return

def early_return(x):
    if x > 0:
        return x * 10
    y = x - 1
    return y


def test_early_return_is_one_if_with_two_returning_branches():
    assert _graph_ops(early_return, I32).count("If") == 1
    f = td.function(early_return)
    assert _value(f(td.constant(2))) == 20 and _value(f(td.constant(-2))) == -3


def return_in_staged_while(n):
    i = 0
    while i < n:
        if i * i >= 10:
            return i
        i += 1
    return -1


def test_return_inside_a_staged_while_loop():
    f = td.function(return_in_staged_while)
    assert _value(f(td.constant(100))) == 4
    assert _value(f(td.constant(3))) == -1
    assert _graph_ops(return_in_staged_while, I32).count("While") == 1


def return_in_staged_for(xs):
    for x in xs:
        if x < 0:
            return x * 100
    return 0


def test_return_inside_a_staged_for_loop():
    f = td.function(return_in_staged_for)
    assert _value(f(td.constant([1, -2, -3]))) == -200
    assert _value(f(td.constant([1, 2]))) == 0


def return_in_nested_staged_loops(n):
    for i in range(n):
        j = 0
        while j < n:
            if i * j == 6:
                return i * 10 + j
            j += 1
    return -1


def test_return_inside_nested_staged_loops():
    f = td.function(return_in_nested_staged_loops)
    assert _value(f(td.constant(5))) == 23
    assert _value(f(td.constant(2))) == -1


def return_flag_stays_python(x):
    if x > 0:
        return 1
    else:
        return 2


def test_a_return_in_both_branches_needs_one_output():
    graph = td.function(return_flag_stays_python).get_concrete_function(I32).graph
    node = next(op for op in graph.operations if op.type in ("If", "StatelessIf"))
    assert len(node.outputs) == 1  # the value; the return flag is True on both paths


def return_nothing(x):
    if x > 0:
        td.print("positive")
        return
    td.print("not positive")


def test_returns_without_a_value(capfd):
    f = td.function(return_nothing)
    assert f(td.constant(1)) is None
    f(td.constant(-1))
    assert capfd.readouterr().err == "positive\nnot positive\n"


# ---------------------------------------------------------------- expressions

def conditional_expression(x):
    return x * 2 if x > 0 else x - 5


def test_conditional_expression_on_a_tensor():
    assert _graph_ops(conditional_expression, I32).count("If") == 1
    f = td.function(conditional_expression)
    assert _value(f(td.constant(3))) == 6 and _value(f(td.constant(-3))) == -8


def logical_expressions(x, y):
    return (x > 0 and y > 0), (x > 0 or y > 0), not x > 0


def test_and_or_not_on_tensors():
    f = td.function(logical_expressions)
    for a, b in [(1, 1), (1, -1), (-1, 1), (-1, -1)]:
        got = [bool(_value(v)) for v in f(td.constant(a), td.constant(b))]
        assert got == [a > 0 and b > 0, a > 0 or b > 0, not a > 0]


def lazy_and(x, d):
    return d != 0 and x // d > 1


def test_and_traces_its_right_operand_inside_a_branch():
    ops = _graph_ops(lazy_and, I32, I32)
    assert "FloorDiv" not in ops and "If" in ops  # the division is inside the If's branch
    f = td.function(lazy_and)
    assert not _value(f(td.constant(5), td.constant(0)))
    assert _value(f(td.constant(5), td.constant(2)))


def and_on_python_values(x):
    flag = True
    return flag and x


def test_and_on_python_values_keeps_python_semantics():
    assert "If" not in _graph_ops(and_on_python_values, I32)


# ---------------------------------------------------------------- nesting, state kinds

def nested_loops_with_conditionals(n):
    s = 0
    for i in range(n):
        j = 0
        while j < i:
            if (i + j) % 2 == 0:
                s += i * j
            elif j == 1:
                s -= 1
            j += 1
    return s


def test_nested_loops_with_conditionals():
    expected = nested_loops_with_conditionals(6)
    assert _value(td.function(nested_loops_with_conditionals)(td.constant(6))) == expected
    ops = _all_ops(nested_loops_with_conditionals, I32)
    assert ops.count("While") == 2 and ops.count("If") >= 2


class Counter:
    def __init__(self):
        self.total = 0


def attribute_loop_variable(n):
    c = Counter()
    c.total = td.constant(0)
    for i in range(n):
        c.total = c.total + i
    return c.total


def test_attributes_are_loop_variables():
    assert _value(td.function(attribute_loop_variable)(td.constant(5))) == 10


def subscript_loop_variable(n):
    d = {"s": 0}
    for i in range(n):
        if i % 2 == 0:
            d["s"] = d["s"] + i
    return d["s"]


def test_subscripts_are_branch_outputs_and_loop_variables():
    assert _value(td.function(subscript_loop_variable)(td.constant(6))) == 0 + 2 + 4


def tuple_loop_variable(n):
    pair = (0, 1)
    i = 0
    while i < n:
        pair = (pair[1], pair[0] + pair[1])
        i += 1
    return pair


def test_nested_structure_loop_variable():
    a, b = td.function(tuple_loop_variable)(td.constant(6))
    assert (_value(a), _value(b)) == (8, 13)


def tensor_array_in_loop(n):
    ta = td.TensorArray(td.int32, size=n)
    for i in range(n):
        ta = ta.write(i, i * 2)
    return ta.stack()


def test_tensor_array_loop_variable():
    assert _value(td.function(tensor_array_in_loop)(td.constant(4))).tolist() == [0, 2, 4, 6]


def growing_with_invariant(n):
    v = td.constant([1])
    for _ in range(n):
        td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape([None]))])
        v = td.concat([v, v], 0)
    return v


def test_shape_invariants_from_set_loop_options():
    assert _value(td.function(growing_with_invariant)(td.constant(3))).tolist() == [1] * 8


def limited_loop(n):
    i = 0
    while i < n:
        td.autograph.experimental.set_loop_options(maximum_iterations=3)
        i += 1
    return i


def test_maximum_iterations_from_set_loop_options():
    assert _value(td.function(limited_loop)(td.constant(10))) == 3


def _user_helper(v):
    if v > 0:
        return v
    return -v


def calls_user_code(x):
    return _user_helper(x) + 1


def test_called_user_functions_are_converted():
    assert _graph_ops(calls_user_code, I32).count("If") == 1
    assert _value(td.function(calls_user_code)(td.constant(-4))) == 5


def prints_with_builtin_print(x):
    if x > 0:
        print("tracing the if branch with", x)
        td.print("x is", x)


def test_builtin_print_runs_while_tracing_and_td_print_when_the_graph_runs(capfd):
    f = td.function(prints_with_builtin_print)
    capfd.readouterr()
    f(td.constant(7))
    f(td.constant(-7))
    f(td.constant(8))
    out, err = capfd.readouterr()
    assert out == "tracing the if branch with Tensor(\"x:0\", shape=(), dtype=int32)\n"
    assert err == "x is 7\nx is 8\n"


def test_run_functions_eagerly_runs_the_python_function():
    from treadle.function import polymorphic_function as pf
    pf.run_functions_eagerly(True) if hasattr(pf, "run_functions_eagerly") else pytest.skip("no eager switch")
    try:
        assert _value(td.function(while_sum)(td.constant(4))) == 6
    finally:
        pf.run_functions_eagerly(False)


@pytest.mark.parametrize("autograph", [False])
def test_autograph_false_leaves_python_control_flow(autograph):
    f = td.function(if_else, autograph=autograph)
    with pytest.raises(TypeError, match="as a Python `bool`"):
        f(td.constant(1))


def test_a_variable_first_defined_in_a_loop_that_never_runs_fails_when_run():
    f = td.function(defined_only_in_loop)
    with pytest.raises(UnboundLocalError, match="'y' is assigned only inside this loop over a tensor, and the loop "
                                                "ran no iteration"):
        f(td.constant(0))


COUNTER = td.Variable(0)


def variable_updates_in_loop(n):
    for i in range(n):
        if i % 2 == 0:
            COUNTER.assign_add(i)
    return COUNTER.read_value()


def test_variable_updates_inside_staged_loops_and_branches():
    COUNTER.assign(0)
    assert _value(td.function(variable_updates_in_loop)(td.constant(5))) == 0 + 2 + 4


def print_order(n):
    for i in range(n):
        td.print("a", i)
        if i > 0:
            td.print("b", i)
        td.print("c", i)


def test_prints_in_loops_and_branches_keep_program_order(capfd):
    td.function(print_order)(td.constant(3))
    assert capfd.readouterr().err == "a 0\nc 0\na 1\nb 1\nc 1\na 2\nb 2\nc 2\n"


class Accumulator:
    def __init__(self):
        self.total = td.constant(0)

    @td.function
    def add_positive(self, xs):
        for x in xs:
            if x > 0:
                self.total = self.total + x
        return self.total


def test_method_with_attribute_state():
    assert _value(Accumulator().add_positive(td.constant([1, -2, 3]))) == 4


def dict_loop_variable(n):
    d = {"a": 0, "b": 1}
    i = 0
    while i < n:
        d = {"a": d["a"] + i, "b": d["b"] * 2}
        i += 1
    return d


def test_dict_loop_variable():
    d = td.function(dict_loop_variable)(td.constant(4))
    assert (_value(d["a"]), _value(d["b"])) == (6, 16)


def string_condition(s):
    if s == "hello":
        r = 1
    else:
        r = 2
    return r


def test_string_comparison_condition():
    f = td.function(string_condition)
    assert _value(f(td.constant("hello"))) == 1 and _value(f(td.constant("bye"))) == 2


def test_an_outer_tensor_used_twice_in_a_branch_inside_a_loop_body():
    """Captures threaded through a While body into an If branch (FuncGraph.capture)."""
    @td.function(autograph=False)
    def f(x, n):
        def body(i, s):
            s = td.cond(x > 0, lambda: s + x * x, lambda: s - x)
            return i + 1, s
        return td.while_loop(lambda i, s: i < n, body, (0, 0))[1]

    assert f(td.constant(2), td.constant(3)).numpy() == 12
    assert f(td.constant(-2), td.constant(3)).numpy() == 6


def printing_condition(n):
    i = 0
    while td.print("test", i) is None and i < n:
        i += 1
    return i


def test_the_first_condition_of_a_while_is_probed_without_side_effects(capfd):
    ops = _graph_ops(printing_condition, I32)
    assert "Print" not in ops and ops.count("While") == 1  # the condition's ops live in the loop only
    assert _value(td.function(printing_condition)(td.constant(2))) == 2
    assert capfd.readouterr().err == "test 0\ntest 1\ntest 2\n"
