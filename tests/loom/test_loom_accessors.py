"""Loom's public, typed description of what it runs (dry_run, loom_def,
input_values), the same for a built loom and a loaded one; LoomRun's gradient
asks the core for the loom's input counts instead of decoding the LoomDef."""

import numpy as np
import pytest

import treadle as td
from treadle import _core, loom_pb2
from treadle.framework.op_execution import execute
from loom_testlib import TreeLSTMWeights, tree_lstm_loom, vector_loom


class Scale(td.loom.LoomOp):
    """Reads a variable: the loom captures it."""

    def __init__(self, ts, factor):
        super().__init__([ts], [ts])
        self.factor = factor

    def instantiate_batch(self, inputs):
        return [inputs[0] * self.factor]


def test_input_values_are_named_tensors_batch_inputs_and_captures_in_run_order():
    loom, x, y = vector_loom()
    inputs = loom.input_values
    assert inputs.named_tensors == [x, y] and inputs.batch_inputs == [] and inputs.captures == []
    ts = td.loom.TypeShape("float32", (2,))
    factor = td.Variable(np.float32(3.0), name="factor")
    batch = td.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="batch")
    loom = td.loom.Loom(named_ops={"scale": Scale(ts, factor)}, batch_inputs={ts: batch})
    inputs = loom.input_values
    assert inputs.named_tensors == [] and inputs.batch_inputs == [batch] and inputs.captures == [factor]
    assert inputs.all() == [batch, factor]
    assert {id(v) for v in loom.variables} == {id(batch), id(factor)}
    w = loom.make_weaver()
    w.add_output(w.scale(w.batch_input(ts, 2)))
    np.testing.assert_allclose(loom(w)[ts].numpy(), [[12.0, 15.0]])


def test_loom_def_names_each_ops_functions_in_its_library():
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    assert not loom.dry_run
    loom_def = loom.loom_def
    assert isinstance(loom_def, loom_pb2.LoomDef)
    library = {f.signature.name for f in loom_def.library.library.function}
    named = [op for op in loom_def.metadata.ops if not op.pass_through]
    assert [op.name for op in named] == ["leaf", "node"]
    for op in named:
        assert {op.function_name, op.training_function_name, op.backward_function_name} <= library
    loom_def.metadata.max_depth = 99  # a copy: the loom is unchanged
    assert loom.loom_def.metadata.max_depth == 0


def test_a_dry_run_loom_has_no_loom_def():
    loom, _, _ = vector_loom(dry_run=True)
    assert loom.dry_run
    with pytest.raises(ValueError, match="dry_run=True has no functions"):
        loom.loom_def
    assert loom.weaving_loom().dry_run


def test_a_loaded_loom_describes_itself_as_the_saved_one(tmp_path):
    loom, x, y = vector_loom(max_depth=4)
    td.save(loom, str(tmp_path / "v.loom"))
    loaded = td.load(str(tmp_path / "v.loom"))
    assert not loaded.dry_run and loaded.max_depth == 4
    assert loaded.loom_def.metadata == loom.loom_def.metadata
    assert [v.numpy().tolist() for v in loaded.input_values.named_tensors] == [x.numpy().tolist(), y.numpy().tolist()]


def test_the_core_gives_a_looms_input_counts():
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    def counts(attrs):
        return len(attrs["loom_named_tensors"]), len(attrs["loom_batch_input_type_shapes"])

    assert counts(loom._run_attrs) == (0, 1)
    assert counts(vector_loom()[0]._run_attrs) == (2, 0)


def test_a_loom_op_whose_inputs_differ_from_tinputs_is_refused_naming_both():
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w.y))
    attrs = dict(loom._run_attrs, Tinputs=[td.float32, td.float64])
    inputs = [v.read_value() for v in loom.input_values.all()]
    with pytest.raises(td.errors.InvalidArgumentError,
                       match=r"LoomRun: attr 'Tinputs' is \(float32, float64\) but the inputs are "
                             r"\(float64, float64\) \[Op:LoomRun\]"):
        execute("LoomRun", [w._schedule()] + inputs, attrs)


def test_a_loom_whose_runtime_was_evicted_by_many_later_looms_still_runs():
    # The core keeps the runtimes of the most recently used LoomDefs only; an
    # older loom's next run builds its runtime again, with the same results.
    loom, x, y = vector_loom()
    w = loom.make_weaver()
    w.add_output(w.mul(w.add(w.x, w.y), w.x))
    want = (x.numpy() + y.numpy()) * x.numpy()
    np.testing.assert_allclose(loom(w)[loom.type_shapes[0]].numpy(), [want])
    for _ in range(70):
        other, _, _ = vector_loom()
        o = other.make_weaver()
        o.add_output(o.add(o.x, o.y))
        other(o)
    np.testing.assert_allclose(loom(w)[loom.type_shapes[0]].numpy(), [want])


def test_the_loom_ops_are_long_running_so_eager_runs_release_the_gil():
    # One eager path for every op: the registry says which ops always run without the GIL.
    loom_ops = ["LoomRun", "LoomRunGrad", "LoomInitialState", "LoomLayer", "LoomGatherOutputs",
                "LoomInitialStateGrad", "LoomLayerGrad", "LoomGatherOutputsGrad"]
    assert all(_core.op_def(name)["long_running"] for name in loom_ops)
    assert not _core.op_def("AddV2")["long_running"]
    assert not hasattr(_core, "loom_execute")
