"""Runs TensorFlow Fold's Loom tests (loom_test.py, and weaver_test.cc's one test) on td.loom.

    python scripts/fold_loom_suite.py FOLD_LOOM_DIR [--out DIR]

FOLD_LOOM_DIR holds Fold's tensorflow_fold/loom/loom_test.py and weaver_test.cc. Nothing of Fold's
is kept here: loom_test.py is copied into --out and run unchanged, its imports answered by modules
written there:
  * `tensorflow_fold.loom.loom`: td.loom's TypeShape, LoomOp, PassThroughLoomOp, and Loom, whose
    every keyword goes to td.loom.Loom (so what treadle refuses, it refuses). Fold's session-era
    idioms map to treadle's documented replacements (docs/coming-from-fold.md):
    `loom.output_tensor(ts)` + `.eval(feed_dict=weaver.build_feed_dict(outputs))` becomes
    `loom.output_tensor(ts, schedule)` with `weaver.add_output(...)` and `weaver.serialize()`;
    `loom.input_tensor` fed with serialized weavers becomes a list of messages passed to it; a
    placeholder in `batch_inputs` is the value fed for it.
  * `tensorflow`: treadle's ops; `placeholder`, `gradients`, `test_session` and
    `global_variables_initializer` are the TF1 graph idioms, evaluated when fed (gradients through
    td.GradientTape).
weaver_test.cc's test is rebuilt in Python (weaver_build_metadata below): the same weave, with its
checks restated in terms of td.loom's schedule (result ids rather than Fold's per-depth positions).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

LOOM_SHIM = '''"""Fold's tensorflow_fold.loom.loom, answered by td.loom (see scripts/fold_loom_suite.py)."""
import treadle as td
from treadle.loom import LoomOp, PassThroughLoomOp, TypeShape  # noqa: F401

import tensorflow as _tf


class _Weaver:
    """A td.loom Weaver with Fold's build_feed_dict."""

    def __init__(self, loom, weaver):
        self._loom, self._weaver = loom, weaver

    def __getattr__(self, name):
        return getattr(self._weaver, name)

    def __call__(self, *args, **kwargs):
        return self._weaver(*args, **kwargs)

    def build_feed_dict(self, outputs=None):
        for result in outputs or ():
            self._weaver.add_output(result)
        return {self._loom.input_tensor: self._weaver.serialize()}


class Loom:
    def __init__(self, max_depth=None, named_tensors=None, named_ops=None, batch_inputs=None,
                 extra_type_shapes=None, dry_run=False, **kwargs):
        self._kwargs = dict(max_depth=max_depth, named_tensors=named_tensors, named_ops=named_ops,
                            extra_type_shapes=extra_type_shapes, dry_run=dry_run, **kwargs)
        # A placeholder fed at each run is a variable of unknown rows, assigned the fed rows.
        self._fed = {}
        batch = {}
        for ts, value in (batch_inputs or {}).items():
            if isinstance(value, _tf.Placeholder):
                variable = td.Variable(td.zeros([0] + list(ts.shape), ts.dtype),
                                       shape=td.TensorShape([None] + list(ts.shape)))
                self._fed[value] = value = variable
            batch[ts] = value
        self.input_tensor = _tf.placeholder("string")
        self._loom = td.loom.Loom(max_depth=max_depth, named_tensors=named_tensors, named_ops=named_ops,
                                  batch_inputs=batch or None, extra_type_shapes=extra_type_shapes,
                                  dry_run=dry_run, **kwargs)

    @property
    def type_shapes(self):
        return self._loom.type_shapes

    def make_weaver(self):
        return _Weaver(self, self._loom.make_weaver())

    def deserialize_weaver(self, serialized):
        return _Weaver(self, self._loom.deserialize_weaver(serialized))

    def output_tensor(self, type_shape):
        def run(feed):
            messages = feed[self.input_tensor]
            messages = [messages] if isinstance(messages, bytes) else list(messages)
            for placeholder, variable in self._fed.items():
                variable.assign(feed[placeholder])
            return self._loom.output_tensor(type_shape, self._loom.merge_schedules(messages))
        static = td.function(lambda s: self._loom.output_tensor(type_shape, s)).get_concrete_function(
            td.TensorSpec([None], td.string)).output_shapes
        return _tf.Lazy(run, static)
