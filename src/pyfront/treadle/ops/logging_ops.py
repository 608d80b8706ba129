"""td.print: prints when the op runs (every call of a traced function), to
standard error by default, like tf.print."""

import sys

from treadle.framework.ops import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework import dtypes

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
    values = []
    for v in inputs:
        if isinstance(v, Tensor) or hasattr(v, "read_value"):
            values.append(convert_to_tensor(v))
        else:
            values.append(convert_to_tensor(_format_python(v), dtype=dtypes.string))
    execute("Print", values, {"separator": sep, "end": end, "summarize": int(summarize),
                              "output_stream": stream}, name=name)
    return None
