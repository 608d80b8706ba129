"""Runs a public-API selection of TensorFlow's tf.function tests against treadle or TensorFlow.

    python scripts/tf_function_suite.py TF_TEST_DIR [--backend td|tf] [--out DIR] [--json FILE]

TF_TEST_DIR is a directory holding TensorFlow's
tensorflow/python/eager/polymorphic_function/polymorphic_function_test.py. Nothing of
TensorFlow's is kept in this repository: the file is read from there, rewritten into --out, and run.

The selection rule, applied to the file's syntax tree, method by method:
  * a test method is kept when every name it takes from TensorFlow's internal modules
    (`constant_op.constant`, `math_ops.matmul`, a bare imported `save`, ...) has a public
    TensorFlow name in PUBLIC_NAMES below, and the same holds for the module-level helpers it
    uses;
  * it is dropped when it reads any private attribute (`x._foo`, not dunders), uses a TF1
    session (`self.cached_session`, `self.session`, `self.test_session`), or carries a
    `test_util` decorator other than the harness ones in HARNESS_DECORATORS.
The kept methods run unchanged; only the import lines are replaced by `from tffn_shim import ...`,
whose modules map each internal path to the public name of the chosen backend (module paths only,
no behaviour). The three harness decorators become identity decorators (each test runs once, in
eager mode, as under TensorFlow 2's default).
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile

TEST_FILE = "polymorphic_function_test.py"

# internal module alias -> {attribute: public dotted name under tf / td}
PUBLIC_NAMES = {
    "polymorphic_function": {"function": "function"},
    "constant_op": {"constant": "constant"},
    "math_ops": {n: n for n in ("matmul", "add", "multiply", "add_n", "reduce_sum", "reduce_mean",
                                "reduce_all", "equal", "range", "sqrt", "cast")},
    "array_ops": {**{n: n for n in ("ones", "zeros", "reshape", "shape", "identity", "transpose", "gather",
                                    "concat", "constant", "size")}, "where_v2": "where"},
    "array_ops_stack": {"stack": "stack", "unstack": "unstack"},
    "dtypes": {n: n for n in ("float32", "float64", "int32", "int64", "bool", "string")},
    "tensor_lib": {"TensorSpec": "TensorSpec", "Tensor": "Tensor"},
    "tensor_shape": {"TensorShape": "TensorShape"},
    "variables": {"Variable": "Variable"},
    # tf.Variable is TensorFlow 2's public constructor of a ResourceVariable.
    "resource_variable_ops": {"ResourceVariable": "Variable"},
    "backprop": {"GradientTape": "GradientTape"},
    "clip_ops": {"clip_by_global_norm": "clip_by_global_norm"},
    "string_ops": {"string_join": "strings.join", "reduce_join": "strings.reduce_join"},
    "ragged_factory_ops": {"constant": "ragged.constant"},
    "ragged_tensor": {"RaggedTensor": "RaggedTensor", "RaggedTensorSpec": "RaggedTensorSpec"},
    "sparse_tensor": {"SparseTensor": "SparseTensor", "SparseTensorSpec": "SparseTensorSpec"},
    "indexed_slices": {"IndexedSlices": "IndexedSlices", "IndexedSlicesSpec": "IndexedSlicesSpec"},
    "module": {"Module": "Module"},
    "nest": {n: "nest." + n for n in ("flatten", "map_structure", "assert_same_structure", "is_nested")},
    "extension_type": {"ExtensionType": "experimental.ExtensionType"},
    "random_ops": {"random_uniform": "random.uniform"},
    "check_ops": {"assert_equal_v2": "debugging.assert_equal"},
    "control_flow_assert": {"Assert": "debugging.Assert"},
    "variable_scope": {"variable_creator_scope": "variable_creator_scope"},
    "errors": {"InvalidArgumentError": "errors.InvalidArgumentError", "InternalError": "errors.InternalError"},
    "script_ops": {"eager_py_func": "py_function"},
    "context": {"executing_eagerly": "executing_eagerly"},
    "ops": {"convert_to_tensor": "convert_to_tensor", "init_scope": "init_scope", "device": "device"},
    "type_spec": {"type_spec_from_value": "type_spec_from_value"},
    "test": {"TestCase": "test.TestCase", "main": "test.main"},
    "test_util": {},
}
# names imported bare (`from ...save import save`) -> public dotted name
PUBLIC_BARE = {"save": "saved_model.save", "load": "saved_model.load", "Checkpoint": "train.Checkpoint"}
HARNESS_DECORATORS = {"run_in_graph_and_eager_modes", "run_v2_only", "disable_tfrt"}
SESSION_METHODS = {"cached_session", "session", "test_session"}


def internal_imports(tree):
    """Aliases bound by `from tensorflow... import X [as Y]` -> line numbers of those imports."""
    aliases, lines = set(), set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorflow"):
            aliases.update(a.asname or a.name for a in node.names)
            lines.update(range(node.lineno, node.end_lineno + 1))
    return aliases, lines


def problems(node, aliases, helpers, seen):
    """Why `node` (a function or class) is outside the public API, or an empty list."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            if sub.attr.startswith("_") and not sub.attr.startswith("__"):
                found.append("private ." + sub.attr)
            if isinstance(sub.value, ast.Name):
                base = sub.value.id
                if base in aliases and base not in PUBLIC_BARE:
                    allowed = PUBLIC_NAMES.get(base, {})
                    if sub.attr not in allowed and not (base == "test_util" and sub.attr in HARNESS_DECORATORS):
                        found.append("internal %s.%s" % (base, sub.attr))
                if base == "self" and sub.attr in SESSION_METHODS:
                    found.append("TF1 session")
        elif isinstance(sub, ast.Name) and sub.id in aliases and sub.id not in PUBLIC_NAMES:
            if sub.id not in PUBLIC_BARE:
                found.append("internal " + sub.id)
        elif isinstance(sub, ast.Name) and sub.id in helpers and sub.id not in seen:
            seen.add(sub.id)
            found += problems(helpers[sub.id], aliases, helpers, seen)
    return found


