"""Behaviours TensorFlow's own tf.function tests check, as treadle has them:
weak references refused as arguments, keyword names that collide as graph
inputs, a variable's device, td.RaggedTensorSpec."""

import dataclasses
import weakref

import numpy as np
import pytest

import treadle as td


def test_a_weak_reference_argument_is_refused():
    class Box:
        pass

    box = Box()
    f = td.function(lambda x: x)
    with pytest.raises(TypeError, match="weakref"):
        f(weakref.ref(box))


def test_keyword_arguments_whose_input_names_collide_are_refused():
    @td.function
    def add(**kwargs):
        return kwargs["a_b"] + kwargs["a/b"]

    with pytest.raises(ValueError, match="Name collision after sanitization"):
        add(**{"a_b": 1, "a/b": 2})
    # Names that stay distinct are fine.
    assert td.function(lambda **kw: kw["x"] + kw["y"])(x=1, y=2).numpy() == 3


def test_a_variable_reports_the_cpu_as_its_device():
    v = td.Variable(1.0)
    assert v.device == "/job:localhost/replica:0/task:0/device:CPU:0"

    class Holder:
        def __init__(self):
            self.v = None

        @td.function
        def f(self):
            if self.v is None:
                self.v = td.Variable(1.0)
            return self.v + 1.0

    h = Holder()
    with td.device("cpu:0"):
        assert h.f().numpy() == 2.0
    assert "CPU" in h.v.device


def test_ragged_tensor_spec_is_the_type_of_ragged_arguments():
    spec = td.RaggedTensorSpec([None, None], td.int32)
    # As in TensorFlow's traces, the number of values is not part of it; the
    # number of rows is where given, and a spec of any rows is its supertype.
    assert spec != td.RaggedTensorSpec([3, None], td.int32)
    assert td.RaggedTensorSpec([3, None], td.int32).is_subtype_of(spec)
    assert not spec.is_subtype_of(td.RaggedTensorSpec([3, None], td.int32))
    assert spec != td.RaggedTensorSpec([None, None], td.int64)
    assert spec != td.RaggedTensorSpec([None, None, 2], td.int32, ragged_rank=1)
    assert spec.dtype == td.int32


def test_ragged_tensor_spec_checks_its_arguments():
    with pytest.raises(ValueError, match="known rank"):
        td.RaggedTensorSpec(None, td.int32)
    with pytest.raises(ValueError, match="ragged_rank"):
        td.RaggedTensorSpec([None, None], td.int32, ragged_rank=2)
    with pytest.raises(ValueError, match="flat_values_spec"):
        td.RaggedTensorSpec([None, None], td.int32, flat_values_spec=td.TensorSpec([None], td.int32))


def test_nest_flatten_expands_composites_into_their_tensors():
    sparse = td.SparseTensor([[0], [8]], [1, 2], [20])
    slices = td.IndexedSlices(td.constant([1, 2]), td.constant([0, 1]), td.constant([2]))
    ragged = td.RaggedTensor.from_row_lengths([1, 2, 3], [2, 0, 1])
    structure = {"s": sparse, "r": (ragged, 7), "i": slices}
    assert len(td.nest.flatten(structure)) == 4  # composites are leaves by default
    flat = td.nest.flatten(structure, expand_composites=True)
    expected = [[[0], [8]], [1, 2], [20],        # "i": values, indices, dense_shape
                [1, 2, 3], [0, 2, 2, 3], 7,      # "r": flat values, row splits; then 7
                [[0], [8]], [1, 2], [20]]        # "s": indices, values, dense_shape
    expected[0:3] = [[1, 2], [0, 1], [2]]
    got = [x if isinstance(x, int) else x.numpy().tolist() for x in flat]
    assert got == expected


def test_nest_assert_same_structure_compares_composites_when_expanded():
    sparse = td.SparseTensor([[0]], [1], [4])
    ragged = td.RaggedTensor.from_row_lengths([1], [1])
    td.nest.assert_same_structure([sparse], [td.SparseTensor([[1], [2]], [5, 6], [9])], expand_composites=True)
    td.nest.assert_same_structure([sparse], [ragged])  # both leaves
    with pytest.raises(ValueError, match="same nested structure"):
        td.nest.assert_same_structure([sparse], [ragged], expand_composites=True)


