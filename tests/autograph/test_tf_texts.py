"""AutoGraph behaviours and error texts as TensorFlow 2.21's AutoGraph
integration tests (cond_basic_test, loop tests, datasets_test) expect them:
`del` in branches, "used before assignment", the main/else branch messages,
tensor-dependent break in a Python loop, shape invariants, out-of-scope
tensors, and `for x in iter(dataset)` staged as one loop."""

import pytest

import treadle as td


# ---------------------------------------------------------------- del in branches

def if_destroys_var(c):
    i = 1
    if c:
        del i
    return i


def if_else_destroys_var(c):
    i = 1
    if c:
        del i
    else:
        del i
    return i


def else_destroys_var(c):
    i = 2
    if c:
        pass
    else:
        del i
    return i


def if_creates_var(c):
    if c:
        i = 1
    return i


def else_creates_var(c):
    if c:
        pass
    else:
        i = 2
    return i


def deleted_then_defined_again(c):
    i = 1
    if c:
        del i
        i = 5
    else:
        del i
        i = 7
    return i


@pytest.mark.parametrize("c", [True, False])
def test_deleting_in_both_branches(c):
    # A Python condition: the read after the if is of an unbound local.
    with pytest.raises(UnboundLocalError, match="'i' is used before assignment"):
        td.function(if_else_destroys_var)(c)
    # A tensor condition: the conditional has no value for it, as TensorFlow says.
    with pytest.raises(ValueError, match="'i' must also be initialized in the main branch"):
        td.function(if_else_destroys_var)(td.constant(c))


def test_deleting_in_one_branch():
    assert td.function(if_destroys_var)(False).numpy() == 1
    assert td.function(else_destroys_var)(True).numpy() == 2
    with pytest.raises(UnboundLocalError, match="'i' is used before assignment"):
        td.function(if_destroys_var)(True)
    with pytest.raises(ValueError, match="'i' must also be initialized in the main branch"):
        td.function(if_destroys_var)(td.constant(False))
    with pytest.raises(ValueError, match="'i' must also be initialized in the else branch"):
        td.function(else_destroys_var)(td.constant(True))


@pytest.mark.parametrize("c", [True, False])
def test_deleted_and_defined_again(c):
    expected = 5 if c else 7
    assert deleted_then_defined_again(c) == expected
    assert td.function(deleted_then_defined_again)(c).numpy() == expected
    assert td.function(deleted_then_defined_again)(td.constant(c)).numpy() == expected


@pytest.mark.parametrize("target, c, staged, exc_type, message", [
    (if_creates_var, False, False, UnboundLocalError, "'i' is used before assignment"),
    (if_creates_var, True, True, ValueError, "'i' must also be initialized in the else branch"),
    (if_creates_var, False, True, ValueError, "'i' must also be initialized in the else branch"),
    (else_creates_var, True, False, UnboundLocalError, "'i' is used before assignment"),
    (else_creates_var, True, True, ValueError, "'i' must also be initialized in the main branch"),
    (else_creates_var, False, True, ValueError, "'i' must also be initialized in the main branch"),
])
def test_a_variable_created_in_one_branch(target, c, staged, exc_type, message):
    with pytest.raises(exc_type, match=message):
        td.function(target)(td.constant(c) if staged else c)


def nested_if_temporarily_undefined_return(c1, c2):
    if c1:
        if c2:
            return 1
    return 2


def test_a_branch_without_a_return():
    assert td.function(nested_if_temporarily_undefined_return)(True, False).numpy() == 2
    with pytest.raises(ValueError, match="the else branch must also have a return statement"):
        td.function(nested_if_temporarily_undefined_return)(td.constant(True), td.constant(False))


# ---------------------------------------------------------------- loops

def break_on_a_tensor_in_a_python_loop(x):
    for _ in range(3):
        if x > 0:
            break
        x += 1
    return x


def break_on_a_tensor_in_a_python_while(x):
    n = 0
    while n < 3:
        n += 1
        if x > 0:
            break
    return x


def test_tensor_dependent_break_in_a_python_loop():
    assert break_on_a_tensor_in_a_python_loop(1) == 1
    with pytest.raises(NotImplementedError, match="^break and return statements which depend on a TF condition are "
                                                  "not supported in Python for loops. Did you intend to make it a "
                                                  "TF loop?"):
        td.function(break_on_a_tensor_in_a_python_loop)(td.constant(1))
    with pytest.raises(NotImplementedError, match="^The condition of while loop started as non-Tensor, then changed "
                                                  "to Tensor.(.|\n)*The `break` statement"):
        td.function(break_on_a_tensor_in_a_python_while)(td.constant(1))


def return_on_a_tensor_in_both_branches(items):
    for c in items:
        if td.greater(c % 2, 0):
            return c
        else:
            return c + 10
    return -1


@pytest.mark.parametrize("items", [[1], [2, 3]])
def test_a_return_on_both_branches_of_a_tensor_if_in_a_python_loop(items):
    # treadle's choice: every path returns, so the loop ends after its first
    # element whatever the tensor is, and the result is computed (TensorFlow
    # raises "not supported in Python for loops").
    expected = return_on_a_tensor_in_both_branches(items)
    assert td.function(return_on_a_tensor_in_both_branches)(items).numpy() == expected


def grows(n):
    v = td.constant([0])
    for i in td.range(n):
        v = td.concat([v, [i]], 0)
    return v


