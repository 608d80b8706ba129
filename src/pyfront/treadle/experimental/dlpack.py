"""Zero-copy exchange with other array libraries through DLPack, with the
names of tf.experimental.dlpack.

Tensors also implement the protocol themselves (`__dlpack__`,
`__dlpack_device__`), so `np.from_dlpack(t)` and `torch.from_dlpack(t)` share
the tensor's memory; treadle tensors are immutable, so consumers that honour
DLPack 1.0's read-only flag (NumPy does) get a read-only array.
"""

from treadle import _core
from treadle.framework.tensor import EagerTensor

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tf_tensor):
    """A DLPack capsule (named "dltensor") sharing an eager tensor's memory.

    The capsule can be consumed once, by any DLPack consumer. String tensors
    have no DLPack form (BufferError)."""
    if not isinstance(tf_tensor, EagerTensor):
        raise TypeError(f"to_dlpack expects an eager tensor, got {type(tf_tensor).__name__}")
    return tf_tensor.__dlpack__()


def from_dlpack(dlcapsule):
    """A tensor sharing the memory of a DLPack capsule or of any object with
    `__dlpack__` (a NumPy array, a PyTorch CPU tensor, another td tensor).

    The producer's memory must be a CPU, C-contiguous float32/float64/int32/
    int64/bool array; anything else raises td.errors.InvalidArgumentError
    saying what is wrong. The tensor keeps the producer's memory alive; it
    must not be modified through the producer afterwards."""
    return _core.from_dlpack(dlcapsule)
