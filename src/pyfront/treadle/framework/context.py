"""Where ops go: run now (eager), or into the graph being traced.

Graph construction registers itself here (see framework/func_graph.py); until
a graph is being built, every op runs eagerly through the C++ core."""

import threading


class _Context(threading.local):
    def __init__(self):
        super().__init__()
        self.graph_stack = []  # FuncGraphs being built, innermost last
        self.init_scope_depth = 0


_context = _Context()


def current_graph():
    """The graph ops are added to, or None when they run eagerly."""
    stack = _context.graph_stack
    if not stack or _context.init_scope_depth:
        return None
    return stack[-1]


def executing_eagerly():
    return current_graph() is None


def push_graph(graph):
    _context.graph_stack.append(graph)


def pop_graph(graph):
    top = _context.graph_stack.pop()
    assert top is graph, "graph stack corrupted"


class init_scope:
    """Ops inside run eagerly even while a function is being traced (used to
    create variables and other state once, outside the graph)."""

    def __enter__(self):
        _context.init_scope_depth += 1
        return self

    def __exit__(self, *exc):
        _context.init_scope_depth -= 1
        return False


def graph_being_built():
    """The innermost graph under construction, even inside init_scope."""
    stack = _context.graph_stack
    return stack[-1] if stack else None


def thread_state():
    """What a thread that continues this thread's work must see: the graphs
    being built and the init_scope depth (td.distribute's replica threads)."""
    return list(_context.graph_stack), _context.init_scope_depth


def adopt_thread_state(state):
    """Makes this thread's state `state` (from thread_state() of another thread)."""
    graphs, depth = state
    _context.graph_stack = list(graphs)
    _context.init_scope_depth = depth
