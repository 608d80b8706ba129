"""The printed form of a ConcreteFunction's signature, in the layout of
TensorFlow's `pretty_printed_signature`: parameters, output type, captures."""

from treadle.framework.indexed_slices import IndexedSlices, flatten
from treadle.framework.tensor import Tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.function import trace_type
from treadle.util import nest


def _describe_leaf(value):
    if isinstance(value, trace_type.TraceType):
        return repr(value)
    if isinstance(value, TensorSpec):
        return repr(value)
    if isinstance(value, Tensor):
        return repr(TensorSpec(value.shape, value.dtype))
    if isinstance(value, IndexedSlices):
        return f"IndexedSlices[{', '.join(_describe_leaf(t) for t in flatten(value))}]"
    return f"Literal[{value!r}]"


def describe_structure(structure):
    """A type-like description: TensorSpecs for tensors, Literal[...] for Python values."""
    if not nest.is_nested(structure):
        return _describe_leaf(structure)
    if isinstance(structure, dict):
        inner = ", ".join(f"{k!r}: {describe_structure(v)}" for k, v in structure.items())
        return f"Dict[{inner}]"
    if isinstance(structure, list):
        return f"List[{', '.join(describe_structure(v) for v in structure)}]"
    if isinstance(structure, tuple):
        return f"Tuple[{', '.join(describe_structure(v) for v in structure)}]"
    return f"{type(structure).__name__}[{', '.join(describe_structure(v) for v in nest.flatten(structure))}]"


def pretty_signature(concrete, verbose=True):
    lines = ["Input Parameters:"]
    params = concrete.function_type.parameters if concrete.function_type is not None else None
    if params:
        for p in params:
            lines.append(f"  {p.name} ({p.kind_name}): {describe_structure(p.value)}")
    else:
        args, kwargs = concrete.structured_input_signature
        for i, a in enumerate(args):
            lines.append(f"  arg_{i} (POSITIONAL_ONLY): {describe_structure(a)}")
        for k, v in kwargs.items():
            lines.append(f"  {k} (KEYWORD_ONLY): {describe_structure(v)}")
    lines.append("Output Type:")
    lines.append(f"  {describe_structure(concrete.structured_outputs)}")
    lines.append("Captures:")
    captures = list(concrete.graph.captures.values())
    if not captures:
        lines.append("  None")
    for external, internal in captures:
        ident = getattr(external, "_unique_id", id(external))
        lines.append(f"  {ident}: {_describe_leaf(internal)}")
    return "\n".join(lines)
