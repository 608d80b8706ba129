"""td.nest: TensorFlow's tf.nest on treadle's nested structures (lists,
tuples, namedtuples, dicts and other mappings in sorted key order, attrs
classes). treadle's composite values are leaves, so expand_composites has no
effect."""

from treadle.util import nest as _nest


def is_nested(seq):
    """True for a structure nest descends into (not a leaf)."""
    return _nest.is_nested(seq)


def flatten(structure, expand_composites=False):
    """The leaves of `structure` in order; a leaf alone gives [leaf] (None too)."""
    return _nest.flatten(structure)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`structure` with its leaves replaced, in order, by `flat_sequence`."""
    return _nest.pack_sequence_as(structure, flat_sequence)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """ValueError (TypeError for different sequence types, when check_types)
    saying where the two structures differ."""
    _nest.assert_same_structure(nest1, nest2, check_types)


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
