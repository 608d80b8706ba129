"""FunctionType: a function's parameters with the TraceType of each, the unit
of dispatch. Binding follows Python (positional, keyword, defaults, *args,
**kwargs); the `self` of a method is bound before and is not a parameter."""

import inspect

from treadle.function import trace_type

_KIND_NAMES = {
    inspect.Parameter.POSITIONAL_ONLY: "POSITIONAL_ONLY",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "POSITIONAL_OR_KEYWORD",
    inspect.Parameter.VAR_POSITIONAL: "VAR_POSITIONAL",
    inspect.Parameter.KEYWORD_ONLY: "KEYWORD_ONLY",
    inspect.Parameter.VAR_KEYWORD: "VAR_KEYWORD",
}


class Parameter:
    __slots__ = ("name", "kind", "type")

    def __init__(self, name, kind, type_):
        self.name = name
        self.kind = kind
        self.type = type_

    @property
    def kind_name(self):
        return _KIND_NAMES[self.kind]

    @property
    def value(self):  # what printing shows for the parameter
        return self.type

    def __eq__(self, other):
        return (isinstance(other, Parameter) and self.name == other.name and self.kind == other.kind
                and self.type == other.type)

    def __hash__(self):
        return hash((self.name, self.kind, self.type))

    def __repr__(self):
        return self.name if self.type is None else f"{self.name}: {self.type!r}"


class FunctionType:
    """Ordered parameters, each with a TraceType, and (for a traced function)
    the type of its output. The output is not part of dispatch: two types with
    the same parameters are equal."""

    __slots__ = ("parameters", "output", "_hash")

    def __init__(self, parameters, output=None):
        self.parameters = tuple(parameters)
        self.output = output
        self._hash = hash(self.parameters)

    def with_output(self, output):
        return FunctionType(self.parameters, output)

    @classmethod
    def from_bound(cls, bound):
        sig = bound.signature
        params = []
        for name, value in bound.arguments.items():
            params.append(Parameter(name, sig.parameters[name].kind, trace_type.from_value(value)))
        return cls(params)

    def _same_names(self, other):
        return (len(self.parameters) == len(other.parameters)
                and all(a.name == b.name and a.kind == b.kind for a, b in zip(self.parameters, other.parameters)))

    def is_subtype_of(self, other):
        return self._same_names(other) and all(
            a.type.is_subtype_of(b.type) for a, b in zip(self.parameters, other.parameters))

    def most_specific_common_supertype(self, others):
        if not all(self._same_names(o) for o in others):
            return None
        params = []
        for i, p in enumerate(self.parameters):
            t = p.type.most_specific_common_supertype([o.parameters[i].type for o in others])
            if t is None:
                return None
            params.append(Parameter(p.name, p.kind, t))
        return FunctionType(params)

    def placeholder_arguments(self, graph):
        """{name: value the Python function sees}, with graph placeholders for tensors."""
        out = {}
        for p in self.parameters:
            ctx = trace_type.PlaceholderContext(graph, p.name)
            out[p.name] = p.type.placeholder_value(ctx)
        return out

    def flatten_tensors(self, arguments):
        """The tensors of bound `arguments` in placeholder order."""
        flat = []
        for p in self.parameters:
            flat.extend(p.type.to_tensors(arguments[p.name]))
        return flat

    def __eq__(self, other):
        return isinstance(other, FunctionType) and self.parameters == other.parameters

    def __hash__(self):
        return self._hash

    def __repr__(self):
        text = f"({', '.join(map(repr, self.parameters))})"
        return text if self.output is None else f"{text} -> {self.output!r}"


def _skeleton(t):
    """A hashable key equal for a type and all its sub- and supertypes: tensor
    types keep only their dtype, built-in exact-match types themselves.
    None for types whose subtyping it cannot predict (user TraceTypes)."""
    if isinstance(t, trace_type.TensorType):
        return ("T", t.dtype)
    if type(t) in (trace_type.Literal, trace_type.Hashable, trace_type.Weakref, trace_type.VariableType):
        return t
    if isinstance(t, trace_type._Sequence):
        parts = tuple(_skeleton(c) for c in t.components)
        if any(p is None for p in parts):
            return None
        return (type(t), getattr(t, "cls", None), parts)
    if isinstance(t, trace_type.DictType):
        items = []
        for k in sorted(t.mapping, key=trace_type._sort_key):
            part = _skeleton(t.mapping[k])
            if part is None:
                return None
            items.append((k, part))
        return ("D", tuple(items))
    return None


def skeleton_key(ftype):
    parts = []
    for p in ftype.parameters:
        part = _skeleton(p.type)
        if part is None:
            return None
        parts.append((p.name, p.kind, part))
    return tuple(parts)


class FunctionCache:
    """Traced ConcreteFunctions by FunctionType; a lookup finds the most
    specific traced type that is a supertype of the call's type. Candidates
    are found through the types' skeletons (shape-free keys), so a lookup
    does not scan every trace."""

    def __init__(self):
        self._exact = {}
        self._by_skeleton = {}  # skeleton -> [(FunctionType, concrete)]
        self._unindexed = []    # entries with user-defined TraceTypes
        self._entries = []      # (FunctionType, concrete), in trace order

    def _candidates(self, ftype):
        key = skeleton_key(ftype)
        if key is None:
            return self._entries
        return self._by_skeleton.get(key, []) + self._unindexed

    def lookup(self, ftype):
        hit = self._exact.get(ftype)
        if hit is not None:
            return hit
        candidates = [(t, c) for t, c in self._candidates(ftype) if ftype.is_subtype_of(t)]
        if not candidates:
            return None
        best_type, best = candidates[0]
        for t, c in candidates[1:]:
            if t.is_subtype_of(best_type):
                best_type, best = t, c
        self._exact[ftype] = best
        return best

    def add(self, ftype, concrete):
        entry = (ftype, concrete)
        self._entries.append(entry)
        key = skeleton_key(ftype)
        if key is None:
            self._unindexed.append(entry)
        else:
            self._by_skeleton.setdefault(key, []).append(entry)
        self._exact[ftype] = concrete

    def generalize(self, ftype):
        """The most specific common supertype of ftype and the traced types it
        relates to (for reduce_retracing)."""
        general = ftype
        for t, _ in self._candidates(ftype):
            s = general.most_specific_common_supertype([t])
            if s is not None:
                general = s
        return general

    def types(self):
        return [t for t, _ in self._entries]

    def __len__(self):
        return len(self._entries)
