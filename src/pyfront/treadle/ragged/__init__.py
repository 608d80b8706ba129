"""td.RaggedTensor: tensors whose rows have different lengths."""

from treadle.ragged.ragged_tensor import RaggedTensor

__all__ = ["RaggedTensor"]
