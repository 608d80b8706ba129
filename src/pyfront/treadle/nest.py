"""td.nest: TensorFlow's tf.nest on treadle's nested structures (lists,
tuples, namedtuples, dicts and other mappings in sorted key order, attrs
classes). Composite values (td.RaggedTensor, td.SparseTensor, td.IndexedSlices,
extension types) are leaves, or with expand_composites=True their component
tensors, in the order a td.function passes them."""

from treadle.framework.tensor import Tensor as _Tensor
from treadle.function import trace_type as _trace_type
from treadle.util import nest as _nest


def is_nested(seq):
    """True for a structure nest descends into (not a leaf)."""
    return _nest.is_nested(seq)


def _components(leaf):
    """The component tensors of a composite leaf, or None for other leaves."""
    if isinstance(leaf, _Tensor) or getattr(leaf, "__tf_tracing_type__", None) is None:
        return None
    to_tensors = getattr(_trace_type.from_value(leaf), "to_tensors", None)
    return None if to_tensors is None else to_tensors(leaf)


def _expanded(leaves):
    out = []
    for leaf in leaves:
        parts = _components(leaf)
        out.extend([leaf] if parts is None else _expanded(parts))
    return out


def flatten(structure, expand_composites=False):
    """The leaves of `structure` in order; a leaf alone gives [leaf] (None too).
    With expand_composites, composite values give their component tensors."""
    leaves = _nest.flatten(structure)
    return _expanded(leaves) if expand_composites else leaves


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`structure` with its leaves replaced, in order, by `flat_sequence`."""
    return _nest.pack_sequence_as(structure, flat_sequence)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """ValueError (TypeError for different sequence types, when check_types)
    saying where the two structures differ. With expand_composites, composite
    values must be of one type with as many components."""
    _nest.assert_same_structure(nest1, nest2, check_types)
    if not expand_composites:
        return
    for a, b in zip(_nest.flatten(nest1), _nest.flatten(nest2)):
        pa, pb = _components(a), _components(b)
        if (pa is None) != (pb is None) or (pa is not None and (
                (check_types and type(a) is not type(b)) or len(_expanded(pa)) != len(_expanded(pb)))):
            raise ValueError(f"The two structures don't have the same nested structure: {a!r} and {b!r} are "
                             "composites of different kinds (expand_composites=True)")


def map_structure(func, *structure, **kwargs):
    """func applied to the leaves of one or more structures of the same shape
    (keyword arguments check_types=True and expand_composites=False, as in TensorFlow)."""
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError(f"Only valid keyword arguments are `check_types` and `expand_composites`, not: "
                         f"`{', '.join(kwargs)}`")
    if not structure:
        raise ValueError("Must provide at least one structure")
    for other in structure[1:]:
        _nest.assert_same_structure(structure[0], other, check_types)
    flats = [_nest.flatten(s) for s in structure]
    return _nest.pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])


__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]
