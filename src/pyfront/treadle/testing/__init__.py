"""td.test: TestCase with TensorFlow's assertion helpers, and main()."""

import unittest

from treadle.testing.test_case import TestCase


def main(argv=None):
    """Runs the tests of the calling module (as tf.test.main)."""
    return unittest.main(argv=argv)


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """False: treadle runs on the CPU."""
    return False


def is_built_with_cuda():
    return False


def gpu_device_name():
    """'' : there is no GPU device."""
    return ""


__all__ = ["TestCase", "main", "is_gpu_available", "is_built_with_cuda", "gpu_device_name"]


def __dir__():
    return sorted(__all__)