def grows_against_its_invariant(n):
    v = td.constant([0])
    for i in td.range(n):
        td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape([1]))])
        v = td.concat([v, [i]], 0)
    return v


def grows_within_its_invariant(n):
    v = td.constant([0])
    for i in td.range(n):
        td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape([None]))])
        v = td.concat([v, [i]], 0)
    return v


def test_missing_and_violated_shape_invariants_are_told_apart():
    with pytest.raises(ValueError, match=r"'v' has shape \(1,\) before the loop, but shape \(2,\) after one "
                                         r"iteration. Use td.autograph.experimental.set_loop_options to set shape "
                                         "invariants"):
        td.function(grows)(td.constant(3))
    with pytest.raises(ValueError, match=r"'v' has shape \(2,\) after one iteration, which does not conform with "
                                         r"its shape invariant \(1,\)\."):
        td.function(grows_against_its_invariant)(td.constant(3))
    assert td.function(grows_within_its_invariant)(td.constant(3)).numpy().tolist() == [0, 0, 1, 2]


def test_for_over_iter_of_a_dataset_stages_one_loop():
    ds = td.data.Dataset.range(5)
    body_runs = []

    @td.function
    def total():
        s = td.constant(0, td.int64)
        for x in iter(ds):
            body_runs.append(None)  # Python side effect: runs once per trace of the body
            s += x
        return s

    assert total().numpy() == 10
    assert total().numpy() == 10
    assert total.experimental_get_tracing_count() == 1
    ops = [op.type for op in total.get_concrete_function().graph.operations]
    assert ops.count("While") == 1
    assert len(body_runs) <= 2  # traced, not unrolled per element (5)


def test_loop_checks_apply_to_iter_of_a_dataset():
    ds = td.data.Dataset.range(3)

    @td.function
    def changes_dtype():
        s = td.constant(0, td.int64)
        for x in iter(ds):
            s = td.cast(s, td.float32) + 1.0
        return s

    with pytest.raises(TypeError, match="'s' has dtype int64 before the loop, but dtype float32 after one "
                                        "iteration"):
        changes_dtype()


# ---------------------------------------------------------------- out of scope

def test_the_out_of_scope_error_names_the_graph_and_the_line():
    leaked = []

    @td.function
    def leak(x):
        leaked.append(x * 2)
        return x

    @td.function
    def use(x):
        return leaked[0] + x

    leak(td.constant(1))
    with pytest.raises(TypeError) as info:
        use(td.constant(1))
    message = str(info.value)
    assert "is out of scope and cannot be used here" in message
    assert "because it was defined in FuncGraph(name=leak), which is out of scope" in message
    assert f'File "{__file__}"' in message and "return leaked[0] + x" in message


# ---------------------------------------------------------------- iterators as arguments

def _sum_all(it):
    s = td.constant(0, td.int64)
    for x in it:
        s += x
    return s


def test_an_iterator_argument_is_one_staged_loop_that_continues_where_it_is():
    ds = td.data.Dataset.range(5)
    total = td.function(_sum_all)
    assert total(iter(ds)).numpy() == 10
    assert total(iter(ds)).numpy() == 10
    assert total.experimental_get_tracing_count() == 1  # traced per element_spec, not per iterator
    it = iter(ds)
    next(it), next(it)
    assert total(it).numpy() == 2 + 3 + 4
    assert [op.type for op in total.get_concrete_function(iter(ds)).graph.operations].count("While") == 1

    @td.function
    def first_two(it):
        return next(it) + 10 * next(it)

    it = iter(ds)
    assert first_two(it).numpy() == 10
    assert first_two(it).numpy() == 32
    assert next(it).numpy() == 4


def for_with_variable_shape(items):
    t = td.constant([1])
    for _ in items:
        t = td.constant([1, 1])
    return t


def for_with_shape_invariant_violation(items):
    t = td.constant([1])
    for _ in items:
        td.autograph.experimental.set_loop_options(shape_invariants=((t, td.TensorShape([1])),))
        t = td.range(td.random.uniform((), 2, 3, dtype=td.int32))
    return t


def for_with_variable_dtype(items):
    n = td.constant(0, dtype=td.int32)
    for _ in items:
        n = td.constant(0, dtype=td.float32)
    return n


@pytest.mark.parametrize("make", [lambda: iter(td.data.Dataset.from_tensor_slices([1, 2, 3])),
                                  lambda: td.constant([1, 2, 3])])
def test_loop_checks_of_a_loop_over_an_iterator(make):
    with pytest.raises(ValueError, match=r"'t' has shape \(1,\) before the loop, but shape \(2,\) after"):
        td.function(for_with_variable_shape)(make())
    with pytest.raises(ValueError, match=r"'t' has shape \(None,\) after one iteration, which does not conform"):
        td.function(for_with_shape_invariant_violation)(make())
    with pytest.raises(TypeError, match="'n' has dtype int32 before the loop, but dtype float32 after"):
        td.function(for_with_variable_dtype)(make())


def test_a_loop_over_a_dataset_relaxes_shapes():
    # A loop over a dataset is a reduction, which relaxes shapes (TensorFlow's "datasets do allow variable shape").
    out = td.function(for_with_variable_shape)(td.data.Dataset.from_tensor_slices([1, 2, 3]))
    assert out.numpy().tolist() == [1, 1]
