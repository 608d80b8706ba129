"""td.TypeSpec: the abstract base of specs that describe values a function
accepts (TensorSpec is one). As in TensorFlow, every TypeSpec is also a trace
type (function/trace_type.py registers it as a td.types.experimental.TraceType)."""

import abc


class TypeSpec(metaclass=abc.ABCMeta):
    """A description of a kind of value: subtyping and common supertypes, as trace types have."""

    __slots__ = ()

    @property
    @abc.abstractmethod
    def value_type(self):
        """The Python type of the values this spec describes."""

    @abc.abstractmethod
    def is_subtype_of(self, other):
        """True when every value of this spec is also a value of `other`."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The most specific spec that this and all `others` are subtypes of, or None."""

    def is_compatible_with(self, spec_or_value):
        return self.is_subtype_of(spec_or_value) or (hasattr(spec_or_value, "is_subtype_of") and
                                                     spec_or_value.is_subtype_of(self))
