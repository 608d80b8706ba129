"""Staged loops: a While node whose loop variables are the loop's state.

Python values are converted to tensors before the loop; after one traced
iteration every variable must keep its dtype, its nested structure and
(unless a shape invariant says otherwise) its shape. A variable first
assigned inside the loop is found by tracing the body once in a throwaway
graph; it enters the loop as zeros of the type found there (that includes
the return value of a `return` inside the loop), and the loop must then run
at least once, which a hidden flag checks when the graph runs."""

from treadle.autograph.operators import conditionals, errors, tensors
from treadle.autograph.operators.conditionals import describe, zeros_like_spec
from treadle.autograph.operators.variables import Undefined, UndefinedReturnValue
from treadle.framework import context
from treadle.framework.func_graph import FuncGraph
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.ops import control_flow_ops, script_ops
from treadle.util import nest


def staged_loop(test, body, get_state, set_state, names, opts, maximum_iterations):
    """Runs `while test(): body()` as a While node over the state that
    get_state/set_state read and write (one value per name in `names`)."""
    init = list(get_state()) if get_state is not None else []
    if set_state is None:
        set_state = _ignore
    invariants = _invariant_overrides(opts.get("shape_invariants"))
    # As in TensorFlow, a variable that is None before the loop is defined by
    # it, like one that has no value yet.
    missing = [i for i, v in enumerate(init) if isinstance(v, Undefined) or v is None]
    first_defined = [names[i] for i in missing if not isinstance(init[i], UndefinedReturnValue)]
    init = [v if i in missing else _entry_value(n, v) for i, (n, v) in enumerate(zip(names, init))]
    if missing:
        _discover(init, missing, body, set_state, get_state, names, invariants)
    if first_defined:
        # Their values are stand-ins until the body has run once: as in
        # TensorFlow, such a loop must run at least one iteration, which a
        # hidden flag checks when the graph runs.
        body, get_state, set_state, names, init = _with_ran_flag(body, get_state, set_state, names, init)
    flat_invariants = _flat_invariants(init, invariants)

    def cond_fn(*values):
        set_state(values)
        cond = tensors.as_condition(test(), "a while loop")
        if get_state is not None:
            _check_test_kept_state(names, values, tuple(get_state()))
        return cond

    def body_fn(*values):
        set_state(values)
        body()
        after = tuple(get_state()) if get_state is not None else ()
        return _checked_iteration(names, values, after, _invariant_flags(init, invariants))

    results = control_flow_ops.while_loop(cond_fn, body_fn, tuple(init), shape_invariants=flat_invariants,
                                          maximum_iterations=maximum_iterations,
                                          parallel_iterations=opts.get("parallel_iterations", 10))
    set_state(tuple(results))
    if first_defined:
        _check_ran(results[0], first_defined)


def _with_ran_flag(body, get_state, set_state, names, init):
    """The loop with one more variable, first, that is True once the body ran."""
    ran = [None]

    def get_all():
        return (ran[0],) + tuple(get_state())

    def set_all(values):
        ran[0] = values[0]
        set_state(tuple(values[1:]))

    def body_and_flag():
        body()
        ran[0] = True

    flag = convert_to_tensor(False)
    return body_and_flag, get_all, set_all, ("the loop's ran flag",) + tuple(names), [flag] + list(init)


def _check_ran(ran, names):
    listed = ", ".join(describe(n) for n in names)
    location = errors.user_location()
    where = f"\n\n{errors.format_location(location)}" if location else ""
    one = len(names) == 1
    message = (f"{listed} {'is' if one else 'are'} assigned only inside this loop over a tensor, and the loop ran no "
               f"iteration: {'it has' if one else 'they have'} no value after it. The loop must iterate at least "
               f"once to initialize {listed} (or define {'it' if one else 'them'} before the loop){where}")

    def check(flag):
        if not flag.numpy():
            raise errors.LoopNeverRanError(message)

    script_ops.py_function(check, [ran], Tout=None)


def _check_test_kept_state(names, before, after):
    """A graph loop's condition cannot change loop variables (its only result
    is the condition), so a test that assigns one (`while (n := n - 1) > 0`)
    would loop forever: refuse it."""
    for name, b, a in zip(names, before, after):
        if a is not b:
            raise errors.located(NotImplementedError, f"the condition of this loop assigns {describe(name)}; a loop "
                                                      "over a tensor cannot change its variables in its condition. "
                                                      "Move the assignment into the loop body (and before the loop)")


def _ignore(values):
    return None


def _entry_value(name, value):
    """A loop variable's value as it enters a graph loop: tensors (or composite values)."""
    def leaf(v):
        if isinstance(v, Tensor) or conditionals._is_composite(v):
            return v
        if v is None or isinstance(v, Undefined):
            raise errors.located(ValueError, f"{describe(name)} has an element that is None or undefined before "
                                             "the loop")
        try:
            return convert_to_tensor(v)
        except (TypeError, ValueError) as e:
            raise errors.located(TypeError, f"{describe(name)} is a variable of a loop over a tensor, so it must "
                                            f"be a tensor or convertible to one; got {v!r}: {e}") from None
    return nest.map_structure(leaf, value)


def _invariant_flags(init, overrides):
    """Per loop variable, per leaf: whether a shape invariant was set for it."""
    return [[id(leaf) in overrides for leaf in nest.flatten(value)] if not isinstance(value, Undefined) else []
            for value in init]


