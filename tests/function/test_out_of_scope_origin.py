"""The out-of-scope tensor error says where the tensor was defined (the
user's line whose op made it), as TensorFlow's "... was defined here:", for
a tensor of one td.function used in another, a tensor of a loop body used
after the loop, and a tensor that escaped a trace used eagerly."""

import pytest

import treadle as td


def _line_of(text, fn):
    lines, start = __import__("inspect").getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _leak_into(leaked):
    @td.function
    def leak(x):
        y = x + 1
        leaked.append(y * 2)  # the tensor that escapes
        return y
    return leak


def test_a_tensor_of_another_function_names_where_it_was_defined():
    leaked = []
    leak = _leak_into(leaked)
    leak(td.constant(1))

    @td.function
    def use(x):
        return leaked[0] + x

    with pytest.raises(TypeError) as info:
        use(td.constant(1))
    message = str(info.value)
    defined = _line_of("the tensor that escapes", _leak_into)
    assert f"{leaked[0]!r} was defined here:" in message
    assert f'File "{__file__}", line {defined}, in leak' in message
    assert "leaked.append(y * 2)  # the tensor that escapes" in message
    assert "because it was defined in FuncGraph(name=leak), which is out of scope" in message
    # TensorFlow's order: the definition first, then the graph, then the use.
    order = [message.index(s) for s in ("was defined here", "cannot be accessed from", "It is used here")]
    assert order == sorted(order)
    assert "return leaked[0] + x" in message


def test_an_escaped_tensor_used_eagerly_names_where_it_was_defined():
    leaked = []
    leak = _leak_into(leaked)
    leak(td.constant(1))
    with pytest.raises(TypeError) as info:
        leaked[0] + 1
    message = str(info.value)
    assert message.startswith('An op outside of the function building code is being passed a "Graph" tensor')
    assert f'line {_line_of("the tensor that escapes", _leak_into)}, in leak' in message
    assert "leaked[0] + 1" in message


def _appends_in_a_loop(n):
    values = []
    for i in td.range(n):
        values.append(i * 3)  # made in the loop body
    return values


def test_a_loop_body_tensor_names_its_line_in_the_converted_function():
    with pytest.raises(td.errors.InaccessibleTensorError) as info:
        td.function(_appends_in_a_loop)(td.constant(3))
    message = str(info.value)
    assert "was defined here:" in message
    assert f'File "{__file__}", line {_line_of("made in the loop body", _appends_in_a_loop)}' in message
    assert "values.append(i * 3)  # made in the loop body" in message


def test_the_origin_of_ops_is_the_users_line_not_treadles():
    @td.function
    def f(x):
        return td.reduce_sum(td.nn.relu(x))  # one line, several ops

    graph = f.get_concrete_function(td.TensorSpec([None], td.float32)).graph
    line = _line_of("one line, several ops", test_the_origin_of_ops_is_the_users_line_not_treadles)
    made_here = [op for op in graph.operations if op.type in ("Relu", "Sum")]
    assert made_here and all(op.origin == (__file__, line, "f") for op in made_here)


def _scale_all(values):
    return td.nest.map_structure(lambda v: v * 2.0, values)  # the callback's line


def test_ops_made_in_a_callback_name_the_callbacks_line():
    @td.function
    def f(x):
        y = x * 3.0  # made here directly
        return y, _scale_all([x, y])

    graph = f.get_concrete_function(td.TensorSpec([], td.float32)).graph
    lines = sorted(op.origin[1] for op in graph.operations if op.type == "Mul")
    direct = _line_of("made here directly", test_ops_made_in_a_callback_name_the_callbacks_line)
    callback = _line_of("the callback's line", _scale_all)
    assert lines == sorted([direct, callback, callback])
