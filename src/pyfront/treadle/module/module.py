"""td.Module tracks the variables and submodules reachable from its
attributes (through lists, tuples and dicts), as tf.Module does."""

import contextlib
import re

from treadle.framework.variables import Variable


def _camel_to_snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Module:
    """The base class of models and layers, as `tf.Module`: attributes that are variables, modules, or
    lists, tuples and dicts of them are tracked, so `variables`, `trainable_variables` and `submodules` find
    them (depth first, attributes in the order of their names). `td.train.Checkpoint` and `td.saved_model.save` save what a
    module tracks; `td.keras.layers` are modules."""

    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        if not name.isidentifier():
            raise ValueError(f"'{name}' is not a valid module name. Module names must be valid Python identifiers.")
        self._name = name

    @property
    def name(self):
        """The module's name: the `name` given, or the class name in snake_case."""
        return getattr(self, "_name", None) or _camel_to_snake(type(self).__name__)

    @property
    def name_scope(self):
        """A context manager, for TensorFlow compatibility: treadle's graphs carry no name scopes, so it does
        nothing."""
        return contextlib.nullcontext()

    def _walk(self, predicate, recurse_modules=True):
        """Objects satisfying `predicate` reachable from this module's attributes, once each."""
        seen, out = {id(self)}, []

        def visit(obj):
            if isinstance(obj, Variable) or isinstance(obj, Module):
                if id(obj) in seen:
                    return
                seen.add(id(obj))
                if predicate(obj):
                    out.append(obj)
                if isinstance(obj, Module) and recurse_modules:
                    for key in sorted(vars(obj)):
                        visit(vars(obj)[key])
            elif isinstance(obj, (list, tuple)):
                for item in obj:
                    visit(item)
            elif isinstance(obj, dict):
                for key in sorted(obj, key=str):
                    visit(obj[key])

        for key in sorted(vars(self)):
            visit(vars(self)[key])
        return tuple(out)

    @property
    def variables(self):
        """All variables of this module and its submodules, each once, as a tuple."""
        return self._walk(lambda o: isinstance(o, Variable))

    @property
    def trainable_variables(self):
        """The variables with `trainable=True` of this module and its submodules, as a tuple."""
        return self._walk(lambda o: isinstance(o, Variable) and o.trainable)

    @property
    def non_trainable_variables(self):
        """The variables with `trainable=False` of this module and its submodules, as a tuple."""
        return self._walk(lambda o: isinstance(o, Variable) and not o.trainable)

    @property
    def submodules(self):
        """All modules reachable from this one's attributes (not itself), each once, as a tuple."""
        return self._walk(lambda o: isinstance(o, Module))

    @classmethod
    def with_name_scope(cls, method):
        """A decorator for methods, as `tf.Module.with_name_scope`; returns the method unchanged (treadle's
        graphs carry no name scopes)."""
        return method

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