def _checked_iteration(names, before, after, invariant_flags):
    """The body's results, after checking they match the loop variables."""
    out = []
    for name, b, a, flags in zip(names, before, after, invariant_flags):
        if a is None or isinstance(a, Undefined):
            what = "None" if a is None else "undefined"
            raise errors.located(ValueError, f"{describe(name)} is {what} after one iteration of the loop")
        try:
            nest.assert_same_structure(b, a, check_types=False)
        except (ValueError, TypeError) as e:
            raise errors.located(TypeError, f"{describe(name)} does not have the same nested structure after one "
                                             f"iteration of the loop: {e}") from None
        flags = flags or [False] * len(nest.flatten(b))
        leaves = [_checked_leaf(name, x, y, f) for x, y, f in zip(nest.flatten(b), nest.flatten(a), flags)]
        out.append(nest.pack_sequence_as(b, leaves))
    return tuple(out)


def _checked_leaf(name, before, after, has_invariant=False):
    if conditionals._is_composite(before):
        if type(after) is not type(before):
            raise errors.located(TypeError, f"{describe(name)} is a {type(before).__name__} before the loop but "
                                            f"a {type(after).__name__} after one iteration")
        return after
    if not isinstance(after, Tensor):
        try:
            after = convert_to_tensor(after, dtype_hint=before.dtype)
        except (TypeError, ValueError) as e:
            raise errors.located(TypeError, f"{describe(name)} must stay a tensor in a loop over a tensor; after "
                                            f"one iteration it is {after!r}: {e}") from None
    if after.dtype != before.dtype:
        raise errors.located(TypeError, f"{describe(name)} has dtype {before.dtype.name} before the loop, but dtype "
                                        f"{after.dtype.name} after one iteration")
    if not after.shape.is_subtype_of(before.shape):
        if has_invariant:  # `before` is the loop variable, of the invariant's shape
            raise errors.located(ValueError, f"{describe(name)} has shape {after.shape} after one iteration, which "
                                             f"does not conform with its shape invariant {before.shape}.")
        raise errors.located(ValueError, f"{describe(name)} has shape {before.shape} before the loop, but shape "
                                         f"{after.shape} after one iteration. Use "
                                         "td.autograph.experimental.set_loop_options to set shape invariants: call "
                                         f"set_loop_options(shape_invariants=[({name}, <shape with None where it "
                                         "varies>)]) at the top of the loop body")
    return after


# ------------------------------------------------------------------ shape invariants

def _invariant_overrides(pairs):
    """{id(tensor): TensorShape} from set_loop_options(shape_invariants=[(tensor, shape), ...])."""
    if not pairs:
        return {}
    out = {}
    for pair in pairs:
        try:
            value, shape = pair
        except (TypeError, ValueError):
            raise errors.located(ValueError, "shape_invariants must be a list of (tensor, shape) pairs") from None
        out[id(value)] = TensorShape(shape)
    return out


def _flat_invariants(init, overrides):
    """One shape per component of the loop variables, or None when no variable has an invariant."""
    if not overrides:
        return None
    flat = []
    for value in init:
        for leaf in nest.flatten(value):
            if hasattr(leaf, "_component_invariants"):
                flat.extend(leaf._component_invariants(overrides.get(id(leaf))))
            elif conditionals._is_composite(leaf):
                flat.extend(c.shape for c in leaf._to_components())
            else:
                flat.append(overrides.get(id(leaf), leaf.shape))
    return flat


# ------------------------------------------------------------------ variables defined in the loop

def _discover(init, missing, body, set_state, get_state, names, invariants):
    """Traces the body once in a throwaway graph to learn the type of each
    variable that has no value before the loop; gives it zeros of that type
    (and its traced shape as invariant, since the zeros' shape is a guess)."""
    graph = FuncGraph("autograph_dry_run", outer_graph=context.current_graph())
    with graph, conditionals.dry_run():
        set_state(tuple(v if isinstance(v, Undefined) or v is None else _placeholders_like(graph, v)
                        for v in init))
        try:
            body()
        except UnboundLocalError as e:
            raise _not_defined_before_loop(e, [names[i] for i in missing]) from None
        after = tuple(get_state())
    set_state(tuple(init))
    for i in missing:
        value = after[i]
        if isinstance(value, Undefined) or value is None or not _typed(value):
            raise errors.located(ValueError, f"{describe(names[i])} must be defined before the loop: it is used "
                                             "after the loop (or in a later iteration) but is not assigned a tensor "
                                             "on every iteration")
        zeros = []
        for leaf in nest.flatten(value):
            z = zeros_like_spec(leaf)
            shape = leaf.shape if isinstance(leaf, Tensor) else z.shape
            if shape != z.shape:
                invariants[id(z)] = shape
            zeros.append(z)
        init[i] = nest.pack_sequence_as(value, zeros)


def _not_defined_before_loop(error, missing):
    """TensorFlow's error for a loop that reads a variable before assigning it:
    "'prev' must be defined before the loop" (naming the variable read if it is
    one of the loop's, else the first one the loop defines)."""
    text = str(error)
    named = [n for n in missing if f"'{n}'" in text]
    name = (named or missing)[0]
    return errors.located(ValueError, f"{describe(name)} must be defined before the loop.\nNote: AutoGraph tried "
                                      f"to define it automatically, but ran into a UnboundLocalError: {text}")


def _placeholders_like(graph, value):
    """Placeholders with the types of a loop variable, as the body sees it when traced."""
    def leaf(v):
        if conditionals._is_composite(v):
            parts = [graph.add_placeholder(c.dtype, c.shape, "dry_run") for c in v._to_components()]
            return v._from_components(parts)
        return graph.add_placeholder(v.dtype, v.shape, "dry_run")
    return nest.map_structure(leaf, value)


def _typed(value):
    for leaf in nest.flatten(value):
        if leaf is None or isinstance(leaf, Undefined) or conditionals._is_composite(leaf):
            return False
    return True
