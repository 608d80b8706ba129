"""Saved functions whose structures are damaged (under valid checksums):
namedtuple structures and input signatures are checked at load, and the
error names the file, the function, the field and the place in it."""

import collections
import re

import numpy as np
import pytest

import treadle as td
from treadle import saved_pb2
from treadle.io import structure
from treadle.io.container import read_container, version_field, KIND_FUNCTION, write_container

VERSION = version_field(KIND_FUNCTION, 1)
pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")
Pair = collections.namedtuple("Pair", ["scaled", "total"])


@pytest.fixture
def saved(tmp_path):
    @td.function
    def f(x):
        return Pair(x * 2.0, td.reduce_sum(x))

    f(td.constant([1.0, 2.0]))
    path = str(tmp_path / "f.td")
    td.save(f, path)
    return path


def _edit(path, edit):
    msg = saved_pb2.SavedFile()
    msg.ParseFromString(read_container(path, VERSION))
    edit(msg.functions[0])
    write_container(path, VERSION, msg.SerializeToString())


def _where(path, field):
    return re.escape(f"{path}: saved function ") + r"\S+" + re.escape(f": {field}")


def test_the_saved_namedtuple_loads(saved):
    out = td.load(saved)(td.constant([1.0, 2.0]))
    assert type(out).__name__ == "Pair" and out._fields == ("scaled", "total")
    np.testing.assert_allclose(out.scaled.numpy(), [2.0, 4.0])


@pytest.mark.parametrize("damage, message", [
    (lambda n: setattr(n, "name", "not a name"), "invalid name 'not a name'"),
    (lambda n: n.fields.__setitem__(0, "class"), "invalid name 'class'"),
    (lambda n: n.fields.__setitem__(0, "_private"), "invalid name '_private'"),
    (lambda n: n.fields.__setitem__(1, "scaled"), "a field name twice"),
    (lambda n: n.fields.append("extra"), "of 3 fields and 2 values"),
    (lambda n: n.values.pop(), "of 2 fields and 1 values"),
])
def test_a_damaged_namedtuple_names_the_file_and_field(saved, damage, message):
    _edit(saved, lambda fn: damage(fn.output_structure.named_tuple_value))
    with pytest.raises(td.errors.DataLossError, match=_where(saved, "output_structure") + ": a namedtuple '.*'.*"
                       + re.escape(message)):
        td.load(saved)


def test_a_damaged_nested_value_names_its_place(saved):
    def damage(fn):
        fn.output_structure.named_tuple_value.values[1].tensor_spec_value.dtype = 9999
    _edit(saved, damage)
    with pytest.raises(td.errors.DataLossError, match=_where(saved, "output_structure") +
                       r"\.total: a TensorSpec with invalid dtype enum 9999"):
        td.load(saved)


@pytest.mark.parametrize("signature, got", [
    (td.TensorSpec([2], td.float32), "a TensorSpec"),
    (((td.TensorSpec([2], td.float32),),), r"a tuple of 1 \(tuple\)"),
    (([td.TensorSpec([2], td.float32)], [1]), r"a tuple of 2 \(list, list\)"),
    (None, "a NoneType"),
])
def test_a_malformed_input_signature_is_refused_at_load(saved, signature, got):
    _edit(saved, lambda fn: fn.input_signature.CopyFrom(structure.encode(signature)))
    with pytest.raises(td.errors.DataLossError, match=_where(saved, "input_signature") +
                       ": expected \\(positional arguments, keyword arguments\\).*got " + got):
        td.load(saved)


def test_a_dict_with_a_key_twice_is_refused(saved):
    def damage(fn):
        d = fn.input_signature.tuple_value.values[1].dict_value
        d.keys.extend(["k", "k"])
        d.values.extend([structure.encode(1), structure.encode(2)])
    _edit(saved, damage)
    with pytest.raises(td.errors.DataLossError, match=_where(saved, "input_signature") + r"\[1\]: a dict with a key"):
        td.load(saved)


def _edit_file(path, edit):
    msg = saved_pb2.SavedFile()
    msg.ParseFromString(read_container(path, VERSION))
    edit(msg)
    write_container(path, VERSION, msg.SerializeToString())


def test_a_corrupt_saved_variable_names_the_file_and_the_variable(tmp_path):
    v = td.Variable(np.ones(4, np.float32), name="weights")

    @td.function
    def f(x):
        return x * v

    f(td.constant(1.0))
    path = str(tmp_path / "v.td")
    td.save(f, path)
    _edit_file(path, lambda msg: setattr(msg.variables[0].value, "tensor_content", b"\0" * 3))
    with pytest.raises(td.errors.DataLossError, match=re.escape(f"{path}: the value of variable 0 ('weights')") +
                       r" cannot be decoded: .*needs 16 bytes of content"):
        td.load(path)


def test_every_load_error_names_the_file(saved):
    def missing_function(msg):
        msg.functions[0].function_name = "no_such_function"
    _edit_file(saved, missing_function)
    with pytest.raises(td.errors.NotFoundError, match=re.escape(f"{saved}: ") + ".*no_such_function"):
        td.load(saved)
