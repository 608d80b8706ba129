"""Runs TensorFlow's AutoGraph integration tests against treadle, unchanged.

TensorFlow's tests are not part of this repository: point this script at a
directory that holds them (a TensorFlow checkout's
tensorflow/python/autograph/tests: the *_test.py files and
reference_test_base.py). The script copies them to a scratch directory and
adds a conftest.py there that only maps module paths:

- `tensorflow` and `tensorflow.compat.v1` are treadle (each name looked up on
  treadle: `tf.test.TestCase` is `td.test.TestCase`, and so on);
- `tensorflow.python.autograph` is `treadle.autograph`;
- `tensorflow.python.autograph.tests.reference_test_base` is the copied
  reference_test_base.py.

Each test file runs in its own pytest process (with the interpreter given by
--python, which must import treadle). With --oracle-python (an interpreter
with TensorFlow installed) the same files also run on TensorFlow, where only
the reference_test_base path is mapped, and the report counts treadle's
passes among the tests TensorFlow passes.

    python scripts/tf_suites.py ~/tensorflow/tensorflow/python/autograph/tests \\
        --oracle-python ~/tf-venv/bin/python --json /tmp/tf_suites.json

(`pip install .[tf-suites]` brings absl-py, which TensorFlow's tests import,
pytest-timeout and tensorflow-cpu; the treadle side never imports TensorFlow,
so one environment can serve as both) prints one row per file (tests, TensorFlow's passes, treadle's passes) and the
tests treadle fails, with the first line of each failure."""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

_SHIM = '''"""Module paths of TensorFlow's tests, mapped ({target}). Written by scripts/tf_suites.py."""
import importlib.util
import os
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


def _module(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__path__ = []
    sys.modules[name] = mod
    return mod


if {use_treadle}:
    import treadle
    _tf = _module("tensorflow")
    _tf.__getattr__ = lambda name: getattr(treadle, name)
    _tf.compat = _module("tensorflow.compat", v1=treadle)
    sys.modules["tensorflow.compat.v1"] = treadle
    _tf.python = _module("tensorflow.python", autograph=treadle.autograph)
    sys.modules["tensorflow.python.autograph"] = treadle.autograph
    _parent = "tensorflow.python.autograph"
else:
    import tensorflow.python.autograph  # noqa: F401 - the real package; only its tests are mapped
    _parent = "tensorflow.python.autograph"

_spec = importlib.util.spec_from_file_location(_parent + ".tests.reference_test_base",
                                               os.path.join(_HERE, "reference_test_base.py"))
_base = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _base
_spec.loader.exec_module(_base)
_module(_parent + ".tests", reference_test_base=_base)
'''


def _prepare(source_dir, target):
    """A scratch copy of the test files with the shim for `target`."""
    files = sorted(glob.glob(os.path.join(source_dir, "*_test.py")))
    base = os.path.join(source_dir, "reference_test_base.py")
    if not files or not os.path.exists(base):
        sys.exit(f"{source_dir}: expected TensorFlow's AutoGraph tests (*_test.py and reference_test_base.py)")
    work = tempfile.mkdtemp(prefix=f"tf_suites_{target}_")
    for path in files + [base]:
        shutil.copy(path, work)
    with open(os.path.join(work, "conftest.py"), "w") as f:
        f.write(_SHIM.format(target=target, use_treadle=target == "treadle"))
    return work, [os.path.basename(p) for p in files]


def _run_file(python, work, name, timeout, env):
    """{test id: (outcome, first line of the failure)} of one test file."""
    report = os.path.join(work, name + ".xml")
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}", name]
    if timeout:
        cmd.insert(-1, f"--timeout={timeout}")
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if not os.path.exists(report):
        return {f"{name}::<collection>": ("error", (proc.stdout + proc.stderr).strip().splitlines()[-1:])}
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{name}::{case.get('classname').split('.')[-1]}::{case.get('name')}"
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                detail = _first_line(child.get("message") or child.text or "")
            elif child.tag == "skipped":
                outcome = "skipped"
        results[test_id] = (outcome, detail)
    return results


def _first_line(text):
    line = next((l for l in text.splitlines() if l.strip()), "")
    return re.sub(r"0x[0-9a-f]+", "0x…", line.strip())[:200]


def run_suite(source_dir, python, target, timeout):
    work, files = _prepare(source_dir, target)
    env = dict(os.environ)
    results = {}
    try:
        for name in files:
            results.update(_run_file(python, work, name, timeout, env))
            print(f"  {target}: {name} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return files, results


def table(files, treadle, oracle):
    rows = ["| file | tests | TensorFlow passes | treadle passes | treadle passes of TensorFlow's |",
            "|---|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0]
    for name in files:
        ids = sorted(t for t in treadle if t.startswith(name + "::"))
        ran = len(ids)
        td_pass = sum(treadle[t][0] == "passed" for t in ids)
        if oracle is not None:
            tf_pass_ids = [t for t in oracle if t.startswith(name + "::") and oracle[t][0] == "passed"]
            tf_pass = len(tf_pass_ids)
            both = sum(treadle.get(t, ("",))[0] == "passed" for t in tf_pass_ids)
        else:
            tf_pass = both = None
        totals = [a + (b or 0) for a, b in zip(totals, (ran, tf_pass, td_pass, both))]
        rows.append(f"| {name} | {ran} | {'' if tf_pass is None else tf_pass} | {td_pass} | "
                    f"{'' if both is None else both} |")
    rows.append(f"| **all** | {totals[0]} | {totals[1] if oracle else ''} | {totals[2]} | "
                f"{totals[3] if oracle else ''} |")
    return "\n".join(rows), totals


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tests_dir", help="directory with TensorFlow's AutoGraph tests (*_test.py, "
                                          "reference_test_base.py)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that imports treadle "
                                                                 "(default: this one)")
    parser.add_argument("--oracle-python", help="interpreter with TensorFlow installed, to run the same files on "
                                                "TensorFlow")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test (needs pytest-timeout; 0: none)")
    parser.add_argument("--json", help="write every test's outcome on both sides to this file")
    args = parser.parse_args()

    files, treadle = run_suite(args.tests_dir, args.python, "treadle", args.timeout)
    oracle = None
    if args.oracle_python:
        _, oracle = run_suite(args.tests_dir, args.oracle_python, "tensorflow", args.timeout)
    text, totals = table(files, treadle, oracle)
    print(text)
    if oracle is not None and totals[1]:
        print(f"\ntreadle passes {totals[3]} of the {totals[1]} tests TensorFlow passes "
              f"({100.0 * totals[3] / totals[1]:.1f}%).")
    print("\ntreadle's failures:")
    for test_id, (outcome, detail) in sorted(treadle.items()):
        if outcome == "failed":
            tf_note = "" if oracle is None else f" [TensorFlow: {oracle.get(test_id, ('not run',))[0]}]"
            print(f"- {test_id}{tf_note}: {detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"treadle": treadle, "tensorflow": oracle}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
