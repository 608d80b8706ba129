"""The examples of TensorFlow's guide "Better performance with tf.function",
with td in place of tf, printing what the guide prints (issue 4)."""

import logging

import numpy as np
import pytest

import treadle as td


def test_usage_and_nesting():
    @td.function
    def add(a, b):
        return a + b

    assert add(td.ones([2, 2]), td.ones([2, 2])).numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]

    @td.function
    def dense_layer(x, w, b):
        return add(td.matmul(x, w), b)

    out = dense_layer(td.ones([3, 2]), td.ones([2, 2]), td.ones([2]))
    assert out.numpy().tolist() == [[3.0, 3.0]] * 3


def test_tracing_prints(capsys):
    @td.function
    def double(a):
        print("Tracing with", a)
        return a + a

    print(double(td.constant(1)))
    print()
    print(double(td.constant(1.1)))
    print()
    print(double(td.constant("a")))
    print()
    print(double(td.constant("b")))
    out = capsys.readouterr().out
    assert out == (
        'Tracing with Tensor("a:0", shape=(), dtype=int32)\n'
        "td.Tensor(2, shape=(), dtype=int32)\n\n"
        'Tracing with Tensor("a:0", shape=(), dtype=float32)\n'
        "td.Tensor(2.2, shape=(), dtype=float32)\n\n"
        'Tracing with Tensor("a:0", shape=(), dtype=string)\n'
        "td.Tensor(b'aa', shape=(), dtype=string)\n\n"
        "td.Tensor(b'bb', shape=(), dtype=string)\n")
    sigs = double.pretty_printed_concrete_signatures()
    assert sigs.count("Input Parameters:") == 3
    assert "a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=td.int32, name=None)" in sigs
    assert "Output Type:\n  TensorSpec(shape=(), dtype=td.string, name=None)" in sigs


def test_concrete_functions():
    @td.function
    def double(a):
        return a + a

    double_strings = double.get_concrete_function(td.constant("a"))
    assert double_strings(td.constant("a")).numpy() == b"aa"
    assert double_strings(a=td.constant("b")).numpy() == b"bb"
    from_spec = double.get_concrete_function(td.TensorSpec(shape=[], dtype=td.string))
    assert from_spec is double_strings
    assert from_spec(td.constant("c")).numpy() == b"cc"
    assert str(double_strings) == (
        "ConcreteFunction Input Parameters:\n"
        "  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=td.string, name=None)\n"
        "Output Type:\n"
        "  TensorSpec(shape=(), dtype=td.string, name=None)\n"
        "Captures:\n"
        "  None")
    assert double_strings.structured_input_signature == (
        (td.TensorSpec(shape=(), dtype=td.string, name="a"),), {})
    with pytest.raises(td.errors.InvalidArgumentError):
        double_strings(td.constant(1))


def test_python_literal_in_concrete_signature():
    @td.function
    def pow(a, b):
        return a ** b

    square = pow.get_concrete_function(a=td.TensorSpec(None, td.float32), b=2)
    text = str(square)
    assert "a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=<unknown>, dtype=td.float32, name=None)" in text
    assert "b (POSITIONAL_OR_KEYWORD): Literal[2]" in text
    assert square(td.constant(10.0)) == 100
    with pytest.raises(TypeError):
        square(td.constant(10.0), b=3)


def test_graph_inspection():
    @td.function
    def double(a):
        return a + a

    graph = double.get_concrete_function(td.constant("a")).graph
    nodes = {node.name: list(node.input) for node in graph.as_graph_def().node}
    assert nodes["a"] == []
    assert any(inputs == ["a", "a"] for inputs in nodes.values())


def test_run_functions_eagerly(capsys):
    @td.function
    def get_mse(y_true, y_pred):
        print("Calculating MSE!")
        sq_diff = td.pow(y_true - y_pred, 2)
        return td.reduce_mean(sq_diff)

    y_true = td.random.uniform([5], maxval=10, dtype=td.int32)
    y_pred = td.random.uniform([5], maxval=10, dtype=td.int32)
    expected = int(np.mean((y_true.numpy() - y_pred.numpy()) ** 2))
    for _ in range(3):
        assert int(get_mse(y_true, y_pred)) == expected
    assert capsys.readouterr().out.count("Calculating MSE!") == 1
    td.config.run_functions_eagerly(True)
    try:
        for _ in range(3):
            get_mse(y_true, y_pred)
    finally:
        td.config.run_functions_eagerly(False)
    assert capsys.readouterr().out.count("Calculating MSE!") == 3


