"""_core.GraphBuilder, the graph a FuncGraph traces into: its references are
checked before a node is added (the message names the reference), and node
names are made unique TensorFlow's way."""

import types

import pytest

import treadle as td
from treadle import _core
from treadle.framework.op_execution import op_handle


def _ref(node, output=0):
    """What the builder reads of a symbolic tensor: `op._node` and `value_index`."""
    return types.SimpleNamespace(op=types.SimpleNamespace(_node=node), value_index=output)


@pytest.fixture
def builder():
    b = _core.GraphBuilder()
    b.add_node("x", op_handle("Placeholder"), [], {"dtype": td.float32, "shape": [2]}, ())
    return b


@pytest.mark.parametrize("ref, message", [
    (_ref(0, 3), "Tanh input 0 refers to 'x:3' but 'x' has 1 output"),
    (_ref(0, -1), "Tanh input 0 refers to 'x:-1' but 'x' has 1 output"),
    (_ref(7), "graph: no node 7 \\(it has 1\\)"),
])
def test_a_bad_input_is_refused_and_nothing_is_added(builder, ref, message):
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        builder.add_node("t", op_handle("Tanh"), [ref], None, ())
    assert len(builder) == 1
    assert builder.add_node("t", op_handle("Tanh"), [_ref(0)], None, ())[1] == "t"  # the name was not taken


def test_names_are_made_unique_skipping_names_taken(builder):
    tanh = op_handle("Tanh")
    names = [builder.add_node("t", tanh, [_ref(0)], None, ())[1] for _ in range(3)]
    names.append(builder.add_node("t_3", tanh, [_ref(0)], None, ())[1])
    names.append(builder.add_node("t", tanh, [_ref(0)], None, ())[1])
    names.append(builder.add_node("a/b", tanh, [_ref(0)], None, ())[1])
    assert names == ["t", "t_1", "t_2", "t_3", "t_4", "a_b"]


def test_bad_references_elsewhere_name_where_they_are(builder):
    builder.add_node("t", op_handle("Tanh"), [_ref(0)], None, ())
    with pytest.raises(td.errors.InvalidArgumentError, match="node 't' \\(op Tanh\\) input 0 refers to 'x:2'"):
        builder.replace_node(1, [_ref(0, 2)], None, [])
    with pytest.raises(td.errors.InvalidArgumentError, match="function 'f' result 0 refers to 't:4'"):
        builder.make_function("f", [0, 1], [0], [_ref(1, 4)], [(td.float32, [2])], [], False)
    with pytest.raises(td.errors.InvalidArgumentError, match="set_shape refers to 't:2'"):
        builder.refine_shape(1, 2, [2])
