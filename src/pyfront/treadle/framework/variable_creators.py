"""td.variable_creator_scope: functions that take over creating td.Variables
inside their scope, as TensorFlow's tf.variable_creator_scope. A creator is
called as creator(next_creator, **kwargs) and returns the variable (usually
next_creator(**kwargs), perhaps with changed arguments); the innermost
scope's creator is called first."""

import inspect
import threading


class _Stack(threading.local):
    def __init__(self):
        super().__init__()
        self.creators = []  # outermost first


_stack = _Stack()

# TensorFlow passes these to creators too; treadle's Variable takes a value
# for them only when it is None (what they mean has no counterpart here).
_TF_ONLY_KEYWORDS = ("caching_device", "variable_def", "import_scope", "constraint", "synchronization",
                     "aggregation", "experimental_enable_variable_lifting")


class VariableMetaclass(type):
    """Runs the creators of the open scopes when a Variable is made."""

    def __call__(cls, *args, **kwargs):
        creators = _stack.creators
        if not creators:
            return super().__call__(*args, **kwargs)
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(arguments)))  # self
        for key in _TF_ONLY_KEYWORDS:
            arguments.setdefault(key, None)

        def default_creator(**given):
            for key in _TF_ONLY_KEYWORDS:
                if given.pop(key, None) is not None:
                    raise TypeError(f"td.Variable: a variable creator passed {key}=..., which treadle's "
                                    "variables do not support (only None)")
            return type.__call__(cls, **given)

        creator = default_creator
        for outer in creators:
            creator = _chain(outer, creator)
        return creator(**arguments)


def _chain(creator, next_creator):
    def call(**kwargs):
        return creator(next_creator, **kwargs)
    return call


class variable_creator_scope:
    """`with td.variable_creator_scope(creator):` td.Variable(...) inside calls
    creator(next_creator, **kwargs)."""

    __slots__ = ("_creator",)

    def __init__(self, variable_creator):
        if not callable(variable_creator):
            raise TypeError(f"variable_creator_scope expects a callable creator, got {variable_creator!r}")
        self._creator = variable_creator

    def __enter__(self):
        _stack.creators.append(self._creator)
        return self

    def __exit__(self, *exc):
        popped = _stack.creators.pop()
        if popped is not self._creator:
            raise RuntimeError("variable_creator_scope blocks were exited out of order")
        return False
