"""td.random.stateless_uniform / stateless_normal (values a function of a
seed of two integers) and td.random.Generator, whose state is a Variable
holding (seed, counter): each draw uses the counter as the second half of a
stateless seed and advances it, eagerly and in traced functions alike."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.variables import Variable
from treadle.ops.random_ops import _shape_tensor


def _seed_tensor(seed):
    t = seed if isinstance(seed, Tensor) else convert_to_tensor(np.asarray(seed, dtype=np.int64))
    if not t.dtype.is_integer:
        raise TypeError(f"seed must be an integer tensor of shape [2], got dtype {t.dtype.name}")
    if t.shape.rank is not None and t.shape.as_list() not in ([2], [None]):
        raise ValueError(f"seed must have shape [2], got {t.shape}")
    return t


def _float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype.name} (integer draws are not supported)")
    return dtype


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Floats uniform in [minval, maxval) (default [0, 1)); the same seed gives the same values."""
    dtype = _float_dtype(dtype)
    rnd = execute("StatelessRandomUniform", [_shape_tensor(shape), _seed_tensor(seed)], {"dtype": dtype},
                  name=name)[0]
    if maxval is None and not isinstance(minval, Tensor) and minval == 0:
        return rnd
    lo = convert_to_tensor(minval, dtype=dtype)
    hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype)
    return execute("AddV2", [execute("Mul", [rnd, execute("Sub", [hi, lo])[0]])[0], lo])[0]


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Normally distributed floats; the same seed gives the same values."""
    dtype = _float_dtype(dtype)
    rnd = execute("StatelessRandomNormal", [_shape_tensor(shape), _seed_tensor(seed)], {"dtype": dtype},
                  name=name)[0]
    return execute("AddV2", [execute("Mul", [rnd, convert_to_tensor(stddev, dtype=dtype)])[0],
                             convert_to_tensor(mean, dtype=dtype)])[0]


class Generator:
    """A random number generator with its own state (TensorFlow's
    tf.random.Generator): `Generator.from_seed(seed)`, then `normal`/`uniform`.
    The state is a td.Variable, so a td.function drawing from it gives new
    values on every call."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            state = copy_from.state.numpy()
        if state is None:
            raise ValueError("Generator: use Generator.from_seed(seed) or Generator.from_non_deterministic_state()")
        self._state = Variable(np.asarray(state, dtype=np.int64).reshape(2), trainable=False, name="rng_state")

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=[int(seed), 0])

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls(state=[int(np.random.SeedSequence().entropy % (2**63)), 0])

    @property
    def state(self):
        return self._state

    def reset_from_seed(self, seed):
        self._state.assign(np.array([int(seed), 0], np.int64))

    def _next_seed(self):
        key = self._state.read_value()
        self._state.assign_add(np.array([0, 1], np.int64))
        return key

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        return stateless_uniform(shape, self._next_seed(), minval=minval, maxval=maxval, dtype=dtype, name=name)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        return stateless_normal(shape, self._next_seed(), mean=mean, stddev=stddev, dtype=dtype, name=name)

    def make_seeds(self, count=1):
        """[2, count] int64 seeds for stateless ops, drawn from this generator."""
        bits = self.uniform([2, count], dtype=dtypes.float64)
        return execute("Cast", [execute("Mul", [bits, convert_to_tensor(2.0 ** 62, dtype=dtypes.float64)])[0]],
                       {"DstT": dtypes.int64})[0]


PUBLIC = {"random": ["stateless_uniform", "stateless_normal", "Generator"]}
