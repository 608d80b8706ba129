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
    with pytest.raises(TypeError, match=r"Can not cast .* to a Dict(.|\n)*Fallback to flat signature also failed due "
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
    with pytest.raises(TypeError, match=r"Binding inputs to td.function `f` failed due to `Can not cast "
                                        r"TensorSpec\(shape=\(3,\), dtype=td.int32, name=None\) to TensorSpec\("
                                        r"shape=\(None,\), dtype=td.float32, name=None\)"):
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


# ---------------------------------------------------------------- TensorFlow's structured-signature errors

@td.function
def _func(x, y=5, *varargs, **kwargs):
    del y, varargs, kwargs
    return x


C = td.constant


@pytest.mark.parametrize("conc_args, conc_kwargs, call_args, call_kwargs, error", [
    ((1, C(2)), {}, (1,), {}, r"missing a required argument: 'y'"),
    ((1, 2, C(1.0)), {}, (1, 2), {}, r"missing a required argument: 'varargs_0'"),
    ((1, 2), {}, (1, 2, 3), {}, r"too many positional arguments"),
    ((1, 2), {"c": C(1.0)}, (1, 2), {}, r"missing a required argument: 'c'"),
    ((1, 2), {}, (1, 2), {"c": C(1.0)}, r"got an unexpected keyword argument"),
    (({"a": C(1), "b": C(1)},), {}, (C(1), 5), {}, r"Binding inputs .* failed .*Can not cast .*Tensor.* to a Dict"),
    (((C(1), C(2)),), {}, (C(1), 5), {}, r"Binding inputs .* failed .*Can not cast .*Tensor.* to tuple"),
    ((5,), {}, (8, 5), {}, r"Binding inputs .* failed .*Can not cast 8 to .*5"),
    ((5,), {}, (C(6), 5), {}, r"Binding inputs .* failed .*Can not cast .*Tensor.* to .*5"),
    ((1, 2), {}, (1, 2), {"x": 3}, r"got an unexpected keyword argument 'x'"),
    # What the flat signature says when the structured one fails too.
    ((C(1), C(2)), {}, (C(1),), {}, r"_func\(x, y\) missing required arguments: y"),
    ((C(1), C(2)), {}, (C(1),), {"x": C(1), "y": C(1)}, r"_func\(x, y\) got two values for 'x'"),
    ((C(1), C(2)), {}, (C(1), C(2), C(3)), {}, r"_func\(x, y\) takes 2 .* got 3"),
    ((C(1),), {}, (C(1),), {"c": C(1)}, r"_func\(x\) got unexpected keyword arguments: c"),
    ((C(1), C(2), C(3)), {}, (C(1), C(2)), {}, r"_func\(x, y, varargs_0\) missing required arguments: varargs_0"),
    ((C(1), C(2)), {"c": C(1)}, (C(1), C(2)), {}, r"_func\(x, y, c\) missing required arguments: c"),
])
def test_structured_signature_errors(conc_args, conc_kwargs, call_args, call_kwargs, error):
    conc = _func.get_concrete_function(*conc_args, **conc_kwargs)
    with pytest.raises(TypeError, match=error):
        conc(*call_args, **call_kwargs)


def test_all_python_arguments_bound_at_trace_time():
    @td.function
    def f(x, y):
        return (x["a"] + x["b"], y[0] + y[1])

    a, b = {"a": 5000, "b": 500}, (50, 5)
    cf = f.get_concrete_function(a, b)
    for output in [cf(), cf(a, b), cf(x=a, y=b)]:
        assert output[0].numpy() + output[1].numpy() == 5555


def test_nested_tensor_arguments_by_every_convention():
    @td.function
    def f(x, y):
        return (x["a"] + x["b"], y[0] + y[1])

    a, b, c = C(1000), C(200), C(30)
    d, e = {"a": a, "b": b}, (c, 4)
    spec_d = {"a": I32, "b": I32}
    for cf in [f.get_concrete_function(d, e), f.get_concrete_function(y=e, x=d),
               f.get_concrete_function(spec_d, y=(I32, 4))]:
        for output in [cf(d, e), cf(d, y=e), cf(y=e, x=d), cf(a, b, c)]:
            assert (output[0].numpy(), output[1].numpy()) == (1200, 34)


def test_a_method_with_var_positional_arguments_and_a_signature():
    class Model(td.Module):
        @td.function(input_signature=[td.TensorSpec([], td.float32)] * 2)
        def add(self, *args):
            return args[0] + args[1]

    model = Model()   # a method's td.function holds its object weakly, as TensorFlow's does
    cf = model.add.get_concrete_function()
    assert cf(-12.0, 3.0).numpy() == -9.0


def test_structured_binding_wins_over_placeholder_names():
    @td.function
    def f(x, y):
        return x * 10 + y

    conc = f.get_concrete_function(x=td.TensorSpec(None, td.int32, name="y"),
                                   y=td.TensorSpec(None, td.int32, name="x"))
    assert conc(x=C(5), y=C(6)).numpy() == 56


def test_a_signature_converts_compatible_inputs_to_its_dtype():
    @td.function(input_signature=[td.TensorSpec([None, None], td.float32)])
    def func(a):
        assert a.shape.as_list() == [None, None]
        return td.shape(a)

    assert func([[0], [1.0], [1]]).numpy().tolist() == [3, 1]
    assert func(np.array([[1, 1], [2, 2]])).numpy().tolist() == [2, 2]  # NumPy int64 cast to float32
    with pytest.raises(TypeError, match="Binding inputs to td.function `func` failed"):
        func([0.0, 1.0, 2.0])  # wrong rank
    with pytest.raises(TypeError, match="Binding inputs to td.function `func` failed"):
        func([["wrong dtype"]])
    assert func.experimental_get_tracing_count() == 1
