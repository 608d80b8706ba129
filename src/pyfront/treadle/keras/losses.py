"""td.keras.losses: the cross-entropies and the mean squared error, as
classes (`loss(y_true, y_pred, sample_weight=None)`, reduced to a scalar) and
as functions (one value per example), with Keras's formulas: probabilities are
clipped to [1e-7, 1 - 1e-7] before their logarithm; `from_logits=True` takes
logits instead."""

from treadle import math as tdmath
from treadle import nn as tdnn
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_extra_ops, math_ops

EPSILON = 1e-7  # Keras's backend epsilon


def _pair(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = math_ops.cast(y_pred, dtypes.float32)
    return math_ops.cast(convert_to_tensor(y_true), y_pred.dtype), y_pred


def _clipped(p):
    return math_extra_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-(y log p + (1 - y) log(1 - p)), averaged over `axis`; labels smoothed
    towards 0.5 by `label_smoothing`."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per_value = tdnn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clipped(y_pred)
        per_value = -(y_true * tdmath.log(p) + (1.0 - y_true) * tdmath.log(1.0 - p))
    return tdmath.reduce_mean(per_value, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y log p) over `axis`, y one-hot (or a distribution); probabilities
    are first normalized to sum to 1; labels smoothed towards uniform by `label_smoothing`."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        classes = math_ops.cast(array_ops.shape(y_true)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    return -tdmath.reduce_sum(y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """-log p[label]: `y_true` holds integer class ids, `y_pred` one row of
    probabilities (or logits) per id."""
    y_pred = convert_to_tensor(y_pred)
    labels = convert_to_tensor(y_true)
    if labels.dtype.is_floating:
        labels = math_ops.cast(labels, dtypes.int64)
    if labels.shape.rank is not None and y_pred.shape.rank is not None and labels.shape.rank == y_pred.shape.rank:
        labels = array_ops.reshape(labels, array_ops.shape(labels)[:-1])  # [batch, 1] labels, as Keras takes
    depth = y_pred.shape[axis]
    one_hot = array_ops.one_hot(labels, depth, dtype=y_pred.dtype, axis=axis)
    return -tdmath.reduce_sum(one_hot * _log_probabilities(y_pred, from_logits, axis), axis=axis)


def _log_probabilities(y_pred, from_logits, axis):
    if from_logits:
        return tdnn.log_softmax(y_pred, axis=axis)
    return tdmath.log(_clipped(y_pred / tdmath.reduce_sum(y_pred, axis=axis, keepdims=True)))


def mean_squared_error(y_true, y_pred):
    """mean((y_true - y_pred)**2) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return tdmath.reduce_mean(tdmath.square(y_true - y_pred), axis=-1)


mse = MSE = mean_squared_error


REDUCTIONS = ("sum_over_batch_size", "sum", "none")


class Loss:
    """The base class: `loss(y_true, y_pred, sample_weight=None)` computes the
    per-example values, weights them, and reduces them: "sum_over_batch_size"
    (Keras's default: the sum divided by the number of values), "sum" or "none"."""

    def __init__(self, reduction="sum_over_batch_size", name=None):
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
        self.reduction, self.name = reduction, name or type(self).__name__

    def call(self, y_true, y_pred):
        """The per-example losses; subclasses implement it."""
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if sample_weight is not None:
            values = values * math_ops.cast(convert_to_tensor(sample_weight), values.dtype)
        if self.reduction == "none":
            return values
        total = tdmath.reduce_sum(values)
        if self.reduction == "sum":
            return total
        return total / math_ops.cast(array_ops.size(values), values.dtype)


class BinaryCrossentropy(Loss):
    """`binary_crossentropy` as a loss object."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy"):
        super().__init__(reduction, name)
        self.from_logits, self.label_smoothing, self.axis = bool(from_logits), float(label_smoothing), axis

    def call(self, y_true, y_pred):
        """Per-example binary cross-entropies."""
        return binary_crossentropy(y_true, y_pred, self.from_logits, self.label_smoothing, self.axis)


class CategoricalCrossentropy(Loss):
    """`categorical_crossentropy` as a loss object."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy"):
        super().__init__(reduction, name)
        self.from_logits, self.label_smoothing, self.axis = bool(from_logits), float(label_smoothing), axis

    def call(self, y_true, y_pred):
        """Per-example categorical cross-entropies."""
        return categorical_crossentropy(y_true, y_pred, self.from_logits, self.label_smoothing, self.axis)


class SparseCategoricalCrossentropy(Loss):
    """`sparse_categorical_crossentropy` as a loss object."""

    def __init__(self, from_logits=False, reduction="sum_over_batch_size", name="sparse_categorical_crossentropy"):
        super().__init__(reduction, name)
        self.from_logits = bool(from_logits)

    def call(self, y_true, y_pred):
        """Per-example sparse categorical cross-entropies."""
        return sparse_categorical_crossentropy(y_true, y_pred, self.from_logits)


class MeanSquaredError(Loss):
    """`mean_squared_error` as a loss object."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(reduction, name)

    def call(self, y_true, y_pred):
        """Per-example mean squared errors."""
        return mean_squared_error(y_true, y_pred)


__all__ = ["Loss", "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "MeanSquaredError", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy",
           "mean_squared_error", "mse", "MSE"]


def __dir__():
    return sorted(__all__)