def test_a_composite_returned_by_a_function_has_the_same_components():
    for value in (td.IndexedSlices(td.constant([1, 2]), td.constant([0, 1])),
                  td.SparseTensor([[0], [8], [10]], [1, 2, 3], [20])):
        out = td.function(lambda: value)()
        assert type(out) is type(value)
        td.nest.assert_same_structure(value, out, expand_composites=True)
        for a, b in zip(td.nest.flatten(value, expand_composites=True), td.nest.flatten(out, expand_composites=True)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---------------------------------------------------------------- TensorFlow's nest protocol

@dataclasses.dataclass
class Masked:
    mask: bool
    value: object

    def __tf_flatten__(self):
        return (self.mask,), (self.value,)

    @classmethod
    def __tf_unflatten__(cls, metadata, components):
        return cls(metadata[0], components[0])


@dataclasses.dataclass
class MaskedPair:
    masks: list  # unhashable metadata
    first: Masked
    second: Masked

    def __tf_flatten__(self):
        return (self.masks,), (self.first, self.second)

    @classmethod
    def __tf_unflatten__(cls, metadata, components):
        return cls(metadata[0], *components)


def test_objects_with_the_nest_protocol_pass_through_a_function():
    @td.function
    def swap(p):
        return MaskedPair(p.masks + [True], p.second, Masked(p.first.mask, p.first.value * 10.0))

    pair = MaskedPair([False], Masked(True, td.constant([1.0])), Masked(False, td.constant([2.0])))
    out = swap(pair)
    assert isinstance(out, MaskedPair) and out.masks == [False, True]
    assert out.first.mask is False and out.first.value.numpy().tolist() == [2.0]
    assert out.second.mask is True and out.second.value.numpy().tolist() == [10.0]


def test_the_nest_protocol_metadata_and_tensor_types_key_the_traces():
    @td.function
    def ident(x):
        return x

    first = ident.get_concrete_function(Masked(True, td.constant([1.0])))
    assert ident.get_concrete_function(Masked(True, td.constant([5.0]))) is first  # same metadata and spec
    assert ident.get_concrete_function(Masked(False, td.constant([5.0]))) is not first  # other metadata
    general = ident.get_concrete_function(Masked(False, td.TensorSpec([None, None], td.int32)))
    assert ident.get_concrete_function(Masked(False, td.constant([[1], [2]]))) is general
    out = general(Masked(False, td.constant([[1], [2]])))
    assert out.mask is False and out.value.numpy().tolist() == [[1], [2]]


# ---------------------------------------------------------------- names and variables of concrete functions

def test_tensor_spec_names_name_the_flat_arguments():
    @td.function
    def matmul_pair(mats):
        ((a, b),) = mats
        return td.matmul(a, b)

    unnamed = matmul_pair.get_concrete_function([(td.TensorSpec([None, None], td.float32),) * 2])
    named = matmul_pair.get_concrete_function([(td.TensorSpec([None, None], td.float32, name="first"),
                                                td.TensorSpec([None, None], td.float32, name="second"))])
    assert named is not unnamed
    a = td.constant([[1.0, 2.0], [3.0, 4.0]])
    b = td.constant([[0.0, 1.0], [1.0, 0.0]])
    expected = np.array([[2.0, 1.0], [4.0, 3.0]])
    np.testing.assert_array_equal(named(first=a, second=b).numpy(), expected)
    np.testing.assert_array_equal(unnamed(a, b).numpy(), expected)


def test_an_unnamed_spec_finds_a_named_trace_and_a_new_name_traces_again():
    @td.function
    def f(x):
        return x

    y = f.get_concrete_function(td.TensorSpec(None, td.float32, "y"))
    assert f.get_concrete_function(td.TensorSpec(None, td.float32)) is y
    z = f.get_concrete_function(td.TensorSpec(None, td.float32, "z"))
    assert z is not y and z.structured_input_signature[0][0].name == "z"
    assert f(td.constant(1.0)).numpy() == 1.0 and f.experimental_get_tracing_count() == 2
    # A fully known shape with a name is found by calls of that shape too.
    g = td.function(lambda x: x * 2.0)
    g.get_concrete_function(td.TensorSpec([2], td.float32, "x"))
    g(td.constant([1.0, 2.0]))
    assert g.experimental_get_tracing_count() == 1


def test_the_graph_of_a_concrete_function_lists_its_variables():
    frozen = td.Variable(1.0, trainable=False)
    weight = td.Variable(2.0)
    cf = td.function(lambda x: x * weight + frozen).get_concrete_function(td.TensorSpec([], td.float32))
    assert set(map(id, cf.graph.variables)) == {id(frozen), id(weight)}
    assert cf.graph.variables == cf.variables
    assert cf.graph.trainable_variables == cf.trainable_variables == (weight,)


def test_experimental_implements_is_an_annotation_the_function_runs_as_written():
    add = td.function(lambda x, y: x + y ** 2, experimental_implements="MyFunc")
    x, y = td.Variable(3.0), td.Variable(2.0)
    with td.GradientTape() as tape:
        g = add(x, y)
    dg_dy, dg_dx = tape.gradient(g, [y, x])
    assert g.numpy() == 7.0 and dg_dy.numpy() == 4.0 and dg_dx.numpy() == 1.0
    conc = td.function(lambda a, b: a + b, experimental_implements="func").get_concrete_function(
        td.TensorSpec(None, td.float32), td.TensorSpec(None, td.float32))
    assert conc(1.0, 2.0).numpy() == 3.0
    with pytest.raises(TypeError, match="must be a string"):
        td.function(lambda a: a, experimental_implements=3)


def test_a_concrete_function_called_with_another_structure_says_so():
    @td.function
    def first(x):
        return x

    conc = first.get_concrete_function(td.RaggedTensor.from_row_lengths([1, 2, 3], [2, 1]))
    with pytest.raises(TypeError, match="Binding inputs .* failed .* don't have the same nested structure"):
        conc({"a": td.constant([1, 2, 3])})
    pair = first.get_concrete_function((td.constant(1), td.constant(2)))
    with pytest.raises(TypeError, match="Can not cast .* to tuple.* don't have the same nested structure"):
        pair(td.constant(1))


def test_an_eager_tensor_repr_is_one_line_when_its_array_is():
    # As TensorFlow's: errors quoting tensors stay matchable line by line.
    assert repr(td.constant([1, 2, 3])) == "<td.Tensor: shape=(3,), dtype=int32, numpy=array([1, 2, 3], dtype=int32)>"
    assert repr(td.constant([[1, 2], [3, 4]])) == ("<td.Tensor: shape=(2, 2), dtype=int32, numpy=\n"
                                                   "array([[1, 2],\n       [3, 4]], dtype=int32)>")


# ---------------------------------------------------------------- shapes through calls

def test_a_call_with_more_specific_inputs_has_the_more_specific_shapes():
    @td.function(input_signature=[td.TensorSpec((None, None), td.int32), td.TensorSpec((), td.int32)])
    def ones_rows_by(x, s):
        return td.ones(td.stack([td.shape(x)[0], s]), td.int32)

    seen = {}

    @td.function(input_signature=[td.TensorSpec((3, 6), td.int32)])
    def caller(x):
        y = ones_rows_by(x, 5)  # x's rows are known here, and 5 is a constant
        seen["shape"] = y.shape.as_list()
        return y

    np.testing.assert_array_equal(caller(td.zeros([3, 6], td.int32)).numpy(), np.ones([3, 5]))
    assert seen["shape"] == [3, 5]
    assert ones_rows_by.get_concrete_function().output_shapes.as_list() == [None, None]


def test_a_reshape_through_a_general_signature_keeps_the_known_size():
    flat3 = td.function(lambda a: td.reshape(a, [-1, 3]), input_signature=[td.TensorSpec(None, td.float32)])
    seen = {}

    @td.function
    def use():
        seen["shape"] = flat3(td.zeros([10, 10, 3])).shape.as_list()

    use()
    assert seen["shape"] == [100, 3]


def test_nested_calls_refine_shapes_at_every_level():
    @td.function(input_signature=[td.TensorSpec((), td.int32)] * 3)
    def ones_of(d1, d2, d3):
        return td.ones(td.concat([[d1], [d2], [d3]], axis=-1), td.int32)

    seen = {}

    @td.function
    def outer():
        y = td.function(ones_of)(1, 2, 3)
        seen["shape"] = y.shape.as_list()
        return y

    assert outer().numpy().shape == (1, 2, 3)
    assert seen["shape"] == [1, 2, 3]


def test_shape_arithmetic_in_the_callee_is_evaluated_for_the_call():
    @td.function
    def regroup(w, x, y):
        x = td.transpose(x, [1, 0, 2])
        n = td.shape(y)[0] // td.shape(x)[0]
        return td.reshape(y * w, [n, td.shape(x)[0], -1])

    conc = regroup.get_concrete_function(*[td.TensorSpec(None, td.float32)] * 3)
    seen = []

    @td.function
    def call():
        a = conc(td.ones([2]), td.ones([5, 4, 2]), td.ones([20, 2]))
        b = conc(td.ones([3]), td.ones([5, 4, 3]), td.ones([40, 3]))
        seen.extend([a.shape.as_list(), b.shape.as_list()])
        return a, b

    a, b = call()
    assert seen == [[5, 4, 2], [10, 4, 3]]
    assert a.shape == (5, 4, 2) and b.shape == (10, 4, 3)


def test_a_py_function_result_that_does_not_fit_tout_is_the_graphs_error():
    @td.function
    def test_fn(x):
        if x > 0:
            return td.constant([1])
        return td.py_function(func=lambda: td.constant([2.0]), inp=(), Tout=td.int32)

    assert test_fn(td.constant(1)).numpy().tolist() == [1]
    with pytest.raises(td.errors.InvalidArgumentError, match="(?s)Graph execution error.*in test_fn.*int32"):
        test_fn(td.constant(0))
