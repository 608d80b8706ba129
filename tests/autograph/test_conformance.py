"""Conformance: each program runs as plain Python on concrete values and
under td.function on tensors; the results and the printed output must agree.

Every program takes `show` first: `print` in the Python run, `td.print` in
the staged run (so the Python run's standard output is compared with what
the graph prints on standard error)."""

import contextlib
import io

import numpy as np
import pytest

import treadle as td


# ---------------------------------------------------------------- programs

def sum_to_n(show, n):
    i, s = 0, 0
    while i < n:
        s += i
        i += 1
    return s


def count_down(show, n):
    while n > 0:
        show("n =", n)
        n -= 1
    return n


def collatz_steps(show, n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n //= 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def fizzbuzz_counts(show, n):
    fizz, buzz, both = 0, 0, 0
    for i in range(1, n):
        if i % 15 == 0:
            both += 1
        elif i % 5 == 0:
            buzz += 1
        elif i % 3 == 0:
            fizz += 1
    return fizz, buzz, both


def first_multiple(show, n, k):
    found = -1
    for i in range(1, n):
        if i % k == 0:
            found = i
            break
    return found


def skip_odds(show, n):
    s = 0
    for i in range(n):
        if i % 2 == 1:
            continue
        show("even", i)
        s += i
    return s


def sign(show, x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0


def return_in_while(show, n):
    i = 0
    while i < n:
        if i * i > 20:
            return i
        i += 1
    return -1


def return_in_for_over_tensor(show, xs):
    for x in xs:
        if x < 0:
            return x
    return 0


def nested_loops_with_conditional(show, n):
    s = 0
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                s += i * j
            else:
                s -= 1
    return s


def nested_break(show, n):
    s = 0
    for i in range(n):
        j = 0
        while j < n:
            if j > i:
                break
            s += j
            j += 1
    return s


def nested_continue(show, n):
    s = 0
    for i in range(n):
        for j in range(n):
            if j == i:
                continue
            s += i * j
    return s


def max_of_list(show, xs):
    m = xs[0]
    for x in xs:
        if x > m:
            m = x
    return m


def count_positive(show, xs):
    c = 0
    for x in xs:
        if x > 0:
            c += 1
            show("positive", x)
    return c


def gcd(show, a, b):
    while b != 0:
        a, b = b, a % b
    return a


def fast_power(show, base, exp):
    result = 1
    while exp > 0:
        if exp % 2 == 1:
            result *= base
        base *= base
        exp //= 2
    return result


def fibonacci(show, n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def is_prime(show, n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def conditional_expressions(show, x):
    y = x if x > 0 else -x
    z = y * 2 if y > 5 else y + 100
    return y, z


def logical_and_or(show, x, y):
    if x > 0 and y > 0:
        r = 1
    elif x > 0 or y > 0:
        r = 2
    else:
        r = 3
    return r


def logical_not(show, x):
    if not x > 3:
        show("small")
        return x
    return -x


def lazy_and(show, n, d):
    # The right operand would divide by zero: it must not run when d == 0.
    if d != 0 and n // d > 2:
        return 1
    return 0


def lazy_or(show, n, d):
    if d == 0 or n // d > 2:
        return 1
    return 0


def while_break_else(show, n, stop):
    i = 0
    while i < n:
        if i == stop:
            break
        i += 1
    else:
        i = -1
    return i


def for_else(show, n, stop):
    hit = 0
    for i in range(n):
        if i == stop:
            hit = i
            break
    else:
        hit = -1
    return hit


def defined_in_loop(show, n):
    for i in range(n):
        last = i * 2
    return last


def rows(show, n):
    for i in range(n):
        show("row", i)
        for j in range(i):
            show("  col", j)
    return n


def print_in_nested_if(show, n):
    i = 0
    while i < n:
        if i % 3 == 0:
            if i % 2 == 0:
                show(i, "div by 6")
            else:
                show(i, "div by 3")
        i += 1
    return i


def return_from_nested_loops(show, n, target):
    for i in range(n):
        for j in range(n):
            if i * j == target:
                return i * 10 + j
    return -1


def enumerate_tensor(show, xs):
    s = 0
    for i, x in enumerate(xs):
        s += i * x
    return s


def classify(show, x):
    if x < 0:
        return -1
    elif x == 0:
        return 0
    elif x < 10:
        return 1
    else:
        return 2


def digit_sum(show, n):
    s = 0
    while n > 0:
        s += n % 10
        n //= 10
    return s


def reverse_number(show, n):
    r = 0
    while n > 0:
        r = r * 10 + n % 10
        n //= 10
    return r


def count_bits(show, n):
    c = 0
    while n:
        c += n % 2
        n //= 2
    return c


def binary_search(show, xs, target):
    # len(xs) is static, so lo starts from the target to be a tensor when
    # staged: the loop must be a graph loop, since it returns on a tensor.
    lo, hi = target * 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        v = xs[mid]
        if v == target:
            return mid
        elif v < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def count_inversions(show, xs):
    c = 0
    n = len(xs)
    for i in range(n):
        for j in range(i + 1, n):
            if xs[i] > xs[j]:
                c += 1
    return c


def python_loop_staged_if(show, x):
    s = 0
    for k in [1, 2, 3]:
        if x > k:
            s += k
        else:
            s -= k
    return s


def _helper_abs(v):
    if v < 0:
        return -v
    return v


def calls_user_function(show, xs):
    s = 0
    for x in xs:
        s += _helper_abs(x)
    return s


def float_accumulate(show, xs):
    s = 0.0
    for x in xs:
        if x > 0.5:
            s += x
    return s


def while_two_conditions(show, n):
    i, s = 0, 0
    while i < n and s < 50:
        i += 1
        if i % 3 == 0:
            continue
        s += i
    return i, s


def break_then_print(show, xs):
    total = 0
    for x in xs:
        if x > 10:
            show("stop at", x)
            break
        total += x
    show("total", total)
    return total


def return_inside_while_inside_if(show, x):
    if x > 0:
        i = 0
        while i < 100 * x:
            if i * x > 50:
                return i
            i += 1
        return -1
    return -2


def alternating_sum(show, n):
    s = 0
    for i in range(n):
        s += i if i % 2 == 0 else -i
    return s


def tensor_array_squares(show, n):
    ta = td.TensorArray(td.int32, size=n)
    for i in range(n):
        ta = ta.write(i, i * i)
    return ta.stack()


def until_done(show, n):
    done = n < 0  # False, and a tensor when n is one: the loop is staged
    i, s = 0, 0
    while not done:
        s += i
        i += 1
        done = i > n or s > 30
    return i, s


def has_zero(show, xs):
    found = 0
    for x in xs:
        if x == 0:
            found = 1
            break
    else:
        show("no zero")
    return found


def deep_nesting(show, n):
    s = 0
    if n > 0:
        for i in range(n):
            j = 0
            while j < i:
                if (i * j) % 2 == 0:
                    s += 1
                else:
                    if j > 2:
                        s += 10
                j += 1
    else:
        s = -1
    return s


def countdown_print_else(show, n):
    while n > 0:
        if n % 2 == 0:
            show("even", n)
        else:
            show("odd", n)
        n -= 1
    return n


PROGRAMS = [
    (sum_to_n, [(0,), (7,)]),
    (count_down, [(3,)]),
    (collatz_steps, [(6,), (27,)]),
    (fizzbuzz_counts, [(31,)]),
    (first_multiple, [(20, 7), (5, 9)]),
    (skip_odds, [(7,)]),
    (sign, [(5,), (-5,), (0,)]),
    (return_in_while, [(10,), (3,)]),
    (return_in_for_over_tensor, [([3, -4, 5],), ([1, 2],)]),
    (nested_loops_with_conditional, [(6,)]),
    (nested_break, [(5,)]),
    (nested_continue, [(4,)]),
    (max_of_list, [([3, 9, 2, 11, 4],)]),
    (count_positive, [([1, -2, 3, 0, 5],)]),
    (gcd, [(48, 18), (17, 5)]),
    (fast_power, [(3, 5), (2, 10)]),
    (fibonacci, [(0,), (10,)]),
    (is_prime, [(1,), (2,), (15,), (13,)]),
    (conditional_expressions, [(3,), (-8,)]),
    (logical_and_or, [(1, 1), (1, -1), (-1, -1)]),
    (logical_not, [(2,), (5,)]),
    (lazy_and, [(10, 0), (10, 3), (10, 2)]),
    (lazy_or, [(10, 0), (10, 5), (10, 2)]),
    (while_break_else, [(10, 4), (3, 7)]),
    (for_else, [(10, 4), (3, 7)]),
    (defined_in_loop, [(4,)]),
    (rows, [(3,)]),
    (print_in_nested_if, [(13,)]),
    (return_from_nested_loops, [(5, 6), (3, 7)]),
    (enumerate_tensor, [([4, 5, 6],)]),
    (classify, [(-3,), (0,), (4,), (40,)]),
    (digit_sum, [(9875,)]),
    (reverse_number, [(1234,)]),
    (count_bits, [(0,), (13,)]),
    (binary_search, [([1, 3, 5, 7, 9, 11], 7), ([1, 3, 5, 7, 9, 11], 4)]),
    (count_inversions, [([3, 1, 2, 5, 4],)]),
    (python_loop_staged_if, [(2,), (5,)]),
    (calls_user_function, [([1, -2, 3, -4],)]),
    (float_accumulate, [([0.25, 0.75, 1.5],)]),
    (while_two_conditions, [(20,), (4,)]),
    (break_then_print, [([1, 2, 30, 4],), ([1, 2],)]),
    (return_inside_while_inside_if, [(3,), (-1,)]),
    (alternating_sum, [(9,)]),
    (tensor_array_squares, [(5,)]),
    (until_done, [(4,), (20,)]),
    (has_zero, [([1, 0, 2],), ([1, 2],)]),
    (deep_nesting, [(6,), (0,)]),
    (countdown_print_else, [(4,)]),
]


# ---------------------------------------------------------------- harness

def _as_numpy(value):
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    return np.asarray(value)


def _to_tensor(value):
    if isinstance(value, float) or (isinstance(value, list) and any(isinstance(v, float) for v in value)):
        return td.constant(value, dtype=td.float32)
    return td.constant(value)


def _run_python(program, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = program(print, *args)
    if isinstance(result, td.Tensor):  # a program that builds tensors (TensorArray) eagerly
        result = result.numpy()
    return result, out.getvalue()


def _assert_same(got, expected, where):
    got, expected = _as_numpy(got), _as_numpy(expected)
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for g, e in zip(got, expected):
            _assert_same(g, e, where)
        return
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-6, err_msg=where)


@pytest.mark.parametrize("program,cases", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_program(program, cases, capfd):
    staged = td.function(program)
    for args in cases:
        expected, printed = _run_python(program, args)
        capfd.readouterr()
        got = staged(td.print, *[_to_tensor(a) for a in args])
        _, err = capfd.readouterr()
        where = f"{program.__name__}{args}"
        _assert_same(got, expected, where)
        assert err == printed, where


def test_there_are_at_least_forty_programs():
    assert len(PROGRAMS) >= 40


def test_programs_stage_their_control_flow():
    """The staged runs really build graph control flow (not a trace of one path)."""
    concrete = td.function(collatz_steps).get_concrete_function(td.print, td.TensorSpec([], td.int32))
    kinds = {op.type for op in concrete.graph.operations}
    assert {"While", "StatelessWhile"} & set(kinds)
    concrete = td.function(sign).get_concrete_function(td.print, td.TensorSpec([], td.int32))
    assert {"If", "StatelessIf"} & set({op.type for op in concrete.graph.operations})
