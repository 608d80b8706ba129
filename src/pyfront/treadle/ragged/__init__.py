"""td.ragged and td.RaggedTensor: tensors whose rows have different lengths."""

from treadle.ragged.ragged_factory import constant
from treadle.ragged.ragged_tensor import RaggedTensor
from treadle.ragged.ragged_tensor_spec import RaggedTensorSpec
from treadle.ragged import ragged_elementwise  # noqa: F401 (registers td.equal etc. for ragged tensors)

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant"]
