"""Liveness: which plain names may still be read after a statement.

A backward pass over one function body. Every if/while/for gets
`ag_live_out` (names live after it); loops also get `ag_live_in` (names live
at the loop head, where the test runs or the next element is fetched).
It runs after break/continue/return lowering, so the only jumps left are
`raise` and a final `return`."""

import ast

from treadle.autograph.static_analysis import activity


def _simple_defs(stmt):
    """Names definitely (re)bound by a simple statement, which kills them."""
    if isinstance(stmt, ast.AugAssign):
        return set()
    return activity.bound_names(stmt)


def analyze_block(stmts, live_out):
    live = set(live_out)
    for s in reversed(stmts):
        live = _statement(s, live)
    return live


def _loop(stmt, live_out, kills, header_reads):
    """Fixed point of the live set at the loop head."""
    head = set()
    while True:
        body_in = analyze_block(stmt.body, head) - kills
        new = header_reads | analyze_block(stmt.orelse, live_out) | body_in
        if new == head:
            return head
        head = new


def _statement(s, out):
    if isinstance(s, ast.If):
        s.ag_live_out = frozenset(out)
        return activity.reads_of(s.test) | analyze_block(s.body, out) | analyze_block(s.orelse, out)
    if isinstance(s, ast.While):
        s.ag_live_out = frozenset(out)
        head = _loop(s, out, set(), activity.reads_of(s.test))
        s.ag_live_in = frozenset(head)
        return head
    if isinstance(s, (ast.For, ast.AsyncFor)):
        s.ag_live_out = frozenset(out)
        target = activity.analyze(s.target)
        kills = set(target.simple_modified())
        # Lowered break/return flags are tested before each element is fetched.
        header_reads = target.reads | activity.reads_of(getattr(s, "ag_extra_tests", []))
        head = _loop(s, out, kills, header_reads)
        s.ag_live_in = frozenset(head)
        return head | activity.reads_of(s.iter)
    if isinstance(s, (ast.With, ast.AsyncWith)):
        return analyze_block(s.body, out) | activity.reads_of([i.context_expr for i in s.items])
    if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        after = analyze_block(s.finalbody, out)
        handlers = set()
        for h in s.handlers:
            handlers |= analyze_block(h.body, after) | activity.reads_of(h.type)
        orelse_in = analyze_block(s.orelse, after)
        # An exception may leave the body anywhere, so whatever the handlers
        # and the finally block read is live throughout it.
        body_in = analyze_block(s.body, orelse_in | handlers | after)
        return body_in | handlers | after
    if isinstance(s, ast.Match):
        live = activity.reads_of(s.subject)
        for case in s.cases:
            live |= analyze_block(case.body, out) | activity.reads_of(case.guard) | activity.reads_of(case.pattern)
        return live | out
    if isinstance(s, (ast.Return, ast.Raise)):
        return activity.reads_of(s)
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (out - {s.name}) | activity.reads_of(s)
    return (out - _simple_defs(s)) | activity.reads_of(s)


def analyze(function_node):
    """Annotates the compound statements of one function body (not nested functions)."""
    analyze_block(function_node.body, set())
