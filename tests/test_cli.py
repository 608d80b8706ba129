"""The `treadle` command line: its manners (one-line errors and exit codes,
--version, --debug, closed pipes, help texts), `info`/`show` on every kind of
file treadle writes, `loom run` outputs, and the Loom demo."""

import re
import argparse
import os
import subprocess
import sys

import numpy as np
import pytest

import treadle as td
from treadle import cli
from treadle.io import examples


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, expected_code, *fragments):
    assert code == expected_code, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    for fragment in fragments:
        assert fragment in err, err


class Add(td.loom.LoomOp):
    def __init__(self, ts):
        super().__init__([ts, ts], [ts])

    def instantiate_batch(self, inputs):
        return [inputs[0] + inputs[1]]


VEC = td.loom.TypeShape(td.float32, (3,), "vec")


@pytest.fixture
def files(tmp_path):
    """A saved loom, a schedule file for it, a saved function, a file of
    tf.train.Example records, a text file, and truncated and corrupt copies."""
    loom = td.loom.Loom(named_tensors={"x": (np.array([1.0, 2.0, 3.0], np.float32), "vec")}, named_ops={"add": Add(VEC)})
    td.save(loom, str(tmp_path / "v.loom"))
    messages = []
    for i in range(7):
        w = loom.make_weaver()
        w.add_output(w.add(w.x, w.constant(np.full(3, float(i), np.float32), tag="vec")))
        messages.append(w.serialize())
    td.loom.write_schedules(tmp_path / "s.tfrecord", messages)

    @td.function(input_signature=[td.TensorSpec([None], td.float32)])
    def double(x):
        return x * 2.0

    td.save(double, str(tmp_path / "f.td"))
    td._core.write_records(str(tmp_path / "examples.tfrecord"),
                           [examples.example({"label": [1], "text": [b"a tree"]})])
    (tmp_path / "notes.txt").write_text("not a treadle file\n")
    for name in ["v.loom", "s.tfrecord", "f.td"]:
        data = (tmp_path / name).read_bytes()
        (tmp_path / f"truncated-{name}").write_bytes(data[:len(data) - 9])
        (tmp_path / f"corrupt-{name}").write_bytes(data[:40] + bytes([data[40] ^ 0x5A]) + data[41:])
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "a-directory").mkdir()
    return tmp_path, loom, messages


# ------------------------------------------------------------------ manners

def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out == f"treadle {td.__version__}\n"


def test_no_command_prints_help_and_succeeds(capsys):
    code, out, _ = run([], capsys)
    assert code == 0
    assert "usage: treadle" in out and "Exit status" in out


@pytest.mark.parametrize("argv, fragment", [
    (["no-such-command"], "invalid choice"),
    (["demo", "--repeats", "0"], "must be at least 1"),
    (["demo", "--trees", "many"], "expected an integer"),
    (["demo", "--max-leaves", "1"], "--max-leaves: must be at least 2"),
    (["loom"], "required"),
    (["loom", "info"], "required: FILE"),
    (["loom", "run", "a.loom", "s.tfrecord", "-b", "0"], "must be at least 1"),
    (["loom", "run", "a.loom", "s.tfrecord", "--format", "csv"], "invalid choice"),
    (["show"], "required: FILE"),
    (["info", "a", "b"], "unrecognized arguments"),
])
def test_usage_errors_are_one_line_with_status_2(argv, fragment, capsys):
    code, out, err = run(argv, capsys)
    assert_one_line_error(code, err, 2, fragment, "--help")
    assert out == ""


