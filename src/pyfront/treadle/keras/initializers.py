"""td.keras.initializers: Keras's initializers, by class and by name
("glorot_uniform", "zeros", ...). An initializer called with a shape (and a
dtype) returns a tensor of initial values. Values are drawn with NumPy's
generator: with a `seed`, an initializer gives the same values at every call;
without, new ones. The distributions are Keras's (TensorFlow draws other
numbers from the same distributions)."""

import math

import numpy as np

from treadle.framework import dtypes
from treadle.framework.tensor import constant

# Keras's truncated normal cuts at two standard deviations; this is the
# standard deviation of a unit normal truncated there, which Keras divides by
# so that the truncated draws keep the requested variance.
_TRUNCATED_STDDEV = 0.87962566103423978


class Initializer:
    """The base class: `initializer(shape, dtype=None)` returns a tensor of that
    shape (float32 unless `dtype` says otherwise)."""

    def __call__(self, shape, dtype=None):
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        shape = tuple(int(d) for d in shape)
        return constant(np.asarray(self._values(shape), dtype=dtype.as_numpy_dtype), dtype=dtype)

    def _values(self, shape):
        raise NotImplementedError

    def get_config(self):
        """The initializer's arguments, as a dict (as Keras's get_config)."""
        return {k.lstrip("_"): v for k, v in vars(self).items() if not k.startswith("_rng")}


class _Seeded(Initializer):
    def __init__(self, seed):
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got {seed!r}")
        self.seed = seed

    def _rng(self):
        return np.random.default_rng(self.seed)


class Zeros(Initializer):
    """All zeros."""

    def _values(self, shape):
        return np.zeros(shape)


class Ones(Initializer):
    """All ones."""

    def _values(self, shape):
        return np.ones(shape)


class Constant(Initializer):
    """Every value `value` (a scalar)."""

    def __init__(self, value=0.0):
        self.value = value

    def _values(self, shape):
        return np.full(shape, self.value)


class RandomNormal(_Seeded):
    """Normal draws of mean `mean` and standard deviation `stddev`."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def _values(self, shape):
        return self._rng().normal(self.mean, self.stddev, shape)


class RandomUniform(_Seeded):
    """Uniform draws in [minval, maxval)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = float(minval), float(maxval)

    def _values(self, shape):
        return self._rng().uniform(self.minval, self.maxval, shape)


def _truncated_normal(rng, shape, stddev):
    """Normal draws of `stddev`, every draw beyond two standard deviations drawn again."""
    values = rng.normal(0.0, 1.0, shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values * stddev


class TruncatedNormal(_Seeded):
    """Normal draws of mean `mean` and standard deviation `stddev`, redrawn
    where they fall more than two standard deviations from the mean."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def _values(self, shape):
        return self.mean + _truncated_normal(self._rng(), shape, self.stddev)


def compute_fans(shape):
    """(fan_in, fan_out) of a weight shape, as Keras computes them: a matrix
    [in, out]; a convolution kernel [..., in, out] counts its receptive field."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(_Seeded):
    """Draws whose variance is `scale / n`, n being fan_in, fan_out or their
    mean (`mode`): from a truncated normal, an untruncated normal, or a uniform
    distribution of limit sqrt(3 * scale / n) (`distribution`)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale!r}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError("VarianceScaling: distribution must be 'truncated_normal', 'untruncated_normal' or "
                             f"'uniform', got {distribution!r}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def _values(self, shape):
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, n)
        rng = self._rng()
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return rng.uniform(-limit, limit, shape)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(variance), shape)
        return _truncated_normal(rng, shape, math.sqrt(variance) / _TRUNCATED_STDDEV)


class GlorotUniform(VarianceScaling):
    """Uniform in ±sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)


class GlorotNormal(VarianceScaling):
    """Truncated normal of standard deviation sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)


class HeNormal(VarianceScaling):
    """Truncated normal of standard deviation sqrt(2 / fan_in) (He et al., 2015)."""

    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)


class HeUniform(VarianceScaling):
    """Uniform in ±sqrt(6 / fan_in)."""

    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)


class LecunNormal(VarianceScaling):
    """Truncated normal of standard deviation sqrt(1 / fan_in)."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)


class LecunUniform(VarianceScaling):
    """Uniform in ±sqrt(3 / fan_in)."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "uniform", seed)


class Orthogonal(_Seeded):
    """An orthogonal matrix (times `gain`), from the QR decomposition of a
    normal matrix, as Keras makes it; a shape of more than two dimensions is
    flattened to [prod(shape[:-1]), shape[-1]]."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = float(gain)

    def _values(self, shape):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal needs a shape of at least two dimensions, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = self._rng().normal(0.0, 1.0, (max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))  # a unique decomposition: positive diagonal of r
        if rows < cols:
            q = q.T
        return self.gain * q.reshape(shape)


class Identity(Initializer):
    """`gain` times the identity matrix (a 2-D shape)."""

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def _values(self, shape):
        if len(shape) != 2:
            raise ValueError(f"Identity needs a 2-D shape, got {shape}")
        return self.gain * np.eye(*shape)


_BY_NAME = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
            "random_uniform": RandomUniform, "uniform": RandomUniform, "normal": RandomNormal,
            "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
            "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": HeNormal,
            "he_uniform": HeUniform, "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform,
            "orthogonal": Orthogonal, "identity": Identity}


def get(identifier):
    """An initializer from a name ("glorot_uniform", "zeros", ...; Keras's class
    names work too), an initializer (returned as it is) or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, Initializer) or (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, str):
        key = "".join("_" + c.lower() if c.isupper() else c for c in identifier).lstrip("_")
        for name in (identifier, key):
            if name in _BY_NAME:
                return _BY_NAME[name]()
    raise ValueError(f"Unknown initializer: {identifier!r}; known names: {', '.join(sorted(_BY_NAME))}")


__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal",
           "LecunUniform", "Orthogonal", "Identity", "compute_fans", "get"]


def __dir__():
    return sorted(__all__)