def test_python_side_effects(capfd):
    @td.function
    def f(x):
        print("Traced with", x)
        td.print("Executed with", x)

    f(1)
    f(1)
    f(2)
    captured = capfd.readouterr()
    assert captured.out == "Traced with 1\nTraced with 2\n"
    assert captured.err == "Executed with 1\nExecuted with 1\nExecuted with 2\n"


def test_external_list_appended_once():
    external_list = []

    @td.function
    def side_effect(x):
        print("Python side effect")
        external_list.append(x)

    side_effect(1)
    side_effect(1)
    side_effect(1)
    assert len(external_list) == 1


def test_leaky_function():
    holder = {}

    @td.function
    def leaky_function(a):
        holder["x"] = a + 1
        return a + 2

    assert leaky_function(td.constant(1)).numpy() == 3
    with pytest.raises(AttributeError, match="'SymbolicTensor' object has no attribute 'numpy'"):
        holder["x"].numpy()

    @td.function
    def captures_leaked_tensor(b):
        b += holder["x"]
        return b

    with pytest.raises(TypeError, match="is out of scope and cannot be used here"):
        captures_leaked_tensor(td.constant(2))


def test_iterator_is_read_at_trace_time(capfd):
    @td.function
    def buggy_consume_next(iterator):
        td.print("Value:", next(iterator))

    iterator = iter([1, 2, 3])
    buggy_consume_next(iterator)
    buggy_consume_next(iterator)
    buggy_consume_next(iterator)
    assert capfd.readouterr().err == "Value: 1\nValue: 1\nValue: 1\n"


class SimpleModel(td.Module):
    def __init__(self):
        super().__init__()
        self.bias = 0.0
        self.weight = 2.0


def test_python_object_state_is_read_at_trace_time():
    @td.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    simple_model = SimpleModel()
    x = td.constant(10.0)
    assert evaluate(simple_model, x).numpy() == 20.0
    simple_model.bias += 5.0
    assert evaluate(simple_model, x).numpy() == 20.0  # did not change: traced with the old bias

    def evaluate_fn(model, x):
        return model.weight * x + model.bias

    new_model = SimpleModel()
    evaluate_no_bias = td.function(evaluate_fn).get_concrete_function(new_model, x)
    assert evaluate_no_bias(x).numpy() == 20.0
    new_model.bias += 5.0
    evaluate_with_bias = td.function(evaluate_fn).get_concrete_function(new_model, x)
    assert evaluate_with_bias(x).numpy() == 25.0
    assert evaluate_no_bias(x).numpy() == 20.0


def test_variables_in_objects():
    class BetterModel:
        def __init__(self):
            self.bias = td.Variable(0.0)
            self.weight = td.Variable(2.0)

    @td.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    better_model = BetterModel()
    x = td.constant(10.0)
    assert evaluate(better_model, x).numpy() == 20.0
    better_model.bias.assign_add(5.0)
    assert evaluate(better_model, x).numpy() == 25.0


def test_creating_variables_inside_is_an_error():
    @td.function
    def f(x):
        v = td.Variable(1.0)
        return v

    with pytest.raises(ValueError, match="only supports singleton td.Variables created on the first call"):
        f(1.0)


def test_variables_created_on_first_call():
    class Count(td.Module):
        def __init__(self):
            super().__init__()
            self.count = None

        @td.function
        def __call__(self):
            if self.count is None:
                self.count = td.Variable(0)
            return self.count.assign_add(1)

    c = Count()
    assert str(c()) == "td.Tensor(1, shape=(), dtype=int32)"
    assert str(c()) == "td.Tensor(2, shape=(), dtype=int32)"
    assert len(c.trainable_variables) == 1


