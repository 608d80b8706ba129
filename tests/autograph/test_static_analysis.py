"""Static analysis: activity (modified / read symbols), liveness and
definedness annotations."""

import ast
import textwrap

from treadle.autograph.static_analysis import activity, definitions, liveness
from treadle.autograph.static_analysis import symbols


def _fn(source):
    return ast.parse(textwrap.dedent(source)).body[0]


def _stmts(source):
    return ast.parse(textwrap.dedent(source)).body


# ---------------------------------------------------------------- symbols

def test_symbol_keys_of_names_attributes_and_subscripts():
    def key(expr):
        s = symbols.symbol_of(ast.parse(expr, mode="eval").body)
        return None if s is None else (s.key, s.root, set(s.deps))

    assert key("x") == ("x", "x", {"x"})
    assert key("a.b.c") == ("a.b.c", "a", {"a"})
    assert key("a[0]") == ("a[0]", "a", {"a"})
    assert key("d['k']") == ("d['k']", "d", {"d"})
    assert key("a.b[i]") == ("a.b[i]", "a", {"a", "i"})
    assert key("f().x") is None
    assert key("a[i + 1]") is None


def test_symbol_keys_parse_back_to_load_and_store_expressions():
    assert ast.unparse(symbols.load("self.x[0]")) == "self.x[0]"
    target = symbols.store("d['k']")
    assert isinstance(target.ctx, ast.Store) and ast.unparse(target) == "d['k']"


# ---------------------------------------------------------------- activity

def test_activity_of_assignments():
    a = activity.analyze(_stmts("""
        x = y + 1
        a.b = c
        d['k'] += e
        z += 1
        for i, (j, k) in pairs:
            del w
    """))
    assert set(a.modified) == {"x", "a.b", "d['k']", "z", "i", "j", "k", "w"}
    assert {"y", "c", "e", "z", "pairs", "a", "d"} <= a.reads
    assert set(a.simple_modified()) == {"x", "z", "i", "j", "k", "w"}
    assert {s.key for s in a.compound_modified()} == {"a.b", "d['k']"}


def test_activity_of_other_bindings():
    a = activity.analyze(_stmts("""
        import os.path
        from m import f as g
        with open(p) as fh:
            pass
        try:
            pass
        except E as err:
            pass
        def h(q=default):
            return free + q
        class C(Base):
            pass
        if (n := compute()) > 0:
            pass
    """))
    assert {"os", "g", "fh", "err", "h", "C", "n"} <= set(a.modified)
    assert {"default", "free", "Base", "compute", "p", "E"} <= a.reads
    assert "q" not in a.reads  # a parameter of the nested function


def test_activity_does_not_enter_nested_scopes_or_comprehensions():
    a = activity.analyze(_stmts("""
        squares = [v * v for v in values if v > limit]
        f = lambda t: t + offset
    """))
    assert set(a.modified) == {"squares", "f"}
    assert {"values", "limit", "offset"} <= a.reads
    assert "v" not in a.reads and "t" not in a.reads


def test_activity_records_global_and_nonlocal_declarations():
    a = activity.analyze(_stmts("""
        global g
        nonlocal n
    """))
    assert a.declared_global == {"g"} and a.declared_nonlocal == {"n"}


# ---------------------------------------------------------------- liveness

def _annotated(source):
    fn = _fn(source)
    definitions.analyze(fn)
    liveness.analyze(fn)
    return fn


def test_liveness_after_an_if():
    fn = _annotated("""
        def f(x):
            if x > 0:
                y = 1
                t = 2
            else:
                y = 2
                t = 3
            return y
    """)
    if_node = fn.body[0]
    assert "y" in if_node.ag_live_out
    assert "t" not in if_node.ag_live_out


def test_liveness_of_a_while_loop():
    fn = _annotated("""
        def f(n):
            i = 0
            s = 0
            while i < n:
                tmp = i * 2
                s = s + tmp
                i += 1
            return s
    """)
    loop = fn.body[2]
    assert {"i", "n", "s"} <= loop.ag_live_in
    assert "tmp" not in loop.ag_live_in
    assert loop.ag_live_out == {"s"}


def test_liveness_of_a_for_loop_kills_its_target():
    fn = _annotated("""
        def f(xs):
            s = 0
            for x in xs:
                s += x
            return s
    """)
    loop = fn.body[1]
    assert "x" not in loop.ag_live_in and "s" in loop.ag_live_in
    assert loop.ag_live_out == {"s"}


def test_liveness_counts_nested_function_free_names_as_reads():
    fn = _annotated("""
        def f(x):
            if x:
                y = 1
            def g():
                return y
            return g
    """)
    assert "y" in fn.body[0].ag_live_out


def test_liveness_in_nested_loops_reaches_a_fixed_point():
    fn = _annotated("""
        def f(n):
            a = 0
            b = 0
            while a < n:
                while b < a:
                    b += 1
                a += 1
            return a
    """)
    outer = fn.body[2]
    inner = outer.body[0]
    assert {"a", "b", "n"} <= outer.ag_live_in
    assert {"a", "b", "n"} <= inner.ag_live_out  # b is read by the inner test in the next outer iteration


# ---------------------------------------------------------------- definedness

def test_definedness_at_entry_of_statements():
    fn = _annotated("""
        def f(x):
            if x:
                y = 1
            if x:
                z = y
            else:
                z = 0
            while z:
                w = z
                z -= 1
            return w
    """)
    first, second, loop = fn.body[0], fn.body[1], fn.body[2]
    assert "y" not in first.ag_may_in
    assert "y" in second.ag_may_in and "y" not in second.ag_must_in
    assert "z" in loop.ag_must_in and "w" not in loop.ag_may_in
    inner_defs = set()
    for s in loop.body:
        inner_defs |= activity.bound_names(s)
    assert inner_defs == {"w", "z"}


def test_definedness_inside_a_loop_sees_earlier_iterations():
    fn = _annotated("""
        def f(n):
            for i in range(n):
                if i:
                    last = prev
                prev = i
            return 0
    """)
    inner_if = fn.body[0].body[0]
    assert "prev" in inner_if.ag_may_in  # bound by the previous iteration
    assert "prev" not in inner_if.ag_must_in
    assert "i" in inner_if.ag_must_in


def test_raise_does_not_weaken_must_definedness():
    fn = _annotated("""
        def f(x):
            if x:
                y = 1
            else:
                raise ValueError()
            if y:
                pass
    """)
    assert "y" in fn.body[1].ag_must_in
