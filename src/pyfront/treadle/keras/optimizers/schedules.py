"""td.keras.optimizers.schedules: learning rates that change with the step,
with Keras's formulas. A schedule is a callable of the step (a number or an
integer tensor, such as an optimizer's `iterations`) returning a float32
scalar tensor; give one as an optimizer's learning_rate. They are made of
ops, so they work eagerly and inside a td.function."""

import math

from treadle import math as tdmath
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.ops import array_ops, math_ops


def _step(step):
    """The step as a float32 scalar tensor."""
    if isinstance(step, Variable):
        step = step.read_value()
    return math_ops.cast(convert_to_tensor(step), dtypes.float32)


def _floor(x):
    return tdmath.floordiv(x, 1.0)


def _cos_of_pi_times(fraction):
    """cos(pi * fraction) for fraction in [0, 1], made of multiplies and adds
    (treadle has no cosine kernel): with y = pi * (fraction - 1/2) in
    [-pi/2, pi/2], cos(pi * fraction) = -sin(y), and the Taylor series of sin
    to y**15 is within 1e-11 of it there, far below float32's resolution."""
    y = (fraction - 0.5) * math.pi
    y2 = y * y
    series = 1.0
    for n in range(15, 1, -2):  # Horner: sin(y) = y (1 - y^2/(2*3) (1 - y^2/(4*5) (...)))
        series = 1.0 - y2 / float((n - 1) * n) * series
    return -(y * series)


class LearningRateSchedule:
    """The base class: `schedule(step)` returns the learning rate at `step`."""

    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        """The schedule's arguments, as a dict (as Keras's get_config)."""
        return dict(vars(self))


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps); with
    `staircase`, the exponent is floored (the rate drops every decay_steps)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"ExponentialDecay: decay_steps must be positive, got {decay_steps!r}")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), float(decay_steps)
        self.decay_rate, self.staircase, self.name = float(decay_rate), bool(staircase), name

    def __call__(self, step):
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = _floor(p)
        return self.initial_learning_rate * tdmath.pow(convert_to_tensor(self.decay_rate, dtypes.float32), p)


class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps); with
    `staircase`, step / decay_steps is floored."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        if decay_steps <= 0:
            raise ValueError(f"InverseTimeDecay: decay_steps must be positive, got {decay_steps!r}")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), float(decay_steps)
        self.decay_rate, self.staircase, self.name = float(decay_rate), bool(staircase), name

    def __call__(self, step):
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = _floor(p)
        return self.initial_learning_rate / (1.0 + self.decay_rate * p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[1] while step <=
    boundaries[1], ..., values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstantDecay"):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: values must have one more entry than boundaries, got "
                             f"{len(values)} values and {len(boundaries)} boundaries")
        if list(boundaries) != sorted(boundaries):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got {list(boundaries)}")
        self.boundaries, self.values, self.name = list(boundaries), [float(v) for v in values], name

    def __call__(self, step):
        s = _step(step)
        rate = convert_to_tensor(self.values[0], dtypes.float32)
        for boundary, value in zip(self.boundaries, self.values[1:]):
            rate = array_ops.where(tdmath.greater(s, float(boundary)), convert_to_tensor(value, dtypes.float32),
                                   rate)
        return rate


class PolynomialDecay(LearningRateSchedule):
    """(initial_learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power
    + end_learning_rate, with step held at decay_steps after it; with `cycle`,
    decay_steps grows to the next multiple of itself above the step instead."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"PolynomialDecay: decay_steps must be positive, got {decay_steps!r}")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), float(decay_steps)
        self.end_learning_rate, self.power, self.cycle, self.name = float(end_learning_rate), float(power), \
            bool(cycle), name

    def __call__(self, step):
        s = _step(step)
        if self.cycle:
            multiplier = -tdmath.floordiv(-s, self.decay_steps)  # ceil(step / decay_steps) ...
            multiplier = tdmath.maximum(multiplier, 1.0)         # ... and 1 at step 0
            decay_steps = self.decay_steps * multiplier
        else:
            decay_steps = convert_to_tensor(self.decay_steps, dtypes.float32)
            s = tdmath.minimum(s, self.decay_steps)
        fraction = 1.0 - s / decay_steps
        return (self.initial_learning_rate - self.end_learning_rate) * tdmath.pow(fraction, self.power) + \
            self.end_learning_rate


class CosineDecay(LearningRateSchedule):
    """Cosine decay (Loshchilov and Hutter): with step held at decay_steps
    after it, rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha).
    With `warmup_target`, the rate first rises linearly from
    initial_learning_rate to warmup_target over warmup_steps, then decays
    from warmup_target."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        if decay_steps <= 0 or warmup_steps < 0:
            raise ValueError(f"CosineDecay: decay_steps must be positive and warmup_steps >= 0, got {decay_steps!r} "
                             f"and {warmup_steps!r}")
        self.initial_learning_rate, self.decay_steps, self.alpha = float(initial_learning_rate), float(decay_steps), \
            float(alpha)
        self.warmup_target = None if warmup_target is None else float(warmup_target)
        self.warmup_steps, self.name = float(warmup_steps), name

    def _decay(self, rate, s):
        fraction = tdmath.minimum(s, self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1.0 + _cos_of_pi_times(fraction))
        return rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        s = _step(step)
        if self.warmup_target is None:
            return self._decay(self.initial_learning_rate, s)
        warming = self.initial_learning_rate + (self.warmup_target - self.initial_learning_rate) * \
            (s / max(self.warmup_steps, 1.0))
        decayed = self._decay(self.warmup_target, tdmath.maximum(s - self.warmup_steps, 0.0))
        return array_ops.where(tdmath.less(s, self.warmup_steps), warming, decayed)


__all__ = ["LearningRateSchedule", "ExponentialDecay", "InverseTimeDecay", "PiecewiseConstantDecay",
           "PolynomialDecay", "CosineDecay"]


def __dir__():
    return sorted(__all__)
