# cython: language_level=3, boundscheck=False, wraparound=False
"""Nested structures (tf.nest semantics), in Cython because every function
call flattens its arguments and packs its outputs.

Sequences are lists, tuples, namedtuples, dicts and other mappings (flattened
in sorted key order), and attrs classes (in field order). Everything else,
None included, is a leaf."""

from collections.abc import Mapping


cdef inline bint _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


cdef inline bint _is_attrs(obj):
    return hasattr(type(obj), "__attrs_attrs__")


# type -> whether nest descends into its instances. Looking a type up here is
# much cheaper than the isinstance checks against Mapping's ABC.
cdef dict _nested_types = {list: True, tuple: True, dict: True, int: False, float: False, str: False,
                           bytes: False, bool: False, type(None): False}


cpdef bint is_nested(obj):
    """True when `obj` is a structure nest descends into."""
    cdef type t = type(obj)
    cached = _nested_types.get(t)
    if cached is not None:
        return cached
    result = isinstance(obj, (list, tuple, Mapping)) or _is_attrs(obj)
    _nested_types[t] = result
    return result


cdef list _sorted_keys(obj):
    try:
        return sorted(obj)
    except TypeError:
        raise TypeError(f"nest only supports dicts with sortable keys, got keys {list(obj)!r}")


cdef list _children(obj):
    """The direct children of a structure, in flattening order."""
    cdef type t = type(obj)
    if t is list or t is tuple:
        return list(obj)
    if isinstance(obj, Mapping):
        return [obj[k] for k in _sorted_keys(obj)]
    if isinstance(obj, (list, tuple)):
        return list(obj)
    if _is_attrs(obj):
        return [getattr(obj, a.name) for a in type(obj).__attrs_attrs__]
    raise TypeError(f"not a structure: {obj!r}")


cdef void _flatten_into(obj, list out) except *:
    cdef type t = type(obj)
    if t is list or t is tuple:
        for x in <object>obj:
            if is_nested(x):
                _flatten_into(x, out)
            else:
                out.append(x)
        return
    if is_nested(obj):
        for x in _children(obj):
            _flatten_into(x, out)
    else:
        out.append(obj)


cpdef list flatten(structure):
    """The leaves of `structure` in order (a leaf alone gives [leaf])."""
    cdef list out = []
    _flatten_into(structure, out)
    return out


cdef object _rebuild(obj, list children):
    """A structure of the same kind as `obj` with `children` in its places."""
    cdef type t = type(obj)
    if t is list:
        return children
    if t is tuple:
        return tuple(children)
    if _is_namedtuple(obj):
        return t(*children)
    if isinstance(obj, Mapping):
        keys = _sorted_keys(obj)
        pairs = dict(zip(keys, children))
        if t is dict:
            return {k: pairs[k] for k in obj}  # keep the caller's key order
        try:
            return t((k, pairs[k]) for k in obj)
        except TypeError:
            return {k: pairs[k] for k in obj}
    if isinstance(obj, (list, tuple)):
        return t(children)
    if _is_attrs(obj):
        return t(*children)
    raise TypeError(f"cannot rebuild {obj!r}")


cdef object _pack(structure, list flat, Py_ssize_t* pos):
    cdef list children
    if not is_nested(structure):
        if pos[0] >= len(flat):
            raise ValueError(f"Could not pack sequence: structure needs more than {len(flat)} leaves")
        v = flat[pos[0]]
        pos[0] += 1
        return v
    children = [_pack(c, flat, pos) for c in _children(structure)]
    return _rebuild(structure, children)


cpdef pack_sequence_as(structure, flat_sequence):
    """`structure` with its leaves replaced, in order, by `flat_sequence`."""
    cdef list flat = list(flat_sequence)
    cdef Py_ssize_t pos = 0
    result = _pack(structure, flat, &pos)
    if pos != len(flat):
        raise ValueError(f"Could not pack sequence: structure has {pos} leaves but {len(flat)} values were given")
    return result


def map_structure(func, structure, *more):
    """Applies func to the leaves of one or more structures of the same shape."""
    for other in more:
        assert_same_structure(structure, other)
    flats = [flatten(structure)] + [flatten(o) for o in more]
    return pack_sequence_as(structure, [func(*xs) for xs in zip(*flats)])


cdef str _kind(obj):
    if not is_nested(obj):
        return "leaf"
    if isinstance(obj, Mapping):
        return "mapping"
    if _is_namedtuple(obj) or _is_attrs(obj):
        return type(obj).__qualname__
    return type(obj).__name__


cdef void _assert_same(a, b, bint check_types, str path) except *:
    na, nb = is_nested(a), is_nested(b)
    if na != nb:
        raise ValueError(f"The two structures don't have the same nested structure at {path or 'the top'}: "
                         f"{_kind(a)} vs {_kind(b)}.")
    if not na:
        return
    if check_types and _kind(a) != _kind(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        raise TypeError(f"The two structures don't have the same sequence type at {path or 'the top'}: "
                        f"{type(a).__name__} vs {type(b).__name__}.")
    if isinstance(a, Mapping) and isinstance(b, Mapping) and set(a) != set(b):
        raise ValueError(f"The two structures don't have the same keys at {path or 'the top'}: "
                         f"{sorted(map(str, a))} vs {sorted(map(str, b))}.")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(f"The two structures don't have the same number of elements at {path or 'the top'}: "
                         f"{len(ca)} vs {len(cb)}.")
    for i in range(len(ca)):
        _assert_same(ca[i], cb[i], check_types, f"{path}[{i}]")


cpdef assert_same_structure(nest1, nest2, bint check_types=True):
    """Raises ValueError/TypeError naming where the two structures differ."""
    _assert_same(nest1, nest2, check_types, "")
