"""Neural-network wrappers (td.nn): softmax, losses."""

from treadle.framework.ops import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import math_ops


def _axis_attr(axis):
    return -1 if axis is None else int(axis)


def softmax(logits, axis=None, name=None):
    """exp(logits) / reduce_sum(exp(logits), axis), computed without overflow. `axis` defaults to -1."""
    logits = convert_to_tensor(logits)
    return execute("Softmax", [logits], {"axis": _axis_attr(axis)}, name=name)[0]


def log_softmax(logits, axis=None, name=None):
    """logits - log(reduce_sum(exp(logits), axis)), computed without overflow. `axis` defaults to -1."""
    logits = convert_to_tensor(logits)
    return execute("LogSoftmax", [logits], {"axis": _axis_attr(axis)}, name=name)[0]


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, as a scalar."""
    return execute("L2Loss", [convert_to_tensor(t)], name=name)[0]


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Softmax cross-entropy between `logits` [..., classes] and integer class
    `labels` [...]: one loss per row. A label outside [0, classes) is an
    InvalidArgumentError."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs both labels= and logits=.")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    loss, _ = execute("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return loss


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Softmax cross-entropy between `logits` and a probability distribution
    `labels` of the same shape, along `axis`."""
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=logits.dtype)
    log_probs = log_softmax(logits, axis=axis)
    products = execute("Mul", [labels, log_probs])[0]
    return execute("Neg", [math_ops.reduce_sum(products, axis=axis)], name=name)[0]


_NN = ["softmax", "log_softmax", "l2_loss", "sparse_softmax_cross_entropy_with_logits",
       "softmax_cross_entropy_with_logits"]
PUBLIC = {"nn": _NN, "math": ["softmax", "log_softmax"]}
