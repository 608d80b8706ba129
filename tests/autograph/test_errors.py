"""The errors of the AutoGraph reference: each names the variable and points
at the user's own line (file and line of the original source)."""

import inspect
import re

import pytest

import treadle as td

I32 = td.TensorSpec([], td.int32)
HERE = __file__


def _line_of(fn, snippet):
    """The file line number of the first line of `fn` containing `snippet`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if snippet in line:
            return start + i
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def _raises(exc_type, fn, *args, match):
    with pytest.raises(exc_type) as info:
        td.function(fn)(*args)
    message = str(info.value)
    assert re.search(match, message), message
    return message


def _points_at(message, fn, snippet):
    line = _line_of(fn, snippet)
    assert f'File "{HERE}", line {line}, in {fn.__name__}' in message, message
    assert snippet.strip() in message  # the user's source line is shown


# ---------------------------------------------------------------- conditionals

def defined_in_if_branch_only(x):
    if x > 0:
        y = 1
    return y


def test_symbol_defined_in_only_the_if_branch():
    m = _raises(ValueError, defined_in_if_branch_only, td.constant(1),
                match="'y' must also be initialized in the else branch")
    _points_at(m, defined_in_if_branch_only, "if x > 0:")


def defined_in_else_branch_only(x):
    if x > 0:
        pass
    else:
        z = 2
    return z


def test_symbol_defined_in_only_the_else_branch():
    m = _raises(ValueError, defined_in_else_branch_only, td.constant(1),
                match="'z' must also be initialized in the main branch")
    _points_at(m, defined_in_else_branch_only, "if x > 0:")


def defined_in_one_branch_not_used(x):
    if x > 0:
        unused = 1  # noqa: F841
    return x


def test_symbol_defined_in_one_branch_but_not_used_afterwards_is_fine():
    assert td.function(defined_in_one_branch_not_used)(td.constant(3)).numpy() == 3


def return_in_one_branch(x):
    if x > 0:
        return x


def test_return_missing_from_one_branch():
    m = _raises(ValueError, return_in_one_branch, td.constant(1),
                match="the else branch must also have a return statement")
    _points_at(m, return_in_one_branch, "if x > 0:")


def different_dtypes_in_branches(x):
    if x > 0:
        y = td.constant(1)
    else:
        y = td.constant(1.5)
    return y


def test_branches_with_different_dtypes():
    m = _raises(TypeError, different_dtypes_in_branches, td.constant(1),
                match="'y' has dtype int32 in the if branch, but dtype float32 in the else branch")
    _points_at(m, different_dtypes_in_branches, "if x > 0:")


def none_in_one_branch(x):
    y = x
    if x > 0:
        y = None
    return y


def test_none_in_one_branch():
    m = _raises(ValueError, none_in_one_branch, td.constant(1),
                match="'y' is None at the end of the if branch")
    _points_at(m, none_in_one_branch, "if x > 0:")


def different_structures_in_branches(x):
    if x > 0:
        y = (x, x)
    else:
        y = (x, x, x)
    return y


def test_branches_with_different_structures():
    # TensorFlow raises TypeError for structures that differ.
    m = _raises(TypeError, different_structures_in_branches, td.constant(1),
                match="'y' must have the same nested structure in the if and else branches")
    _points_at(m, different_structures_in_branches, "if x > 0:")


def vector_condition(x):
    if x > 0:
        x = x + 1
    return x


def test_a_condition_must_be_a_scalar():
    with pytest.raises(ValueError, match="must be a scalar"):
        td.function(vector_condition)(td.constant([1, 2]))


# ---------------------------------------------------------------- loops

def dtype_changes_in_loop(n):
    s = 0
    i = 0
    while i < n:
        s = td.cast(s, td.float32) + 0.5
        i += 1
    return s


def test_loop_variable_changes_dtype():
    m = _raises(TypeError, dtype_changes_in_loop, td.constant(3),
                match="'s' has dtype int32 before the loop, but dtype float32 after one iteration")
    _points_at(m, dtype_changes_in_loop, "while i < n:")


def shape_changes_in_loop(n):
    v = td.constant([1])
    for _ in range(n):
        v = td.concat([v, v], 0)
    return v


def test_loop_variable_changes_shape_without_invariant():
    m = _raises(ValueError, shape_changes_in_loop, td.constant(3),
                match=r"'v' has shape \(1,\) before the loop, but shape \(2,\) after one iteration.*set_loop_options")
    _points_at(m, shape_changes_in_loop, "for _ in range(n):")


def structure_changes_in_loop(n):
    v = (1, 2)
    i = 0
    while i < n:
        v = (1, 2, 3)
        i += 1
    return v


def test_loop_variable_changes_structure():
    m = _raises(TypeError, structure_changes_in_loop, td.constant(3),
                match="'v' does not have the same nested structure after one iteration")
    _points_at(m, structure_changes_in_loop, "while i < n:")


def none_before_loop(n):
    y = None
    i = 0
    while i < n:
        y = i
        i += 1
    return y


def test_loop_variable_none_before_the_loop():
    # As in TensorFlow, None before the loop counts as not defined yet: the
    # loop defines it (and must run at least once).
    assert td.function(none_before_loop)(td.constant(3)).numpy() == 2
    with pytest.raises(UnboundLocalError, match="loop ran no iteration"):
        td.function(none_before_loop)(td.constant(0))


def read_before_assigned(n):
    x = 0
    for i in td.range(n):
        x = prev + 1  # noqa: F821 - assigned below, read first
        prev = i
    return x


def test_loop_reads_a_variable_before_assigning_it():
    m = _raises(ValueError, read_before_assigned, td.constant(3), match="'prev' must be defined before the loop")
    _points_at(m, read_before_assigned, "for i in td.range(n):")


def condition_becomes_tensor(x):
    i = 0
    while i < 3:
        i = i + x
    return i


def test_condition_changes_from_python_to_tensor():
    m = _raises(NotImplementedError, condition_becomes_tensor, td.constant(1),
                match="started as a Python value, then changed to a tensor.*'i' changed from a Python value")
    _points_at(m, condition_becomes_tensor, "while i < 3:")


def tensor_break_in_python_loop(x):
    s = 0
    for k in [1, 2, 3]:
        if x > k:
            break
        s += k
    return s


def test_tensor_break_in_a_python_loop():
    line = _line_of(tensor_break_in_python_loop, "    break")
    m = _raises(NotImplementedError, tensor_break_in_python_loop, td.constant(2),
                match=r"^break and return statements which depend on a TF condition are not supported in Python "
                    r"for loops\. Did you intend to make it a TF loop\? "
                    rf"The `break` statement \(line {line}\) depends on a tensor")
    _points_at(m, tensor_break_in_python_loop, "for k in [1, 2, 3]:")


def tensor_return_in_python_while(x):
    i = 0
    while i < 3:
        if x > i:
            return i
        i += 1
    return -1


def test_tensor_return_in_a_python_loop():
    m = _raises(ValueError, tensor_return_in_python_while, td.constant(2),
                match="must also have a return statement.*A return inside a loop works when the loop is a graph loop")
    _points_at(m, tensor_return_in_python_while, "if x > i:")


def falls_off_after_staged_loop(n):
    i = 0
    while i < n:
        if i > 3:
            return i
        i += 1
    i = -i  # and no return


def test_function_that_can_end_without_a_return_after_a_staged_loop():
    m = _raises(ValueError, falls_off_after_staged_loop, td.constant(5),
                match="returns a value on some paths but the function can also end without one")
    _points_at(m, falls_off_after_staged_loop, "i = -i")


# ---------------------------------------------------------------- outside converted code

@td.autograph.experimental.do_not_convert
def unconverted_helper(x):
    if x > 0:
        return 1
    return 2


def calls_unconverted(x):
    return unconverted_helper(x)


def test_tensor_used_as_bool_outside_converted_code():
    with pytest.raises(TypeError) as info:
        td.function(calls_unconverted)(td.constant(1))
    message = str(info.value)
    assert "as a Python `bool` is not allowed" in message
    line = _line_of(unconverted_helper, "if x > 0:")
    assert f"{HERE}:{line}" in message, message


def unconverted_named_tensor(x):
    flag = x > 0
    if flag:
        return 1
    return 0


def test_tensor_used_as_bool_names_the_variable():
    f = td.function(unconverted_named_tensor, autograph=False)
    with pytest.raises(TypeError, match=r"\('flag', Greater:0, at .*test_errors.py:\d+\)"):
        f(td.constant(1))


# ---------------------------------------------------------------- Python semantics kept

def reads_unbound(x):
    if x:
        y = 1
    return y


def test_unbound_local_on_python_values():
    from treadle.autograph import converter
    with pytest.raises(UnboundLocalError, match="'y'"):
        converter.convert(reads_unbound)(0)


def user_error_in_branch(x):
    if x > 0:
        raise ValueError("user error")
    return x


def test_user_exceptions_keep_their_traceback_lines():
    with pytest.raises(ValueError, match="user error") as info:
        td.function(user_error_in_branch)(td.constant(1))
    lines = [entry.lineno + 1 for entry in info.traceback if entry.path == info.traceback[-1].path]
    assert _line_of(user_error_in_branch, 'raise ValueError("user error")') in lines


def assigns_in_staged_test(n):
    i = 0
    while (i := i + 1) < n:
        pass
    return i


def test_a_staged_loop_condition_cannot_assign_variables():
    m = _raises(NotImplementedError, assigns_in_staged_test, td.constant(5),
                match="the condition of this loop assigns 'i'")
    _points_at(m, assigns_in_staged_test, "while (i := i + 1) < n:")


def test_the_same_walrus_condition_runs_as_python():
    from treadle.autograph import converter
    assert converter.convert(assigns_in_staged_test)(5) == 5
