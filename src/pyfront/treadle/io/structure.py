"""Python structures (signatures, outputs) <-> StructuredValue protos."""

import collections
import keyword

from treadle import errors, saved_pb2
from treadle.framework import dtypes
from treadle.framework.graph_serialization import shape_to_proto
from treadle.framework.tensor import Tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec


def encode(value):
    p = saved_pb2.StructuredValue()
    if value is None:
        p.none_value.SetInParent()
    elif isinstance(value, bool):
        p.bool_value = value
    elif isinstance(value, int):
        p.int64_value = value
    elif isinstance(value, float):
        p.float64_value = value
    elif isinstance(value, str):
        p.string_value = value
    elif isinstance(value, bytes):
        p.bytes_value = value
    elif isinstance(value, (TensorSpec, Tensor)):
        p.tensor_spec_value.name = getattr(value, "name", None) or "" if isinstance(value, TensorSpec) else ""
        p.tensor_spec_value.dtype = value.dtype.as_datatype_enum
        shape_to_proto(TensorShape(value.shape).dims, p.tensor_spec_value.shape)
    elif isinstance(value, tuple) and hasattr(type(value), "_fields"):
        p.named_tuple_value.name = type(value).__name__
        p.named_tuple_value.fields.extend(type(value)._fields)
        p.named_tuple_value.values.extend(encode(v) for v in value)
    elif isinstance(value, tuple):
        p.tuple_value.SetInParent()
        p.tuple_value.values.extend(encode(v) for v in value)
    elif isinstance(value, list):
        p.list_value.SetInParent()
        p.list_value.values.extend(encode(v) for v in value)
    elif isinstance(value, dict):
        p.dict_value.SetInParent()
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"td.save: only string dict keys can be saved, got {k!r}")
            p.dict_value.keys.append(k)
            p.dict_value.values.append(encode(v))
    else:
        raise TypeError(f"td.save: cannot save a signature or output containing {value!r} "
                        f"(of type {type(value).__name__})")
    return p


def _shape(proto):
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def decode(p, where="saved structure"):
    """The Python structure of a StructuredValue; DataLossError naming
    `where` (the file and the field) and the place inside it for anything a
    saved file cannot hold."""
    return _decode(p, where, "")


def _corrupt(where, at, what):
    return errors.DataLossError(None, None, f"{where}{at}: {what}")


def _decode(p, where, at):
    kind = p.WhichOneof("kind")
    if kind == "none_value" or kind is None:
        return None
    if kind in ("bool_value", "int64_value", "float64_value", "string_value", "bytes_value"):
        return getattr(p, kind)
    if kind == "tensor_spec_value":
        s = p.tensor_spec_value
        if not (0 < s.dtype < len(dtypes._ALL)) or dtypes._ALL[s.dtype] in (None, dtypes.resource, dtypes.variant):
            raise _corrupt(where, at, f"a TensorSpec with invalid dtype enum {s.dtype}")
        if not s.shape.unknown_rank and any(d.size < -1 for d in s.shape.dim):
            raise _corrupt(where, at, f"a TensorSpec with invalid dimension "
                                      f"{min(d.size for d in s.shape.dim)}")
        return TensorSpec(_shape(s.shape), dtypes._ALL[s.dtype], s.name or None)
    if kind == "named_tuple_value":
        return _decode_namedtuple(p.named_tuple_value, where, at)
    if kind == "tuple_value":
        return tuple(_decode(v, where, f"{at}[{i}]") for i, v in enumerate(p.tuple_value.values))
    if kind == "list_value":
        return [_decode(v, where, f"{at}[{i}]") for i, v in enumerate(p.list_value.values)]
    if kind == "dict_value":
        d = p.dict_value
        if len(d.keys) != len(d.values):
            raise _corrupt(where, at, f"a dict of {len(d.keys)} keys and {len(d.values)} values")
        if len(set(d.keys)) != len(d.keys):
            raise _corrupt(where, at, "a dict with a key twice")
        return {k: _decode(v, where, f"{at}[{k!r}]") for k, v in zip(d.keys, d.values)}
    raise _corrupt(where, at, f"an unknown kind of value {kind}")


def _decode_namedtuple(n, where, at):
    """A namedtuple class made from the file's name and fields, each checked
    first (collections.namedtuple's own errors would name neither)."""
    names = [n.name] + list(n.fields)
    for name in names:
        if not name.isidentifier() or keyword.iskeyword(name) or (name is not n.name and name.startswith("_")):
            raise _corrupt(where, at, f"a namedtuple {n.name!r} with an invalid name {name!r} (names are Python "
                                      "identifiers, and field names do not start with '_')")
    if len(set(n.fields)) != len(n.fields):
        raise _corrupt(where, at, f"a namedtuple {n.name!r} with a field name twice: {list(n.fields)}")
    if len(n.fields) != len(n.values):
        raise _corrupt(where, at, f"a namedtuple {n.name!r} of {len(n.fields)} fields and {len(n.values)} values")
    cls = collections.namedtuple(n.name, list(n.fields))
    return cls(*[_decode(v, where, f"{at}.{f}") for f, v in zip(n.fields, n.values)])


def decode_input_signature(p, where):
    """A saved function's input signature: (positional specs, keyword specs),
    checked to be that shape (a call unpacks it)."""
    value = decode(p, where)
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (tuple, list))
            and isinstance(value[1], dict)):
        raise errors.DataLossError(None, None, f"{where}: expected (positional arguments, keyword arguments), a "
                                               f"tuple of a tuple and a dict, got {_describe(value)}")
    return tuple(value[0]), value[1]


def _describe(value):
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} ({', '.join(type(v).__name__ for v in value[:4])})"
    return f"a {type(value).__name__}"
