"""Every way a GraphDef can be wrong is reported at load time with a clear
exception naming the node (or function / attr), never a crash."""

import numpy as np
import pytest

import treadle as td
from treadle import _core, graph_pb2

from graph_testlib import BOOL, DT, F32, F64, I32, Func, GraphBuilder, Shape, types

InvalidArgument = td.errors.InvalidArgumentError
NotFound = td.errors.NotFoundError


def simple_graph():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    return g


def load(g, inputs=("x",), outputs=("y",)):
    return g.executable(list(inputs), list(outputs))


def test_unknown_op():
    g = simple_graph()
    g.node("y", "Foo", ["x"])
    with pytest.raises(NotFound, match="Op type not registered 'Foo' in node 'y'"):
        load(g)


def test_unknown_op_in_function():
    g = GraphBuilder()
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.node("bad", "Frobnicate", ["a"])
    f.ret(b="a")
    with pytest.raises(NotFound, match="Op type not registered 'Frobnicate' in node 'bad' in function 'f'"):
        g.function_executable("f")


def test_dangling_input():
    g = simple_graph()
    g.node("y", "Neg", ["z"])
    with pytest.raises(InvalidArgument, match="node 'y' input 0 refers to 'z', which is not a node of the graph"):
        load(g)


def test_dangling_control_input():
    g = simple_graph()
    g.node("y", "Neg", ["x", "^ghost"])
    with pytest.raises(InvalidArgument, match="control dependency on 'ghost'"):
        load(g)


def test_output_index_out_of_range():
    g = simple_graph()
    g.node("z", "Neg", ["x"])
    g.node("y", "AddV2", ["x", "z:3"])
    with pytest.raises(InvalidArgument, match="node 'y' input 1 refers to 'z:3' but 'z' has 1 output"):
        load(g)


def test_fetch_out_of_range_and_unknown():
    g = simple_graph()
    g.node("y", "Neg", ["x"])
    with pytest.raises(InvalidArgument, match="refers to output 1 but 'y' has 1 output"):
        load(g, outputs=["y:1"])
    with pytest.raises(InvalidArgument, match="'nope' names no node"):
        load(g, outputs=["nope"])


@pytest.mark.parametrize("text", ["", "a:b", "y:-1", "y:", "^", "y:99999999999", "^y:0", ":0"])
def test_malformed_input_strings(text):
    g = simple_graph()
    g.node("y", "Neg", ["x"])
    g.node("w", "Neg", [text])
    with pytest.raises(InvalidArgument, match="node 'w' input 0"):
        load(g, outputs=["w"])


def test_cycle():
    g = simple_graph()
    g.node("a", "AddV2", ["x", "c"])
    g.node("b", "Neg", ["a"])
    g.node("c", "Neg", ["b"])
    g.node("y", "Neg", ["x"])
    with pytest.raises(InvalidArgument, match="cycle through node '(a|b|c)'.*'a'"):
        load(g)


def test_cycle_through_control_edge():
    g = simple_graph()
    g.node("a", "Neg", ["x", "^b"])
    g.node("b", "Neg", ["a"])
    g.node("y", "Neg", ["x"])
    with pytest.raises(InvalidArgument, match="cycle"):
        load(g)


def test_self_loop():
    g = simple_graph()
    g.node("y", "Neg", ["y"])
    with pytest.raises(InvalidArgument, match="cycle through node 'y'"):
        load(g)


def test_duplicate_node_name():
    g = simple_graph()
    g.node("y", "Neg", ["x"])
    g.node("y", "Abs", ["x"])
    with pytest.raises(InvalidArgument, match="duplicate node name 'y'"):
        load(g)


def test_node_name_clashing_with_argument():
    g = GraphBuilder()
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.node("a", "Neg", ["a"])
    f.ret(b="a")
    with pytest.raises(InvalidArgument, match="duplicate node name 'a'"):
        g.function_executable("f")


@pytest.mark.parametrize("name", ["", "a:b", "^a"])
def test_invalid_node_name(name):
    g = simple_graph()
    g.node(name, "Neg", ["x"])
    with pytest.raises(InvalidArgument, match="invalid name"):
        load(g, outputs=["x"])


def test_dtype_mismatch():
    g = simple_graph()
    g.placeholder("i", I32, [2])
    g.node("y", "AddV2", ["x", "i"])
    with pytest.raises(InvalidArgument, match="node 'y' \\(op AddV2\\).*int32.*float32"):
        load(g, inputs=["x", "i"])


