"""TraceTypes: what a traced function's graph assumes of each argument.

A call is dispatched to a ConcreteFunction whose parameter types are
supertypes of the call's types (tensors by dtype and shape, Python values as
literals, containers element-wise, other objects by identity), and a new one
is traced otherwise."""

import abc
import collections.abc
import weakref

from treadle.framework import dtypes
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec


class TraceType(metaclass=abc.ABCMeta):
    """The abstract base of trace types (`td.types.TraceType`)."""

    @abc.abstractmethod
    def is_subtype_of(self, other):
        """True when every value of this type is also a value of `other`."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The most specific type of which self and all `others` are subtypes, or None."""

    @abc.abstractmethod
    def placeholder_value(self, placeholder_context=None):
        """The value the traced Python function sees for a parameter of this type."""

    def to_tensors(self, value):
        """The tensors a value of this type contributes to a call (none by default)."""
        return []

    def cast(self, value, casting_context=None):
        """`value` converted to this type, for input signatures; ValueError when it cannot be."""
        return value

    @abc.abstractmethod
    def __eq__(self, other):
        ...

    @abc.abstractmethod
    def __hash__(self):
        ...


# As in TensorFlow, a TypeSpec (TensorSpec among them) is a TraceType.
from treadle.framework.type_spec import TypeSpec  # noqa: E402
TraceType.register(TypeSpec)


class PlaceholderContext:
    """Handed to placeholder_value while tracing: makes graph placeholders."""

    def __init__(self, graph, name="arg"):
        self.graph = graph
        self.name = name

    def with_name(self, name):
        return PlaceholderContext(self.graph, name)


# ------------------------------------------------------------------ tensors

