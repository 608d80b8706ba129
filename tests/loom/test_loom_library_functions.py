"""A loom's ops are ordinary library functions: the Loom ops name them in a
list(func) attr and describe the loom with typed attrs (no serialized LoomDef
in a string); a graph that runs a loom holds them in its library, and a
loaded loom's ops run inside a td.function too."""

import numpy as np
import pytest

import treadle as td
from treadle import saved_pb2
from treadle.io.container import file_kind, read_container, write_container
from loom_testlib import VEC3, BinaryLoomOp, vector_loom
from treadle.framework.op_execution import execute
from treadle.loom.library import add_to_current_graph
from treadle.loom.saving import check_loom_def, restore_loom

LOOM_OPS = ("LoomRun", "LoomInitialState", "LoomLayer", "LoomGatherOutputs")


def _weaver(loom):
    w = loom.make_weaver()
    x, y = w.named_tensor("x"), w.named_tensor("y")
    w.add_output(w.op("mul", [w.op("add", [x, y])[0], y])[0])
    return w


def _expected(x, y):
    return (x + y) * y


def _loom_nodes(graph_def):
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return [n for n in nodes if n.op in LOOM_OPS]


@pytest.mark.parametrize("max_depth", [None, 2])
def test_loom_nodes_name_library_functions_and_carry_no_serialized_loom(max_depth):
    loom, x, y = vector_loom(max_depth=max_depth)

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule)

    w = _weaver(loom)
    np.testing.assert_allclose(run(td.constant(w.serialize())).numpy()[0], _expected(x.numpy(), y.numpy()))
    graph_def = run.get_concrete_function(td.constant(w.serialize())).graph.as_graph_def()
    nodes = _loom_nodes(graph_def)
    assert nodes
    library = {f.signature.name for f in graph_def.library.function}
    for node in nodes:
        assert "loom_def" not in node.attr
        for name, attr in node.attr.items():
            assert attr.WhichOneof("value") != "s", f"{node.op} has a string attr {name}"
            assert not any(len(s) > 64 for s in attr.list.s), f"{node.op}'s attr {name} holds long strings"
        functions = [f.name for f in node.attr["functions"].list.func]
        # the forward, training and backward function of each of the two ops
        assert len(functions) == 6 and set(functions) <= library
        assert set(node.attr["loom_op_names"].list.s) >= {b"add", b"mul"}
        assert list(node.attr["loom_named_tensors"].list.s) == [b"x", b"y"]


def test_loom_attrs_describe_the_metadata():
    loom, _, _ = vector_loom()
    md = loom.loom_def.metadata
    attrs = loom._run_attrs
    assert [d.as_datatype_enum for d in attrs["loom_type_dtypes"]] == [ts.dtype for ts in md.type_shapes]
    assert attrs["loom_op_names"] == [op.name for op in md.ops]
    names = attrs["functions"]
    for k, op in enumerate(md.ops):
        f = attrs["loom_op_functions"][3 * k:3 * k + 3]
        assert [names[i] if i >= 0 else "" for i in f] == [op.function_name, op.training_function_name,
                                                            op.backward_function_name]


def _run_with_attrs(loom, schedule, **changed):
    """LoomRun of `loom` on `schedule` with some of its attrs changed (the
    loom's functions are in the library of a graph it runs in)."""
    inputs = [v.read_value() for v in loom.input_values.all()]
    add_to_current_graph(loom.functions)
    return execute("LoomRun", [schedule] + inputs, dict(loom._run_attrs, **changed))[0]


def test_a_graph_naming_a_function_its_library_lacks_is_rejected_naming_it():
    loom, _, _ = vector_loom()
    w = _weaver(loom)
    missing = ["no_such_function"] + loom._run_attrs["functions"][1:]

    @td.function
    def run(schedule):
        return _run_with_attrs(loom, schedule, functions=missing)

    with pytest.raises(td.errors.NotFoundError, match="'no_such_function', which is not in the library"):
        run(td.constant(w.serialize()))


def test_an_eager_loom_op_naming_an_unknown_function_is_rejected():
    loom, _, _ = vector_loom()
    missing = ["no_such_function"] + loom._run_attrs["functions"][1:]
    with pytest.raises(td.errors.NotFoundError, match="no td.loom.Loom of this process holds the functions"):
        _run_with_attrs(loom, _weaver(loom)._schedule(), functions=missing)


def test_a_function_of_the_wrong_signature_is_rejected_in_a_graph():
    loom, _, _ = vector_loom()
    w = _weaver(loom)
    names = loom._run_attrs["functions"]
    # op 'add' runs its backward function (2 + saved arguments) in place of its forward one
    swapped = [names[2], names[1], names[0]] + names[3:]

    @td.function
    def run(schedule):
        return _run_with_attrs(loom, schedule, functions=swapped)

    with pytest.raises(td.errors.InvalidArgumentError, match="op 'add': function '.*' takes"):
        run(td.constant(w.serialize()))


