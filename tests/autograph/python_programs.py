"""Plain Python programs with every kind of control flow, used to check that
converted code behaves exactly like the original on Python values."""

import contextlib

COUNTER = [0]
GLOBAL_TOTAL = 0


def if_elif_else(x):
    if x > 10:
        r = "big"
    elif x > 0:
        r = "small"
    elif x == 0:
        r = "zero"
    else:
        r = "negative"
    return r


def if_without_else(x):
    y = 1
    if x > 0:
        y = x * 2
    return y


def while_loop(n):
    i, s = 0, 0
    while i < n:
        s += i * i
        i += 1
    return s, i


def while_else(n):
    i = 0
    while i < n:
        i += 1
    else:
        i += 100
    return i


def while_break_else(n, stop):
    i = 0
    while i < n:
        if i == stop:
            break
        i += 1
    else:
        return "exhausted", i
    return "broke", i


def for_else(xs, target):
    for x in xs:
        if x == target:
            found = True
            break
    else:
        found = False
    return found


def for_continue(xs):
    out = []
    for x in xs:
        if x % 2:
            continue
        out.append(x)
    return out


def nested_loops(n):
    pairs = []
    for i in range(n):
        j = 0
        while True:
            if j > i:
                break
            if (i + j) % 3 == 0:
                j += 1
                continue
            pairs.append((i, j))
            j += 1
    return pairs


def nested_break_outer_flag(grid, target):
    found = None
    for r, row in enumerate(grid):
        for c, v in enumerate(row):
            if v == target:
                found = (r, c)
                break
        if found is not None:
            break
    return found


def early_return(x):
    if x < 0:
        return "negative"
    if x == 0:
        return "zero"
    y = x * 2
    return y


def return_in_loop(xs):
    for i, x in enumerate(xs):
        if x < 0:
            return i
    return -1


def return_in_while(n):
    i = 0
    while True:
        i += 1
        if i * i > n:
            return i
        if i > 1000:
            break
    return None


def return_in_nested_loops(m):
    for i in range(m):
        for j in range(m):
            if i * j == 6:
                return i, j
    return None


def no_return_value(xs):
    for x in xs:
        if x:
            return
    COUNTER[0] += 1


def implicit_none(x):
    if x:
        return 1


def return_in_with(x):
    with contextlib.suppress(ZeroDivisionError):
        return 10 // x
    return "divided by zero"


def return_in_try(x):
    try:
        if x > 0:
            return 1 / x
    except ZeroDivisionError:
        return "zero"
    finally:
        COUNTER[0] += 1
    return "non-positive"


def try_in_loop(xs):
    total = 0
    for x in xs:
        try:
            total += 10 // x
        except ZeroDivisionError:
            total -= 1
            continue
        total += 1
    return total


def conditional_expr(x):
    return "pos" if x > 0 else "zero" if x == 0 else "neg"


def logical_ops(a, b):
    return (a and b, a or b, not a, a and not b or b)


def logical_short_circuit(x):
    calls = []

    def side(v):
        calls.append(v)
        return v

    r = side(x) and side(x + 1) or side(x + 2)
    return r, calls


def closure_counter(n):
    count = 0

    def bump():
        nonlocal count
        count += 1

    for _ in range(n):
        bump()
    return count


def modifies_global(n):
    global GLOBAL_TOTAL
    for i in range(n):
        if i % 2:
            GLOBAL_TOTAL += i
    return GLOBAL_TOTAL


def comprehensions(n):
    evens = [i for i in range(n) if i % 2 == 0]
    table = {i: i * i for i in evens}
    flags = [x > 2 and x < 6 for x in range(n)]
    return evens, table, flags


def walrus(xs):
    out = []
    i = 0
    while (n := len(xs) - i) > 0:
        out.append(n)
        i += 1
    return out, n


def attribute_state(n):
    class Box:
        pass

    b = Box()
    b.value = 0
    i = 0
    while i < n:
        b.value += i
        i += 1
    return b.value


def subscript_state(n):
    d = {"total": 0, "count": 0}
    for i in range(n):
        if i % 2:
            d["total"] += i
        else:
            d["count"] += 1
    return d


def deletes(x):
    y = x
    if x > 0:
        del y
        y = "reassigned"
    return y


def unbound_local(x):
    if x > 0:
        y = 1
    return y


def raises_in_branch(x):
    if x < 0:
        raise ValueError("negative")
    return x


def generator_inside(n):
    def gen():
        for i in range(n):
            if i % 2:
                yield i
    return list(gen())


def nested_function_with_control_flow(xs):
    def classify(v):
        if v > 0:
            return 1
        elif v < 0:
            return -1
        return 0

    return [classify(x) for x in xs]


def lambda_inside(xs):
    key = lambda v: -v if v % 2 else v  # noqa: E731
    return sorted(xs, key=key)


def tuple_unpacking_loop(pairs):
    a_sum = b_sum = 0
    for a, (b, c) in pairs:
        a_sum += a
        b_sum += b * c
    return a_sum, b_sum


def loop_var_defined_in_loop(n):
    for i in range(n):
        last = i * 10
    return last


def while_true_break(n):
    i = 0
    while True:
        i += 3
        if i >= n:
            break
    return i


def continue_and_break(xs):
    s = 0
    for x in xs:
        if x < 0:
            continue
        if x > 50:
            break
        s += x
    else:
        s = -s
    return s


def recursion(n):
    if n <= 1:
        return 1
    return n * recursion(n - 1)


def calls_other(xs):
    return [if_elif_else(x) for x in xs] + [early_return(x) for x in xs]


