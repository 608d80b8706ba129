"""td.ragged and td.RaggedTensor: tensors whose rows have different lengths."""

from treadle.ragged.ragged_factory import constant
from treadle.ragged.ragged_tensor import RaggedTensor

__all__ = ["RaggedTensor", "constant"]
