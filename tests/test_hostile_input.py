"""Files and attributes crafted to crash, hang or exhaust treadle (issue 14's
findings): each must end in a Python exception naming what is wrong, or run
with work bounded by the input."""

import os
import struct
import zlib

import numpy as np
import pytest

import treadle as td
from treadle import graph_pb2, loom_pb2, saved_pb2
from treadle.framework import op_execution as framework_ops
from treadle.framework.op_execution import execute
from treadle.io.container import MAGIC, read_container, write_container

from tests.loom.loom_testlib import vector_loom


def _rewrite_payload(path, edit, proto_cls):
    """Parses the treadle file at `path`, applies `edit` to its message and writes it back."""
    with open(path, "rb") as f:
        version = struct.unpack("<I", f.read(8)[4:8])[0]
    msg = proto_cls()
    msg.ParseFromString(read_container(path, version))
    edit(msg)
    write_container(path, version, msg.SerializeToString())


def _depth_two_weaver(loom):
    w = loom.make_weaver()
    x, y = w.named_tensor("x"), w.named_tensor("y")
    w.add_output(w.op("mul", [w.op("add", [x, y])[0], y])[0])
    return w


# ---------------------------------------------------------------- finding 1: LoomLayer depth=0

@pytest.fixture
def unrolled():
    loom, _, _ = vector_loom(max_depth=2)
    w = _depth_two_weaver(loom)
    inputs = [v.read_value() for v in loom._input_sources]
    types = [ts.dtype for ts in loom.type_shapes]
    shapes = loom._run_attrs["output_shapes"]
    base = loom._loom_attrs
    outs = execute("LoomInitialState", [w._schedule()] + inputs,
                   dict(base, Tinputs=loom._input_dtypes, Tout=[td.variant] + types, output_shapes=[[]] + shapes))
    return loom, outs[0], list(outs[1:]), base, types, shapes


def test_loom_layer_at_depth_zero_is_refused(unrolled):
    loom, handle, state, base, types, shapes = unrolled
    with pytest.raises(td.errors.InvalidArgumentError, match="depth = 0 is out of range"):
        execute("LoomLayer", [handle] + state, dict(base, Tinputs=types, Tout=types, output_shapes=shapes, depth=0))


def test_loom_layer_grad_at_depth_zero_is_refused(unrolled):
    loom, handle, state, base, types, shapes = unrolled
    with pytest.raises(td.errors.InvalidArgumentError, match="depth = 0 is out of range"):
        execute("LoomLayerGrad", [handle] + state + state,
                dict(base, Tinputs=types * 2, Tout=types, output_shapes=shapes, depth=0))


def test_saved_function_with_a_depth_zero_layer_fails_to_load(tmp_path):
    loom, _, _ = vector_loom(max_depth=2)

    @td.function
    def run(schedule):
        return loom._run(schedule)

    w = _depth_two_weaver(loom)
    expected = run(td.constant(w.serialize()))[0].numpy()
    path = str(tmp_path / "f.td")
    td.save(run, path)

    def to_depth_zero(saved):
        layers = [n for f in saved.graph.library.function for n in f.node_def if n.op == "LoomLayer"]
        assert layers
        layers[0].attr["depth"].i = 0

    np.testing.assert_array_equal(td.load(path)(td.constant(w.serialize()))[0].numpy(), expected)
    _rewrite_payload(path, to_depth_zero, saved_pb2.SavedFile)
    with pytest.raises((td.errors.InvalidArgumentError, ValueError), match="depth"):
        td.load(path)(td.constant(w.serialize()))


# ---------------------------------------------------------------- finding 3: max_depth from a file