'''

TF_SHIM = '''"""What Fold's loom_test.py takes from TensorFlow, answered by treadle (scripts/fold_loom_suite.py)."""
import contextlib

import treadle as td
from treadle import add, concat, constant, multiply, zeros  # noqa: F401
from treadle import Variable  # noqa: F401


class Placeholder:
    def __init__(self, dtype):
        self.dtype = dtype


def placeholder(dtype):
    return Placeholder(dtype)


class Lazy:
    """A value of TensorFlow 1's graph: computed when evaluated with a feed."""

    def __init__(self, run, shape=None):
        self._run, self._shape = run, shape

    def get_shape(self):
        return self._shape

    def eval(self, feed_dict=None):
        return self._run(feed_dict or {}).numpy()


def reduce_sum(x):
    if isinstance(x, Lazy):
        return Lazy(lambda feed: td.reduce_sum(x._run(feed)))
    return td.reduce_sum(x)


def gradients(y, xs):
    def grad(i):
        def run(feed):
            with td.GradientTape() as tape:
                value = y._run(feed)
            return tape.gradient(value, xs)[i]
        return Lazy(run)
    return [grad(i) for i in range(len(xs))]


def global_variables_initializer():
    return None


class _Session:
    def run(self, fetch, feed_dict=None):
        return None if fetch is None else fetch.eval(feed_dict)


class _TestCase(td.test.TestCase):
    @contextlib.contextmanager
    def test_session(self):
        yield _Session()


class test:  # noqa: N801 (TensorFlow's module name)
    TestCase = _TestCase
    main = staticmethod(td.test.main) if hasattr(td.test, "main") else None
'''

SIX_MOVES = '''"""six.moves.xrange for Python 3."""
xrange = range
'''

RUNNER = '''import json, sys, unittest
sys.path.insert(0, sys.argv[1])
import loom_test  # noqa: E402
import weaver_port  # noqa: E402


class Recorder(unittest.TextTestResult):
    outcomes = {}

    def addSuccess(self, test):
        super().addSuccess(test); self.outcomes[test.id()] = ["pass", ""]

    def addFailure(self, test, err):
        super().addFailure(test, err); self.outcomes[test.id()] = ["fail", self._exc_info_to_string(err, test)[-1200:]]

    def addError(self, test, err):
        super().addError(test, err); self.outcomes[test.id()] = ["error", self._exc_info_to_string(err, test)[-1200:]]


suite = unittest.TestSuite([unittest.defaultTestLoader.loadTestsFromModule(loom_test),
                            unittest.defaultTestLoader.loadTestsFromModule(weaver_port)])
unittest.TextTestRunner(resultclass=Recorder, verbosity=0, stream=open("/dev/null", "w")).run(suite)
json.dump(Recorder.outcomes, open(sys.argv[2], "w"), indent=1, sort_keys=True)
'''

# weaver_test.cc's WeaverTest.BuildMetadata, rebuilt on td.loom: six constants [i, 2i, 3i] of a
# float vector of length 3, summed pairwise by `plus` into three results, then (pair0 + pair1) + pair2.
WEAVER_PORT = '''import unittest

import numpy as np
import treadle as td
from treadle import loom_pb2

VEC3 = td.loom.TypeShape(td.float32, (3,))


class Plus(td.loom.LoomOp):
    def __init__(self):
        super().__init__([VEC3, VEC3], [VEC3])

    def instantiate_batch(self, inputs):
        return [inputs[0] + inputs[1]]