def test_a_loom_def_naming_a_function_of_the_wrong_signature_is_rejected():
    loom, _, _ = vector_loom()
    loom_def = loom.loom_def
    add = next(op for op in loom_def.metadata.ops if op.name == "add")
    add.function_name = add.backward_function_name
    with pytest.raises(td.errors.InvalidArgumentError, match="op 'add': function '.*' takes"):
        check_loom_def(loom_def)


def test_a_loom_def_naming_a_function_its_library_lacks_is_rejected():
    loom, _, _ = vector_loom()
    loom_def = loom.loom_def
    next(op for op in loom_def.metadata.ops if op.name == "mul").training_function_name = "gone"
    with pytest.raises(td.errors.InvalidArgumentError, match="op 'mul' names training function 'gone'"):
        check_loom_def(loom_def)


def test_attrs_that_disagree_are_rejected():
    loom, _, _ = vector_loom()
    attrs = loom._run_attrs
    message = td.constant(_weaver(loom).serialize())
    bad_function = list(attrs["loom_op_functions"])
    bad_function[-1] = 99
    cases = [("loom_op_pass_through", attrs["loom_op_pass_through"][:-1], "loom_op_pass_through"),
             ("loom_op_inputs", attrs["loom_op_inputs"][:-1], "loom_op_inputs"),
             ("loom_op_functions", bad_function, "loom_op_functions"),
             # a count past its list, or negative: refused before anything is allocated
             ("loom_op_backward", [2**40] + attrs["loom_op_backward"][1:], "attr 'loom_op_backward' holds"),
             ("loom_op_backward", [-1] + attrs["loom_op_backward"][1:], "attr 'loom_op_backward' counts"),
             ("loom_type_tags", attrs["loom_type_tags"] * 2, "loom_type_tags")]
    for attr, value, match in cases:
        run = td.function(lambda schedule: _run_with_attrs(loom, schedule, **{attr: value}))
        with pytest.raises(td.errors.InvalidArgumentError, match=match):
            run(message)
    # Eagerly, a loom op finds its functions through the Loom its attrs describe: changed ones describe none.
    with pytest.raises(td.errors.NotFoundError, match="no td.loom.Loom of this process"):
        _run_with_attrs(loom, _weaver(loom)._schedule(), loom_op_inputs=attrs["loom_op_inputs"][:-1])


def test_the_graph_def_of_a_loom_round_trips_and_runs(tmp_path):
    loom, x, y = vector_loom()

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule)

    w = _weaver(loom)
    path = str(tmp_path / "run.td")
    run(td.constant(w.serialize()))
    td.save(run, path)
    loaded = td.load(path)
    np.testing.assert_allclose(loaded(td.constant(w.serialize())).numpy()[0], _expected(x.numpy(), y.numpy()))


# ---------------------------------------------------------------- a loaded loom's ops in a td.function

def _loaded_vector_loom(tmp_path):
    loom, x, y = vector_loom()
    path = str(tmp_path / "v.loom")
    td.save(loom, path)
    return td.load(path), x.numpy(), y.numpy()


def test_a_loaded_loom_op_runs_inside_a_function(tmp_path):
    loaded, _, _ = _loaded_vector_loom(tmp_path)
    add, mul = loaded.named_ops["add"], loaded.named_ops["mul"]
    a = np.arange(6.0).reshape(2, 3)
    b = np.linspace(-1.0, 1.0, 6).reshape(2, 3)

    @td.function
    def f(a, b):
        return mul.instantiate_batch([add.instantiate_batch([a, b])[0], b])[0]

    np.testing.assert_allclose(f(td.constant(a), td.constant(b)).numpy(), (a + b) * b)
    np.testing.assert_allclose(mul.instantiate_batch([td.constant(a), td.constant(b)])[0].numpy(), a * b)
    graph_def = f.get_concrete_function(td.constant(a), td.constant(b)).graph.as_graph_def()
    calls = [n for n in graph_def.node if n.op == "StatefulPartitionedCall"]
    library = {fn.signature.name for fn in graph_def.library.function}
    assert calls and all(n.attr["f"].func.name in library for n in calls)


