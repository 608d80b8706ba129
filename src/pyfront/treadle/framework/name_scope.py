"""td.name_scope: a prefix for the names of the ops made inside it, as
TensorFlow 2's tf.name_scope. Eagerly it only tracks the scope's name (eager
ops have no names); while tracing, each graph keeps its own current scope and
makes a scope name unique within the graph (`block`, then `block_1`)."""

import re
import threading

from treadle.framework import context

_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class _EagerScope(threading.local):
    def __init__(self):
        super().__init__()
        self.name = ""


_eager = _EagerScope()


def _graph_scope_name(graph, name):
    """The full name of scope `name` opened inside `graph`'s current scope,
    made unique in that graph."""
    if name.endswith("/"):
        return name  # an absolute scope, as returned by an earlier name_scope
    if not _VALID_SCOPE_NAME.match(name) or name.startswith(("_", "-", "/", "\\", ">")):
        raise ValueError(f"'{name}' is not a valid scope name")
    used = graph.used_scope_names
    base = graph.name_scope_prefix + name
    count = used.get(base.lower(), 0)
    used[base.lower()] = count + 1
    return (base if count == 0 else f"{base}_{count}") + "/"


class name_scope:
    """`with td.name_scope("block") as scope:` (scope is "block/", or
    "outer/block/" inside another scope). Ops made inside are named
    "<scope><op name>". A name ending in "/" reopens that scope exactly."""

    __slots__ = ("_name", "_graph", "_old")

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError(f"name for name_scope must be a string, got {name!r}")
        self._name = name
        self._graph = self._old = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        graph = context.current_graph()
        self._graph = graph
        if graph is None:
            self._old = _eager.name
            if not self._name:
                scope = ""
            elif self._name.endswith("/"):
                scope = self._name
            else:
                scope = self._old + self._name + "/"
            _eager.name = scope
            return scope
        self._old = graph.name_scope_prefix
        scope = _graph_scope_name(graph, self._name) if self._name else ""
        graph.name_scope_prefix = scope
        return scope

    def __exit__(self, *exc):
        if self._graph is None:
            _eager.name = self._old
        else:
            self._graph.name_scope_prefix = self._old
        return False
