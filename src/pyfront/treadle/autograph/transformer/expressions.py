"""Expression rewrites: logical operators, conditional expressions and calls.

    a and b        ->  ag__.and_(lambda: a, lambda: b)
    a or b         ->  ag__.or_(lambda: a, lambda: b)
    not a          ->  ag__.not_(a)
    a if c else b  ->  ag__.if_exp(c, lambda: a, lambda: b)
    f(x, k=y)      ->  ag__.converted_call(f)(x, k=y)

Operands become lambdas so that they are evaluated lazily, as Python does
(and, for tensors, inside the branch that needs them). Calls keep their
arguments as written; only the callee goes through the runtime, which
returns the converted version of a user function (or the callee itself)."""

import ast

from treadle.autograph.transformer import base

_DIRECT_CALLS = frozenset(("super",))  # must stay plain calls


class _Transformer(ast.NodeTransformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            return node  # a walrus inside a lambda would bind in the lambda
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = base.ag_call(fn, base.lambda_(value), base.lambda_(result))
        return ast.copy_location(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(base.ag_call("not_", node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        call = base.ag_call("if_exp", node.test, base.lambda_(node.body), base.lambda_(node.orelse))
        return ast.copy_location(call, node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if base.is_ag_call(node) or (isinstance(node.func, ast.Name) and node.func.id in _DIRECT_CALLS):
            return node
        node.func = ast.copy_location(base.ag_call("converted_call", node.func), node.func)
        return node

    def visit_ClassDef(self, node):
        # Class bodies are not converted (a lambda there could not see class
        # attributes); the methods defined in them are.
        for i, s in enumerate(node.body):
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                node.body[i] = self.visit(s)
        return node

    def _function(self, node):
        if getattr(node, "ag_skip", False):
            return node
        self.generic_visit(node)
        return node

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function


def transform(node):
    _Transformer().visit(node)
    return node