def test_input_signature(capsys):
    @td.function(input_signature=(td.TensorSpec(shape=[None], dtype=td.int32),))
    def next_collatz(x):
        print("Tracing with", x)
        return td.where(x % 2 == 0, x // 2, 3 * x + 1)

    print(next_collatz(td.constant([1, 2])))
    assert capsys.readouterr().out == ('Tracing with Tensor("x:0", shape=(None,), dtype=int32)\n'
                                       "td.Tensor([4 1], shape=(2,), dtype=int32)\n")
    with pytest.raises(TypeError, match="Binding inputs to td.function `next_collatz` failed due to `Can not cast"):
        next_collatz(td.constant([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match="Can not cast"):
        next_collatz(td.constant([1.0, 2.0]))
    assert next_collatz.experimental_get_tracing_count() == 1


def test_reduce_retracing(capsys):
    @td.function(reduce_retracing=True)
    def g(x):
        print("Tracing with", x)
        return x

    print(g(td.constant([1, 2, 3])))
    print(g(td.constant([1, 2, 3, 4, 5])))
    print(g(td.constant([1, 2])))
    assert capsys.readouterr().out == (
        'Tracing with Tensor("x:0", shape=(3,), dtype=int32)\n'
        "td.Tensor([1 2 3], shape=(3,), dtype=int32)\n"
        'Tracing with Tensor("x:0", shape=(None,), dtype=int32)\n'
        "td.Tensor([1 2 3 4 5], shape=(5,), dtype=int32)\n"
        "td.Tensor([1 2], shape=(2,), dtype=int32)\n")


class FruitTraceType(td.types.experimental.TraceType):
    def __init__(self, fruit):
        self.fruit_type = type(fruit)
        self.fruit_value = fruit

    def is_subtype_of(self, other):
        return type(other) is FruitTraceType and self.fruit_type is other.fruit_type

    def most_specific_common_supertype(self, others):
        return self if all(self == other for other in others) else None

    def placeholder_value(self, placeholder_context=None):
        return self.fruit_value

    def __eq__(self, other):
        return type(other) is FruitTraceType and self.fruit_type == other.fruit_type

    def __hash__(self):
        return hash(self.fruit_type)


class FruitWithTraceType:
    def __tf_tracing_type__(self, context):
        return FruitTraceType(self)


class AppleWithTraceType(FruitWithTraceType):
    flavor = td.constant([1, 2])


class MangoWithTraceType(FruitWithTraceType):
    flavor = td.constant([3, 4])


class Fruit:
    flavor = td.constant([0, 0])


class Apple(Fruit):
    flavor = td.constant([1, 2])


class Mango(Fruit):
    flavor = td.constant([3, 4])


def test_custom_tracing_protocol():
    @td.function
    def get_mixed_flavor(fruit_a, fruit_b):
        return fruit_a.flavor + fruit_b.flavor

    get_mixed_flavor(Apple(), Mango())
    get_mixed_flavor(Apple(), Mango())
    assert get_mixed_flavor.experimental_get_tracing_count() == 2  # new objects, new traces

    out = get_mixed_flavor(AppleWithTraceType(), MangoWithTraceType())
    get_mixed_flavor(AppleWithTraceType(), MangoWithTraceType())
    assert get_mixed_flavor.experimental_get_tracing_count() == 3
    assert out.numpy().tolist() == [4, 6]


def test_trace_types_rules():
    from treadle.function import trace_type as tt
    spec = tt.from_value(td.TensorSpec([None, 3]))
    assert tt.from_value(td.constant(np.zeros((2, 3), np.float32))).is_subtype_of(spec)
    assert not tt.from_value(td.constant(np.zeros((2, 4), np.float32))).is_subtype_of(spec)
    assert spec.is_subtype_of(tt.from_value(td.TensorSpec(None)))
    # As in TensorFlow: literals match by ==, so 1, 1.0 and True are one type.
    assert tt.from_value(1) == tt.from_value(True) == tt.from_value(1.0)
    assert tt.from_value(1) != tt.from_value(2)
    assert tt.from_value({"a": 1, "b": 2}) == tt.from_value({"b": 2, "a": 1})
    assert tt.from_value([1, 2]) != tt.from_value((1, 2))
    with pytest.raises(TypeError, match="Could not generate a generic TraceType"):
        tt.from_value(bytearray(b"x"))
    common = tt.from_value(td.TensorSpec([2, 3])).most_specific_common_supertype([tt.from_value(td.TensorSpec([4, 3]))])
    assert common == tt.from_value(td.TensorSpec([None, 3]))


def test_dispatch_picks_most_specific():
    @td.function
    def f(x):
        return x * 2

    vector = f.get_concrete_function(td.TensorSpec([None], td.float32))
    unranked = f.get_concrete_function(td.TensorSpec(None, td.float32))
    assert vector is not unranked and f.experimental_get_tracing_count() == 2
    # (2,) fits both traced types: the more specific [None] is chosen.
    assert f.get_concrete_function(td.constant([1.0, 2.0])) is vector
    # rank 2 fits only the unranked one.
    assert f.get_concrete_function(td.constant([[1.0]])) is unranked
    assert f(td.constant([[1.0]])).numpy().tolist() == [[2.0]]
    assert f.experimental_get_tracing_count() == 2


def test_binding_follows_python():
    @td.function
    def f(a, b=2, *args, c, **kwargs):
        return a * b + sum(args) + c + sum(kwargs.values())

    assert f(td.constant(1), c=3).numpy() == 5
    assert f(td.constant(1), 3, 4, 5, c=1, d=10).numpy() == 23
    with pytest.raises(TypeError, match="Binding inputs to td.function `f` failed"):
        f(td.constant(1))


def test_methods_trace_per_instance():
    class Scaler(td.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k

        @td.function
        def __call__(self, x):
            return x * self.k

    a, b = Scaler(2.0), Scaler(3.0)
    assert a(td.constant(1.0)).numpy() == 2.0
    assert b(td.constant(1.0)).numpy() == 3.0


def test_retracing_warning(caplog):
    @td.function
    def f(x, k):
        return x + k

    with caplog.at_level(logging.WARNING, logger="treadle"):
        for i in range(5):
            f(td.constant(1.0), float(i))
    [record] = [r for r in caplog.records if "triggered td.function retracing" in r.getMessage()]
    assert record.name == "treadle" and record.levelname == "WARNING"


def test_init_scope_runs_eagerly():
    seen = {}

    @td.function
    def f(x):
        with td.init_scope():
            seen["eager"] = td.executing_eagerly()
            seen["value"] = (td.constant(2.0) * 3.0).numpy()
        return x

    f(td.constant(1.0))
    assert seen == {"eager": True, "value": 6.0}


def test_pass_tensors_instead_of_python_literals(capfd):
    def train_one_step():
        pass

    @td.function
    def train(num_steps):
        print("Tracing with num_steps = ", num_steps)
        td.print("Executing with num_steps = ", num_steps)
        for _ in td.range(num_steps):
            train_one_step()

    train(num_steps=10)
    train(num_steps=20)
    train(num_steps=td.constant(10))
    train(num_steps=td.constant(20))
    captured = capfd.readouterr()
    assert captured.out == ("Tracing with num_steps =  10\n"
                            "Tracing with num_steps =  20\n"
                            'Tracing with num_steps =  Tensor("num_steps:0", shape=(), dtype=int32)\n')
    assert captured.err == ("Executing with num_steps =  10\n" "Executing with num_steps =  20\n"
                            "Executing with num_steps =  10\n" "Executing with num_steps =  20\n")


def test_recursive_function_fails_instead_of_hanging():
    @td.function
    def recursive_fn(n):
        if n > 0:
            return recursive_fn(n - 1)
        else:
            return 1

    with pytest.raises(RecursionError):
        recursive_fn(td.constant(5))


def test_recursive_function_over_a_python_int(caplog):
    # The guide's example: each Python int is its own type, so TensorFlow
    # traces once per value (5, 4, ..., 0) and returns the int32 tensor 1.
    @td.function
    def recursive_fn(n):
        if n > 0:
            return recursive_fn(n - 1)
        else:
            return 1

    with caplog.at_level(logging.WARNING, logger="treadle"):
        out = recursive_fn(5)
    # One eager call: the traces of the calls inside it are not "frequent
    # retracing" (TensorFlow logs nothing here).
    assert not any("retracing" in r.getMessage() for r in caplog.records)
    assert out.dtype == td.int32 and out.numpy() == 1
    assert recursive_fn.experimental_get_tracing_count() == 6


def test_namedtuple_and_attrs_arguments():
    import collections
    attr = pytest.importorskip("attr")
    Pair = collections.namedtuple("Pair", "a b")

    @attr.s(frozen=True)
    class Box:
        x = attr.ib()
        scale = attr.ib()

    @td.function
    def f(p, box):
        return p.a * box.scale + p.b + box.x

    one = td.constant(1.0)
    assert f(Pair(one, one), Box(one, 2.0)).numpy() == 4.0
    assert f(Pair(td.constant(2.0), one), Box(one, 2.0)).numpy() == 6.0
    assert f.experimental_get_tracing_count() == 1
    f(Pair(one, one), Box(one, 3.0))  # a different literal field: a new trace
    assert f.experimental_get_tracing_count() == 2


def test_variables_as_arguments_trace_by_dtype_and_shape():
    # TensorFlow traces a variable argument by its VariableSpec (dtype, shape,
    # trainable): variables alike share a trace, and each call reads the one passed.
    @td.function
    def read(v):
        return v + 1.0

    a, b = td.Variable(1.0), td.Variable(2.0)
    assert read(a).numpy() == 2.0
    assert read(a).numpy() == 2.0
    assert read(b).numpy() == 3.0
    assert read.experimental_get_tracing_count() == 1
    a.assign(10.0)
    assert read(a).numpy() == 11.0
    read(td.Variable([1.0, 2.0]))  # another shape: a new trace
    assert read.experimental_get_tracing_count() == 2


def test_closures_and_globals_are_read_at_trace_time():
    scale = 2.0

    @td.function
    def f(x):
        return x * scale

    assert f(td.constant(1.0)).numpy() == 2.0
    scale = 3.0  # noqa: F841 - the traced graph keeps the old value
    assert f(td.constant(1.0)).numpy() == 2.0