class WeaverTest(unittest.TestCase):
    def test_build_metadata(self):
        loom = td.loom.Loom(named_ops={"plus": Plus()})
        w = loom.make_weaver()
        constants = [w(np.array([1.0 * i, 2.0 * i, 3.0 * i], np.float32)) for i in range(6)]
        pairs = [w.plus(constants[2 * i], constants[2 * i + 1]) for i in range(3)]
        first_four = w.plus(pairs[0], pairs[1])
        total = w.plus(first_four, pairs[2])
        w.add_output(total)
        message = loom_pb2.WeaverMessage.FromString(w.serialize())
        wiring = {(x.depth, x.op, x.arg): list(x.results) for x in message.wiring}
        passthrough, plus = 0, 1  # op 0 is the type shape's pass-through, as in Fold
        produced = {}  # (depth, op) -> result ids made by that op at that depth, in call order
        for rid, (depth, op) in enumerate(zip(message.result_depth, message.result_op)):
            produced.setdefault((depth, op), []).append(rid)
        # Depth 1: the three pairs; no pass-throughs.
        self.assertEqual(wiring.get((1, passthrough, 0), []), [])
        self.assertEqual(wiring[(1, plus, 0)], [constants[0], constants[2], constants[4]])
        self.assertEqual(wiring[(1, plus, 1)], [constants[1], constants[3], constants[5]])
        # Depth 2: plus(pair0, pair1), and pair2 carried by a pass-through.
        self.assertEqual(wiring[(2, passthrough, 0)], [pairs[2]])
        self.assertEqual(wiring[(2, plus, 0)], [pairs[0]])
        self.assertEqual(wiring[(2, plus, 1)], [pairs[1]])
        # Depth 3: plus(first_four, pair2 as passed through); no pass-throughs.
        self.assertEqual(wiring.get((3, passthrough, 0), []), [])
        self.assertEqual(wiring[(3, plus, 0)], [first_four])
        self.assertEqual(wiring[(3, plus, 1)], produced[(2, passthrough)])
        # The outputs: the one total, at depth 3.
        self.assertEqual(list(message.outputs), [total])
        self.assertEqual(w.depth(total), 3)
        # The constants, batched: row i is [i, 2i, 3i].
        rows = loom.make_weaver()
        for i in range(6):
            rows.add_output(rows(np.array([1.0 * i, 2.0 * i, 3.0 * i], np.float32)))
        np.testing.assert_array_equal(loom.output_tensor(VEC3, rows).numpy(),
                                      [[i * (j + 1) for j in range(3)] for i in range(6)])
        np.testing.assert_array_equal(loom.output_tensor(VEC3, w).numpy(), [[15.0, 30.0, 45.0]])
'''


def prepare(fold_dir, out):
    os.makedirs(os.path.join(out, "tensorflow_fold", "loom"), exist_ok=True)
    shutil.copy(os.path.join(fold_dir, "loom_test.py"), os.path.join(out, "loom_test.py"))
    os.makedirs(os.path.join(out, "six"), exist_ok=True)
    files = {"tensorflow.py": TF_SHIM, "six/__init__.py": "", "six/moves.py": SIX_MOVES, "run_fold.py": RUNNER, "weaver_port.py": WEAVER_PORT,
             "tensorflow_fold/__init__.py": "", "tensorflow_fold/loom/__init__.py": "",
             "tensorflow_fold/loom/loom.py": LOOM_SHIM}
    for name, text in files.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fold_dir", help="directory holding Fold's loom_test.py and weaver_test.cc")
    parser.add_argument("--out", help="where the rewritten tests go (default: a new temporary directory)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    args.out = args.out or tempfile.mkdtemp(prefix="fold_loom_suite_")
    prepare(args.fold_dir, args.out)
    result = os.path.join(args.out, "fold.json")
    subprocess.run([args.python, os.path.join(args.out, "run_fold.py"), args.out, result], cwd=args.out, check=True)
    with open(result) as f:
        outcomes = json.load(f)
    for name, (kind, detail) in sorted(outcomes.items()):
        if kind != "pass":
            print("%s %s: %s" % (kind, name, (detail.strip().splitlines() or [""])[-1][:200]))
    print("%d passed, %d failed" % (sum(k == "pass" for k, _ in outcomes.values()),
                                    sum(k != "pass" for k, _ in outcomes.values())))


if __name__ == "__main__":
    main()