def every_parser(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from every_parser(sub)


def test_every_argument_has_help():
    for parser in every_parser(cli._build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{parser.prog} {choice.dest}"
            else:
                assert action.help, f"{parser.prog}: {action.option_strings or action.dest} has no help"


def test_debug_adds_the_traceback(files, capsys):
    tmp, _, _ = files
    code, _, err = run(["info", str(tmp / "corrupt-f.td")], capsys)
    assert_one_line_error(code, err, 1, "checksum")
    for argv in (["--debug", "info", str(tmp / "corrupt-f.td")], ["info", str(tmp / "corrupt-f.td"), "--debug"]):
        code, _, err = run(argv, capsys)
        assert code == 1 and "Traceback" in err and err.rstrip().splitlines()[-1].startswith("treadle: error:")


@pytest.mark.parametrize("command", [["info"], ["show", "v.loom"]])
def test_closed_pipe_exits_quietly(files, command):
    tmp, _, _ = files
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE (`treadle info | head -0`)
    argv = [str(tmp / a) if a.endswith(".loom") else a for a in command]
    result = subprocess.run([sys.executable, "-m", "treadle"] + argv, stdout=write_end,
                            stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)
    os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == cli.EXIT_PIPE


def test_python_dash_m_treadle_and_an_error_in_a_subprocess(tmp_path):
    result = subprocess.run([sys.executable, "-m", "treadle", "info"], capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "registered ops" in result.stdout
    result = subprocess.run([sys.executable, "-m", "treadle", "info", str(tmp_path / "missing.loom")],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"treadle: error: {tmp_path / 'missing.loom'}: no such file\n"


# ------------------------------------------------------------------ bad input: one line, status 1

@pytest.mark.parametrize("command", [["info"], ["show"], ["loom", "info"], ["run"]])
@pytest.mark.parametrize("name, fragment", [
    ("missing", "no such file"),
    ("a-directory", "is a directory"),
    ("empty", "empty"),
    ("notes.txt", "neither a saved function or loom nor a schedule file"),
    ("truncated-v.loom", "truncated"),
    ("corrupt-v.loom", "checksum"),
    ("truncated-f.td", "truncated"),
    ("corrupt-f.td", "checksum"),
    ("truncated-s.tfrecord", "truncated"),
    ("corrupt-s.tfrecord", "corrupted record"),
    ("examples.tfrecord", "record 0 is not a schedule"),
])
def test_bad_files_are_one_line_errors(files, capsys, command, name, fragment):
    tmp, _, _ = files
    if command == ["run"]:  # run looks at the file's kind first
        if name.endswith("tfrecord") or name == "notes.txt":
            fragment = "is not a treadle file, so not a saved function"
        elif name.endswith("v.loom"):
            fragment = "is a saved loom, not a saved function"
    code, out, err = run(command + [str(tmp / name)], capsys)
    assert_one_line_error(code, err, 1, str(tmp / name), fragment)


@pytest.mark.parametrize("loom_file, schedules, fragment", [
    ("f.td", "s.tfrecord", "is a saved function, not a saved loom"),
    ("s.tfrecord", "s.tfrecord", "is not a treadle file, so not a saved loom"),
    ("missing", "s.tfrecord", "no such file"),
    ("corrupt-v.loom", "s.tfrecord", "checksum"),
    ("v.loom", "a-directory", "is a directory, not a schedule file"),
    ("v.loom", "missing", "no such schedule file"),
    ("v.loom", "v.loom", "is a saved loom, not a schedule file"),
    ("v.loom", "truncated-s.tfrecord", "truncated"),
    ("v.loom", "examples.tfrecord", "loom fingerprint"),
])
def test_loom_run_bad_input(files, capsys, loom_file, schedules, fragment):
    tmp, _, _ = files
    code, out, err = run(["loom", "run", str(tmp / loom_file), str(tmp / schedules), "-o", str(tmp / "out"),
                          "-q"], capsys)
    assert_one_line_error(code, err, 1, fragment)


def test_run_on_a_saved_loom_says_how_to_run_it(files, capsys):
    tmp, _, _ = files
    code, _, err = run(["run", str(tmp / "v.loom")], capsys)
    assert_one_line_error(code, err, 1, "is a saved loom, not a saved function", "treadle loom run")


def test_run_bad_inputs(files, capsys):
    tmp, _, _ = files
    code, _, err = run(["run", str(tmp / "f.td"), "-i", f"x={tmp / 'missing.npy'}"], capsys)
    assert_one_line_error(code, err, 1, "cannot read input")
    np.save(tmp / "x.npy", np.ones(2, np.float32))
    code, _, err = run(["run", str(tmp / "f.td"), "-i", f"y={tmp / 'x.npy'}"], capsys)
    assert_one_line_error(code, err, 1, "no parameter 'y'")
    np.save(tmp / "bad.npy", np.ones((2, 2), np.float32))
    code, _, err = run(["run", str(tmp / "f.td"), "-i", str(tmp / "bad.npy")], capsys)
    assert_one_line_error(code, err, 1, f"input 'x' ({tmp / 'bad.npy'}) is float32 of shape [2, 2], but it takes "
                                        "float32 of shape [None]")
    np.save(tmp / "ints.npy", np.ones(2, np.int64))
    code, _, err = run(["run", str(tmp / "f.td"), "-i", f"x={tmp / 'ints.npy'}"], capsys)
    assert_one_line_error(code, err, 1, "input 'x' (" + str(tmp / "ints.npy") + ") is int64 of shape [2], but it "
                                        "takes float32 of shape [None]")
    code, _, err = run(["run", str(tmp / "f.td")], capsys)
    assert_one_line_error(code, err, 1, "no input for 'x' (float32 of shape [None]; give it with -i x=FILE.npy)")
    code, _, err = run(["run", str(tmp / "f.td"), "-i", str(tmp / "x.npy"), "-i", str(tmp / "x.npy")], capsys)
    assert_one_line_error(code, err, 1, "2 inputs given by position, but it takes 1 (x)")
    code, out, _ = run(["run", str(tmp / "f.td"), "-i", f"x={tmp / 'x.npy'}"], capsys)
    assert code == 0 and "output 0: float32 [2]" in out and "[2. 2.]" in out


def test_read_schedules_refuses_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError, match="a schedule file is expected"):
        td.loom.read_schedules(tmp_path)


# ------------------------------------------------------------------ info and show

def test_info_without_a_file_prints_versions_and_op_count(capsys):
    code, out, _ = run(["info"], capsys)
    assert code == 0
    assert f"treadle        {td.__version__}" in out
    assert f"numpy          {np.__version__}" in out
    assert "(libprotobuf the core was built with)" in out
    count = int(next(line for line in out.splitlines() if line.startswith("registered ops")).split()[-1])
    assert count == len(td._core.op_defs()) and count > 0
    code, out, _ = run(["info", "--verbose"], capsys)
    assert "AddV2" in out and "MatMul" in out


def test_info_prints_the_simd_level(capsys):
    code, out, _ = run(["info"], capsys)
    assert code == 0
    isa = td.config.isa_info()
    line = next(line for line in out.splitlines() if line.startswith("SIMD kernels"))
    assert line.split()[2] == isa["level"]
    assert f"Highway target {isa['target']}" in line
    assert ", ".join(isa["available"]) in line


def test_info_on_a_saved_loom(files, capsys):
    tmp, loom, _ = files
    for argv in (["info", str(tmp / "v.loom")], ["loom", "info", str(tmp / "v.loom")]):
        code, out, err = run(argv, capsys)
        assert code == 0, err
        assert "saved loom; 1 type shape, 1 op, 1 named tensor, 0 batch inputs" in out
        assert f"fingerprint {loom.fingerprint:#018x}" in out
        assert "0: float32 (3,) tag='vec'" in out
        assert "add: [0, 0] -> [0] (with gradient)" in out
        assert "named tensors:\n  x: type shape 0" in out
    code, out, _ = run(["show", str(tmp / "v.loom")], capsys)
    assert code == 0 and re.search(r"\w+ = AddV2\(input_0, input_1\)", out)


def test_info_on_a_schedule_file(files, capsys):
    tmp, loom, messages = files
    code, out, _ = run(["info", str(tmp / "s.tfrecord")], capsys)
    assert code == 0
    assert "schedule file; 7 schedules, 21 results, 7 outputs, deepest 1" in out
    assert f"{loom.fingerprint:#018x}" in out
    code, out, _ = run(["show", str(tmp / "s.tfrecord")], capsys)
    assert code == 0 and out.count("\nrecord ") == 7 and "record 6: 3 results, 1 output, 1 constant" in out


def test_info_and_show_on_a_saved_function(files, capsys):
    tmp, _, _ = files
    code, out, _ = run(["info", str(tmp / "f.td")], capsys)
    assert code == 0 and "saved function; 1 signature, 0 variables" in out
    assert "TensorSpec(shape=(None,), dtype=td.float32" in out
    code, out, _ = run(["show", str(tmp / "f.td")], capsys)
    assert code == 0 and "= Mul(" in out


# ------------------------------------------------------------------ loom run

def expected_outputs(loom, messages):
    return loom.output_tensor(VEC, messages).numpy()


def test_loom_run_writes_npy_with_a_progress_bar(files, capsys):
    tmp, loom, messages = files
    code, out, err = run(["loom", "run", str(tmp / "v.loom"), str(tmp / "s.tfrecord"), "-o", str(tmp / "out"),
                          "-b", "3"], capsys)
    assert code == 0, err
    assert "100.0%" in err and "7 schedules" in err
    assert "ran 7 schedules" in out
    np.testing.assert_array_equal(np.load(tmp / "out" / "outputs_vec.npy"), expected_outputs(loom, messages))


def test_loom_run_writes_npz(files, capsys):
    tmp, loom, messages = files
    code, _, err = run(["loom", "run", str(tmp / "v.loom"), str(tmp / "s.tfrecord"), "-o", str(tmp / "out"),
                        "--format", "npz", "-q"], capsys)
    assert code == 0 and err == ""
    with np.load(tmp / "out" / "outputs.npz") as data:
        np.testing.assert_array_equal(data["outputs_vec"], expected_outputs(loom, messages))


def example_class():
    """tf.train.Example's messages, declared here from TensorFlow's .proto
    field numbers, to read what treadle wrote independently of its writer."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="example_test.proto", package="tftest", syntax="proto3")

    def message(name, fields, nested=()):
        m = fdp.message_type.add(name=name)
        for number, (fname, ftype, label, type_name) in enumerate(fields, 1):
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
        for n in nested:
            m.nested_type.add().CopyFrom(n)
        return m

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    message("BytesList", [("value", F.TYPE_BYTES, rep, None)])
    message("FloatList", [("value", F.TYPE_FLOAT, rep, None)])
    message("Int64List", [("value", F.TYPE_INT64, rep, None)])
    message("Feature", [("bytes_list", F.TYPE_MESSAGE, opt, ".tftest.BytesList"),
                        ("float_list", F.TYPE_MESSAGE, opt, ".tftest.FloatList"),
                        ("int64_list", F.TYPE_MESSAGE, opt, ".tftest.Int64List")])
    entry = descriptor_pb2.DescriptorProto(name="FeatureEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".tftest.Feature")
    message("Features", [("feature", F.TYPE_MESSAGE, rep, ".tftest.Features.FeatureEntry")], nested=[entry])
    message("Example", [("features", F.TYPE_MESSAGE, opt, ".tftest.Features")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tftest.Example"))


def test_loom_run_writes_tf_train_examples(files, capsys):
    tmp, loom, messages = files
    code, out, err = run(["loom", "run", str(tmp / "v.loom"), str(tmp / "s.tfrecord"), "-o", str(tmp / "out"),
                          "--format", "tfrecord", "-q"], capsys)
    assert code == 0, err
    expected = expected_outputs(loom, messages)
    Example = example_class()
    records = td.loom.read_schedules(tmp / "out" / "outputs_vec.tfrecord")  # any TFRecord file reads this way
    assert len(records) == len(expected)
    for record, row in zip(records, expected):
        feature = Example.FromString(record).features.feature
        assert feature["dtype"].bytes_list.value == [b"float32"]
        assert list(feature["shape"].int64_list.value) == [3]
        assert list(feature["type_shape"].int64_list.value) == [0]
        np.testing.assert_array_equal(np.frombuffer(feature["value"].bytes_list.value[0], "<f4"), row)


def test_examples_encode_negative_and_large_ints():
    Example = example_class()
    values = [0, 1, 127, 128, 300, -1, -(2 ** 63), 2 ** 63 - 1]
    got = Example.FromString(examples.example({"v": values})).features.feature["v"].int64_list.value
    assert list(got) == values


# ------------------------------------------------------------------ demo

def test_demo_runs_the_loom(capsys):
    code, out, err = run(["demo", "--trees", "4", "--max-leaves", "12", "--repeats", "2"], capsys)
    assert code == 0, err
    assert "4 random binary trees" in out
    assert "depth  1: leaf x" in out
    assert "equal to a NumPy recursion over each tree: True" in out
    assert "dtype float32" in out
    runs_line = next(line for line in out.splitlines() if "batched runs instead of" in line)
    runs, calls = int(runs_line.split()[2]), int(runs_line.split("instead of")[1].split()[0])
    assert runs < calls


def test_loom_run_error_starts_its_own_line_after_the_progress_bar(files, capsys):
    """stderr is not a terminal here (as in a log): the bar's last state ends its
    line, and the error message is a line of its own."""
    tmp, _, _ = files
    code, _, err = run(["loom", "run", str(tmp / "v.loom"), str(tmp / "truncated-s.tfrecord"), "-o",
                        str(tmp / "out"), "-b", "1"], capsys)
    assert code == 1
    last = err.rstrip("\n").split("\n")[-1]  # lines as a log shows them (not split at the bar's \r)
    assert last.startswith("treadle: error:") and "truncated" in last, repr(err)
    assert "100.0%" not in err and "schedules" in err  # the bar was drawn before the error


def test_info_shows_ragged_inputs_and_variables_apart_from_batch_inputs(tmp_path, capsys):
    h = td.loom.TypeShape(td.float32, (2,), "h")

    class Node(td.loom.LoomOp):
        def __init__(self):
            super().__init__([td.loom.Ragged(h), h], [h])

        def instantiate_batch(self, inputs):
            return [inputs[1] + td.reduce_sum(inputs[0], axis=1)]

    table = td.Variable(np.ones((5, 2), np.float32), name="table")
    scale = td.Variable(np.ones(2, np.float32), name="scale")
    loom = td.loom.Loom(named_ops={"node": Node()}, batch_inputs={h: table}, named_tensors={"s": (scale, "h")})
    td.save(loom, str(tmp_path / "r.loom"))
    code, out, _ = run(["info", str(tmp_path / "r.loom")], capsys)
    assert code == 0
    assert "node: [Ragged(0), 0] -> [0]" in out
    assert "batch inputs (rows a weaver reads with batch_input):\n  type shape 0\nvariables:\n" in out
    assert "variable table" in out.split("variables:")[1] and "variable scale" in out.split("variables:")[1]