def test_saved_loom_with_a_huge_max_depth_runs_only_the_schedules_depths(tmp_path):
    loom, _, _ = vector_loom(max_depth=2)
    path = str(tmp_path / "loom.td")
    td.save(loom, path)

    def deepen(saved):
        saved.loom.metadata.max_depth = 4096
    _rewrite_payload(path, deepen, loom_pb2.SavedLoom)
    loaded = td.load(path)
    assert loaded.max_depth == 4096
    w = _depth_two_weaver(loaded)
    ran = []
    framework_ops.op_recorders.append(lambda name, *rest: ran.append(name))
    try:
        out = loaded(w)
    finally:
        framework_ops.op_recorders.pop()
    x, y = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0])
    np.testing.assert_array_equal(list(out.values())[0].numpy(), [(x + y) * y])
    assert ran.count("LoomLayer") <= 2

    # Traced, too, the work follows the schedule, not the file's max_depth.
    @td.function
    def run(schedule):
        return loaded._run(schedule)

    graph = run.get_concrete_function(td.constant(w.serialize())).graph
    assert sum(op.type == "LoomLayer" for op in graph.operations) <= 2
    np.testing.assert_array_equal(run(td.constant(w.serialize()))[0].numpy(), [(x + y) * y])
    too_deep = loaded.make_weaver()
    r = too_deep.named_tensor("x")
    with pytest.raises(ValueError, match="beyond the loom's max_depth of 4096"):  # max_depth still bounds
        for _ in range(4097):
            r = too_deep.op("add", [r, r])[0]


def test_unrolled_loom_gradients_with_a_shallow_schedule():
    loom, x, y = vector_loom(max_depth=50)
    w = _depth_two_weaver(loom)
    with td.GradientTape() as tape:
        out = list(loom(w).values())[0]
        loss = td.reduce_sum(out)
    gx, gy = tape.gradient(loss, [x, y])
    xv, yv = x.numpy(), y.numpy()
    np.testing.assert_allclose(gx.numpy(), yv)
    np.testing.assert_allclose(gy.numpy(), xv + 2 * yv)


# ---------------------------------------------------------------- finding 4: sizes claimed by files

