"""Chained comparisons (as TensorFlow 2.21's AutoGraph, whatever the features):

    a == b == c   ->  ag__.and_(lambda: a == b, lambda: b == c)

Python evaluates a chain as `a == b and b == c`, which asks for the truth of
a tensor; as a logical and of the pairs it works on tensors (and stays lazy
on Python values). As in TensorFlow, an operand in the middle of the chain is
evaluated once per comparison it takes part in."""

import ast

from treadle.autograph.transformer import base


class _Transformer(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2 or any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        operands = [node.left] + list(node.comparators)
        pairs = [ast.copy_location(ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]]), node)
                 for i, op in enumerate(node.ops)]
        result = pairs[-1]
        for pair in reversed(pairs[:-1]):
            result = base.ag_call("and_", base.lambda_(pair), base.lambda_(result))
        return ast.copy_location(result, node)


def transform(node):
    _Transformer().visit(node)
    return node
