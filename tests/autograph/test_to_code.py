"""td.autograph.to_code: the converted source, readable Python; as in TensorFlow, the
converted function is shown as `tf__<name>`."""

import ast
import textwrap

import treadle as td


def _code(fn):
    source = td.autograph.to_code(fn)
    ast.parse(source)  # always valid Python
    return source


def if_else(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def test_if_statement():
    assert _code(if_else) == textwrap.dedent('''\
        def tf__if_else(x):

            def get_state():
                return (ag__.ldu(lambda: y, 'y'),)

            def set_state(vars_):
                nonlocal y
                y, = vars_

            def if_body():
                nonlocal y
                y = x

            def else_body():
                nonlocal y
                y = -x
            y = ag__.Undefined('y')
            ag__.if_stmt(x > 0, if_body, else_body, get_state, set_state, ('y',), 1)
            return y
        ''')


def while_loop(n):
    i = 0
    while i < n:
        i += 1
    return i


def test_while_statement():
    assert _code(while_loop) == textwrap.dedent('''\
        def tf__while_loop(n):
            i = 0

            def get_state():
                return (i,)

            def set_state(vars_):
                nonlocal i
                i, = vars_

            def loop_test():
                return i < n

            def loop_body():
                nonlocal i
                i += 1
            ag__.while_stmt(loop_test, loop_body, get_state, set_state, ('i',), {})
            return i
        ''')


def for_loop(xs):
    s = 0
    for x in xs:
        s += x
    return s


def test_for_statement():
    code = _code(for_loop)
    assert "def loop_body(itr):" in code
    assert "x = itr" in code
    assert "ag__.for_stmt(xs, None, loop_body, get_state, set_state, ('s',), {})" in code


def break_continue(xs):
    s = 0
    for x in xs:
        if x < 0:
            continue
        if x > 9:
            break
        s += x
    return s


def test_break_and_continue_become_flags():
    code = _code(break_continue)
    assert "break_ = False" in code and "break_ = True" in code
    assert "continue_ = False" in code and "continue_ = True" in code
    assert "def extra_test():\n        return ag__.not_(break_)" in code
    assert "ag__.if_stmt(ag__.not_(continue_)" in code
    statements = [type(n) for n in ast.walk(ast.parse(code))]
    assert ast.Break not in statements and ast.Continue not in statements


def early_return(x):
    if x > 0:
        return 1
    y = x * 2
    return y


def test_returns_become_one_final_return():
    code = _code(early_return)
    assert code.count("return ag__.retval(do_return, retval_)") == 1
    assert "do_return = False" in code and "retval_ = ag__.UndefinedReturnValue()" in code
    # the code after the early return moved into the else branch
    assert "def else_body():" in code and "y = x * 2" in code
    assert "retval_ = 1" in code


def tail_return_only(x):
    y = x + 1
    return y


def test_a_single_final_return_is_kept():
    assert _code(tail_return_only) == textwrap.dedent('''\
        def tf__tail_return_only(x):
            y = x + 1
            return y
        ''')


def return_in_loop(n):
    i = 0
    while i < n:
        if i > 3:
            return i
        i += 1
    return -1


def test_return_in_a_loop_guards_the_loop_test():
    code = _code(return_in_loop)
    assert "return ag__.and_(lambda: ag__.not_(do_return), lambda: i < n)" in code


def expressions(a, b):
    c = a if b else -a
    return (a and b) or not c


def test_expressions():
    code = _code(expressions)
    assert "c = ag__.if_exp(b, lambda: a, lambda: -a)" in code
    assert "return ag__.or_(lambda: ag__.and_(lambda: a, lambda: b), lambda: ag__.not_(c))" in code


def calls(x):
    return max(abs(x), helper(x))


def helper(x):
    return x


def test_calls_go_through_converted_call():
    assert "return ag__.converted_call(max)(ag__.converted_call(abs)(x), ag__.converted_call(helper)(x))" in \
        _code(calls)


def loop_options(n):
    v = td.constant([1])
    for _ in range(n):
        td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape([None]))])
        v = td.concat([v, v], 0)
    return v


def test_loop_directive_becomes_options():
    code = _code(loop_options)
    assert "set_loop_options" not in code
    assert "{'shape_invariants': [(v, ag__.converted_call(td.TensorShape)([None]))]}" in code


def test_to_code_accepts_td_functions_and_methods():
    assert td.autograph.to_code(td.function(if_else)) == _code(if_else)

    class A:
        def m(self, x):
            if x:
                x = 1
            return x

    assert "ag__.if_stmt" in td.autograph.to_code(A().m)