def test_dtype_not_allowed():
    g = GraphBuilder()
    g.placeholder("x", BOOL, [2])
    g.node("y", "Tanh", ["x"])
    with pytest.raises(InvalidArgument, match="node 'y' \\(op Tanh\\).*bool"):
        load(g)


def test_impossible_shape():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.placeholder("z", F32, [3])
    g.node("y", "AddV2", ["x", "z"])
    with pytest.raises(InvalidArgument, match="node 'y' \\(op AddV2\\): Incompatible shapes"):
        load(g, inputs=["x", "z"])


def test_impossible_shape_with_constant():
    g = simple_graph()
    g.const("c", np.ones((4, 3), np.float32))
    g.node("y", "Mul", ["x", "c"])
    with pytest.raises(InvalidArgument, match="node 'y'.*Incompatible shapes"):
        load(g)


def test_wrong_input_count():
    g = simple_graph()
    g.node("y", "AddV2", ["x"])
    with pytest.raises(InvalidArgument, match="node 'y' \\(op AddV2\\).*takes 2 inputs but 1 were given"):
        load(g)


def test_bad_attr_type():
    g = simple_graph()
    g.node("y", "Cast", ["x"], DstT=3)
    with pytest.raises(InvalidArgument, match="node 'y' \\(op Cast\\) attr 'DstT' must be type, got int"):
        load(g)


def test_bad_list_attr_type():
    g = GraphBuilder()
    g.placeholder("x", F32, [])
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.ret(b="a")
    g.node("y", "PartitionedCall", ["x"], Tin=[1, 2], Tout=types(F32), f=Func("f"))
    with pytest.raises(InvalidArgument, match="node 'y' \\(op PartitionedCall\\) attr 'Tin' must be list\\(type\\), "
                                              "got list\\(int\\)"):
        load(g)


def test_missing_attr_and_unknown_attr():
    g = simple_graph()
    g.node("y", "Cast", ["x"])
    with pytest.raises(InvalidArgument, match="node 'y'.*missing required attribute 'DstT'"):
        load(g)
    g = simple_graph()
    g.node("y", "Neg", ["x"], colour=3)
    with pytest.raises(InvalidArgument, match="node 'y' \\(op Neg\\): op Neg has no attr 'colour'"):
        load(g)


def test_attr_without_value():
    g = simple_graph()
    g.node("y", "Cast", ["x"])
    g.gd.node[-1].attr["DstT"].SetInParent()
    with pytest.raises(InvalidArgument, match="attr 'DstT' must be type, got no value"):
        load(g)


def test_type_attr_disagreeing_with_inputs():
    g = simple_graph()
    g.node("y", "Neg", ["x"], T=DT(F64))
    with pytest.raises(InvalidArgument, match="attr 'T' is float64 but input 'x' is float32"):
        load(g)


def test_invalid_dtype_enum():
    g = simple_graph()
    g.node("y", "Cast", ["x"], DstT=DT(99))
    with pytest.raises(InvalidArgument, match="invalid dtype enum value 99"):
        load(g)


def test_placeholder_without_dtype_and_bad_shape():
    g = GraphBuilder()
    g.node("x", "Placeholder")
    with pytest.raises(InvalidArgument, match="node 'x' \\(op Placeholder\\).*missing required attribute 'dtype'"):
        load(g, outputs=["x"])
    g = GraphBuilder()
    g.node("x", "Placeholder", dtype=DT(F32), shape=Shape([2, -7]))
    with pytest.raises(InvalidArgument, match="shape dimension -7 is invalid"):
        load(g, outputs=["x"])
    g = GraphBuilder()
    g.node("x", "Placeholder", dtype=DT(F32), shape=Shape([1] * 65))
    with pytest.raises(InvalidArgument, match="rank 65 exceeds 64"):
        load(g, outputs=["x"])