def select(source):
    """(rewritten source, kept test names, {dropped name: reasons})."""
    tree = ast.parse(source)
    aliases, import_lines = internal_imports(tree)
    helpers = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
               and not n.name.endswith("Test") and n.name != "FunctionBenchmark"}
    drop_lines, kept, dropped = set(import_lines), [], {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        if cls.name == "FunctionBenchmark" or not cls.name.endswith("Test"):
            if cls.name == "FunctionBenchmark":
                drop_lines.update(range(cls.lineno, cls.end_lineno + 1))
            continue
        for meth in cls.body:
            if not isinstance(meth, ast.FunctionDef):
                continue
            why = problems(meth, aliases, helpers, {meth.name})
            first = min([meth.lineno] + [d.lineno for d in meth.decorator_list])
            if why or not (meth.name.startswith("test") or meth.name in ("setUp", "tearDown")):
                if why:
                    dropped["%s.%s" % (cls.name, meth.name)] = sorted(set(why))
                drop_lines.update(range(first, meth.end_lineno + 1))
            elif meth.name.startswith("test"):
                kept.append("%s.%s" % (cls.name, meth.name))
    used = sorted(a for a in aliases if a in PUBLIC_NAMES or a in PUBLIC_BARE)
    out = ["from tffn_shim import %s  # noqa" % ", ".join(used)]
    for i, line in enumerate(source.splitlines(), start=1):
        out.append("" if i in drop_lines else line)
    body = "\n".join(out) + "\n"
    body = body.replace("\nif __name__ == '__main__':\n  ops.enable_eager_execution()\n", "\nif __name__ == '__main__':\n")
    return body, kept, dropped


SHIM = '''"""Maps TensorFlow's internal module paths to public names of the backend in TFFN_BACKEND."""
import os
import types

if os.environ.get("TFFN_BACKEND", "td") == "tf":
    import tensorflow as backend
else:
    import treadle as backend


def _resolve(dotted):
    value = backend
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


class _Module(types.ModuleType):
    def __init__(self, name, names):
        super().__init__(name)
        self._names = names

    def __getattr__(self, attr):
        if attr in self.__dict__.get("_names", {}):
            return _resolve(self._names[attr])
        raise AttributeError("%s.%s has no public mapping" % (self.__name__, attr))


def _identity_decorator(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


PUBLIC_NAMES = @NAMES@
PUBLIC_BARE = @BARE@
HARNESS_DECORATORS = @HARNESS@
for _alias, _names in PUBLIC_NAMES.items():
    globals()[_alias] = _Module(_alias, _names)
for _decorator in HARNESS_DECORATORS:
    setattr(globals()["test_util"], _decorator, _identity_decorator)
for _alias, _dotted in PUBLIC_BARE.items():
    globals()[_alias] = _resolve(_dotted)
'''

RUNNER = '''"""Runs the rewritten tests with unittest and writes each test's outcome as JSON."""
import json
import sys
import unittest

sys.path.insert(0, sys.argv[1])
from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()  # absltest's helpers (create_tempdir) read flags that absltest.main would parse
import polymorphic_function_test as suite  # noqa: E402


class Recorder(unittest.TextTestResult):
    outcomes = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[test.id()] = ["pass", ""]

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[test.id()] = ["fail", self._exc_info_to_string(err, test)[-1500:]]

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[test.id()] = ["error", self._exc_info_to_string(err, test)[-1500:]]

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[test.id()] = ["skip", reason]


tests = unittest.defaultTestLoader.loadTestsFromModule(suite)
unittest.TextTestRunner(resultclass=Recorder, verbosity=0, stream=open("/dev/null", "w")).run(tests)
with open(sys.argv[2], "w") as f:
    json.dump(Recorder.outcomes, f, indent=1, sort_keys=True)
'''


def prepare(tf_dir, out):
    with open(os.path.join(tf_dir, TEST_FILE)) as f:
        body, kept, dropped = select(f.read())
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, TEST_FILE), "w") as f:
        f.write(body)
    with open(os.path.join(out, "tffn_shim.py"), "w") as f:
        f.write(SHIM.replace("@NAMES@", repr(PUBLIC_NAMES)).replace("@BARE@", repr(PUBLIC_BARE))
                .replace("@HARNESS@", repr(sorted(HARNESS_DECORATORS))))
    with open(os.path.join(out, "run_suite.py"), "w") as f:
        f.write(RUNNER)
    with open(os.path.join(out, "selection.json"), "w") as f:
        json.dump({"kept": kept, "dropped": dropped}, f, indent=1)
    return kept, dropped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tf_dir", help="directory holding TensorFlow's " + TEST_FILE)
    parser.add_argument("--backend", choices=("td", "tf"), default="td")
    parser.add_argument("--out", help="where the rewritten tests go (default: a new temporary directory)")
    parser.add_argument("--json", help="where to write each test's outcome (default: OUT/BACKEND.json)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs the tests")
    args = parser.parse_args()
    args.out = args.out or tempfile.mkdtemp(prefix="tf_function_suite_")
    kept, dropped = prepare(args.tf_dir, args.out)
    print("selected %d test methods, dropped %d" % (len(kept), len(dropped)))
    result = args.json or os.path.join(args.out, args.backend + ".json")
    env = dict(os.environ, TFFN_BACKEND=args.backend, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([args.python, os.path.join(args.out, "run_suite.py"), args.out, result], env=env,
                   cwd=args.out, check=True)
    with open(result) as f:
        outcomes = json.load(f)
    counts = {}
    for kind, _ in outcomes.values():
        counts[kind] = counts.get(kind, 0) + 1
    print("%s: %s" % (args.backend, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))))


if __name__ == "__main__":
    main()
