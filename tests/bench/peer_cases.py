"""What the peer checks of the automatic-batching benchmark share: the
benchmark's modules on the path, float64 weights and a decoder case."""

import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench.autobatch import decoder as dec  # noqa: E402


def f64(weights):
    return {k: v.astype(np.float64) for k, v in weights.items()}


def decoder_case(count=6):
    return dec.initial_weights(), dec.initial_states(count)
