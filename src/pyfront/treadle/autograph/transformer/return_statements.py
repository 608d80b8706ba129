"""Lowers `return` statements into a flag and a value, so that a function
has one return, at its end.

First, code after an `if` one of whose branches always returns moves into
the other branch (it only runs there anyway); that keeps the common early
return pattern a two-way conditional whose branches both produce a value:

    if c:                           if c:
        return a          ->            return a
    b = f()                         else:
    return b                            b = f()
                                        return b

Then each `return v` becomes `retval_ = v; do_return = True`, the
statements after one that may have returned are guarded by
`if not do_return:`, loops that may return get `not do_return` in their
test, and the function ends with `return ag__.retval(do_return, retval_)`.
Functions whose only return is their last statement are left alone."""

import ast

from treadle.autograph.transformer import base


# ------------------------------------------------------------------ rewrite

def _rewrite_block(stmts):
    """Moves code after a branch that always returns into the other branch.
    Returns (block, whether the block always returns)."""
    out = []
    for i, s in enumerate(stmts):
        out.append(s)
        if isinstance(s, ast.Return):
            return out, True  # what follows is unreachable
        if isinstance(s, ast.If):
            s.body, body_returns = _rewrite_block(s.body)
            s.orelse, orelse_returns = _rewrite_block(s.orelse)
            rest = stmts[i + 1:]
            if body_returns and orelse_returns:
                return out, True
            if body_returns and rest:
                s.orelse, returns = _rewrite_block(s.orelse + rest)
                return out, returns
            if orelse_returns and rest:
                s.body, returns = _rewrite_block(s.body + rest)
                return out, returns
        elif isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
            s.body, _ = _rewrite_block(s.body)
            s.orelse, _ = _rewrite_block(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            # Not "always returns" even if its body does: the context
            # manager may suppress an exception raised before the return.
            s.body, _ = _rewrite_block(s.body)
        elif isinstance(s, ast.Try):
            s.body, _ = _rewrite_block(s.body)
            s.orelse, _ = _rewrite_block(s.orelse)
            s.finalbody, _ = _rewrite_block(s.finalbody)
            for h in s.handlers:
                h.body, _ = _rewrite_block(h.body)
    return out, False


# ------------------------------------------------------------------ lowering

class _Names:
    def __init__(self, do_return, retval):
        self.do_return = do_return
        self.retval = retval


def _lower_block(stmts, names):
    """Returns (block, whether it may have returned by its end)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else base.const(None)
            out.extend(base.located([ast.Assign(targets=[base.store(names.retval)], value=value),
                                     base.assign(names.do_return, base.const(True))], s))
            return out, True
        may_return = False
        if isinstance(s, ast.If):
            s.body, b = _lower_block(s.body, names)
            s.orelse, o = _lower_block(s.orelse, names)
            may_return = b or o
        elif isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
            s.body, may_return = _lower_block(s.body, names)
            s.orelse, o = _lower_block(s.orelse, names)
            if may_return:
                guard = base.not_(base.load(names.do_return))
                if isinstance(s, ast.While):
                    s.test = ast.copy_location(base.and_(guard, s.test), s.test)
                else:
                    s.ag_extra_tests = getattr(s, "ag_extra_tests", []) + [guard]
                s.ag_flags = dict(getattr(s, "ag_flags", {}), **{names.do_return: ("return", _first_return(s))})
            may_return = may_return or o
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            s.body, may_return = _lower_block(s.body, names)
        elif isinstance(s, ast.Try):
            parts = []
            for attr in ("body", "orelse", "finalbody"):
                block, r = _lower_block(getattr(s, attr), names)
                setattr(s, attr, block)
                parts.append(r)
            for h in s.handlers:
                h.body, r = _lower_block(h.body, names)
                parts.append(r)
            may_return = any(parts)
        elif isinstance(s, ast.Match):
            for case in s.cases:
                case.body, r = _lower_block(case.body, names)
                may_return = may_return or r
        out.append(s)
        rest = stmts[i + 1:]
        if may_return:
            if rest:
                rest, _ = _lower_block(rest, names)
                out.append(base.located([base.if_(base.not_(base.load(names.do_return)), rest)], rest[0])[0])
            return out, True
    return out, False


def _first_return(node):
    for n in base.walk_scope(node):
        if isinstance(n, ast.Return):
            return n.lineno
    return node.lineno


def _needs_lowering(function_node):
    body = function_node.body
    for s in body:
        for n in base.walk_scope(s):
            if isinstance(n, ast.Return) and not (s is body[-1] and n is s):
                return True
    return False


def transform(function_node, namer):
    function_node.body, _ = _rewrite_block(function_node.body)
    if not _needs_lowering(function_node):
        return
    names = _Names(namer.new("do_return"), namer.new("retval_"))
    body, _ = _lower_block(function_node.body, names)
    first, last = function_node.body[0], function_node.body[-1]
    prologue = base.located([base.assign(names.do_return, base.const(False)),
                             base.assign(names.retval, base.ag_call("UndefinedReturnValue"))], first)
    epilogue = base.located([ast.Return(value=base.ag_call("retval", base.load(names.do_return),
                                                          base.load(names.retval)))], last)
    function_node.body = _after_docstring(body, prologue) + epilogue


def _after_docstring(body, prologue):
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[:1] + prologue + body[1:]
    return prologue + body
