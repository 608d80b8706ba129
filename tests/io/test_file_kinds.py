"""td.save / td.load dispatch through io's registry of file kinds: the loom
registers its kind from treadle.loom.saving, io never imports the loom, and
each kind's number is defined once (treadle.io.container)."""

import ast
import pathlib
import struct

import numpy as np
import pytest

import treadle as td
from treadle.io import container, file_kinds
from treadle.loom import saving as loom_saving

PACKAGE = pathlib.Path(td.__file__).parent


class Double(td.loom.LoomOp):
    def __init__(self, ts):
        super().__init__([ts], [ts])

    def instantiate_batch(self, inputs):
        return [inputs[0] * 2.0]


def small_loom():
    ts = td.loom.TypeShape("float32", (2,))
    return td.loom.Loom(named_tensors={"x": td.constant([1.0, -2.0])}, named_ops={"double": Double(ts)}), ts


def header_version(path):
    with open(path, "rb") as f:
        return struct.unpack("<4sIQI", f.read(20))[1]


def imported_modules(path):
    """Every module a source file imports, at any level (inside functions too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_each_kind_is_written_with_its_one_version_field(tmp_path):
    loom, _ = small_loom()
    td.save(loom, str(tmp_path / "a.loom"))
    assert header_version(tmp_path / "a.loom") == container.version_field(container.KIND_LOOM, 1) == 0x201
    fn = td.function(lambda x: x + 1.0)
    fn(td.constant(1.0))
    td.save(fn, str(tmp_path / "f.td"))
    assert header_version(tmp_path / "f.td") == container.version_field(container.KIND_FUNCTION, 1) == 0x101
    assert container.file_kind(str(tmp_path / "a.loom")) == container.KIND_LOOM
    assert container.kind_name(container.KIND_LOOM) == "a saved loom"


def test_a_loom_is_saved_and_loaded_by_the_kind_it_registered(tmp_path):
    loom, ts = small_loom()
    assert file_kinds.saver_for(loom) == ("a Loom", loom_saving.save_loom)
    assert file_kinds.saver_for(td.constant(1.0)) is None
    assert file_kinds.loader_for(container.KIND_LOOM, "p") is loom_saving.load_loom
    path = str(tmp_path / "a.loom")
    td.save(loom, path)
    loaded = td.load(path)
    assert isinstance(loaded, td.loom.Loom)
    w = loaded.make_weaver()
    w.add_output(w.double(w.x))
    np.testing.assert_array_equal(loaded(w)[ts].numpy(), [[2.0, -4.0]])
    with pytest.raises(ValueError, match="a Loom has no signatures"):
        td.save(loom, path, signatures=td.function(lambda: 1.0))


def test_a_kind_registers_once():
    with pytest.raises(ValueError, match="a saved loom .file kind 2. is already registered"):
        file_kinds.register(container.KIND_LOOM, (), "again", None, None)


def test_load_names_a_kind_it_does_not_read(tmp_path):
    path = str(tmp_path / "ckpt")
    path = td.train.Checkpoint(v=td.Variable(1.0)).save(path)
    with pytest.raises(td.errors.InvalidArgumentError, match="holds a checkpoint, which td.load does not read"):
        td.load(path)
    container.write_container(str(tmp_path / "odd"), container.version_field(9, 1), b"")
    with pytest.raises(td.errors.InvalidArgumentError, match="unknown kind 9"):
        td.load(str(tmp_path / "odd"))


def test_io_never_imports_the_loom_and_the_loom_imports_its_saving_one_way():
    for path in sorted((PACKAGE / "io").glob("*.py")):
        loom_imports = {m for m in imported_modules(path) if m == "treadle.loom" or m.startswith("treadle.loom.")}
        assert not loom_imports, f"{path.name} imports {loom_imports}"
    assert not any(m.startswith("treadle.loom.saving") for m in imported_modules(PACKAGE / "loom" / "loom.py"))
    assert "treadle.loom.loom" in imported_modules(PACKAGE / "loom" / "saving.py")
