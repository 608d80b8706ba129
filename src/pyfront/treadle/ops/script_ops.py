"""td.py_function: calls a Python function from a graph when it runs."""

import functools
import itertools
import threading

from treadle import _core, errors
from treadle.framework import context, dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, convert_to_tensor

PUBLIC = {"": ["py_function"]}

_registry = {}  # token -> (func, Tout)
_lock = threading.Lock()
_tokens = itertools.count()


def _normalize_outputs(result, tout):
    """The function's result as a list of tensors of the declared dtypes."""
    if tout is None:
        return []
    single = not isinstance(tout, (list, tuple))
    touts = [tout] if single else list(tout)
    values = [result] if single else (list(result) if isinstance(result, (list, tuple)) else [result])
    if len(values) != len(touts):
        raise ValueError(f"py_function returned {len(values)} values but Tout lists {len(touts)}")
    return [convert_to_tensor(v, dtype=dtypes.as_dtype(t)) for v, t in zip(values, touts)]


def _dispatch(token, args):
    """Called by the C++ PyFunc kernel (with the GIL held). A result that does
    not fit Tout is the graph's error (TensorFlow's InvalidArgumentError,
    naming the function the py_function ran in)."""
    func, tout, graph_name = _registry[token]
    with context.init_scope():
        result = func(*args)
        try:
            return _normalize_outputs(result, tout)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"Graph execution error:\n\nthe py_function in {graph_name} returned a value that "
                            f"does not fit its Tout: {e}") from None


_core._set_py_func_dispatcher(_dispatch)


def _graph_path(graph):
    """Where a py_function is: its graph, in the graphs around it ("cond_false in test_fn")."""
    names = []
    while graph is not None:
        names.append(graph.name)
        graph = graph.outer_graph
    return " in ".join(names) or "a graph"


def _run(func, inp, Tout, name):
    inp = [] if inp is None else list(inp)
    tensors = [convert_to_tensor(x) for x in inp]
    graph = context.current_graph()
    if graph is None and all(type(t) is EagerTensor for t in tensors):
        outs = _normalize_outputs(func(*tensors), Tout)
    else:
        with _lock:
            token = f"pyfunc_{next(_tokens)}"
            _registry[token] = (func, Tout, _graph_path(graph))
        touts = [] if Tout is None else ([Tout] if not isinstance(Tout, (list, tuple)) else list(Tout))
        outs = execute("PyFunc", tensors, {"token": token, "Tout": [dtypes.as_dtype(t) for t in touts]}, name=name)
    if Tout is None:
        return None
    if not isinstance(Tout, (list, tuple)):
        return outs[0]
    return list(outs)


def py_function(func=None, inp=None, Tout=None, name=None):
    """Wraps a Python function so it runs eagerly even inside a traced graph.
    Usable as `py_function(f, inp=[x], Tout=td.float32)` or as a decorator
    `@py_function(Tout=td.float32)`."""
    if func is None:
        def decorator(f):
            @functools.wraps(f)
            def wrapper(*args):
                return _run(f, args, Tout, name)
            return wrapper
        return decorator
    return _run(func, inp, Tout, name)

