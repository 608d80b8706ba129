"""Behaviours of td.function checked side by side with TensorFlow 2.21 (issue
17); each test states what TensorFlow does."""

import dataclasses
import warnings

import numpy as np
import pytest

import treadle as td


# ---------------------------------------------------------------- returned Python values

def test_python_values_returned_become_tensors():
    # TF: tf.function(lambda: 3)() is <tf.Tensor: shape=(), dtype=int32, numpy=3>.
    out = td.function(lambda: 3)()
    assert isinstance(out, td.Tensor) and out.dtype == td.int32 and out.numpy() == 3
    s, b, f = td.function(lambda: ("a", True, 2.5))()
    assert (s.dtype, s.numpy()) == (td.string, b"a")
    assert (b.dtype, bool(b.numpy())) == (td.bool, True)
    assert (f.dtype, float(f.numpy())) == (td.float32, 2.5)
    # NumPy values keep their dtype, as TF's convert_to_tensor does.
    d, a = td.function(lambda: (np.float64(1.0), np.array([1, 2], np.int64)))()
    assert d.dtype == td.float64 and a.dtype == td.int64 and a.numpy().tolist() == [1, 2]
    assert td.function(lambda: None)() is None


def test_captured_python_int_comes_back_int32():
    box = {"foo": 2}
    out = td.function(lambda: 1 + box["foo"])()
    assert out.dtype == td.int32 and out.numpy() == 3


def test_numpy_arguments_are_tensors_traced_once_per_shape():
    f = td.function(lambda x: x + 1)
    out = f(np.array([1, 2], np.int32))
    assert isinstance(out, td.Tensor) and out.numpy().tolist() == [2, 3]
    f(np.array([5, 6], np.int32))
    assert f.experimental_get_tracing_count() == 1
    f(np.array([1, 2, 3], np.int32))
    assert f.experimental_get_tracing_count() == 2
    f(np.array([1.0, 2.0]))  # float64: a new dtype
    assert f.experimental_get_tracing_count() == 3
    # Arrays inside structures too.
    g = td.function(lambda d: d["a"] * 2)
    assert g({"a": np.ones(2, np.float32)}).numpy().tolist() == [2.0, 2.0]
    g({"a": np.zeros(2, np.float32)})
    assert g.experimental_get_tracing_count() == 1


def test_print_of_structures_prints_values(capfd):
    # TF: tf.print({'k': x}) prints {'k': [1 2]}, tf.print([x, y]) prints [[1 2], 3].
    @td.function
    def f(x, y):
        td.print({"k": x})
        td.print([x, y])
        td.print("list:", [x, "s"], sep="|")

    f(td.constant([1, 2]), td.constant(3))
    assert capfd.readouterr().err == "{'k': [1 2]}\n[[1 2], 3]\nlist:|[[1 2], 's']\n"


# ---------------------------------------------------------------- retracing

def test_one_trace_for_1_1point0_and_true():
    f = td.function(lambda x: x)
    assert f(1).numpy() == 1
    f(1.0)
    f(True)
    # TF shares the trace (Python's 1 == 1.0 == True), and returns what it traced.
    assert f.experimental_get_tracing_count() == 1
    assert f(True).dtype == td.int32


class _Key:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Key) and other.v == self.v

    def __hash__(self):
        return hash(self.v)


def test_equal_live_objects_share_a_trace():
    f = td.function(lambda k: td.constant(k.v))
    a, b = _Key(1), _Key(1)
    f(a)
    f(b)
    assert f.experimental_get_tracing_count() == 1
    c = _Key(2)
    f(c)
    assert f.experimental_get_tracing_count() == 2


def test_unhashable_dataclass_is_a_type_error():
    @dataclasses.dataclass
    class D:
        a: int

    with pytest.raises(TypeError, match="Could not generate a generic TraceType"):
        td.function(lambda d: d.a)(D(1))


# ---------------------------------------------------------------- signatures

def test_positional_input_signature():
    f = td.function(lambda x: x + 1, [td.TensorSpec([None], td.int32)])
    assert f(td.constant([1])).numpy().tolist() == [2]
    with pytest.raises(TypeError):
        td.function(lambda x: x, td.TensorSpec([None]))  # a spec, not a list of them


def test_function_type_prints_the_output():
    f = td.function(lambda x: x + 1, [td.TensorSpec([None], td.int32)])
    text = str(f.get_concrete_function().function_type)
    # TF: (x: TensorSpec(shape=(None,), dtype=tf.int32, name=None)) -> TensorSpec(shape=(None,), ...)
    assert text == ("(x: TensorSpec(shape=(None,), dtype=td.int32, name=None)) -> "
                    "TensorSpec(shape=(None,), dtype=td.int32, name=None)")


