"""Neural-network wrappers (td.nn): softmax, losses."""

from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_ops, random_ops


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


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss of `logits` against `labels` in [0, 1]:
    max(x, 0) - x * z + log(1 + exp(-|x|)), which does not overflow."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs both labels= and logits=.")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=logits.dtype)
    if labels.dtype != logits.dtype:
        raise ValueError(f"logits and labels must have the same dtype, got {logits.dtype.name} and "
                         f"{labels.dtype.name}")
    relu = execute("Relu", [logits])[0]
    soft = execute("Log1p", [execute("Exp", [execute("Neg", [execute("Abs", [logits])[0]])[0]])[0]])[0]
    return execute("AddV2", [execute("Sub", [relu, execute("Mul", [logits, labels])[0]])[0], soft], name=name)[0]


def gelu(features, approximate=False, name=None):
    """x * P(X <= x) for a standard normal X: with erf, or (approximate=True)
    the tanh approximation."""
    x = convert_to_tensor(features)
    half = convert_to_tensor(0.5, dtype=x.dtype)
    one = convert_to_tensor(1.0, dtype=x.dtype)
    if approximate:
        c = convert_to_tensor(0.7978845608028654, dtype=x.dtype)  # sqrt(2 / pi)
        k = convert_to_tensor(0.044715, dtype=x.dtype)
        cube = execute("Mul", [k, execute("Mul", [x, execute("Square", [x])[0]])[0]])[0]
        inner = execute("Mul", [c, execute("AddV2", [x, cube])[0]])[0]
        gate = execute("AddV2", [one, execute("Tanh", [inner])[0]])[0]
    else:
        inv_sqrt2 = convert_to_tensor(0.7071067811865476, dtype=x.dtype)
        gate = execute("AddV2", [one, execute("Erf", [execute("Mul", [x, inv_sqrt2])[0]])[0]])[0]
    return execute("Mul", [execute("Mul", [half, x])[0], gate], name=name)[0]


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """x with each element zeroed with probability `rate` and the rest scaled
    by 1 / (1 - rate), so the expected value is unchanged."""
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise ValueError(f"td.nn.dropout: x must be a floating point tensor, got {x.dtype.name}")
    if isinstance(rate, (int, float)) and not 0 <= rate < 1:
        raise ValueError(f"td.nn.dropout: rate must be a scalar in [0, 1), got {rate}")
    if isinstance(rate, (int, float)) and rate == 0:
        return x
    rate = convert_to_tensor(rate, dtype=x.dtype)
    shape = array_ops.shape(x) if noise_shape is None else noise_shape
    draws = random_ops.uniform(shape, dtype=x.dtype, seed=seed)
    keep = execute("GreaterEqual", [draws, rate])[0]
    scale = execute("RealDiv", [convert_to_tensor(1.0, dtype=x.dtype),
                                execute("Sub", [convert_to_tensor(1.0, dtype=x.dtype), rate])[0]])[0]
    kept = execute("Mul", [x, execute("Cast", [keep], {"DstT": x.dtype})[0]])[0]
    return execute("Mul", [kept, scale], name=name)[0]


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of `params` (a tensor or Variable; a list of shards is not
    supported) named by `ids`; its gradient is sparse (an IndexedSlices)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("td.nn.embedding_lookup: sharded params (a list of several) are not supported")
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("td.nn.embedding_lookup: max_norm is not supported")
    return array_ops.gather(params, ids, name=name)


_NN = ["softmax", "log_softmax", "l2_loss", "sparse_softmax_cross_entropy_with_logits",
       "softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "gelu", "dropout",
       "embedding_lookup"]
PUBLIC = {"nn": _NN, "math": ["softmax", "log_softmax"]}
