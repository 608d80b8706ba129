"""The Python package's import graph has no cycle (ARCHITECTURE.md: lower
layers never import higher ones; higher layers register into lower ones).

Every module of src/pyfront/treadle is parsed with `ast` (nothing is
imported). An edge A -> B means module A imports module B: `import x.y`
names x.y, `from x import y` names x.y when y is a module and x otherwise,
relative imports resolve against A's package. The extension `_core` and the
generated `*_pb2` modules are built, not in the source tree; they import
nothing of the package, so they close no cycle and are left out.

Two graphs are checked:
- the module-level graph (imports a module runs when it is imported, class
  bodies included): it must have no cycle at all;
- the same graph plus the imports deferred into functions. A deferred import
  that closes a cycle only hides it, so each one left must be listed in
  DEFERRED_CYCLE_EDGES with the reason it stays. The list only shrinks: an
  entry whose import is gone fails the test until it is removed.

Besides, an import of a treadle module placed inside a function must be
listed in DEFERRED_IMPORTS with the reason it is deferred: one that breaks no
cycle only hides the layering from a reader of the module's top. Optional
third-party packages (ray, tqdm, matplotlib, torch) imported where they are
used are not the package's layering and are not checked. DEFERRED_IMPORTS
only shrinks too."""

import ast
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1] / "src" / "pyfront" / "treadle"

# (importer, imported): why the deferred import that closes a cycle stays.
DEFERRED_CYCLE_EDGES = {}

# (importer, imported module): why an import of a treadle module inside a
# function of the importer stays there.
DEFERRED_IMPORTS = {}


class _Module:
    def __init__(self, name, path, is_package):
        self.name, self.path, self.is_package = name, path, is_package
        self.tree = ast.parse(path.read_text(), filename=str(path))


def _modules():
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = _Module(name, path, is_package)
    return modules


# The Cython modules (*.pyx, built like _core), by qualified name.
_CYTHON = {".".join(p.relative_to(PACKAGE_DIR.parent).with_suffix("").parts) for p in PACKAGE_DIR.rglob("*.pyx")}


def _is_generated(name):
    short = name.rpartition(".")[2]
    return short == "_core" or short.endswith("_pb2") or name in _CYTHON


def _source(node, module):
    """The module `from <source> import ...` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.name if module.is_package else module.name.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _imported_modules(node, module, modules):
    """The package's modules that import statement `node` of `module` names."""
    def known(name):  # the longest prefix of `name` that is a module of the package
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    if isinstance(node, ast.Import):
        return [m for m in (known(a.name) for a in node.names if not _is_generated(a.name)) if m]
    source = _source(node, module)
    found = []
    for alias in node.names:
        full = f"{source}.{alias.name}"
        if full in modules:
            found.append(full)
        elif not _is_generated(full) and not _is_generated(source) and known(source):
            found.append(known(source))
    return found


def _treadle_modules(node, module, modules):
    """The treadle modules `node` names: the package's, and the built ones
    (_core, *_pb2), which the import graph leaves out."""
    names = ([a.name for a in node.names] if isinstance(node, ast.Import)
             else [f"{_source(node, module)}.{a.name}" for a in node.names])
    built = [n for n in names if _is_generated(n) and n.partition(".")[0] == "treadle"]
    return sorted(set(_imported_modules(node, module, modules) + built))