def test_const_problems():
    g = GraphBuilder()
    g.node("c", "Const", value=np.float32(1), dtype=DT(F64))
    with pytest.raises(InvalidArgument, match="node 'c' \\(op Const\\).*'dtype' is float64 but the value is float32"):
        load(g, inputs=[], outputs=["c"])
    g = GraphBuilder()
    g.node("c", "Const", value=np.float32(1), dtype=DT(F32))
    g.gd.node[0].attr["value"].tensor.tensor_content = b"\x00" * 3
    with pytest.raises(InvalidArgument, match="needs 4 bytes of content, got 3"):
        load(g, inputs=[], outputs=["c"])
    g = GraphBuilder()
    g.node("c", "Const", value=np.float32(1), dtype=DT(F32))
    g.gd.node[0].attr["value"].tensor.shape.dim.add().size = 1 << 40
    g.gd.node[0].attr["value"].tensor.shape.dim.add().size = 1 << 40
    with pytest.raises(InvalidArgument, match="more than 2\\^40 elements"):
        load(g, inputs=[], outputs=["c"])


def test_inputs_must_be_placeholders():
    g = simple_graph()
    g.node("y", "Neg", ["x"])
    with pytest.raises(InvalidArgument, match="input 'y' names a Neg node; inputs must be Placeholder nodes"):
        load(g, inputs=["y"])
    with pytest.raises(InvalidArgument, match="input 'q' does not name a Placeholder"):
        load(g, inputs=["q"])
    with pytest.raises(InvalidArgument, match="input 'x' is listed twice"):
        load(g, inputs=["x", "x"])


def test_missing_function():
    g = simple_graph()
    g.node("y", "PartitionedCall", ["x"], Tin=types(F32), Tout=types(F32), f=Func("nowhere"))
    with pytest.raises(NotFound, match="node 'y' \\(op PartitionedCall\\) attr 'f' names function 'nowhere', which "
                                       "is not in the library"):
        load(g)


def test_missing_function_from_function():
    g = GraphBuilder()
    with pytest.raises(NotFound, match="no function 'f'"):
        g.function_executable("f")


def test_function_signature_must_match_call():
    g = simple_graph()
    f = g.function("f", [("a", F32), ("b", F32)], [("c", F32)])
    f.binary("AddV2", "a", "b", "s")
    f.ret(c="s")
    g.node("y", "PartitionedCall", ["x"], Tin=types(F32), Tout=types(F32), f=Func("f"))
    with pytest.raises(InvalidArgument, match="function 'f' takes \\(float32, float32\\) but the node's Tin is "
                                              "\\(float32\\)"):
        load(g)


def test_function_results_must_match_tout():
    g = simple_graph()
    f = g.function("f", [("a", F32)], [("c", F32)])
    f.ret(c="a")
    g.node("y", "PartitionedCall", ["x"], Tin=types(F32), Tout=types(I32), f=Func("f"))
    with pytest.raises(InvalidArgument, match="returns \\(float32\\) but the node's Tout is \\(int32\\)"):
        load(g)


def test_tin_must_match_inputs():
    g = simple_graph()
    f = g.function("f", [("a", I32)], [("c", I32)])
    f.ret(c="a")
    g.node("y", "PartitionedCall", ["x"], Tin=types(I32), Tout=types(I32), f=Func("f"))
    with pytest.raises(InvalidArgument, match="attr 'Tin' is \\(int32\\) but the inputs are \\(float32\\)"):
        load(g)


def test_call_argument_shape_must_fit():
    g = simple_graph()
    f = g.function("f", [("a", F32, [3])], [("c", F32)])
    f.ret(c="a")
    g.node("y", "PartitionedCall", ["x"], Tin=types(F32), Tout=types(F32), f=Func("f"))
    with pytest.raises(InvalidArgument, match="argument 'a' expects shape \\(3,\\) but the node's input 0 has shape "
                                              "\\(2,\\)"):
        load(g)


def test_function_problems():
    def build(mutate):
        g = GraphBuilder()
        f = g.function("f", [("a", F32, [2])], [("b", F32, [2])])
        f.unary("Neg", "a", "n")
        f.ret(b="n")
        mutate(g, f)
        return g

    cases = [
        (lambda g, f: f.fd.ret.pop("b"), "function 'f' gives no ret for its output 'b'"),
        (lambda g, f: f.ret(extra="n"), "has a ret for 'extra', which is not one of its outputs"),
        (lambda g, f: f.ret(b="ghost"), "function 'f' ret 'b' 'ghost' names no node or argument"),
        (lambda g, f: f.fd.signature.output_arg[0].__setattr__("type", I32),
         "output 'b' is declared int32 but 'n' is float32"),
        (lambda g, f: f.fd.signature.output_arg[0].shape.dim[0].__setattr__("size", 3),
         "output 'b' is declared with shape \\(3,\\) but 'n' has shape \\(2,\\)"),
        (lambda g, f: f.control_ret("ghost"), "control_ret 'ghost' is not a node"),
        (lambda g, f: f.fd.signature.input_arg.add(name="a", type=F32), "input 'a' appears twice"),
        (lambda g, f: f.fd.signature.input_arg.add(name="q", type=0), "invalid dtype enum value 0"),
        (lambda g, f: g.gd.library.function.add().CopyFrom(f.fd), "defines function 'f' twice"),
        (lambda g, f: f.node("p", "Placeholder", dtype=DT(F32)), "has a Placeholder node 'p'"),
    ]
    for mutate, message in cases:
        with pytest.raises(InvalidArgument, match=message):
            build(mutate).function_executable("f")


