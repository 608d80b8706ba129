"""td.print: prints when the op runs (every call of a traced function), to
standard error by default, like tf.print."""

import sys

from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework import dtypes
from treadle.util import nest

PUBLIC = {"": ["print"]}

_STREAMS = {id(sys.stderr): "stderr", id(sys.stdout): "stdout"}


def _format_python(value):
    """Python values are formatted now (at trace time), tensors when the op runs."""
    return value if isinstance(value, str) else repr(value) if not isinstance(value, (int, float)) else str(value)


def _print(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end="\n", name=None):
    stream = _STREAMS.get(id(output_stream))
    if stream is None:
        stream = "stdout" if output_stream in ("stdout", sys.stdout) else "stderr" \
            if output_stream in ("stderr", sys.stderr) else None
    if stream is None:
        raise ValueError(f"td.print: output_stream must be sys.stdout or sys.stderr, got {output_stream!r}")
    if any(_is_structure_with_tensors(v) for v in inputs):
        values = _structured_pieces(inputs, sep)
        sep = ""
    else:
        values = [_print_value(v) for v in inputs]
    execute("Print", values, {"separator": sep, "end": end, "summarize": int(summarize),
                              "output_stream": stream}, name=name)
    return None


def _is_tensor_like(v):
    return isinstance(v, Tensor) or hasattr(v, "read_value")


def _print_value(v):
    if _is_tensor_like(v):
        return convert_to_tensor(v)
    return convert_to_tensor(_format_python(v), dtype=dtypes.string)


def _is_structure_with_tensors(v):
    return nest.is_nested(v) and any(_is_tensor_like(x) for x in nest.flatten(v))


_MARKER = "\x00td.print\x00"


def _structured_pieces(inputs, sep):
    """The Print op's inputs for values of which some are structures holding
    tensors: as tf.print does, a structure prints as Python prints it with
    each tensor's value in its place (`{'k': [1 2]}`). The text around the
    tensors becomes string constants, joined with no separator; `sep` goes
    between the top-level values."""
    pieces = []
    for i, v in enumerate(inputs):
        if i:
            pieces.append(sep)
        if not _is_structure_with_tensors(v):
            pieces.append(_print_value(v))
            continue
        leaves = nest.flatten(v)
        tensors = [x for x in leaves if _is_tensor_like(x)]
        template = str(nest.pack_sequence_as(v, [_Marker() if _is_tensor_like(x) else x for x in leaves]))
        texts = template.split(_MARKER)
        for text, t in zip(texts, tensors + [None]):
            pieces.append(text)
            if t is not None:
                pieces.append(convert_to_tensor(t))
    return [p if isinstance(p, Tensor) else convert_to_tensor(p, dtype=dtypes.string) for p in pieces if
            isinstance(p, Tensor) or p]


class _Marker:
    """Stands for a tensor in the printed template of a structure."""

    def __repr__(self):
        return _MARKER

    __str__ = __repr__
