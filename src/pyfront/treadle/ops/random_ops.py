"""Random number ops and seeds (td.random), with TensorFlow's seed rules.

An op draws from the stream named by two seeds: (global seed, op seed).
- global seed set, op seed given: that stream, reproducible per op;
- global seed set, no op seed: op seeds come from a generator seeded by the
  global seed, so every call differs but `set_seed` replays the sequence;
- op seed only: the global seed is DEFAULT_GRAPH_SEED;
- neither: fresh random seeds every call.
Calling an op again with the same seeds continues its stream (the C++ kernels
keep a counter per seed pair); `set_seed` restarts every stream."""

import random as _py_random

import numpy as np

from treadle import _core
from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1

_global_seed = None
_op_seed_source = None  # random.Random(global seed): op seeds for ops called without one


def set_seed(seed):
    """Sets the global random seed (None clears it) and restarts every seeded op's stream."""
    global _global_seed, _op_seed_source
    if seed is None:
        _global_seed = None
        _op_seed_source = None
    else:
        _global_seed = _as_seed(seed, "seed")
        _op_seed_source = _py_random.Random(_global_seed)
    _core.reset_random_op_counters()


def _as_seed(seed, what):
    if isinstance(seed, (bool, float)) or not isinstance(seed, (int, np.integer, Tensor)):
        raise TypeError(f"{what} must be an integer, got {seed!r}")
    return int(seed)


def get_seed(op_seed):
    """The (seed, seed2) pair for an op given its own seed (or None), per the
    rules above; (None, None) means nondeterministic."""
    if op_seed is not None:
        op_seed = _as_seed(op_seed, "seed")
    if _global_seed is not None:
        if op_seed is None:
            op_seed = _op_seed_source.randint(0, _MAXINT32)
        seeds = (_global_seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    if seeds == (0, 0):  # (0, 0) would mean "nondeterministic" to the kernels
        seeds = (0, _MAXINT32)
    return seeds


def _seed_attrs(seed):
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


def _shape_tensor(shape):
    """The `shape` input of a random op: a 1-D integer tensor."""
    if isinstance(shape, Tensor):
        if not shape.dtype.is_integer:
            raise TypeError(f"shape must be an integer tensor, got dtype {shape.dtype.name}")
        return shape
    if np.ndim(shape) == 0:
        return _scalar_shape(shape)
    dims = []
    for d in shape:
        if d is None:
            raise ValueError(f"shape must be fully defined, got {shape!r}")
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer, Tensor)):
            raise TypeError(f"shape must be a list of integers, got {shape!r}")
        dims.append(int(d))
    big = any(d >= 2**31 or d < -(2**31) for d in dims)
    return convert_to_tensor(np.array(dims, dtype=np.int64 if big else np.int32))


def _scalar_shape(shape):
    # A scalar is not a shape; the op says so (as TensorFlow's does).
    if isinstance(shape, (bool, np.bool_)) or not isinstance(shape, (int, np.integer)):
        raise TypeError(f"shape must be a list of integers, got {shape!r}")
    return convert_to_tensor(np.int32(shape) if -(2**31) <= shape < 2**31 else np.int64(shape))


_UNIFORM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Values drawn uniformly from [minval, maxval). Floats default to [0, 1);
    integer dtypes need `maxval`."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        raise ValueError(f"Argument `dtype` got invalid value {dtype.name}. Accepted dtypes are float32, "
                         f"float64, int32 and int64.")
    shape_t = _shape_tensor(shape)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}.")
        lo = convert_to_tensor(minval, dtype=dtype)
        hi = convert_to_tensor(maxval, dtype=dtype)
        return execute("RandomUniformInt", [shape_t, lo, hi], _seed_attrs(seed), name=name)[0]
    unit_range = maxval is None and not isinstance(minval, Tensor) and minval == 0
    rnd = execute("RandomUniform", [shape_t], dict(_seed_attrs(seed), dtype=dtype), name=name)[0]
    if unit_range:
        return rnd
    lo = convert_to_tensor(minval, dtype=dtype)
    hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype)
    width = execute("Sub", [hi, lo])[0]
    return execute("AddV2", [execute("Mul", [rnd, width])[0], lo])[0]


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Values drawn from a normal distribution with `mean` and `stddev`."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"Argument `dtype` got invalid value {dtype.name}. Accepted dtypes are float32 and "
                         f"float64.")
    shape_t = _shape_tensor(shape)
    mean_t = convert_to_tensor(mean, dtype=dtype)
    stddev_t = convert_to_tensor(stddev, dtype=dtype)
    rnd = execute("RandomStandardNormal", [shape_t], dict(_seed_attrs(seed), dtype=dtype), name=name)[0]
    return execute("AddV2", [execute("Mul", [rnd, stddev_t])[0], mean_t])[0]


PUBLIC = {"random": ["uniform", "normal", "set_seed"]}