class TensorType(TraceType):
    """A tensor of a dtype and a (possibly partial) shape; also what TensorSpec means."""

    __slots__ = ("dtype", "shape", "name")

    def __init__(self, dtype, shape, name=None):
        self.dtype = dtypes.as_dtype(dtype)
        self.shape = TensorShape(shape)
        self.name = name

    @classmethod
    def from_spec(cls, spec):
        return cls(spec.dtype, spec.shape, spec.name)

    def is_subtype_of(self, other):
        # As TensorFlow's TensorSpec: an unnamed type (a call's tensor) fits a
        # trace of any name; a named one (a TensorSpec given a name) only a
        # trace of that name, so a new name traces anew and names its input.
        return (type(other) is TensorType and self.dtype == other.dtype and self.shape.is_subtype_of(other.shape)
                and (self.name is None or self.name == other.name))

    def most_specific_common_supertype(self, others):
        shape, name = self.shape, self.name
        for o in others:
            if type(o) is not TensorType or o.dtype != self.dtype:
                return None
            shape = shape.most_specific_compatible_shape(o.shape)
            name = name if o.name == name else None
        return TensorType(self.dtype, shape, name)

    def placeholder_value(self, placeholder_context=None):
        return placeholder_context.graph.add_placeholder(self.dtype, self.shape, self.name or placeholder_context.name)

    def to_tensors(self, value):
        return [value]

    def cast(self, value, casting_context=None):
        """`value` as a tensor of this type, as TensorFlow's TensorSpec casts:
        a spec that is a subtype stands for itself (get_concrete_function of
        a signature's own specs), Python values are converted, and a graph
        tensor of a less specific shape is narrowed to this one."""
        if isinstance(value, TensorSpec):
            if value.dtype == self.dtype and value.shape.is_subtype_of(self.shape):
                return value
            raise ValueError(f"Can not cast {value!r} to {self.spec()!r}")
        if not isinstance(value, Tensor):
            try:  # to this dtype, as TensorFlow converts: NumPy arrays of another dtype included
                value = convert_to_tensor(value, dtype=self.dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(str(e)) from None
        value_spec = TensorSpec(value.shape, value.dtype, self.name)
        if value.dtype != self.dtype:
            raise ValueError(f"Can not cast {value_spec!r} to {self.spec()!r}: Tensor conversion requested dtype "
                             f"{self.dtype.name} for Tensor with dtype {value.dtype.name}: {value!r}")
        shape = TensorShape(value.shape)
        if shape.is_subtype_of(self.shape):
            return value
        if self.shape.is_subtype_of(shape) and hasattr(value, "set_shape"):
            value.set_shape(self.shape)
            return value
        raise ValueError(f"Can not cast {value_spec!r} to {self.spec()!r}")

    def spec(self):
        return TensorSpec(self.shape, self.dtype, self.name)

    def __eq__(self, other):
        return (type(other) is TensorType and self.dtype == other.dtype and self.shape == other.shape
                and self.name == other.name)

    def __hash__(self):
        return hash((self.dtype, self.shape))  # names aside: equal types hash alike all the same

    def __repr__(self):
        return repr(self.spec())


# ------------------------------------------------------------------ Python values

class ExactType(TraceType):
    """A type matched by equality alone: no type but itself is its subtype
    (Python values, objects by identity, variables)."""

    __slots__ = ()

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None


class Literal(ExactType):
    """A Python primitive, matched by value with Python's `==`: as in
    TensorFlow, 1, 1.0 and True are one type and share a trace."""

    __slots__ = ("value", "_hash")

    def __init__(self, value):
        self.value = value
        self._hash = hash(value)

    def placeholder_value(self, placeholder_context=None):
        return self.value

    def cast(self, value, casting_context=None):
        if type(value) not in _PRIMITIVES or value != self.value:
            raise ValueError(f"Can not cast {value!r} to Literal[{self.value!r}]")
        return value

    def __eq__(self, other):
        return type(other) is type(self) and _equal(self.value, other.value)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Literal[{self.value!r}]"


def _equal(a, b):
    """Python's `==` as a bool, False where it gives no bool (arrays) or fails."""
    if a is b:
        return True
    try:
        return (a == b) is True
    except Exception:  # an __eq__ that raises does not make two types equal
        return False


class Weakref(ExactType):
    """Any other hashable object, held weakly: matched while it lives by
    `==` and `hash` (identity, for objects that do not define them), as
    TensorFlow's guide says; a dead object matches nothing."""

    __slots__ = ("_ref", "_hash")

    def __init__(self, obj):
        self._ref = weakref.ref(obj)
        self._hash = hash(obj)  # TypeError for unhashable objects

    def placeholder_value(self, placeholder_context=None):
        return self._ref()

    def __eq__(self, other):
        if type(other) is not Weakref:
            return False
        a, b = self._ref(), other._ref()
        return a is not None and b is not None and _equal(a, b)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Weakref[{self._ref()!r}]"


class Hashable(Literal):
    """An object that cannot be weakly referenced but is hashable: matched by equality."""

    def __repr__(self):
        return f"Hashable[{self.value!r}]"


# ------------------------------------------------------------------ containers

class SequenceType(TraceType):
    """A sequence of components, matched component by component; `_make`
    builds a value from component values."""

    __slots__ = ("components",)
    # Whether structured_input_signature shows the sequence rebuilt from its
    # components' specs (a list of TensorSpecs) rather than as this type.
    rebuilt_in_signatures = True

    def __init__(self, components):
        self.components = tuple(components)

    def _same_kind(self, other):
        return type(other) is type(self) and len(other.components) == len(self.components)

    def is_subtype_of(self, other):
        return self._same_kind(other) and all(a.is_subtype_of(b) for a, b in zip(self.components, other.components))

    def most_specific_common_supertype(self, others):
        if not all(self._same_kind(o) for o in others):
            return None
        comps = []
        for i, c in enumerate(self.components):
            s = c.most_specific_common_supertype([o.components[i] for o in others])
            if s is None:
                return None
            comps.append(s)
        return self._rebuild(comps)

    def _rebuild(self, comps):
        return type(self)(comps)

    def placeholder_value(self, placeholder_context=None):
        return self._make([c.placeholder_value(placeholder_context) for c in self.components])

    def to_tensors(self, value):
        out = []
        for c, v in zip(self.components, value):
            out.extend(c.to_tensors(v))
        return out

    def cast(self, value, casting_context=None):
        if not isinstance(value, (list, tuple)) or len(value) != len(self.components):
            # TensorFlow's words: "to tuple", "to list", "to <namedtuple name>".
            raise ValueError(f"Can not cast {value!r} to {self._kind_name()} {self!r}")
        return self._make([c.cast(v) for c, v in zip(self.components, value)])

    def _kind_name(self):
        return "sequence"

    def __eq__(self, other):
        return type(other) is type(self) and self.components == other.components

    def __hash__(self):
        return hash((type(self), self.components))


class TupleType(SequenceType):
    def _make(self, values):
        return tuple(values)

    def _kind_name(self):
        return "tuple"

    def __repr__(self):
        return f"Tuple[{', '.join(map(repr, self.components))}]"


class ListType(SequenceType):
    def _make(self, values):
        return list(values)

    def _kind_name(self):
        return "list"

    def __repr__(self):
        return f"List[{', '.join(map(repr, self.components))}]"


class NamedTupleType(SequenceType):
    __slots__ = ("cls",)

    def __init__(self, cls, components):
        super().__init__(components)
        self.cls = cls

    def _same_kind(self, other):
        return super()._same_kind(other) and other.cls is self.cls

    def _rebuild(self, comps):
        return NamedTupleType(self.cls, comps)

    def _make(self, values):
        return self.cls(*values)

    def __eq__(self, other):
        return type(other) is NamedTupleType and other.cls is self.cls and self.components == other.components

    def __hash__(self):
        return hash((self.cls, self.components))

    def __repr__(self):
        return f"{self.cls.__name__}[{', '.join(map(repr, self.components))}]"


class AttrsType(NamedTupleType):
    rebuilt_in_signatures = False

    def _rebuild(self, comps):
        return AttrsType(self.cls, comps)

    def to_tensors(self, value):
        return super().to_tensors([getattr(value, a.name) for a in self.cls.__attrs_attrs__])

    def __eq__(self, other):
        return type(other) is AttrsType and other.cls is self.cls and self.components == other.components

    __hash__ = NamedTupleType.__hash__


class CustomNestType(SequenceType):
    """A value of a class with TensorFlow's nest protocol: `__tf_flatten__()`
    gives (metadata, components) and `cls.__tf_unflatten__(metadata,
    components)` rebuilds it. The metadata is part of the type (by equality,
    so it need not be hashable); the components are matched one by one."""

    __slots__ = ("cls", "metadata", "_metadata_type")
    rebuilt_in_signatures = False

    def __init__(self, cls, metadata, components):
        super().__init__(components)
        self.cls = cls
        self.metadata = metadata
        self._metadata_type = from_value(metadata)

    def _same_kind(self, other):
        return super()._same_kind(other) and other.cls is self.cls and other._metadata_type == self._metadata_type

    def _rebuild(self, comps):
        return CustomNestType(self.cls, self.metadata, comps)

    def _make(self, values):
        return self.cls.__tf_unflatten__(self.metadata, tuple(values))

    def to_tensors(self, value):
        return super().to_tensors(value.__tf_flatten__()[1])

    def cast(self, value, casting_context=None):
        if type(value) is not self.cls:
            raise ValueError(f"Can not cast {value!r} to {self!r}")
        metadata, comps = value.__tf_flatten__()
        if from_value(metadata) != self._metadata_type or len(comps) != len(self.components):
            raise ValueError(f"Can not cast {value!r} to {self!r}: its metadata or components differ")
        return self._make([c.cast(v) for c, v in zip(self.components, comps)])

    def __eq__(self, other):
        return type(other) is CustomNestType and self._same_kind(other) and self.components == other.components

    def __hash__(self):
        return hash((self.cls, self._metadata_type, self.components))

    def __repr__(self):
        return f"{self.cls.__name__}[{self.metadata!r}; {', '.join(map(repr, self.components))}]"


def has_nest_protocol(value):
    """Whether `value`'s class has TensorFlow's __tf_flatten__/__tf_unflatten__."""
    t = type(value)
    return hasattr(t, "__tf_flatten__") and hasattr(t, "__tf_unflatten__")


class DictType(TraceType):
    """A mapping: matched key by key, in no particular order."""

    __slots__ = ("mapping", "cls")

    def __init__(self, mapping, cls=dict):
        self.mapping = dict(mapping)
        self.cls = cls

    def _same_keys(self, other):
        return type(other) is DictType and other.mapping.keys() == self.mapping.keys()

    def is_subtype_of(self, other):
        return self._same_keys(other) and all(v.is_subtype_of(other.mapping[k]) for k, v in self.mapping.items())

    def most_specific_common_supertype(self, others):
        if not all(self._same_keys(o) for o in others):
            return None
        out = {}
        for k, v in self.mapping.items():
            s = v.most_specific_common_supertype([o.mapping[k] for o in others])
            if s is None:
                return None
            out[k] = s
        return DictType(out, self.cls)

    def placeholder_value(self, placeholder_context=None):
        # Placeholders are made in sorted key order: the order to_tensors feeds them.
        made = {k: self.mapping[k].placeholder_value(placeholder_context)
                for k in sorted(self.mapping, key=_sort_key)}
        values = {k: made[k] for k in self.mapping}
        return values if self.cls is dict else _rebuild_mapping(self.cls, values)

    def to_tensors(self, value):
        out = []
        for k in sorted(self.mapping, key=_sort_key):
            out.extend(self.mapping[k].to_tensors(value[k]))
        return out

    def cast(self, value, casting_context=None):
        if not isinstance(value, collections.abc.Mapping):
            raise ValueError(f"Can not cast {value!r} to a Dict type {self!r}")
        if value.keys() != self.mapping.keys():
            raise ValueError(f"Can not cast {value!r} to a Dict type {self!r}: its keys differ")
        return {k: self.mapping[k].cast(value[k]) for k in value}

    def __eq__(self, other):
        return type(other) is DictType and self.mapping == other.mapping

    def __hash__(self):
        return hash(frozenset(self.mapping.items()))

    def __repr__(self):
        return f"Dict[{', '.join(f'{k!r}: {v!r}' for k, v in self.mapping.items())}]"


class CompositeType(TraceType):
    """An object made of named fields (a td.experimental.ExtensionType): its
    class and each field's type; its tensors are the fields' tensors in
    field order. The class builds a value from fields with `_from_fields`."""

    __slots__ = ("cls", "names", "types")

    def __init__(self, cls, names, types):
        self.cls = cls
        self.names = tuple(names)
        self.types = tuple(types)

    def _same_kind(self, other):
        return type(other) is CompositeType and other.cls is self.cls and other.names == self.names

    def is_subtype_of(self, other):
        return self._same_kind(other) and all(a.is_subtype_of(b) for a, b in zip(self.types, other.types))

    def most_specific_common_supertype(self, others):
        if not all(self._same_kind(o) for o in others):
            return None
        types = []
        for i, t in enumerate(self.types):
            s = t.most_specific_common_supertype([o.types[i] for o in others])
            if s is None:
                return None
            types.append(s)
        return CompositeType(self.cls, self.names, types)

    def placeholder_value(self, placeholder_context=None):
        return self.cls._from_fields({
            n: t.placeholder_value(placeholder_context.with_name(f"{placeholder_context.name}_{n}")
                                   if placeholder_context is not None else None)
            for n, t in zip(self.names, self.types)})

    def to_tensors(self, value):
        out = []
        for n, t in zip(self.names, self.types):
            out.extend(t.to_tensors(getattr(value, n)))
        return out

    def cast(self, value, casting_context=None):
        if type(value) is not self.cls:
            raise ValueError(f"Can not cast {value!r} to {self!r}")
        return self.cls._from_fields({n: t.cast(getattr(value, n)) for n, t in zip(self.names, self.types)})

    def __eq__(self, other):
        return self._same_kind(other) and self.types == other.types

    def __hash__(self):
        return hash((self.cls, self.names, self.types))

    def __repr__(self):
        return f"{self.cls.__name__}[{', '.join(f'{n}: {t!r}' for n, t in zip(self.names, self.types))}]"


def _sort_key(k):
    return (type(k).__name__, k) if not isinstance(k, str) else ("str", k)


def _rebuild_mapping(cls, values):
    try:
        return cls(values)
    except TypeError:
        return values


# ------------------------------------------------------------------ from values

class TracingContext:
    """Passed to `__tf_tracing_type__(self, context)`."""


_CONTEXT = TracingContext()
_PRIMITIVES = (type(None), bool, int, float, str, bytes, complex)


def from_value(value, context=_CONTEXT):
    """The TraceType of an argument value."""
    t = type(value)
    if t in _PRIMITIVES:
        return Literal(value)
    if isinstance(value, Tensor):
        return TensorType(value.dtype, value.shape)
    if isinstance(value, TensorSpec):
        return TensorType.from_spec(value)
    if isinstance(value, TraceType):
        return value
    if isinstance(value, weakref.ref):
        raise TypeError(f"weakref input {value!r} is not supported by td.function: pass the object it refers to "
                        "(a weak reference is neither a value to trace by nor a tensor)")
    protocol = getattr(value, "__tf_tracing_type__", None)
    if protocol is not None:  # td.Variable, td.IndexedSlices, datasets, user classes
        return protocol(context)
    if t is list:
        return ListType([from_value(v, context) for v in value])
    if t is tuple:
        return TupleType([from_value(v, context) for v in value])
    if isinstance(value, tuple) and hasattr(t, "_fields"):
        return NamedTupleType(t, [from_value(v, context) for v in value])
    if has_nest_protocol(value):
        metadata, components = value.__tf_flatten__()
        return CustomNestType(t, metadata, [from_value(c, context) for c in components])
    if hasattr(t, "__attrs_attrs__"):
        return AttrsType(t, [from_value(getattr(value, a.name), context) for a in t.__attrs_attrs__])
    if isinstance(value, collections.abc.Mapping):
        return DictType({k: from_value(v, context) for k, v in value.items()}, t)
    if isinstance(value, (list, tuple)):
        return ListType([from_value(v, context) for v in value])
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"Could not generate a generic TraceType for {value!r} of type {t.__name__}: it is not "
                        "hashable. Please verify that it is immutable/hashable, or implement the tracing protocol "
                        "(__tf_tracing_type__) for it.") from None
    try:
        return Weakref(value)
    except TypeError:  # hashable but not weakly referenceable
        return Hashable(value)


def from_spec_structure(value):
    """The TraceType of an input_signature entry (TensorSpecs in a structure)."""
    return from_value(value)