def _imports(module):
    """(import node, the qualified name of the function it sits in, or None
    for an import the module runs when it is imported) for each import of
    `module`."""
    def walk(node, scope, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, function
                continue
            inner_scope, inner_function = scope, function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner_scope = f"{scope}.{child.name}" if scope else child.name
                if function or not isinstance(child, ast.ClassDef):  # a class body at module level runs on import
                    inner_function = inner_scope
            yield from walk(child, inner_scope, inner_function)
    yield from walk(module.tree, None, None)


def import_graph():
    """{module: {imported module: [(line, deferred), ...]}} of the package."""
    modules = _modules()
    graph = {name: {} for name in modules}
    for name, module in modules.items():
        for node, function in _imports(module):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for target in _imported_modules(node, module, modules):
                if target != name:
                    graph[name].setdefault(target, []).append((node.lineno, function is not None))
    return graph


def deferred_imports():
    """{(importer, imported treadle module): [(line, function), ...]} for the
    imports of treadle modules placed inside functions."""
    modules = _modules()
    found = {}
    for name, module in modules.items():
        for node, function in _imports(module):
            if function is None:
                continue
            for target in _treadle_modules(node, module, modules):
                found.setdefault((name, target), []).append((node.lineno, function))
    return found


def find_cycle(edges):
    """One cycle of the graph {module: set of modules} as a list of modules
    (first == last), or None."""
    state = {}  # module -> 1 while on the DFS stack, 2 when done
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def _describe(cycle, graph):
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        where = ", ".join(f"line {line}{' (in a function)' if deferred else ''}" for line, deferred in sorted(set(graph[a][b])))
        steps.append(f"  {a} -> {b}   [{where}]")
    return "\n".join(steps)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_package_is_found(graph):
    assert {"treadle", "treadle.framework.tensor", "treadle.ops.math_ops"} <= set(graph)
    assert "treadle.ops.math_ops" in graph["treadle.ops.array_ops"]


def test_module_level_imports_have_no_cycle(graph):
    edges = {a: {b for b, sites in targets.items() if any(not deferred for _, deferred in sites)}
             for a, targets in graph.items()}
    cycle = find_cycle(edges)
    assert cycle is None, "module-level import cycle:\n" + _describe(cycle, graph)


def test_deferred_imports_hide_no_cycle_but_the_listed_ones(graph):
    edges = {a: {b for b in targets if (a, b) not in DEFERRED_CYCLE_EDGES} for a, targets in graph.items()}
    cycle = find_cycle(edges)
    assert cycle is None, ("an import inside a function closes this cycle; make the lower module register "
                           "what it needs instead (or list the edge in DEFERRED_CYCLE_EDGES, with why):\n"
                           + _describe(cycle, graph))


def test_the_listed_cycles_still_exist(graph):
    stale = [edge for edge in DEFERRED_CYCLE_EDGES if edge[1] not in graph.get(edge[0], {})]
    assert not stale, f"these imports are gone: remove them from DEFERRED_CYCLE_EDGES: {stale}"
    # Each listed edge closes a cycle: the imported module reaches the importer.
    edges = {a: set(targets) for a, targets in graph.items()}
    for a, b in DEFERRED_CYCLE_EDGES:
        seen, todo = set(), [b]
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(edges.get(m, ()))
        assert a in seen, f"{a} -> {b} closes no cycle any more: remove it from DEFERRED_CYCLE_EDGES"


def test_imports_inside_functions_are_listed_with_their_reason():
    unlisted = {edge: sites for edge, sites in deferred_imports().items() if edge not in DEFERRED_IMPORTS}
    assert not unlisted, (
        "imports of treadle modules inside functions: move them to the module's top (an import that closes a "
        "cycle is a layering problem: make the lower module register what it needs), or list them in "
        "DEFERRED_IMPORTS with why they stay:\n" + "\n".join(
            f"  {a} -> {b}   [" + ", ".join(f"line {line} in {fn}()" for line, fn in sites) + "]"
            for (a, b), sites in sorted(unlisted.items())))


def test_the_listed_deferred_imports_still_exist():
    stale = sorted(set(DEFERRED_IMPORTS) - set(deferred_imports()))
    assert not stale, f"these imports are no longer inside functions: remove them from DEFERRED_IMPORTS: {stale}"
    assert all(reason.strip() for reason in DEFERRED_IMPORTS.values())


def test_deferred_imports_are_found():
    """The checker sees what it must: relative, built (_core, *_pb2) and nested imports."""
    source = ("from treadle import _core\n"
              "def f():\n"
              "    from . import tensor\n"
              "    from treadle import loom_pb2, errors\n"
              "    import numpy\n"
              "class C:\n"
              "    def m(self):\n"
              "        def inner():\n"
              "            import treadle.framework.dtypes\n")
    module = _Module.__new__(_Module)
    module.name, module.is_package, module.tree = "treadle.framework.example", False, ast.parse(source)
    modules = _modules()
    found = sorted((fn, target) for node, fn in _imports(module) if fn
                   for target in _treadle_modules(node, module, modules))
    assert found == [("C.m.inner", "treadle.framework.dtypes"), ("f", "treadle.errors"),
                     ("f", "treadle.framework.tensor"), ("f", "treadle.loom_pb2")]


def test_find_cycle_reports_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
