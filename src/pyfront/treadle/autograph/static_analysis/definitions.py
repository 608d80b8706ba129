"""Definedness: which plain names may be, and which must be, bound when
control reaches a statement.

A forward pass over one function body. Every if/while/for gets
`ag_may_in` and `ag_must_in` (at its entry from the code before it; for
statements inside loops, that includes earlier iterations). Generated code
uses them to decide whether a symbol needs an `Undefined` placeholder
(never bound before) or a guarded read (bound on some paths only)."""

import ast

from treadle.autograph.static_analysis import activity

# `must` after a statement that never completes normally (raise, return):
# every name, so that it drops out of intersections.
EVERYTHING = None


def _meet(a, b):
    if a is EVERYTHING:
        return b
    if b is EVERYTHING:
        return a
    return a & b


def _add(must, names):
    return EVERYTHING if must is EVERYTHING else must | names


def analyze_block(stmts, may, must):
    for s in stmts:
        may, must = _statement(s, may, must)
    return may, must


def _statement(s, may, must):
    s.ag_must_here = must  # for reads in simple statements (see transformer/functions.py)
    if isinstance(s, ast.If):
        s.ag_may_in, s.ag_must_in = frozenset(may), must
        test = set(activity.analyze(s.test).simple_modified())  # walrus
        may, must = may | test, _add(must, test)
        m1, M1 = analyze_block(s.body, may, must)
        m2, M2 = analyze_block(s.orelse, may, must)
        return m1 | m2, _meet(M1, M2)
    if isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
        s.ag_may_in, s.ag_must_in = frozenset(may), must
        body = set(activity.analyze(s.body).simple_modified())
        header = activity.analyze(s.test if isinstance(s, ast.While) else s.target)
        header_defs = set(header.simple_modified())
        looped = may | body | header_defs  # later iterations see earlier ones' bindings
        analyze_block(s.body, looped, _add(must, header_defs))
        m, _ = analyze_block(s.orelse, looped, must)
        return m | looped, must
    if isinstance(s, (ast.With, ast.AsyncWith)):
        targets = set(activity.analyze([i.optional_vars for i in s.items]).simple_modified())
        return analyze_block(s.body, may | targets, _add(must, targets))
    if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        everywhere = may | set(activity.analyze(s.body + s.orelse + [h for h in s.handlers]).simple_modified())
        analyze_block(s.body, may, must)
        for h in s.handlers:
            names = {h.name} if h.name else set()
            analyze_block(h.body, everywhere | names, _add(must, names))
        analyze_block(s.orelse, everywhere, must)
        return analyze_block(s.finalbody, everywhere, must)
    if isinstance(s, ast.Match):
        cases_may = set(may)
        for case in s.cases:
            names = set(activity.analyze(case.pattern).simple_modified())
            m, _ = analyze_block(case.body, may | names, _add(must, names))
            cases_may |= m
        return cases_may, must  # no case may match
    if isinstance(s, (ast.Raise, ast.Return)):
        return may, EVERYTHING
    if isinstance(s, ast.Delete) or getattr(s, "ag_deletes", False):  # (a `del` made an Undefined assignment)
        deleted = set(activity.analyze(s).simple_modified())
        return may | deleted, (EVERYTHING if must is EVERYTHING else must - deleted)
    defs = set(activity.analyze(s).simple_modified())
    return may | defs, _add(must, defs)


def parameters(function_node):
    a = function_node.args
    return {arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if arg is not None}


def analyze(function_node):
    """Annotates the compound statements of one function body (not nested functions)."""
    params = parameters(function_node)
    analyze_block(function_node.body, set(params), set(params))
