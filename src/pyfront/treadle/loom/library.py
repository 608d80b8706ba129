"""A loom's functions in the libraries of the graphs that run it.

The Loom ops (LoomRun, the unrolled steps) name their loom's functions in a
list(func) attr, like any op that calls library functions; so a graph that
holds a Loom op holds those functions in its library (FuncGraph.add_function),
and its GraphDef is an ordinary one."""

import types

from treadle.framework import context

_NO_CALLS = types.SimpleNamespace(functions=types.MappingProxyType({}))


class LoadedFunction:
    """A function of a loaded loom's library: a _core.LibraryFunction with no
    Python graph behind it (what it calls is in the same library, each a
    LoadedFunction too), as FuncGraph.add_function takes it."""

    def __init__(self, library_function):
        self.name = library_function.name
        self.graph = _NO_CALLS
        self._library_function = library_function

    def library_function(self):
        return self._library_function

    def __repr__(self):
        return f"<loaded loom function {self.name}>"


def add_to_graph(graph, functions):
    """Makes `functions` part of `graph`'s library (nothing for eager code, graph None)."""
    if graph is not None:
        for fn in functions:
            graph.add_function(fn)


def add_to_current_graph(functions):
    add_to_graph(context.current_graph(), functions)


def functions_of(graph, names):
    """The functions `names` name in the library of `graph` (where a Loom op's
    gradient finds those of the op it differentiates); [] for eager ops."""
    functions = getattr(graph, "functions", None)
    if functions is None:
        return []
    return [functions[n] for n in names]
