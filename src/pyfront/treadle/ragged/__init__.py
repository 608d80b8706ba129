"""td.ragged and td.RaggedTensor: tensors whose rows have different lengths."""

from treadle.ragged.ragged_factory import constant
from treadle.ragged.ragged_tensor import RaggedTensor
from treadle.ragged.ragged_tensor_spec import RaggedTensorSpec

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant"]