def test_concrete_function_for_scalars_refuses_vectors():
    # Treadle's choice (TF 2.21 runs it): a graph traced for shape () is not
    # run on shape (2,), because ops in it were specialized to the shape it
    # was traced with. Trace for TensorSpec([None]) or TensorSpec(None) instead.
    c = td.function(lambda a: a * 2).get_concrete_function(td.TensorSpec([], td.float32))
    with pytest.raises(TypeError, match=r"Can not cast(.|\n)*has shape \(2,\) but the function was traced "
                                        r"for shape \(\)"):
        c(td.constant([1.0, 2.0]))


# ---------------------------------------------------------------- td.function's parameters

def test_function_parameters_and_attributes():
    def add_one(x: td.Tensor):
        return x + 1

    f = td.function(add_one, experimental_follow_type_hints=True)
    assert f.name == "add_one"
    f(1)
    f(2)
    assert f.experimental_get_tracing_count() == 1  # the hint made the ints tensors
    assert str(f.function_type) == "(x)"
    g = td.function(add_one, input_signature=[td.TensorSpec([], td.int32)])
    assert str(g.function_type) == "(x: TensorSpec(shape=(), dtype=td.int32, name=None))"
    with pytest.warns(UserWarning, match="uncompiled"):
        h = td.function(add_one, jit_compile=True)
    assert h(td.constant(1)).numpy() == 2
    assert td.function(add_one, experimental_attributes={"_noinline": True})(td.constant(1)).numpy() == 2
    with pytest.raises(NotImplementedError, match="LISTS is not implemented"):
        td.function(add_one, experimental_autograph_options=(td.autograph.experimental.Feature.LISTS,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        td.function(add_one, experimental_autograph_options=())


# ---------------------------------------------------------------- errors

def test_tensor_as_python_bool_is_operator_not_allowed():
    assert issubclass(td.errors.OperatorNotAllowedInGraphError, TypeError)

    @td.function
    def f(t):
        return bool(t)

    with pytest.raises(td.errors.OperatorNotAllowedInGraphError, match="as a Python `bool` is not allowed"):
        f(td.constant(True))


def test_list_append_in_a_graph_loop_is_inaccessible_tensor_error():
    assert issubclass(td.errors.InaccessibleTensorError, ValueError)

    @td.function
    def f(n):
        values = []
        for i in td.range(n):
            values.append(i)
        return values

    with pytest.raises(ValueError, match="out of scope"):
        f(td.constant(3))


def test_structure_mismatch_in_a_loop_is_a_type_error():
    @td.function
    def f(n):
        values = []
        for i in td.range(n):
            values = values + [i]
        return values

    with pytest.raises(TypeError, match="'values' does not have the same nested structure"):
        f(td.constant(3))


def test_leaked_tensor_from_another_function_is_a_type_error():
    # The guide: a tensor leaked from one function's trace, used in another.
    leaked = []

    @td.function
    def leaky(a):
        leaked.append(a + 1)
        return a + 2

    leaky(td.constant(1))

    @td.function
    def captures_leaked_tensor(b):
        return b + leaked[0]

    with pytest.raises(TypeError, match="out of scope"):
        captures_leaked_tensor(td.constant(2))


# ---------------------------------------------------------------- graphs

def test_graph_def_nodes_follow_tensorflow():
    @td.function
    def double(a):
        return a + a

    nodes = [(n.name, n.op, list(n.input))
             for n in double.get_concrete_function(td.constant("a")).graph.as_graph_def().node]
    # TF 2.21: [('a', 'Placeholder', []), ('add', 'Add', ['a', 'a']), ('Identity', 'Identity', ['add'])]
    assert nodes == [("a", "Placeholder", []), ("add", "Add", ["a", "a"]), ("Identity", "Identity", ["add"])]
    nodes = [(n.name, n.op) for n in double.get_concrete_function(td.constant(1.0)).graph.as_graph_def().node]
    assert nodes == [("a", "Placeholder"), ("add", "AddV2"), ("Identity", "Identity")]
    assert double(td.constant("x")).numpy() == b"xx"

    @td.function
    def ops(a, b):
        return a - b, a * b, a / b, a @ b, a

    names = [n.name for n in ops.get_concrete_function(td.ones([2, 2]), td.ones([2, 2])).graph.as_graph_def().node]
    assert names == ["a", "b", "sub", "mul", "truediv", "matmul", "Identity", "Identity_1", "Identity_2",
                     "Identity_3", "Identity_4"]


def test_control_flow_op_names_follow_tensorflow():
    # TF 2.21: StatelessIf / StatelessWhile unless a branch or the body has effects.
    @td.function
    def branch(t):
        if t > 0:
            return t
        return -t

    @td.function
    def loop(n):
        i = 0
        while i < n:
            i += 1
        return i

    v = td.Variable(1)

    @td.function
    def effect(t):
        if t > 0:
            v.assign_add(1)
        return t

    def kinds(f):
        return [n.op for n in f.get_concrete_function(td.constant(1)).graph.as_graph_def().node]

    assert "StatelessIf" in kinds(branch) and "If" not in kinds(branch)
    assert "StatelessWhile" in kinds(loop)
    assert "If" in kinds(effect)
    assert branch(td.constant(-3)).numpy() == 3 and loop(td.constant(4)).numpy() == 4


def test_to_code_names_the_function_as_tensorflow():
    def f(x):
        if x > 0:
            x = x * 2
        return x

    assert td.autograph.to_code(f).startswith("def tf__f(x):")


# ---------------------------------------------------------------- saving modules

class _Scaler(td.Module):
    def __init__(self):
        super().__init__()
        self.w = td.Variable(2.0)

    @td.function(input_signature=[td.TensorSpec([None], td.float32)])
    def __call__(self, x):
        return x * self.w

    @td.function
    def shifted(self, x, k):
        return x * self.w + k


def test_save_a_module_with_function_methods(tmp_path):
    # TF: tf.saved_model.save(module, path, signatures=...) keeps each traced
    # tf.function method, callable on the loaded object, and the signatures.
    m = _Scaler()
    m.shifted(td.constant([1.0]), 1.0)
    m.shifted(td.constant([1.0, 2.0]), 3.0)
    path = str(tmp_path / "scaler.td")
    td.saved_model.save(m, path, signatures=m.__call__)
    m.w.assign(5.0)  # the saved file keeps the value at save time
    loaded = td.saved_model.load(path)
    assert loaded(td.constant([1.0, 3.0])).numpy().tolist() == [2.0, 6.0]
    assert loaded.shifted(td.constant([1.0]), 1.0).numpy().tolist() == [3.0]
    assert loaded.shifted(td.constant([1.0, 2.0]), 3.0).numpy().tolist() == [5.0, 7.0]
    out = loaded.signatures["serving_default"](x=td.constant([4.0]))
    assert list(out) == ["output_0"] and out["output_0"].numpy().tolist() == [8.0]
    assert [v.numpy() for v in loaded.trainable_variables] == [2.0]
    # Every saved function, whatever it was saved as: the call, both traces of shifted, the signature.
    assert len(loaded.functions) == 4
    with pytest.raises(TypeError, match="has none"):
        td.save(td.Module(), path)


# ---------------------------------------------------------------- types

class MaskedTensor(td.experimental.ExtensionType):
    values: td.Tensor
    mask: td.Tensor
    label: str = "m"


def test_extension_type_fields_and_tracing():
    mt = MaskedTensor([1.0, 2.0], [True, False])
    assert mt.values.dtype == td.float32 and mt.label == "m"
    assert mt == MaskedTensor([1.0, 2.0], [True, False]) and mt != MaskedTensor([1.0, 3.0], [True, False])
    assert repr(mt).startswith("MaskedTensor(values=<td.Tensor")
    with pytest.raises(AttributeError, match="Cannot mutate"):
        mt.values = td.constant([0.0, 0.0])
    with pytest.raises(TypeError, match="missing required field 'mask'"):
        MaskedTensor([1.0])

    @td.function
    def masked_double(m):
        if td.reduce_any(m.mask):
            out = MaskedTensor(m.values * 2.0, m.mask, m.label)
        else:
            out = m
        return out

    r = masked_double(mt)
    assert isinstance(r, MaskedTensor) and r.values.numpy().tolist() == [2.0, 4.0] and r.label == "m"
    masked_double(MaskedTensor([5.0, 6.0], [False, False]))
    # TF: values of the same field types share a trace (the TraceType is the fields' specs).
    assert masked_double.experimental_get_tracing_count() == 1
    masked_double(MaskedTensor([5.0, 6.0, 7.0], [False, False, True]))
    assert masked_double.experimental_get_tracing_count() == 2
    text = str(masked_double.get_concrete_function(mt).function_type)
    assert text.startswith("(m: MaskedTensor[values: TensorSpec(shape=(2,), dtype=td.float32, name=None)")


def test_type_spec_and_function_types():
    assert isinstance(td.TensorSpec([2]), td.TypeSpec)
    assert isinstance(td.TensorSpec([2]), td.types.experimental.TraceType)
    assert td.TensorSpec([2]).value_type is td.Tensor
    f = td.function(lambda x: x)
    assert isinstance(f, td.types.experimental.PolymorphicFunction)
    c = f.get_concrete_function(td.constant(1))
    assert isinstance(c, td.types.experimental.ConcreteFunction)
    assert isinstance(c.function_type, td.types.experimental.FunctionType)