def test_recursion_is_rejected():
    g = GraphBuilder()
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.node("call", "PartitionedCall", ["a"], Tin=types(F32), Tout=types(F32), f=Func("g"))
    f.ret(b="call")
    h = g.function("g", [("a", F32)], [("b", F32)])
    h.node("call", "PartitionedCall", ["a"], Tin=types(F32), Tout=types(F32), f=Func("f"))
    h.ret(b="call")
    with pytest.raises(InvalidArgument, match="calls itself .*'f' -> 'g' -> 'f'.*recursive functions are not"):
        g.function_executable("f")


def test_self_recursion_through_if_is_rejected():
    g = GraphBuilder()
    f = g.function("f", [("p", BOOL), ("a", F32)], [("b", F32)])
    f.node("branch", "If", ["p", "p", "a"], Tin=types(BOOL, F32), Tout=types(F32), then_branch=Func("f"),
           else_branch=Func("f"))
    f.ret(b="branch")
    with pytest.raises(InvalidArgument, match="recursive"):
        g.function_executable("f")


def test_too_deep_nesting_is_rejected():
    g = GraphBuilder()
    depth = 70
    for i in range(depth):
        f = g.function(f"f{i}", [("a", F32)], [("b", F32)])
        if i + 1 < depth:
            f.node("call", "PartitionedCall", ["a"], Tin=types(F32), Tout=types(F32), f=Func(f"f{i + 1}"))
            f.ret(b="call")
        else:
            f.ret(b="a")
    with pytest.raises(InvalidArgument, match="nest more than 64 deep"):
        g.function_executable("f0")


def test_future_min_consumer():
    g = simple_graph()
    g.node("y", "Neg", ["x"])
    g.gd.versions.min_consumer = _core.GRAPH_VERSION + 1
    with pytest.raises(InvalidArgument, match="needs a reader of version 2 or newer"):
        load(g)


@pytest.mark.parametrize("data", [b"\xff\xff\xff\xff", b"garbage bytes that are not a proto \x00\x01\x02",
                                  bytes(range(256)) * 4, b"\x0a\xff\xff\xff\xff\x0f"])
def test_garbage_bytes(data):
    with pytest.raises((td.errors.DataLossError, InvalidArgument)):
        _core.Executable(data, [], [])


def test_random_corruptions_never_crash():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.const("c", np.array([1.0, 2.0], np.float32))
    g.node("y", "Mul", ["x", "c"])
    f = g.function("f", [("a", F32)], [("b", F32)])
    f.unary("Neg", "a", "n")
    f.ret(b="n")
    g.node("z", "PartitionedCall", ["y"], Tin=types(F32), Tout=types(F32), f=Func("f"))
    data = bytearray(g.bytes())
    rng = np.random.RandomState(0)
    outcomes = set()
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randint(len(corrupt))] = rng.randint(256)
        try:
            exe = _core.Executable(bytes(corrupt), ["x"], ["z"])
            exe.run([td.constant(np.ones(2, np.float32))])
            outcomes.add("ok")
        except (td.errors.OpError, TypeError, ValueError) as e:
            outcomes.add(type(e).__name__)
    assert len(outcomes) > 1


def test_huge_repeated_counts_in_bytes():
    # A length prefix claiming far more bytes than present.
    with pytest.raises(td.errors.DataLossError, match="not a valid serialized"):
        _core.Executable(b"\x0a\xff\xff\xff\x7f" + b"\x00" * 16, [], [])


def test_unknown_fields_and_empty_graph_are_fine():
    gd = graph_pb2.GraphDef()
    exe = _core.Executable(gd.SerializeToString() + b"\xa8\x06\x01", [], [])  # field 101 varint
    assert exe.run([]) == []
