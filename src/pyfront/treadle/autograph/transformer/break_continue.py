"""Lowers `break` and `continue` into flag variables.

    while test:                     break_ = False
        A                           while not break_ and test:
        if c:                           A
            break           ->          if c:
        B                                   break_ = True
                                        if not break_:
                                            B

`continue` works the same way with a flag reset at the top of each
iteration. A `for` loop gets `not break_` as its extra test (checked before
fetching the next element). A loop's `else` block runs after the loop,
guarded by `not break_` when the loop has a break."""

import ast

from treadle.autograph.transformer import base


def _lower_block(stmts, kind, flag):
    """The block with each `kind` statement (of this loop) replaced by
    `flag = True` and the statements after it guarded; and whether any was."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, kind):
            out.append(base.located([base.assign(flag, base.const(True))], s)[0])
            return out, True  # the rest of the block is unreachable
        used = False
        if isinstance(s, ast.If):
            s.body, b = _lower_block(s.body, kind, flag)
            s.orelse, o = _lower_block(s.orelse, kind, flag)
            used = b or o
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            s.body, used = _lower_block(s.body, kind, flag)
        elif isinstance(s, ast.Try):
            s.body, b = _lower_block(s.body, kind, flag)
            s.orelse, o = _lower_block(s.orelse, kind, flag)
            s.finalbody, f = _lower_block(s.finalbody, kind, flag)
            h = False
            for handler in s.handlers:
                handler.body, hu = _lower_block(handler.body, kind, flag)
                h = h or hu
            used = b or o or f or h
        elif isinstance(s, ast.Match):
            for case in s.cases:
                case.body, cu = _lower_block(case.body, kind, flag)
                used = used or cu
        # Nested loops own their break/continue; nested scopes are separate.
        out.append(s)
        rest = stmts[i + 1:]
        if used:
            if rest:
                rest, _ = _lower_block(rest, kind, flag)
                out.append(base.located([base.if_(base.not_(base.load(flag)), rest)], rest[0])[0])
            return out, True
    return out, False


def _first_jump(stmts, kind):
    """The first `kind` statement that belongs to the loop whose body is `stmts`."""
    for s in stmts:
        for n in _walk_loop_level(s):
            if isinstance(n, kind):
                return n
    return None


def _walk_loop_level(node):
    """Nodes of a loop body that are not inside a nested loop body or scope
    (a nested loop's else block still belongs to the outer loop)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.While, ast.For, ast.AsyncFor)):
            stack.extend(n.orelse)
            continue
        stack.extend(c for c in ast.iter_child_nodes(n) if not base.is_scope(c))


def _lower_loop(loop, namer):
    """Lowers one loop; returns the statements that replace it."""
    before, after = [], []
    brk = _first_jump(loop.body, ast.Break)
    if brk is not None:
        flag = namer.new("break_")
        loop.body, _ = _lower_block(loop.body, ast.Break, flag)
        before.append(base.assign(flag, base.const(False)))
        if isinstance(loop, ast.While):
            loop.test = ast.copy_location(base.and_(base.not_(base.load(flag)), loop.test), loop.test)
        else:
            loop.ag_extra_tests = getattr(loop, "ag_extra_tests", []) + [base.not_(base.load(flag))]
        loop.ag_flags = dict(getattr(loop, "ag_flags", {}), **{flag: ("break", brk.lineno)})
    if loop.orelse:
        after = [base.if_(base.not_(base.load(flag)), loop.orelse)] if brk is not None else loop.orelse
        loop.orelse = []
    if _first_jump(loop.body, ast.Continue) is not None:
        cflag = namer.new("continue_")
        body, _ = _lower_block(loop.body, ast.Continue, cflag)
        loop.body = base.located([base.assign(cflag, base.const(False))], loop.body[0]) + body
    base.located(before, loop)
    base.located(after, loop)
    return before + [loop] + after


class _Lowering(ast.NodeTransformer):
    """Rewrites loops innermost first, within one function scope."""

    def __init__(self, namer):
        self.namer = namer

    def _loop(self, node):
        self.generic_visit(node)
        return _lower_loop(node, self.namer)

    visit_While = _loop
    visit_For = _loop

    def _scope(self, node):
        return node  # nested functions and classes are lowered as their own scopes

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope
    visit_Lambda = _scope
    visit_ClassDef = _scope


def transform(function_node, namer):
    function_node.body = [_Lowering(namer).visit(s) for s in function_node.body]
    function_node.body = _flatten(function_node.body)


def _flatten(stmts):
    out = []
    for s in stmts:
        out.extend(s if isinstance(s, list) else [s])
    return out
