"""Shared pieces of the AST passes: fresh names and node builders.

Generated nodes take the source location of the user statement they stand
for, so that tracebacks and AutoGraph's own errors point at user lines."""

import ast

AG = "ag__"  # the name the runtime module has inside converted code


class Namer:
    """Fresh identifiers that clash with no name the function uses."""

    def __init__(self, function_node):
        self.used = set()
        for n in ast.walk(function_node):
            if isinstance(n, ast.Name):
                self.used.add(n.id)
            elif isinstance(n, ast.arg):
                self.used.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.used.add(n.name)
        self.used.add(AG)
        self._shared = {}

    def shared(self, base):
        """One fresh name for `base`, the same at every call (for parameters
        of generated functions, which cannot clash with each other)."""
        name = self._shared.get(base)
        if name is None:
            name = self._shared[base] = self.new(base)
        return name

    def new(self, base):
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


# ------------------------------------------------------------------ builders

def load(name):
    return ast.Name(id=name, ctx=ast.Load())


def store(name):
    return ast.Name(id=name, ctx=ast.Store())


def const(value):
    return ast.Constant(value=value)


def ag_attr(fn):
    return ast.Attribute(value=load(AG), attr=fn, ctx=ast.Load())


def ag_call(fn, *args, **keywords):
    return ast.Call(func=ag_attr(fn), args=list(args),
                    keywords=[ast.keyword(arg=k, value=v) for k, v in keywords.items()])


def is_ag_call(node):
    f = node.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == AG


def assign(name, value):
    return ast.Assign(targets=[store(name)], value=value)


def expr_stmt(value):
    return ast.Expr(value=value)


def not_(value):
    return ast.UnaryOp(op=ast.Not(), operand=value)


def and_(left, right):
    return ast.BoolOp(op=ast.And(), values=[left, right])


def lambda_(body):
    return ast.Lambda(args=_no_args(), body=body)


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])


def function_def(name, params, body):
    args = _no_args()
    args.args = [ast.arg(arg=p) for p in params]
    return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                           type_comment=None)


def tuple_(elts, ctx=None):
    return ast.Tuple(elts=list(elts), ctx=ctx or ast.Load())


def if_(test, body, orelse=()):
    return ast.If(test=test, body=list(body), orelse=list(orelse))


def located(nodes, origin):
    """Gives generated nodes (and their children without a location) the location of `origin`."""
    # One line only: a generated call spanning the whole statement would be
    # reported at the statement's last line.
    line, col = origin.lineno, origin.col_offset
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is not None:
                continue  # user code (or located already), and so is everything in it
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = line, col, line, col
        stack.extend(ast.iter_child_nodes(n))
    return nodes


def is_scope(node):
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))


def contains_yield_or_await(node):
    for n in walk_scope(node):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
    return False


def walk_scope(node):
    """ast.walk that does not enter nested functions, lambdas or classes."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not is_scope(child):
                stack.append(child)
