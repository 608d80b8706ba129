"""td.types: the tracing protocol's types (`td.types.TraceType`, also as
`td.types.experimental.TraceType`, TensorFlow's spelling)."""

import types as _pytypes

from treadle.function.trace_type import PlaceholderContext, TraceType, TracingContext

experimental = _pytypes.SimpleNamespace(TraceType=TraceType, TracingContext=TracingContext,
                                        PlaceholderContext=PlaceholderContext)

__all__ = ["TraceType", "experimental"]
