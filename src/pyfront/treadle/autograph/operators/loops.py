"""`while` and `for` loops: plain Python on Python values, a While node
(graph_loops.py) when the first condition (while) or the iterable (for) is
a tensor of the graph being traced. A Python loop whose condition, or whose
break/return flag, becomes a tensor is an error: it cannot turn into a graph
loop half-way."""

from treadle.autograph.operators import dataset_loops, errors, iteration, logical, tensors
from treadle.autograph.operators.conditionals import contains_tensor, describe
from treadle.autograph.operators.graph_loops import staged_loop
from treadle.framework import context
from treadle.framework.func_graph import FuncGraph


# ------------------------------------------------------------------ while

def while_stmt(test, body, get_state, set_state, symbol_names, opts):
    cond = _first_test(test, get_state, set_state)
    if tensors.is_symbolic(cond):
        staged_loop(test, body, get_state, set_state, symbol_names, opts, opts.get("maximum_iterations"))
    else:
        _python_while(cond, test, body, get_state, symbol_names, opts)


def _first_test(test, get_state, set_state):
    """The loop's first condition, which decides how it runs. While tracing,
    it is evaluated in a throwaway graph, so that the ops it makes (a random
    draw, a print) do not also run once before a graph loop; a condition
    that made no op is plain Python and is used as it is."""
    graph = context.current_graph()
    if graph is None:
        return test()
    before = tuple(get_state()) if get_state is not None else ()
    probe = FuncGraph("while_test_probe", outer_graph=graph)
    with probe:
        cond = test()
    if not probe.operations and not tensors.is_symbolic(cond):
        return cond
    if set_state is not None:
        set_state(before)  # undo what the condition assigned in the throwaway graph
    return cond if tensors.is_symbolic(cond) else test()


def _python_while(cond, test, body, get_state, names, opts):
    before = tuple(get_state()) if get_state is not None else ()
    while True:
        if tensors.is_symbolic(cond):
            raise _became_tensor("the condition of this while loop", names, before, get_state, opts)
        if not cond:
            return
        body()
        cond = test()


# ------------------------------------------------------------------ for

def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    if dataset_loops.is_staged_iterable(iter_):  # td.data datasets and iterators
        return dataset_loops.for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
    source = iteration.staged_source(iter_)
    if source is None:
        _python_for(iter_, extra_test, body, get_state, symbol_names, opts)
    else:
        _staged_for(source, extra_test, body, get_state, set_state, symbol_names, opts)


def _python_for(iter_, extra_test, body, get_state, names, opts):
    if extra_test is None:
        for item in iter_:
            body(item)
        return
    before = tuple(get_state()) if get_state is not None else ()

    def keep_going():
        value = extra_test()
        if tensors.is_symbolic(value):
            raise _became_tensor("the test of this for loop", names, before, get_state, opts)
        return value

    if not keep_going():
        return
    for item in iter_:
        body(item)
        if not keep_going():
            return


def _staged_for(source, extra_test, body, get_state, set_state, names, opts):
    index = [source.first_index()]

    def get_all():
        return (index[0],) + (tuple(get_state()) if get_state is not None else ())

    def set_all(values):
        index[0] = values[0]
        if set_state is not None:
            set_state(tuple(values[1:]))

    def test():
        more = source.has_next(index[0])
        if extra_test is None:
            return more
        return logical.and_(lambda: more, extra_test)

    def step():
        i = index[0]
        body(source.element(i))
        index[0] = source.next_index(i)

    limit = opts.get("maximum_iterations")
    if limit is None:
        limit = source.static_count()
    staged_loop(test, step, get_all, set_all, ("the loop index",) + tuple(names), opts, limit)


# ------------------------------------------------------------------ errors

def _became_tensor(what, names, before, get_state, opts):
    """The error for a Python loop whose test became a tensor: TensorFlow's
    words first (tests of ported code match them), then which statement or
    variable did it and what to do."""
    after = tuple(get_state()) if get_state is not None else ()
    changed = [n for n, b, a in zip(names, before, after) if not contains_tensor(b) and contains_tensor(a)]
    flags = opts.get("flags") or {}
    is_while = "while loop" in what
    lead = ("The condition of while loop started as non-Tensor, then changed to Tensor. This may happen either "
            "because variables changed type, or when a break or return statement inside the loop depends on a "
            "Tensor condition. In both cases, changing to a TF loop should remove the error." if is_while else
            "break and return statements which depend on a TF condition are not supported in Python for loops. "
            "Did you intend to make it a TF loop?")
    for n in changed:
        if n in flags:
            kind, line = flags[n]
            return errors.located(NotImplementedError, f"{lead} The `{kind}` statement (line {line}) depends on a "
                                                       "tensor. This loop runs as Python because what it iterates "
                                                       "over (or its first condition) is not a tensor; iterate over "
                                                       "a tensor (e.g. td.range) so that the loop becomes a graph "
                                                       f"loop, or make the `{kind}` depend on Python values only")
    cause = (f"{', '.join(describe(n) for n in changed)} changed from a Python value to a tensor"
             if changed else "a variable changed from a Python value to a tensor")
    return errors.located(NotImplementedError, f"{lead} Here {what} started as a Python value, then changed to a "
                                               f"tensor ({cause}). A loop runs as Python or as a graph loop "
                                               "depending on its first condition; give those variables tensor "
                                               "values before the loop (e.g. td.constant) so that the whole loop is "
                                               "staged")
