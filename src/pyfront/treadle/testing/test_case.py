"""td.test.TestCase: unittest.TestCase with TensorFlow's assertion helpers,
so that tests written against tf.test run against treadle. Tensors, variables
and ragged tensors given to an assertion are evaluated to NumPy first;
nested structures (lists, tuples, dicts, namedtuples) are compared leaf by
leaf where TensorFlow does (assertAllClose)."""

import collections
import contextlib
import math
import random as _py_random
import re
import shutil
import tempfile
import unittest

import numpy as np

from treadle import errors
from treadle.framework import dtypes
from treadle.framework.tensor import Tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.variables import Variable
from treadle.ops import random_ops
from treadle.ragged.ragged_tensor import RaggedTensor
from treadle.sparse.sparse_tensor import SparseTensor

# What evaluate() makes of a td.SparseTensor, as TensorFlow's SparseTensorValue.
SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])

DEFAULT_SEED = 87654321  # TensorFlow's default graph seed, which tf.test.TestCase sets


def _evaluate_one(value):
    if isinstance(value, Variable):
        return value.numpy()
    if isinstance(value, RaggedTensor):
        return value.to_list()
    if isinstance(value, SparseTensor):
        return SparseTensorValue(value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy())
    if isinstance(value, Tensor):
        return value.numpy()
    evaluate = getattr(value, "_td_evaluate", None)
    return evaluate() if evaluate is not None else value


