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
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                _check_sanitized_names(list(value))
            params.append(Parameter(name, kind, trace_type.from_value(value)))
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
            if p.kind is inspect.Parameter.VAR_POSITIONAL and isinstance(p.type, trace_type.SequenceType):
                # As TensorFlow names them: args_0, args_1, ...
                out[p.name] = p.type._make([c.placeholder_value(trace_type.PlaceholderContext(graph, f"{p.name}_{i}"))
                                            for i, c in enumerate(p.type.components)])
                continue
            if p.kind is inspect.Parameter.VAR_KEYWORD and isinstance(p.type, trace_type.DictType):
                # Each keyword's placeholders are named after it.
                out[p.name] = {k: v.placeholder_value(trace_type.PlaceholderContext(graph, str(k)))
                               for k, v in p.type.mapping.items()}
                continue
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
    if isinstance(t, trace_type.ExactType):
        return t
    if isinstance(t, trace_type.SequenceType):
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


def _only_subtype_is_itself(t):
    """Whether no type but `t` itself is a subtype of `t` (a tensor type of a
    fully defined shape, a literal, an identity...): such a traced type is
    found by an exact lookup alone, never by a scan."""
    if type(t) is trace_type.TensorType:  # a named one is also the type of unnamed calls
        return t.shape.is_fully_defined() and t.name is None
    if isinstance(t, trace_type.ExactType):
        return True
    if isinstance(t, trace_type.SequenceType):
        return all(_only_subtype_is_itself(c) for c in t.components)
    if isinstance(t, trace_type.DictType):
        return all(_only_subtype_is_itself(v) for v in t.mapping.values())
    return False  # a user TraceType: its subtypes are its own business


def is_specific(ftype):
    """Whether only calls of exactly `ftype` match a trace of it."""
    return all(_only_subtype_is_itself(p.type) for p in ftype.parameters)


class FunctionCache:
    """Traced ConcreteFunctions by FunctionType, at most `capacity` of them.

    A lookup finds the most specific traced type that is a supertype of the
    call's type. Every traced type is in one dict; only the general ones
    (types with subtypes other than themselves: unknown dimensions, user
    TraceTypes) are also indexed by skeleton (shape-free keys) and scanned.
    A miss therefore costs the same however many specific shapes were traced.
    Calls matching a general trace leave no key behind (reduce_retracing keeps
    no per-call entries).

    Past `capacity`, the least recently used traces are evicted (evict()),
    in batches of an eighth so that eviction costs O(log n) per trace."""

    def __init__(self):
        self._exact = {}        # every traced FunctionType -> concrete
        self._general = {}      # skeleton -> {FunctionType: concrete}, general types only
        self._unindexed = {}    # general types with user-defined TraceTypes (no skeleton)
        self._last_use = {}     # FunctionType -> use stamp (the caller's clock)
        self._by_skeleton = {}  # skeleton -> {FunctionType: None}, every type (for generalize)

    def _candidates(self, ftype):
        key = skeleton_key(ftype)
        if key is None:  # a user TraceType in the call: any general trace may be its supertype
            found = [e for d in self._general.values() for e in d.items()]
        else:
            found = list(self._general.get(key, {}).items())
        return found + list(self._unindexed.items())

    def lookup(self, ftype, stamp=0):
        """The concrete function for a call of type `ftype`, or None."""
        hit = self._exact.get(ftype)
        if hit is not None:
            self._last_use[ftype] = stamp
            return hit
        best_type = best = None
        for t, c in self._candidates(ftype):
            if ftype.is_subtype_of(t) and (best_type is None or t.is_subtype_of(best_type)):
                best_type, best = t, c
        if best is not None:
            self._last_use[best_type] = stamp
        return best

    def add(self, ftype, concrete, stamp=0):
        self._exact[ftype] = concrete
        self._last_use[ftype] = stamp
        self._by_skeleton.setdefault(skeleton_key(ftype), {})[ftype] = None
        if not is_specific(ftype):
            key = skeleton_key(ftype)
            (self._unindexed if key is None else self._general.setdefault(key, {}))[ftype] = concrete

    def evict(self, capacity, last_use_of=None):
        """Evicts least recently used traces (by stamp; `last_use_of(concrete)`
        may report a later use seen elsewhere) until at most capacity - capacity
        // 8 remain, once there are more than `capacity`. Returns the evicted
        concrete functions."""
        if len(self._exact) <= capacity:
            return []
        def stamp(item):
            t, c = item
            later = last_use_of(c) if last_use_of else None
            return max(self._last_use[t], later or 0)
        keep = capacity - capacity // 8
        items = sorted(self._exact.items(), key=stamp)
        evicted = items[:len(items) - keep]
        for t, _ in evicted:
            del self._exact[t]
            del self._last_use[t]
            key = skeleton_key(t)
            _discard(self._by_skeleton, key, t)
            if key is None:
                self._unindexed.pop(t, None)
            else:
                _discard(self._general, key, t)
        return [c for _, c in evicted]

    def generalize(self, ftype):
        """The most specific common supertype of ftype and the traced types of
        its skeleton (for reduce_retracing)."""
        general = ftype
        key = skeleton_key(ftype)
        for t in (self._exact if key is None else self._by_skeleton.get(key, ())):
            s = general.most_specific_common_supertype([t])
            if s is not None:
                general = s
        return general

    def types(self):
        return list(self._exact)

    def concrete_functions(self):
        return list(self._exact.values())

    def __len__(self):
        return len(self._exact)


def _discard(groups, key, t):
    group = groups.get(key)
    if group is not None:
        group.pop(t, None)
        if not group:
            del groups[key]


def sanitized_name(name):
    """An argument name as a graph input name (TensorFlow's rule): letters,
    digits and underscores, starting with a letter, in lower case."""
    swapped = "".join(c if c.isalnum() else "_" for c in str(name))
    return (swapped if swapped[:1].isalpha() else "arg_" + swapped).lower()


def _check_sanitized_names(keywords):
    """Keyword arguments (**kwargs) become graph inputs by their sanitized
    names; two that become one name are refused, as in TensorFlow."""
    seen = {}
    for key in keywords:
        other = seen.setdefault(sanitized_name(key), key)
        if other != key:
            raise ValueError(f"Name collision after sanitization. Please rename td.function input parameters: "
                             f"{other!r} and {key!r} are both {sanitized_name(key)!r} as graph inputs.")

