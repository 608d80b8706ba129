"""td.types: the tracing protocol's types (`td.types.TraceType`, also as
`td.types.experimental.TraceType`, TensorFlow's spelling) and, in
td.types.experimental, the types of functions: PolymorphicFunction (what
td.function returns), ConcreteFunction and FunctionType."""

import types as _pytypes

from treadle.function.concrete_function import ConcreteFunction
from treadle.function.function_type import FunctionType
from treadle.function.polymorphic_function import Function as PolymorphicFunction
from treadle.function.trace_type import PlaceholderContext, TraceType, TracingContext

experimental = _pytypes.SimpleNamespace(TraceType=TraceType, TracingContext=TracingContext,
                                        PlaceholderContext=PlaceholderContext, PolymorphicFunction=PolymorphicFunction,
                                        ConcreteFunction=ConcreteFunction, FunctionType=FunctionType)

__all__ = ["TraceType", "experimental"]
