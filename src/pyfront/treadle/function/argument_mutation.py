"""The check that a traced function left its Python arguments alone.

A td.function runs its Python body once, at trace time, on copies of its
list and dict arguments, so an append or a key set there would be lost on
every call. As TensorFlow does, tracing such a function raises ValueError
naming the arguments it modified."""

import inspect


def snapshot(value):
    """The containers of `value` and what they hold, to compare after the call."""
    if isinstance(value, list):
        return (list, value, [snapshot(v) for v in value])
    if isinstance(value, dict):
        return (dict, value, [(k, snapshot(v)) for k, v in value.items()])
    if isinstance(value, tuple):
        return (tuple, value, [snapshot(v) for v in value])
    return (None, value, None)


def mutated(before, value):
    """Whether `value` (the object that `before` snapshotted) changed since."""
    kind, original, parts = before
    if kind is None:
        return value is not original
    if value is not original and kind is not tuple:
        return True
    if kind is dict:
        if list(value.keys()) != [k for k, _ in parts]:
            return True
        return any(mutated(p, value[k]) for k, p in parts)
    if len(value) != len(parts):
        return True
    return any(mutated(p, v) for p, v in zip(parts, value))


def check(python_function, before, arguments):
    """Raises ValueError if the call changed any of `arguments` ({name: value})
    from their snapshots `before` ({name: snapshot})."""
    changed = [name for name, snap in before.items() if mutated(snap, arguments[name])]
    if changed:
        name = getattr(python_function, "__qualname__", getattr(python_function, "__name__", python_function))
        try:
            signature = inspect.signature(python_function)
        except (TypeError, ValueError):
            signature = "(...)"
        raise ValueError(f"{name}{signature} should not modify its Python input arguments. Modified argument(s): "
                         f"{', '.join(changed)}")
