"""Element structures of datasets: a nest of TensorSpecs (the element_spec),
and the conversions between an element's structure and the flat list of
eager tensors that flows between pipeline stages."""

from treadle import errors
from treadle.framework import dtypes
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec
from treadle.util import nest


def to_tensors(value, what="element"):
    """A structure of Python values, NumPy arrays and tensors as a structure
    of tensors. As in tf.data, tuples and dicts are structure and a list is
    one tensor."""
    if isinstance(value, dict):
        return type(value)((k, to_tensors(v, what)) for k, v in value.items())
    if isinstance(value, tuple):
        parts = [to_tensors(v, what) for v in value]
        return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
    if isinstance(value, Tensor):
        return value
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"td.data: a component of the {what} cannot be a tensor: {value!r} ({e})") from None


def spec_of(value):
    """The element_spec of a structure of tensors."""
    return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), value)


def flat_specs(element_spec):
    return nest.flatten(element_spec)


def pack(element_spec, flat):
    """The element (a structure like element_spec) made of the flat tensors."""
    if isinstance(element_spec, TensorSpec):
        return flat[0]
    return nest.pack_sequence_as(element_spec, list(flat))


def flatten(element):
    return nest.flatten(element)


def common_spec(a, b, what):
    """The most specific spec compatible with both (as Dataset.concatenate
    and a scan's changing state need); TypeError naming `what` when the
    structures or dtypes differ."""
    try:
        nest.assert_same_structure(a, b)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: the structures differ: {a} vs. {b} ({e})") from None
    fa, fb = nest.flatten(a), nest.flatten(b)
    out = []
    for x, y in zip(fa, fb):
        if x.dtype != y.dtype:
            raise TypeError(f"{what}: the dtypes differ: {x.dtype.name} vs. {y.dtype.name} ({a} vs. {b})")
        out.append(TensorSpec(x.shape.most_specific_compatible_shape(y.shape), x.dtype))
    return pack(a, out)


def batched_spec(spec, batch_dim):
    return nest.map_structure(lambda s: TensorSpec(TensorShape([batch_dim] + s.shape.as_list()
                                                               if s.shape.rank is not None else None), s.dtype),
                              spec)


def unbatched_spec(spec):
    def drop(s):
        if s.shape.rank == 0:
            raise ValueError(f"td.data: cannot unbatch a dataset whose element has a scalar component ({s})")
        return TensorSpec(TensorShape(s.shape.as_list()[1:]) if s.shape.rank is not None else TensorShape(None),
                          s.dtype)
    return nest.map_structure(drop, spec)


def check_conforms(flat, specs, where):
    """InvalidArgumentError unless each tensor has its spec's dtype and a compatible shape."""
    if len(flat) != len(specs):
        raise errors.InvalidArgumentError(None, None, f"{where}: expected {len(specs)} components, got {len(flat)}")
    for i, (t, s) in enumerate(zip(flat, specs)):
        if t.dtype != s.dtype:
            raise errors.InvalidArgumentError(
                None, None, f"{where}: component {i} has dtype {t.dtype.name} where {s.dtype.name} was expected")
        if not s.shape.is_compatible_with(t.shape):
            raise errors.InvalidArgumentError(
                None, None, f"{where}: component {i} has shape {t.shape} where a shape compatible with {s.shape} "
                            "was expected")


def is_string(spec):
    return spec.dtype == dtypes.string


def flatten_like(spec, value):
    """The leaves of `value` down to the TensorSpecs of `spec` (so a list where
    a spec has a TensorSpec is one leaf); ValueError when the structures differ.
    A list stands for a tuple of the spec, as TensorFlow allows."""
    if isinstance(spec, TensorSpec):
        return [value]
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise ValueError(f"expected a dict with keys {sorted(spec)}, got {value!r}")
        return [leaf for k in sorted(spec) for leaf in flatten_like(spec[k], value[k])]
    if isinstance(spec, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec):
            raise ValueError(f"expected a tuple of {len(spec)}, got {value!r}")
        return [leaf for s, v in zip(spec, value) for leaf in flatten_like(s, v)]
    raise TypeError(f"unsupported structure {spec!r}")
