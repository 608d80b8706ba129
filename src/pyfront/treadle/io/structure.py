"""Python structures (signatures, outputs) <-> StructuredValue protos."""

import collections

from treadle import saved_pb2
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


def decode(p):
    kind = p.WhichOneof("kind")
    if kind == "none_value" or kind is None:
        return None
    if kind in ("bool_value", "int64_value", "float64_value", "string_value", "bytes_value"):
        return getattr(p, kind)
    if kind == "tensor_spec_value":
        s = p.tensor_spec_value
        ok = 0 < s.dtype < len(dtypes._ALL) and dtypes._ALL[s.dtype] not in (None, dtypes.resource, dtypes.variant)
        return TensorSpec(_shape(s.shape), dtypes._ALL[s.dtype] if ok else _bad(s.dtype), s.name or None)
    if kind == "named_tuple_value":
        n = p.named_tuple_value
        cls = collections.namedtuple(n.name, list(n.fields))
        return cls(*[decode(v) for v in n.values])
    if kind == "tuple_value":
        return tuple(decode(v) for v in p.tuple_value.values)
    if kind == "list_value":
        return [decode(v) for v in p.list_value.values]
    if kind == "dict_value":
        d = p.dict_value
        if len(d.keys) != len(d.values):
            raise ValueError("corrupt saved structure: dict keys and values differ in number")
        return {k: decode(v) for k, v in zip(d.keys, d.values)}
    raise ValueError(f"corrupt saved structure: unknown kind {kind}")


def _bad(enum):
    raise ValueError(f"corrupt saved structure: invalid dtype enum {enum}")
