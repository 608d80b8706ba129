"""Loop directives: a `set_loop_options(...)` call statement in a loop body is
removed, and its keyword arguments become the loop's options (evaluated just
before the loop, as in TensorFlow)."""

import ast

from treadle.autograph.transformer import base

_OPTIONS = ("shape_invariants", "maximum_iterations", "parallel_iterations", "swap_memory")


def _is_directive(stmt):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name == "set_loop_options"


def _options_dict(calls):
    keys, values = [], []
    for call in calls:
        if call.args:
            raise SyntaxError("set_loop_options takes keyword arguments only")
        for kw in call.keywords:
            if kw.arg not in _OPTIONS:
                raise SyntaxError(f"set_loop_options got an unknown option {kw.arg!r}; "
                                  f"expected one of {', '.join(_OPTIONS)}")
            keys.append(base.const(kw.arg))
            values.append(kw.value)
    return ast.Dict(keys=keys, values=values)


def extract(function_node):
    """Moves each loop's directives into `loop.ag_options` (an ast.Dict)."""
    for node in base.walk_scope(function_node):
        if isinstance(node, (ast.While, ast.For)):
            calls = [s.value for s in node.body if _is_directive(s)]
            if calls:
                node.body = [s for s in node.body if not _is_directive(s)] or [ast.Pass()]
                node.ag_options = _options_dict(calls)
