"""td.function(experimental_attributes=...): TensorFlow's function attributes."""

import pytest

import treadle as td


def _read_then_add(v):
    def f(x, y):
        t = v.read_value()
        v.assign_add(x + y)
        return t
    return f


def test_allowed_attributes_are_accepted_and_the_function_runs():
    f = td.function(lambda x: x * 2, experimental_attributes={"_noinline": True, "api_implements": "double",
                                                               "time_major": False, "go_backwards": [1, 2]})
    assert f(td.constant(3.0)).numpy() == 6.0


def test_unknown_attribute_is_refused_with_its_name():
    # TensorFlow: "`{name} is not supported by tf.function as an attribute."
    with pytest.raises(ValueError, match="_XlaMustCompile is not supported by td.function as an attribute"):
        td.function(lambda x: x, experimental_attributes={"_XlaMustCompile": True})


def test_attribute_values_must_be_scalars_or_lists():
    with pytest.raises(ValueError, match="Attribute _noinline must be bool, int, float, string, or list"):
        td.function(lambda x: x, experimental_attributes={"_noinline": object()})
    with pytest.raises(ValueError, match="Attributes for time_major must be"):
        td.function(lambda x: x, experimental_attributes={"time_major": [None]})
    with pytest.raises(TypeError, match="must be a dict"):
        td.function(lambda x: x, experimental_attributes=["_noinline"])


def test_stateful_ops_are_control_outputs_with_automatic_control_dependencies():
    v = td.Variable(1.0)
    f = td.function(_read_then_add(v))
    spec = td.TensorSpec(None, td.float32)
    conc = f.get_concrete_function(spec, spec)
    assert [op.type for op in conc.graph.control_outputs] == ["ReadVariableOp", "AssignAddVariableOp"]
    assert conc(td.constant(1.0), td.constant(2.0)).numpy() == 1.0
    assert v.numpy() == 4.0  # the assignment ran though no result needs it


def test_disable_acd_leaves_no_control_outputs_and_prunes_unneeded_effects():
    # TensorFlow's `_disable_acd`: no automatic control dependencies, so the graph
    # has no control outputs and an effect that no result needs is not run.
    v = td.Variable(1.0)
    f = td.function(_read_then_add(v), experimental_attributes={"_disable_acd": True})
    spec = td.TensorSpec(None, td.float32)
    conc = f.get_concrete_function(spec, spec)
    assert conc.graph.control_outputs == []
    assert conc(td.constant(1.0), td.constant(2.0)).numpy() == 1.0
    assert v.numpy() == 1.0


def test_method_functions_keep_the_attributes():
    class Model:
        @td.function(experimental_attributes={"_disable_acd": True})
        def call(self, x):
            return x + 1

    model = Model()
    conc = model.call.get_concrete_function(td.TensorSpec([], td.float32))
    assert conc.graph.control_outputs == []
