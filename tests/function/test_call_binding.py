"""Calls of ConcreteFunctions and of td.functions with an input_signature bind
their arguments as TensorFlow 2.21 binds them (polymorphic_function_test.py's
behaviours): through the Python signature first (keywords, *args, nested
structures, Python values that must equal the traced ones), then through the
flat signature of graph inputs, with TensorFlow's error texts."""

import numpy as np
import pytest

import treadle as td

I32 = td.TensorSpec([], td.int32)


def _called_eagerly_and_in_a_function(concrete, *args, **kwargs):
    """The result of calling `concrete` eagerly and from inside a td.function."""
    eager = concrete(*args, **kwargs)
    staged = td.function(lambda: concrete(*args, **kwargs), autograph=False)()
    np.testing.assert_array_equal(eager.numpy(), staged.numpy())
    return eager.numpy()


# ---------------------------------------------------------------- structured binding

def test_keyword_and_positional_arguments():
    @td.function
    def f(x, y):
        return x - y

    c = f.get_concrete_function(I32, I32)
    one, five = td.constant(1), td.constant(5)
    assert _called_eagerly_and_in_a_function(c, five, one) == 4
    assert _called_eagerly_and_in_a_function(c, y=one, x=five) == 4
    assert _called_eagerly_and_in_a_function(c, five, y=one) == 4


def test_a_traced_python_value_must_be_given_again_equal():
    @td.function
    def f(x, y=5):
        return x * y

    c = f.get_concrete_function(1, td.constant(2))
    assert _called_eagerly_and_in_a_function(c, 1, td.constant(3)) == 3
    # TensorFlow never computes with the traced value in place of another one.
    with pytest.raises(TypeError, match=r"Binding inputs to td.function `f` failed due to `Can not cast 2 to "
                                        r"Literal\[1\]`"):
        c(2, td.constant(3))
    with pytest.raises(TypeError, match="Fallback to flat signature also failed due to: "
                                        r"f\(y\) takes 1 positional arguments, got 2\."):
        c(2, td.constant(3))


def test_python_values_convert_for_tensor_parameters():
    @td.function
    def f(x):
        return x + 1

    assert _called_eagerly_and_in_a_function(f.get_concrete_function(td.constant(1)), 1) == 2
    with pytest.raises(TypeError, match="Binding inputs to td.function `f` failed"):
        f.get_concrete_function(1)(td.constant(1))
    with pytest.raises(TypeError, match="Binding inputs to td.function `f` failed"):
        f.get_concrete_function(1)(2)


def test_missing_and_unexpected_arguments_give_pythons_binding_errors():
    @td.function
    def f(x, y):
        return x + y

    c = f.get_concrete_function(I32, I32)
    one = td.constant(1)
    with pytest.raises(TypeError, match="missing a required argument: 'y'"):
        c(one)
    with pytest.raises(TypeError, match="Fallback to flat signature also failed due to: f\\(x, y\\) missing "
                                        "required arguments: y\\."):
        c(one)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'z'"):
        c(one, one, z=one)
    with pytest.raises(TypeError, match="got unexpected keyword arguments: z\\."):
        c(one, one, z=one)
    with pytest.raises(TypeError, match="too many positional arguments"):
        c(one, one, one)


def test_nested_structures_and_the_flat_fallback():
    @td.function
    def f(d, pair):
        return d["a"] * pair[0] + pair[1]

    c = f.get_concrete_function({"a": I32}, (I32, I32))
    two, three, four = td.constant(2), td.constant(3), td.constant(4)
    assert _called_eagerly_and_in_a_function(c, {"a": two}, (three, four)) == 10
    assert c(d={"a": two}, pair=[three, four]).numpy() == 10
    # As in TensorFlow, the flat tensors are accepted too (the flat signature).
    assert c(two, three, four).numpy() == 10
    with pytest.raises(TypeError, match=r"Can not cast .* to Dict(.|\n)*Fallback to flat signature also failed due "
                                        r"to: f\(d, pair, pair_1\) missing required arguments: pair_1\."):
        c({"b": two}, (three, four))
    with pytest.raises(TypeError, match=r"f\(d, pair, pair_1\): expected argument #0\(zero-based\) to be a Tensor; "
                                        r"got dict"):
        c({"b": two}, three, four)


