"""Activity analysis: which symbols a piece of code modifies and which plain
names it reads, within one function scope.

Nested scopes (functions, lambdas, classes, comprehensions) are not entered:
their definition modifies their name, and the free names they use count as
read where they are defined (a closure may read them whenever it is called)."""

import ast

from treadle.autograph.static_analysis.symbols import Symbol, symbol_of

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


class Activity:
    """What a block does: `modified` maps symbol keys to Symbols (assigned,
    augmented, deleted, bound by for/with/except/import/def/class, walrus);
    `reads` is the set of plain names read."""

    __slots__ = ("modified", "reads", "declared_global", "declared_nonlocal")

    def __init__(self):
        self.modified = {}
        self.reads = set()
        self.declared_global = set()
        self.declared_nonlocal = set()

    def simple_modified(self):
        return [k for k, s in self.modified.items() if s.is_simple]

    def compound_modified(self):
        return [s for s in self.modified.values() if not s.is_simple]


class _Visitor(ast.NodeVisitor):
    def __init__(self, activity):
        self.a = activity

    def _modify(self, key):
        if key not in self.a.modified:
            self.a.modified[key] = Symbol(key, key, frozenset((key,)))

    # ---------------------------------------------------------- symbols
    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.a.reads.add(node.id)
        else:
            self._modify(node.id)

    def _compound(self, node):
        if not isinstance(node.ctx, ast.Load):
            sym = symbol_of(node)
            if sym is not None and sym.key not in self.a.modified:
                self.a.modified[sym.key] = sym
        self.generic_visit(node)

    visit_Attribute = _compound
    visit_Subscript = _compound

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.a.reads.add(node.target.id)
        self.generic_visit(node)

    # ---------------------------------------------------------- bindings
    def visit_Import(self, node):
        for alias in node.names:
            self._modify(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node):
        for alias in node.names:
            if alias.name != "*":
                self._modify(alias.asname or alias.name)

    def visit_ExceptHandler(self, node):
        if node.name:
            self._modify(node.name)
        self.generic_visit(node)

    def visit_Global(self, node):
        self.a.declared_global.update(node.names)

    def visit_Nonlocal(self, node):
        self.a.declared_nonlocal.update(node.names)

    def visit_MatchAs(self, node):
        if node.name:
            self._modify(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self._modify(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self._modify(node.rest)
        self.generic_visit(node)

    # ---------------------------------------------------------- nested scopes
    def _visit_function(self, node):
        self._modify(node.name)
        for d in node.decorator_list:
            self.visit(d)
        self._visit_arguments(node.args)
        self.a.reads |= free_names(node)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _visit_arguments(self, args):
        for d in args.defaults:
            self.visit(d)
        for d in args.kw_defaults:
            if d is not None:
                self.visit(d)

    def visit_Lambda(self, node):
        self._visit_arguments(node.args)
        self.a.reads |= free_names(node)

    def visit_ClassDef(self, node):
        self._modify(node.name)
        for n in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(n)
        self.a.reads |= free_names(node)

    def _visit_comprehension(self, node):
        self.a.reads |= free_names(node)
        for n in ast.walk(node):  # the walrus binds in the enclosing scope
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                self._modify(n.target.id)

    visit_ListComp = _visit_comprehension
    visit_SetComp = _visit_comprehension
    visit_DictComp = _visit_comprehension
    visit_GeneratorExp = _visit_comprehension


def free_names(scope_node):
    """Names a nested scope reads that it does not bind itself (approximate:
    the order of reads and bindings inside it is not considered)."""
    loads, bound = set(), set()
    if isinstance(scope_node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope_node.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
            if arg is not None:
                bound.add(arg.arg)
        children = scope_node.body if isinstance(scope_node.body, list) else [scope_node.body]
    elif isinstance(scope_node, ast.ClassDef):
        children = scope_node.body
    else:
        children = [scope_node]
    for child in children:
        for n in ast.walk(child):
            if isinstance(n, ast.Name):
                (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(n.name)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
    return loads - bound


def analyze(nodes):
    """Activity of a statement, an expression or a list of them."""
    activity = Activity()
    v = _Visitor(activity)
    for n in (nodes if isinstance(nodes, list) else [nodes]):
        if n is not None:
            v.visit(n)
    return activity


def reads_of(node):
    """Plain names read by an expression (or statement), including closures' free names."""
    return analyze(node).reads


def bound_names(node):
    """Plain names a statement binds (assigns, imports, defines)."""
    return set(analyze(node).simple_modified())