def evaluate_structure(value):
    """Every tensor in the (nested) value as NumPy; the rest as it is."""
    if isinstance(value, dict):
        return type(value)((k, evaluate_structure(v)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(evaluate_structure(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(evaluate_structure(v) for v in value)
    return _evaluate_one(value)


def _ndarray(value):
    value = evaluate_structure(value)
    return value if isinstance(value, np.ndarray) else np.array(value)


def _is_structure(value):
    return isinstance(value, (list, tuple, dict)) and not isinstance(value, np.ndarray)


_FLOAT_KINDS = "fc"


class _EagerSession:
    """What cached_session()/session() give in TensorFlow 2: `run` evaluates."""

    def run(self, fetches, feed_dict=None):
        if feed_dict:
            raise ValueError("feed_dict is not supported: treadle runs eagerly (there are no placeholders to feed)")
        return evaluate_structure(fetches)


class TestCase(unittest.TestCase):
    """Sets Python's, NumPy's and treadle's random seeds before each test, as
    tf.test.TestCase does."""

    def setUp(self):
        super().setUp()
        _py_random.seed(DEFAULT_SEED)
        np.random.seed(DEFAULT_SEED)
        random_ops.set_seed(DEFAULT_SEED)

    # ------------------------------------------------------------ running
    def evaluate(self, tensors):
        """The value(s) of `tensors` (a tensor or a nested structure) as NumPy."""
        return evaluate_structure(tensors)

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        yield _EagerSession()

    session = cached_session

    def get_temp_dir(self):
        """A directory for this test's files, removed with the test."""
        if not hasattr(self, "_td_temp_dir"):
            self._td_temp_dir = tempfile.mkdtemp(prefix=f"{type(self).__name__}_")
            self.addCleanup(_remove_tree, self._td_temp_dir)
        return self._td_temp_dir

    # ------------------------------------------------------------ equality
    def assertAllEqual(self, a, b, msg=None):
        if isinstance(a, RaggedTensor) or isinstance(b, RaggedTensor):
            self.assertEqual(evaluate_structure(a), evaluate_structure(b), msg)
            return
        a, b = _ndarray(a), _ndarray(b)
        self.assertEqual(a.shape, b.shape, _join(msg, f"Shape mismatch: expected {a.shape}, got {b.shape} with "
                                                      f"contents {b!r}"))
        same = a == b
        if a.dtype.kind in _FLOAT_KINDS and b.dtype.kind in _FLOAT_KINDS:
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNotAllEqual(self, a, b, msg=None):
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(_join(msg, "The two values are equal at all elements"))

    # ------------------------------------------------------------ closeness
    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        """Elementwise |a - b| <= atol + rtol * |b| (nan equals nan), leaf by
        leaf through nested structures."""
        self._assert_close(a, b, rtol, atol, [], msg)

    def _assert_close(self, a, b, rtol, atol, path, msg):
        a, b = evaluate_structure(a), evaluate_structure(b)
        where = "".join(f"[{p!r}]" for p in path)
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                raise AssertionError(_join(msg, f"{where or 'value'}: a dict compared with a {type(b if isinstance(a, dict) else a).__name__}"))
            self.assertEqual(set(a), set(b), _join(msg, f"{where or 'value'}: mismatched keys"))
            for k in a:
                self._assert_close(a[k], b[k], rtol, atol, path + [k], msg)
            return
        if _is_structure(a) and _is_structure(b) and not (_is_flat_numbers(a) and _is_flat_numbers(b)):
            self.assertEqual(len(a), len(b), _join(msg, f"{where or 'value'}: length {len(a)} != {len(b)}"))
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_close(x, y, rtol, atol, path + [i], msg)
            return
        a, b = np.asarray(a), np.asarray(b)
        self.assertEqual(a.shape, b.shape, _join(msg, f"{where}Shape mismatch: expected {a.shape}, got {b.shape}"))
        if a.dtype.kind in "OSUb" or b.dtype.kind in "OSUb":
            self.assertAllEqual(a, b, msg)
            return
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            cond = np.logical_or(np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b))
            detail = (f"{where}Not close where |a - b| > atol + rtol * |b| (rtol={rtol}, atol={atol}); "
                      f"not close at indices {np.argwhere(cond)[:10].tolist()}, a: {a[cond][:10]}, b: {b[cond][:10]}")
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=_join(msg, detail), equal_nan=True)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6, float_atol=1e-6,
                                      half_rtol=1e-3, half_atol=1e-3, bfloat16_rtol=1e-2, bfloat16_atol=1e-2,
                                      msg=None):
        """assertAllClose with tolerances widened for the lower precision of
        either side: float32, float16, bfloat16."""
        kinds = {_dtype_name(a), _dtype_name(b)}
        if "float32" in kinds or "complex64" in kinds:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if "float16" in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if "bfloat16" in kinds:
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol)
        except AssertionError:
            return
        raise AssertionError(_join(msg, "The two values are close at all elements"))

    def assertNear(self, f1, f2, err, msg=None):
        """|f1 - f2| <= err, for numbers."""
        self.assertTrue(f1 == f2 or math.fabs(f1 - f2) <= err,
                        _join(msg, f"{f1} != {f2} +/- {err}"))

    def assertArrayNear(self, farray1, farray2, err, msg=None):
        self.assertEqual(len(farray1), len(farray2), msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg)

    # ------------------------------------------------------------ ordering
    def assertAllGreater(self, a, comparison_target):
        self.assertGreater(np.min(_ndarray(a)), comparison_target)

    def assertAllLess(self, a, comparison_target):
        self.assertLess(np.max(_ndarray(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):
        self.assertGreaterEqual(np.min(_ndarray(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):
        self.assertLessEqual(np.max(_ndarray(a)), comparison_target)

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False, open_upper_bound=False):
        """Every element lies in the interval (bounds closed unless opened)."""
        target = _ndarray(target)
        if target.dtype.kind not in "iuf":
            raise AssertionError(f"{target.dtype} is not a numeric type")
        low = target <= lower_bound if open_lower_bound else target < lower_bound
        high = target >= upper_bound if open_upper_bound else target > upper_bound
        bad = np.logical_or(np.logical_or(low, high), np.isnan(target) if target.dtype.kind == "f" else False)
        if np.any(bad):
            interval = (f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}"
                        f"{')' if open_upper_bound else ']'}")
            raise AssertionError(f"{int(np.sum(bad))} of the {target.size} element(s) are outside the range "
                                 f"{interval}: at indices {np.argwhere(bad)[:10].tolist()}")

    def assertAllInSet(self, target, expected_set):
        target = _ndarray(target)
        extra = set(np.unique(target).tolist()) - set(np.asarray(list(expected_set)).tolist())
        if extra:
            raise AssertionError(f"{sorted(extra)} are not in the expected set {sorted(expected_set)}")

    # ------------------------------------------------------------ shapes and dtypes
    def assertShapeEqual(self, input_a, input_b, msg=None):
        """A NumPy array's shape equals a tensor's static shape."""
        if not isinstance(input_a, (np.ndarray, np.generic, Tensor)) or not isinstance(input_b, (np.ndarray, np.generic, Tensor)):
            raise TypeError("assertShapeEqual takes NumPy arrays or tensors")
        a = input_a.shape if isinstance(input_a, (np.ndarray, np.generic)) else TensorShape(input_a.shape).as_list()
        b = input_b.shape if isinstance(input_b, (np.ndarray, np.generic)) else TensorShape(input_b.shape).as_list()
        self.assertAllEqual(list(a), list(b), msg=_join(msg, f"shape mismatch: {list(a)} vs {list(b)}"))

    def assertDTypeEqual(self, target, expected_dtype):
        target = _ndarray(target)
        expected = dtypes.as_dtype(expected_dtype).as_numpy_dtype if isinstance(expected_dtype, dtypes.DType) \
            else expected_dtype
        self.assertEqual(target.dtype, np.dtype(expected))

    # ------------------------------------------------------------ errors
    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):
        """The block raises `exception_type` whose message matches the regular
        expression (re.search), or which satisfies the predicate."""
        if callable(expected_err_re_or_predicate):
            predicate, wanted = expected_err_re_or_predicate, "the predicate"
        else:
            pattern = expected_err_re_or_predicate

            def predicate(e):
                return re.search(pattern, str(e) if not isinstance(e, errors.OpError) else e.message) is not None

            wanted = f"the pattern {pattern!r}"
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e).__name__}: {e} does not match {wanted}") from e
        else:
            raise AssertionError(f"{exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    def assertRaisesIncompatibleShapesError(self, exception_type=errors.InvalidArgumentError):
        return self.assertRaisesWithPredicateMatch(
            (exception_type, ValueError), r"Incompatible shapes|Dimensions must be equal|incompatible|broadcast")

    # ------------------------------------------------------------ absltest's extras TensorFlow tests use
    def assertLen(self, container, expected_len, msg=None):
        self.assertEqual(len(container), expected_len, _join(msg, f"{container!r} has length {len(container)}, "
                                                                  f"not {expected_len}"))

    def assertStartsWith(self, actual, expected_start, msg=None):
        if not actual.startswith(expected_start):
            raise AssertionError(_join(msg, f"{actual!r} does not start with {expected_start!r}"))

    def assertEndsWith(self, actual, expected_end, msg=None):
        if not actual.endswith(expected_end):
            raise AssertionError(_join(msg, f"{actual!r} does not end with {expected_end!r}"))

    def assertEmpty(self, container, msg=None):
        self.assertEqual(len(container), 0, _join(msg, f"{container!r} is not empty"))

    def assertNotEmpty(self, container, msg=None):
        self.assertNotEqual(len(container), 0, _join(msg, f"{container!r} is empty"))


def _is_flat_numbers(value):
    """A list of plain numbers (compared as one array) rather than a structure."""
    return all(isinstance(v, (int, float, complex, bool, np.number, np.bool_, str, bytes)) for v in value)


def _dtype_name(value):
    if isinstance(value, (Tensor, Variable)):
        return value.dtype.name
    return np.asarray(evaluate_structure(value)).dtype.name


def _join(msg, detail):
    return f"{msg}\n{detail}" if msg else detail


def _remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)
