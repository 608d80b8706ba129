"""Function-level fixes that keep converted code behaving like the original.

explicit_super: `super()` with no arguments finds its class and instance
through the frame it is called from; once a method's body is split into
nested functions that frame is gone, so it becomes `super(__class__, self)`.

checked_loads: a symbol that may be unbound gets an `ag__.Undefined`
placeholder; reading the placeholder must fail as reading an unbound local
does, so user reads of such symbols become `ag__.ld(x, 'x')`."""

import ast

from treadle.autograph.static_analysis import activity
from treadle.autograph.transformer import base


def explicit_super(scope):
    a = scope.args
    params = a.posonlyargs + a.args
    if not params:
        return
    first = params[0].arg
    for node in base.walk_scope(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" \
                and not node.args and not node.keywords:
            node.args = [ast.copy_location(base.load("__class__"), node), ast.copy_location(base.load(first), node)]


_MISSING = object()
_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)


class _CheckedLoads(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit(self, node):
        # A simple statement knows which names are bound on every path to it
        # (definedness analysis): its reads of those need no check.
        must = getattr(node, "ag_must_here", _MISSING)
        if must is _MISSING or isinstance(node, _COMPOUND) or not self.names:
            return super().visit(node)
        saved = self.names
        self.names = set() if must is None else self.names - must
        try:
            return super().visit(node)
        finally:
            self.names = saved

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(base.ag_call("ld", base.load(node.id), base.const(node.id)), node)
        return node

    def _scope(self, node):
        if getattr(node, "ag_state_getter", False):
            return node  # reads the state as it is, placeholders included
        rebound = set()
        if not isinstance(node, ast.Lambda):
            body = activity.analyze(node.body)
            rebound = set(body.simple_modified()) - body.declared_nonlocal - body.declared_global
        a = node.args
        rebound |= {arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if arg}
        rebound |= getattr(node, "ag_bound_first", set())  # a for loop's target, bound before the body runs
        if self.names & rebound:
            saved, self.names = self.names, self.names - rebound
            self.generic_visit(node)
            self.names = saved
        else:
            self.generic_visit(node)
        return node

    visit_FunctionDef = _scope
    visit_Lambda = _scope


def checked_loads(scope, names):
    if not names:
        return
    t = _CheckedLoads(set(names))
    scope.body = [t.visit(s) for s in scope.body]


class _Deletions(ast.NodeTransformer):
    """`del x` of a local becomes `x = ag__.Undefined('x')` (as in
    TensorFlow's AutoGraph), so that a symbol deleted in a branch of a
    conditional on a tensor is an undefined branch output (an error naming it
    if it is used after the conditional) rather than a raw NameError from the
    generated state functions."""

    def __init__(self, keep):
        self.keep = keep  # global and nonlocal names: their `del` stays
        self.deleted = set()

    def visit_Delete(self, node):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if len(names) != len(node.targets) or set(names) & self.keep:
            return node
        self.deleted.update(names)
        out = []
        for name in names:
            stmt = ast.copy_location(base.assign(name, base.ag_call("Undefined", base.const(name))), node)
            stmt.ag_deletes = True  # definedness treats it as the `del` it was
            out.append(stmt)
        return out

    def _skip(self, node):
        return node  # nested scopes are transformed as scopes of their own

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _skip


def deletions_as_undefined(scope):
    """Rewrites the `del name` statements of one function body; returns the
    names deleted (their later reads must be checked, see checked_loads)."""
    body = activity.analyze(scope.body)
    t = _Deletions(body.declared_global | body.declared_nonlocal)
    scope.body = [n for s in scope.body for n in _as_list(t.visit(s))]
    return t.deleted


def _as_list(result):
    return result if isinstance(result, list) else [result]
