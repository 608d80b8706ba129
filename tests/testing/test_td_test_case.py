"""td.test.TestCase: TensorFlow's assertion helpers on tensors, variables,
ragged tensors and nested structures, each shown passing and failing, and
td.test.main running a module's tests."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import treadle as td


class _Case(td.test.TestCase):
    def runTest(self):  # noqa: N802 (unittest's name)
        pass


@pytest.fixture
def case():
    c = _Case()
    c.setUp()
    yield c
    c.doCleanups()


def test_evaluate_and_sessions_give_numpy(case):
    x = td.constant([1.0, 2.0])
    v = td.Variable([3, 4])
    out = case.evaluate({"x": x, "pair": (v, 5)})
    assert isinstance(out["x"], np.ndarray) and out["pair"][1] == 5
    np.testing.assert_array_equal(out["pair"][0], [3, 4])
    with case.cached_session() as sess:
        np.testing.assert_array_equal(sess.run(x), [1.0, 2.0])
    with case.session() as sess, pytest.raises(ValueError, match="feed_dict"):
        sess.run(x, feed_dict={"x:0": 1})
    assert case.evaluate(td.function(lambda: x * 2)()).tolist() == [2.0, 4.0]
    sparse = case.evaluate(td.SparseTensor([[0, 1]], [5.0], [2, 2]))
    assert sparse.indices.tolist() == [[0, 1]] and sparse.values.tolist() == [5.0]
    assert sparse.dense_shape.tolist() == [2, 2]
    assert case.evaluate(td.ragged.constant([[1], []])) == [[1], []]


def test_assert_all_equal(case):
    case.assertAllEqual(td.constant([[1, 2]]), [[1, 2]])
    case.assertAllEqual(td.constant([np.nan, 1.0]), [np.nan, 1.0])
    case.assertAllEqual(td.ragged.constant([[1], []]), [[1], []])
    with pytest.raises(AssertionError, match="Shape mismatch"):
        case.assertAllEqual(td.constant([1, 2]), [[1, 2]])
    with pytest.raises(AssertionError):
        case.assertAllEqual(td.constant([1, 2]), [1, 3])
    case.assertNotAllEqual(td.constant([1, 2]), [1, 3])


def test_assert_all_close_through_structures(case):
    x = td.constant([1.0, 2.0])
    case.assertAllClose({"a": x, "b": (x, 3.0)}, {"a": [1.0, 2.0000001], "b": ([1, 2], 3)})
    case.assertAllClose(x, [1.001, 2.001], atol=1e-2)
    with pytest.raises(AssertionError, match=r"\['b'\]\[1\]"):
        case.assertAllClose({"a": x, "b": (x, 3.0)}, {"a": x, "b": (x, 3.1)})
    with pytest.raises(AssertionError, match="mismatched keys"):
        case.assertAllClose({"a": 1}, {"b": 1})
    case.assertNotAllClose(x, [1.0, 2.5])


def test_assert_all_close_according_to_type(case):
    half = td.constant([1.0], dtype=td.float16)
    case.assertAllCloseAccordingToType(half, [1.0005])
    with pytest.raises(AssertionError):
        case.assertAllCloseAccordingToType(td.constant([1.0], dtype=td.float64), [1.0005])
    case.assertAllCloseAccordingToType(td.constant([1.0]), [1.0000005])


def test_ordering_and_range_helpers(case):
    x = td.constant([1, 2, 3])
    case.assertAllGreater(x, 0)
    case.assertAllLess(x, 4)
    case.assertAllGreaterEqual(x, 1)
    case.assertAllLessEqual(x, 3)
    with pytest.raises(AssertionError):
        case.assertAllGreater(x, 1)
    case.assertAllInRange(x, 1, 3)
    with pytest.raises(AssertionError, match=r"outside the range \(1, 3\]"):
        case.assertAllInRange(x, 1, 3, open_lower_bound=True)
    case.assertAllInSet(x, {1, 2, 3, 4})
    with pytest.raises(AssertionError, match=r"\[3\] are not in the expected set"):
        case.assertAllInSet(x, [1, 2])
    case.assertNear(1.0, 1.05, 0.1)
    with pytest.raises(AssertionError):
        case.assertNear(1.0, 1.5, 0.1)
    case.assertArrayNear([1.0, 2.0], [1.01, 1.99], 0.02)


def test_shape_and_dtype_helpers(case):
    x = td.constant([[1.0, 2.0]])
    case.assertShapeEqual(np.zeros((1, 2)), x)
    with pytest.raises(AssertionError):
        case.assertShapeEqual(np.zeros((2, 1)), x)
    with pytest.raises(TypeError):
        case.assertShapeEqual([1, 2], x)
    case.assertDTypeEqual(x, np.float32)
    case.assertDTypeEqual(x, td.float32)
    with pytest.raises(AssertionError):
        case.assertDTypeEqual(x, np.int32)


def test_error_helpers(case):
    with case.assertRaisesOpError("Incompatible shapes"):
        td.constant([1, 2]) + td.constant([1, 2, 3])
    with case.assertRaisesWithPredicateMatch(ValueError, lambda e: "boom" in str(e)):
        raise ValueError("boom")
    with pytest.raises(AssertionError, match="does not match"):
        with case.assertRaisesWithPredicateMatch(ValueError, "other"):
            raise ValueError("boom")
    with pytest.raises(AssertionError, match="not raised"):
        with case.assertRaisesOpError("x"):
            pass
    with case.assertRaisesIncompatibleShapesError():
        td.constant([1, 2]) + td.constant([1, 2, 3])


def test_absltest_extras_and_temp_dir(case):
    case.assertLen([1, 2], 2)
    case.assertStartsWith("treadle", "tre")
    case.assertEndsWith("treadle", "dle")
    case.assertEmpty([])
    case.assertNotEmpty([0])
    import os
    assert os.path.isdir(case.get_temp_dir())


def test_set_up_seeds_every_test_alike(case):
    first = td.random.uniform([3]).numpy()
    again = _Case()
    again.setUp()
    np.testing.assert_array_equal(td.random.uniform([3]).numpy(), first)


def test_main_runs_the_modules_tests(tmp_path):
    script = tmp_path / "ported_test.py"
    script.write_text(textwrap.dedent("""
        import treadle as tf

        class PortedTest(tf.test.TestCase):
            def test_add(self):
                self.assertAllEqual(tf.constant(1) + 1, 2)

            def test_fails(self):
                self.assertAllClose(tf.constant(1.0), 2.0)

        if __name__ == "__main__":
            tf.test.main()
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Ran 2 tests" in result.stderr and "failures=1" in result.stderr
    assert not td.test.is_gpu_available() and td.test.gpu_device_name() == ""