def _record_header(length):
    from treadle import _core
    head = struct.pack("<Q", length)
    masked = ((lambda c: (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)(_core.crc32c(head)))
    return head + struct.pack("<I", masked)


@pytest.mark.parametrize("length", [1 << 31, (1 << 31) - 1, 1 << 20, 9])
def test_schedule_file_claiming_more_bytes_than_it_holds(tmp_path, length):
    path = tmp_path / "s.tfrecord"
    path.write_bytes(_record_header(length) + b"12345678")  # 20 bytes: a header and 8 of the record's bytes
    with pytest.raises(td.errors.DataLossError, match=f"claims {length} bytes.*only 8 remain"):
        td.loom.read_schedules(str(path))
    from treadle import _core
    reader = _core.LoomScheduleReader(str(path))  # the reader `treadle loom run` streams with
    with pytest.raises(td.errors.DataLossError, match=f"claims {length} bytes.*only 8 remain"):
        reader.read_batch(vector_loom()[0]._spec, 10)


def test_treadle_file_claiming_more_bytes_than_it_holds(tmp_path):
    path = tmp_path / "f.td"
    path.write_bytes(struct.pack("<4sIQI", MAGIC, (1 << 8) | 1, 1 << 34, 0) + b"x" * 10)
    with pytest.raises(td.errors.DataLossError, match=r"claims 17179869184 bytes.*only 10"):
        td.load(str(path))


# ---------------------------------------------------------------- finding 5: output_structure

@pytest.fixture
def saved_function(tmp_path):
    @td.function
    def f(x):
        return x * 2.0, td.reduce_sum(x)

    f(td.constant([[1.0, 2.0], [3.0, 4.0]]))
    path = str(tmp_path / "f.td")
    td.save(f, path)
    return path


def _set_outputs(path, edit):
    def change(saved):
        from treadle.io import structure
        outs = structure.decode(saved.functions[0].output_structure)
        saved.functions[0].output_structure.CopyFrom(structure.encode(edit(outs)))
    _rewrite_payload(path, change, saved_pb2.SavedFile)


def test_load_checks_declared_output_dtypes_and_shapes(saved_function):
    _set_outputs(saved_function, lambda outs: (td.TensorSpec([7], td.int64), outs[1]))
    with pytest.raises(td.errors.DataLossError, match=r"(?s)output 0.*int64.*\(7,\).*float32"):
        td.load(saved_function)


@pytest.mark.parametrize("edit", [lambda outs: outs[0], lambda outs: (outs[0], outs[1], outs[1])],
                         ids=["fewer", "more"])
def test_load_checks_the_number_of_declared_outputs(saved_function, edit):
    _set_outputs(saved_function, edit)
    with pytest.raises(td.errors.DataLossError, match=r"declares \d outputs.*graph.*returns 2"):
        td.load(saved_function)


def test_load_checks_declared_inputs(saved_function):
    def change(saved):
        from treadle.io import structure
        saved.functions[0].input_signature.CopyFrom(
            structure.encode(((td.TensorSpec([2, 2], td.int32),), {})))
    _rewrite_payload(saved_function, change, saved_pb2.SavedFile)
    with pytest.raises(td.errors.DataLossError, match=r"(?s)input 0.*int32.*float32"):
        td.load(saved_function)


# ---------------------------------------------------------------- finding 6: NUL in paths

def test_paths_with_nul_are_refused(tmp_path):
    victim = tmp_path / "victim"
    nul = str(victim) + "\0.tfrecord"
    with pytest.raises(ValueError, match="embedded null byte"):
        td.loom.write_schedules(nul, [b""])
    assert not victim.exists()
    td.loom.write_schedules(str(victim), [b""])
    with pytest.raises(ValueError, match="embedded null byte"):
        td.loom.read_schedules(nul)
    with pytest.raises(ValueError, match="embedded null byte"):
        td.load(nul)
    loom, _, _ = vector_loom()
    with pytest.raises(ValueError, match="embedded null byte"):
        td.save(loom, nul)


# ---------------------------------------------------------------- finding 9

def test_show_of_a_corrupt_payload_raises_data_loss(tmp_path, capsys):
    from treadle import cli
    path = str(tmp_path / "bad.td")
    write_container(path, (1 << 8) | 1, b"\xff\xff\xff\xff garbage")
    from treadle.io.saving import read_saved_file
    with pytest.raises(td.errors.DataLossError, match="bad.td"):
        read_saved_file(path)
    # The command line reports it on one line, with status 1 (issue 18's manners).
    assert cli.main(["show", path]) == 1
    err = capsys.readouterr().err
    assert "bad.td" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("dims", [[0, 2**62, 4], [2**62, 0], [0, 2**41]])
def test_zero_element_tensor_protos_with_huge_dimensions_are_refused(dims):
    proto = td.make_tensor_proto(np.zeros((0,), np.float32))
    del proto.shape.dim[:]
    for d in dims:
        proto.shape.dim.add(size=d)
    with pytest.raises((td.errors.InvalidArgumentError, ValueError), match="2\\^40"):
        td.make_ndarray(proto)


def test_zero_element_tensor_protos_with_modest_dimensions_load():
    proto = td.make_tensor_proto(np.zeros((0, 1000, 4), np.float32))
    assert td.make_ndarray(proto).shape == (0, 1000, 4)


def test_load_refuses_declared_outputs_narrower_than_the_graph_makes(tmp_path):
    """Found by the fuzzer: a loom function's outputs are (None, 3); a file
    declaring (1048577, 3) would promise a shape the graph does not make."""
    loom, _, _ = vector_loom()

    @td.function
    def run(schedule):
        return loom._run(schedule)

    run(td.constant(_depth_two_weaver(loom).serialize()))
    path = str(tmp_path / "f.td")
    td.save(run, path)
    _set_outputs(path, lambda outs: [td.TensorSpec([1048577, 3], td.float64)] + list(outs[1:]))
    with pytest.raises(td.errors.DataLossError, match=r"output 0 is declared float64 \(1048577, 3\).*\(None, 3\)"):
        td.load(path)
