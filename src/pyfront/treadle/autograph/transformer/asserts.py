"""`assert` statements (with Feature.ASSERT_STATEMENTS):

    assert test, msg   ->  ag__.assert_stmt(test, lambda: msg)

The message stays lazy, as Python evaluates it only when the test fails; a
missing message becomes 'Assertion error' (TensorFlow's text)."""

import ast

from treadle.autograph.transformer import base


class _Transformer(ast.NodeTransformer):
    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else base.const("Assertion error")
        call = base.ag_call("assert_stmt", node.test, base.lambda_(msg))
        return base.located([ast.Expr(value=call)], node)[0]

    def _scope(self, node):
        return node  # nested functions are transformed as their own scopes

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope
    visit_ClassDef = _scope


def transform(function_node):
    function_node.body = [_Transformer().visit(s) for s in function_node.body]
