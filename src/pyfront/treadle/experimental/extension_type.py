"""td.experimental.ExtensionType: user-defined types made of tensors and
Python values, declared by annotated fields (TensorFlow's
tf.experimental.ExtensionType, which its tf.function guide recommends for
custom argument types).

A subclass gets a constructor taking its fields (positionally or by name,
with class-level defaults), fields annotated td.Tensor converted to tensors,
immutability, field-wise equality and a repr. A td.function traces it by its
TraceType (its class and each field's type: tensors by dtype and shape), so
values that differ only in tensor contents share a trace; it can be returned
from a td.function and carried through graph conditionals and loops."""

import typing

import numpy as np

from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.function import trace_type
from treadle.util import nest

_NO_DEFAULT = object()


def _field_annotations(cls):
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: keep the raw ones
        hints = {}
        for base in reversed(cls.__mro__):
            hints.update(getattr(base, "__annotations__", {}))
    return {name: ann for name, ann in hints.items()
            if not name.startswith("_") and typing.get_origin(ann) is not typing.ClassVar}


class ExtensionType:
    """Base class of user-defined composite types (see the module doc)."""

    _td_extension_type = True
    _td_fields = ()
    _td_annotations = {}
    _td_defaults = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        annotations = _field_annotations(cls)
        cls._td_fields = tuple(annotations)
        cls._td_annotations = annotations
        cls._td_defaults = {n: getattr(cls, n) for n in annotations if hasattr(cls, n)}
        if "__init__" not in cls.__dict__:
            cls.__init__ = ExtensionType._default_init

    def _default_init(self, *args, **kwargs):
        fields = type(self)._td_fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} field arguments but {len(args)} were given")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{name}'")
            if name in values:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument '{name}'")
            values[name] = value
        for name in fields:
            if name not in values:
                default = type(self)._td_defaults.get(name, _NO_DEFAULT)
                if default is _NO_DEFAULT:
                    raise TypeError(f"{type(self).__name__}() missing required field '{name}'")
                values[name] = default
        for name, value in values.items():
            object.__setattr__(self, name, _converted(type(self)._td_annotations[name], value, name))

    @classmethod
    def _from_fields(cls, values):
        obj = object.__new__(cls)
        for name in cls._td_fields:
            object.__setattr__(obj, name, values[name])
        return obj

    def __setattr__(self, name, value):
        if name in type(self)._td_fields and name not in self.__dict__:
            object.__setattr__(self, name, _converted(type(self)._td_annotations[name], value, name))
            return
        raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom constructor of ExtensionType.")

    def __delattr__(self, name):
        raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom constructor of ExtensionType.")

    def __repr__(self):
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self)._td_fields)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return False
        return all(_values_equal(getattr(self, n), getattr(other, n)) for n in type(self)._td_fields)

    __hash__ = None  # as TensorFlow's: compared by value, not hashable

    # ---------------------------------------------------------- tracing protocol
    def __tf_tracing_type__(self, context):
        names = type(self)._td_fields
        return trace_type.CompositeType(type(self), names,
                                        [trace_type.from_value(getattr(self, n), context) for n in names])

    # ---------------------------------------------------------- parts (function outputs, loop variables)
    def _to_components(self):
        return [leaf for n in type(self)._td_fields for leaf in nest.flatten(getattr(self, n))
                if isinstance(leaf, Tensor)]

    def _from_components(self, components):
        it = iter(components)
        values = {}
        for n in type(self)._td_fields:
            value = getattr(self, n)
            leaves = [next(it) if isinstance(leaf, Tensor) else leaf for leaf in nest.flatten(value)]
            values[n] = nest.pack_sequence_as(value, leaves)
        return type(self)._from_fields(values)


def _converted(annotation, value, name):
    if annotation is Tensor and not isinstance(value, Tensor):
        try:
            return convert_to_tensor(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"field '{name}' must be a tensor, or convertible to one: {e}") from None
    return value


def _values_equal(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if type(a) is not EagerTensor or type(b) is not EagerTensor:
            raise TypeError("ExtensionType == compares eager tensors only (inside a td.function, compare the "
                            "fields with td.equal)")
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a.numpy(), b.numpy()))
    return a == b


__all__ = ["ExtensionType"]