def test_var_positional_arguments():
    @td.function
    def total(*args):
        return td.add_n(list(args))

    c = total.get_concrete_function(I32, I32, I32)
    assert _called_eagerly_and_in_a_function(c, td.constant(1), td.constant(2), td.constant(3)) == 6
    with pytest.raises(TypeError, match="Binding inputs to td.function `total` failed"):
        c(td.constant(1), td.constant(2))


def test_tensorspec_names_are_keywords_of_the_flat_signature():
    @td.function
    def f(x):
        return x[0] * x[1]

    c = f.get_concrete_function([td.TensorSpec([], td.int32, name="left"), td.TensorSpec([], td.int32, name="right")])
    assert [t.op.name for t in c.inputs] == ["left", "right"]
    assert c(left=td.constant(3), right=td.constant(4)).numpy() == 12
    assert c([td.constant(3), td.constant(4)]).numpy() == 12


def test_wrong_dtype_is_refused_before_running():
    c = td.function(lambda x: x * 2.0).get_concrete_function(td.TensorSpec([], td.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="was expected to be a float32 tensor but is a int32"):
        c(td.constant(1))


# ---------------------------------------------------------------- input_signature

def test_get_concrete_function_accepts_the_signatures_own_spec():
    spec = td.TensorSpec([None], td.float32)

    @td.function(input_signature=[spec])
    def f(x):
        return x + 1.0

    c = f.get_concrete_function(spec)
    assert c is f.get_concrete_function()
    assert c is f.get_concrete_function(td.TensorSpec([3], td.float32))  # a subtype of the signature
    np.testing.assert_array_equal(c(td.constant([1.0, 2.0])).numpy(), [2.0, 3.0])
    with pytest.raises(TypeError, match="was expected to be of type .* but is"):
        f.get_concrete_function(td.TensorSpec([3], td.int32))


def test_input_signature_with_var_positional_arguments():
    @td.function(input_signature=[I32, I32])
    def total(*args):
        return args[0] + args[1]

    assert total(td.constant(1), td.constant(2)).numpy() == 3
    assert total(1, 2).numpy() == 3
    assert td.function(lambda: total(td.constant(3), td.constant(4)))().numpy() == 7
    with pytest.raises(TypeError, match="Binding inputs to td.function `total` failed"):
        total(td.constant(1))


def test_optional_parameters_beyond_the_signature_keep_their_default():
    @td.function(input_signature=[td.TensorSpec([], td.float32)])
    def f(x, scale=2.0):
        return x * scale

    assert f(td.constant(3.0)).numpy() == 6.0
    assert f(td.constant(3.0), 2.0).numpy() == 6.0
    with pytest.raises(TypeError, match=r"Can not cast 3.0 to Literal\[2.0\]"):
        f(td.constant(3.0), 3.0)


def test_signature_constraints_missing_or_extra():
    def two(a, b):
        return a + b

    with pytest.raises(TypeError, match="input_signature missing type constraint for b"):
        td.function(two, input_signature=[I32])
    with pytest.raises(TypeError, match="input_signature contains 1 extra type constraints"):
        td.function(two, input_signature=[I32, I32, I32])


def test_an_unknown_shape_is_narrowed_to_an_inner_signature():
    inner = td.function(lambda x: x * 2.0, input_signature=[td.TensorSpec([3], td.float32)])

    @td.function(input_signature=[td.TensorSpec(None, td.float32)])
    def outer(x):
        y = inner(x)
        assert x.shape == (3,)  # narrowed, as TensorFlow's TensorSpec.cast does
        return y

    np.testing.assert_array_equal(outer(td.constant([1.0, 2.0, 3.0])).numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(TypeError, match="Can not cast"):
        td.function(lambda: inner(td.constant([1.0, 2.0])))()


def test_wrong_dtype_for_a_signature():
    f = td.function(lambda x: x, input_signature=[td.TensorSpec([2], td.float32)])
    with pytest.raises(TypeError, match="Tensor conversion requested dtype float32 for Tensor with dtype int32"):
        f(td.constant([1, 2]))
    with pytest.raises(TypeError, match="too many positional arguments"):
        f(td.ones([2]), td.ones([2]))
    with pytest.raises(TypeError, match="missing a required argument"):
        f()