def test_a_function_calling_a_loaded_loom_op_saves_and_loads(tmp_path):
    loaded, x, y = _loaded_vector_loom(tmp_path)
    mul = loaded.named_ops["mul"]

    @td.function
    def f(a, b):
        return mul.instantiate_batch([a, b])[0]

    a = np.arange(6.0).reshape(2, 3)
    f(td.constant(a), td.constant(a))
    td.save(f, str(tmp_path / "f.td"))
    np.testing.assert_array_equal(td.load(str(tmp_path / "f.td"))(td.constant(a), td.constant(a)).numpy(), a * a)

    w = _weaver(loaded)

    @td.function
    def run(schedule):
        return loaded.output_tensor(VEC3, schedule)

    run(td.constant(w.serialize()))
    td.save(run, str(tmp_path / "run.td"))
    again = td.load(str(tmp_path / "run.td"))(td.constant(w.serialize()))
    np.testing.assert_allclose(again.numpy()[0], _expected(x, y))


def _numeric_gradient(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        g[i] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("traced", [False, True])
def test_a_loaded_loom_op_has_gradients(tmp_path, traced):
    loaded, _, _ = _loaded_vector_loom(tmp_path)
    mul = loaded.named_ops["mul"]
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))

    def loss_and_grads(a, b):
        with td.GradientTape() as tape:
            tape.watch([a, b])
            loss = td.reduce_sum(td.tanh(mul.instantiate_batch([a, b])[0]))
        return (loss,) + tuple(tape.gradient(loss, [a, b]))

    if traced:
        loss_and_grads = td.function(loss_and_grads)
    _, ga, gb = loss_and_grads(td.constant(a), td.constant(b))

    def loss(a_, b_):
        return np.tanh(a_ * b_).sum()

    np.testing.assert_allclose(ga.numpy(), _numeric_gradient(lambda v: loss(v, b), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), _numeric_gradient(lambda v: loss(a, v), b), rtol=1e-6, atol=1e-8)


def test_a_loaded_loom_op_reads_its_captured_variables_with_gradients(tmp_path):
    w = td.Variable(np.array([0.5, -1.0, 2.0]), name="w")

    class Scale(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            return [inputs[0] * w]

    loom = td.loom.Loom(named_tensors={"x": np.array([1.0, 2.0, 3.0])}, named_ops={"scale": Scale()})
    path = str(tmp_path / "s.loom")
    td.save(loom, path)
    loaded = td.load(path)
    scale = loaded.named_ops["scale"]
    (saved_w,) = loaded.variables
    a = np.arange(6.0).reshape(2, 3)

    @td.function
    def f(a):
        with td.GradientTape() as tape:
            y = td.reduce_sum(scale.instantiate_batch([a])[0] ** 2)
        return y, tape.gradient(y, saved_w)

    y, g = f(td.constant(a))
    np.testing.assert_allclose(y.numpy(), ((a * w.numpy()) ** 2).sum())
    np.testing.assert_allclose(g.numpy(), (2 * a * a * w.numpy()).sum(axis=0))


def test_two_loaded_looms_whose_functions_share_names_run_their_own(tmp_path):
    """Eager runs find a loom's functions by the loom, not by name: two files
    may hold functions of the same name that compute different things."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0])

    def loom_def(fn):
        return td.loom.Loom(named_tensors={"x": x, "y": y}, named_ops={"combine": BinaryLoomOp(VEC3, fn)}).loom_def

    add, sub = loom_def(td.add), loom_def(td.subtract)
    names = {}
    for a, b in zip(add.metadata.ops, sub.metadata.ops):
        for field in ("function_name", "training_function_name", "backward_function_name"):
            if getattr(b, field):
                names[getattr(b, field)] = getattr(a, field)
                setattr(b, field, getattr(a, field))
    for f in sub.library.library.function:
        f.signature.name = names[f.signature.name]
    looms = [restore_loom(d, [td.constant(x), td.constant(y)], [], []) for d in (add, sub)]
    for loom, expected in zip(looms, (x + y, x - y)):
        w = loom.make_weaver()
        w.add_output(w.op("combine", [w.named_tensor("x"), w.named_tensor("y")])[0])
        np.testing.assert_allclose(loom(w)[VEC3].numpy()[0], expected)


def test_a_graph_file_of_the_old_format_is_refused_naming_the_attr(tmp_path):
    """Graphs saved before the Loom ops named library functions carried the
    loom as a base64 `loom_def` string attr: such files are refused, saying so
    (saved looms keep their format and load)."""
    loom, _, _ = vector_loom()

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule)

    run(td.constant(_weaver(loom).serialize()))
    path = str(tmp_path / "run.td")
    td.save(run, path)
    kind_version = file_kind(path) << 8 | 1
    saved = saved_pb2.SavedFile.FromString(read_container(path, kind_version))
    nodes = [n for f in saved.graph.library.function for n in f.node_def if n.op == "LoomRun"]
    assert nodes
    nodes[0].attr["loom_def"].s = b"Q2hhbmdlZA=="
    write_container(path, kind_version, saved.SerializeToString())
    with pytest.raises(td.errors.InvalidArgumentError, match="LoomRun has no attr 'loom_def'"):
        td.load(path)