def default_args(x, scale=2, *, offset=1):
    if x > 0:
        return x * scale + offset
    return offset


def star_args(*args, **kwargs):
    total = 0
    for a in args:
        total += a
    for k in sorted(kwargs):
        if k.startswith("x"):
            total += kwargs[k]
    return total


def match_statement(value):
    match value:
        case 0:
            r = "zero"
        case [a, b]:
            r = a + b
        case {"k": v}:
            r = v
        case _:
            r = "other"
    return r


def assert_statement(x):
    assert x > 0, "x must be positive"
    return x


def docstring_and_early_return(x):
    """A docstring stays first."""
    if x:
        return docstring_and_early_return.__doc__
    return None


def string_iteration(s):
    out = ""
    for ch in s:
        if ch == " ":
            continue
        out += ch.upper()
    return out


def elif_chain_in_loop(n):
    kinds = []
    for i in range(n):
        if i % 15 == 0:
            kinds.append("fizzbuzz")
        elif i % 5 == 0:
            kinds.append("buzz")
        elif i % 3 == 0:
            kinds.append("fizz")
        else:
            kinds.append(i)
    return kinds


def return_from_else_of_loop(xs):
    for x in xs:
        if x == 0:
            break
    else:
        return "no zero"
    return "zero"


def super_call():
    class Base:
        def f(self, x):
            return x + 1

    class Child(Base):
        def f(self, x):
            if x > 0:
                return super().f(x) * 2
            return 0

    return Child().f(3), Child().f(-1)


def make_accumulator():
    total = 0

    def add(values):
        nonlocal total
        for v in values:
            if v > 0:
                total += v
        return total

    return add


ACCUMULATE = make_accumulator()


def closure_with_nonlocal(values):
    return ACCUMULATE(values)


def break_in_try_finally(xs):
    seen = []
    for x in xs:
        try:
            if x == 3:
                break
            seen.append(x)
        finally:
            seen.append(-x)
    return seen


def continue_in_with(xs):
    out = []
    for x in xs:
        with contextlib.suppress(KeyError):
            if x % 2:
                continue
            out.append(x)
    return out


def loop_target_is_attribute(n):
    class Holder:
        pass

    h = Holder()
    total = 0
    for h.i in range(n):
        total += h.i
    return total, h.i


PROGRAMS = [
    (if_elif_else, [(20,), (5,), (0,), (-3,)]),
    (if_without_else, [(3,), (-3,)]),
    (while_loop, [(0,), (5,)]),
    (while_else, [(0,), (3,)]),
    (while_break_else, [(5, 2), (5, 9)]),
    (for_else, [([1, 2, 3], 2), ([1, 2, 3], 7)]),
    (for_continue, [([1, 2, 3, 4, 5, 6],)]),
    (nested_loops, [(4,)]),
    (nested_break_outer_flag, [([[1, 2], [3, 4]], 3), ([[1]], 9)]),
    (early_return, [(-1,), (0,), (4,)]),
    (return_in_loop, [([1, -2, 3],), ([1, 2],)]),
    (return_in_while, [(10,), (0,)]),
    (return_in_nested_loops, [(4,), (2,)]),
    (no_return_value, [([0, 1],), ([0, 0],)]),
    (implicit_none, [(1,), (0,)]),
    (return_in_with, [(2,), (0,)]),
    (return_in_try, [(2,), (0,), (-1,)]),
    (try_in_loop, [([1, 0, 2, 5],)]),
    (conditional_expr, [(1,), (0,), (-1,)]),
    (logical_ops, [(0, 1), (2, 0), (3, 4), ("", "x")]),
    (logical_short_circuit, [(0,), (1,), (-1,)]),
    (closure_counter, [(4,)]),
    (comprehensions, [(7,)]),
    (walrus, [([1, 2, 3],)]),
    (attribute_state, [(5,)]),
    (subscript_state, [(6,)]),
    (deletes, [(1,), (-1,)]),
    (unbound_local, [(1,), (-1,)]),
    (raises_in_branch, [(1,), (-1,)]),
    (generator_inside, [(7,)]),
    (nested_function_with_control_flow, [([3, -2, 0],)]),
    (lambda_inside, [([3, 1, 2, 4],)]),
    (tuple_unpacking_loop, [([(1, (2, 3)), (4, (5, 6))],)]),
    (loop_var_defined_in_loop, [(3,), (0,)]),
    (while_true_break, [(10,)]),
    (continue_and_break, [([1, -1, 2],), ([1, 60, 2],)]),
    (recursion, [(5,)]),
    (calls_other, [([5, -1, 0],)]),
    (default_args, [(3,), (-3,)]),
    (star_args, [(1, 2, 3), (1,)]),
    (match_statement, [(0,), ([1, 2],), ({"k": 9},), ("z",)]),
    (assert_statement, [(1,), (-1,)]),
    (docstring_and_early_return, [(1,), (0,)]),
    (string_iteration, [("a b c",)]),
    (elif_chain_in_loop, [(16,)]),
    (return_from_else_of_loop, [([1, 0],), ([1, 2],)]),
    (super_call, [()]),
    (break_in_try_finally, [([1, 2, 3, 4],)]),
    (continue_in_with, [([1, 2, 3, 4],)]),
    (loop_target_is_attribute, [(4,)]),
]


def uses_generated_names(n):
    vars_ = 0
    itr = 1
    get_state = 2
    if_body = 3
    break_ = 4
    do_return = 5
    for i in range(n):
        if i > 1:
            break
        vars_ += itr + get_state + if_body + break_ + do_return
    return vars_


PROGRAMS.append((uses_generated_names, [(5,), (0,)]))
