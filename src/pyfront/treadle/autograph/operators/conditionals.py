"""`if` statements: plain Python on Python values (and eager tensors), an If
node when the condition is a tensor of the graph being traced.

A staged `if` traces both branches from the same starting state. Its
outputs (the symbols live after it) are merged per symbol:

- a value both branches leave identical (the same object, or equal Python
  scalars) passes through as it is, with no graph output;
- a value that is the condition itself (or the operand of a `not`
  condition) is known inside each branch, so `do_return`/`break_`-style
  flags set to True in one branch and left alone in the other stay Python
  bools, or become the condition, without a graph output;
- anything else becomes an output of the If node: nested structures leaf by
  leaf, Python numbers converted to the dtype of the other branch's tensor.

The merge is carried through td.cond as composite values whose components
are only decided once both branches are traced."""

import threading

import numpy as np

from treadle.autograph.operators import errors, tensors
from treadle.autograph.operators.variables import Undefined, UndefinedReturnValue
from treadle.framework import context
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.ops import control_flow_ops, math_ops
from treadle.util import nest

_BRANCH = ("if", "else")
_TF_BRANCH = ("main", "else")
_SCALARS = (bool, int, float, str, bytes, type(None))


def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    """Runs `body()` if `cond` else `orelse()`; see the module docstring."""
    if tensors.is_symbolic(cond):
        _staged_if(cond, body, orelse, get_state, set_state, symbol_names, nouts)
    elif cond:
        body()
    elif orelse is not None:
        orelse()


def _staged_if(cond, body, orelse, get_state, set_state, names, nouts):
    pred = tensors.as_condition(cond, "an if statement")
    init = tuple(get_state()) if get_state is not None else ()
    merge = _Merge(pred, names[:nouts], in_dry_run())

    def branch(fn, side):
        def traced():
            if set_state is not None:
                set_state(init)
            if fn is not None:
                fn()
            values = tuple(get_state())[:nouts] if get_state is not None else ()
            return merge.record(side, values)
        return traced

    results = control_flow_ops.cond(pred, branch(body, 0), branch(orelse, 1))
    if set_state is not None:
        set_state(tuple(results) + init[nouts:])


# ------------------------------------------------------------------ dry runs

class _DryRuns(threading.local):
    depth = 0


_dry_runs = _DryRuns()


def in_dry_run():
    """True while a loop body is traced once only to learn the types of
    variables first defined inside it (see loops.py): branches may then
    leave a variable undefined."""
    return _dry_runs.depth > 0


class dry_run:
    def __enter__(self):
        _dry_runs.depth += 1

    def __exit__(self, *exc):
        _dry_runs.depth -= 1
        return False


# ------------------------------------------------------------------ merging

def describe(name):
    return "the return value" if name.startswith("retval_") else f"'{name}'"


def _is_composite(v):
    return hasattr(v, "_to_components") and not isinstance(v, Undefined)


def contains_tensor(value):
    return any(isinstance(v, Tensor) or _is_composite(v) for v in nest.flatten(value))


def _eager_constant(value, dtype_hint=None):
    """A Python value as an eager tensor (no graph node yet)."""
    with context.init_scope():
        return convert_to_tensor(value, dtype_hint=dtype_hint)


def zeros_like_spec(like):
    """An eager tensor of zeros with the dtype of `like` and its shape
    (unknown dimensions as 0): a stand-in value that is never read."""
    t = like if isinstance(like, Tensor) else _eager_constant(like)
    dims = [0 if d is None else d for d in (t.shape.dims or [])]
    np_dtype = t.dtype.as_numpy_dtype
    value = np.full(dims, b"", dtype=object) if t.dtype.name == "string" else np.zeros(dims, dtype=np_dtype)
    return _eager_constant(value)


def _stand_in(value):
    def leaf(v):
        if _is_composite(v):
            raise errors.located(ValueError, f"a {type(v).__name__} first created inside a loop must be created "
                                             "before the loop instead")
        return zeros_like_spec(v) if isinstance(v, Tensor) else v
    return nest.map_structure(leaf, value)


class _Output:
    """One output of one branch, as td.cond sees it."""

    __slots__ = ("merge", "side", "index", "components")

    def __init__(self, merge, side, index):
        self.merge = merge
        self.side = side
        self.index = index
        self.components = None

    def _to_components(self):
        if self.components is None:
            self.components = self.merge.components(self.side, self.index)
        return self.components

    def _from_components(self, tensors_):
        return self.merge.rebuild(self.index, tensors_)


class _Plan:
    __slots__ = ("kind", "value", "leaves", "structure")

    def __init__(self, kind, value=None, leaves=None, structure=None):
        self.kind = kind            # "value" | "pred" | "not_pred" | "graph"
        self.value = value          # the passed-through value
        self.leaves = leaves        # per side: flat leaves for the graph
        self.structure = structure  # the if branch's value, for rebuilding


class _Merge:
    def __init__(self, pred, names, dry_run_mode):
        self.pred = pred
        self.names = names
        self.dry_run = dry_run_mode
        self.values = [None, None]
        self.plans = None
        known_true, known_false = {id(pred): True}, {id(pred): False}
        if pred.op.type == "LogicalNot":
            operand = pred.op.inputs[0]
            known_true[id(operand)], known_false[id(operand)] = False, True
        self.known = (known_true, known_false)

    def record(self, side, values):
        self.values[side] = tuple(self._refine(side, v) for v in values)
        return [_Output(self, side, i) for i in range(len(values))]

    def _refine(self, side, value):
        if isinstance(value, Tensor):
            return self.known[side].get(id(value), value)
        return value

    # ---------------------------------------------------------- planning
    def _plan_all(self):
        if self.plans is None:
            self.plans = [self._plan(i) for i in range(len(self.names))]
        return self.plans

    def _plan(self, i):
        name = self.names[i]
        a, b = self.values[0][i], self.values[1][i]
        if a is b:
            return _Plan("value", a)
        a_undef, b_undef = isinstance(a, Undefined), isinstance(b, Undefined)
        if (a is None and isinstance(b, UndefinedReturnValue)) or (b is None and isinstance(a, UndefinedReturnValue)):
            return _Plan("value", None)  # `return` without a value, and falling off the end: both None
        if a_undef or b_undef:
            if a_undef and b_undef:
                if not self.dry_run and not isinstance(a, UndefinedReturnValue):
                    # Deleted (or left unbound) in both branches and used after: as
                    # TensorFlow, an error naming the main branch first.
                    raise self._undefined_error(name, a, 0, in_both=True)
                return _Plan("value", a)
            if not self.dry_run:
                raise self._undefined_error(name, a if a_undef else b, 0 if a_undef else 1)
            # In a dry run only the types matter: stand in zeros for the missing value.
            if a_undef:
                a = _stand_in(b)
            else:
                b = _stand_in(a)
        if type(a) is type(b) and type(a) in _SCALARS and a == b:
            return _Plan("value", a)
        if a is True and b is False:
            return _Plan("pred")
        if a is False and b is True:
            return _Plan("not_pred")
        for side, v in enumerate((a, b)):
            if v is None:
                raise errors.located(ValueError, f"{describe(name)} is None at the end of the {_BRANCH[side]} "
                                                 "branch of a conditional on a tensor, but not in the other; a "
                                                 "value used after such a conditional must have the same kind in "
                                                 "both branches")
        try:
            nest.assert_same_structure(a, b, check_types=False)
        except (ValueError, TypeError) as e:
            raise errors.located(TypeError, f"{describe(name)} must have the same nested structure in the if "
                                             f"and else branches of a conditional on a tensor: {e}") from None
        la, lb = nest.flatten(a), nest.flatten(b)
        return _Plan("graph", leaves=self._leaf_pairs(name, la, lb), structure=a)

    def _leaf_pairs(self, name, la, lb):
        out_a, out_b = [], []
        for x, y in zip(la, lb):
            if x is None or y is None or isinstance(x, Undefined) or isinstance(y, Undefined):
                side = 0 if (x is None or isinstance(x, Undefined)) else 1
                raise errors.located(ValueError, f"{describe(name)} has an element that is None or undefined at "
                                                 f"the end of the {_BRANCH[side]} branch of a conditional on a "
                                                 "tensor")
            if _is_composite(x) or _is_composite(y):
                if type(x) is not type(y):
                    raise errors.located(TypeError, f"{describe(name)} is a {type(x).__name__} in the if branch "
                                                    f"but a {type(y).__name__} in the else branch")
            else:
                x, y = self._as_tensors(name, x, y)
            out_a.append(x)
            out_b.append(y)
        return (out_a, out_b)

    def _as_tensors(self, name, x, y):
        try:
            if not isinstance(x, Tensor):
                x = _eager_constant(x, y.dtype if isinstance(y, Tensor) else None)
            if not isinstance(y, Tensor):
                y = _eager_constant(y, x.dtype)
        except (TypeError, ValueError) as e:
            raise errors.located(TypeError, f"{describe(name)} must be a tensor, or a value convertible to one, "
                                            f"when its value depends on a conditional on a tensor: {e}") from None
        if x.dtype != y.dtype:
            raise errors.located(TypeError, f"{describe(name)} has dtype {x.dtype.name} in the if branch, but "
                                            f"dtype {y.dtype.name} in the else branch")
        return x, y

    def _undefined_error(self, name, value, side, in_both=False):
        # TensorFlow's words for the two branches in these messages: "main" and "else".
        branch, other = _TF_BRANCH[side], _TF_BRANCH[1 - side]
        if isinstance(value, UndefinedReturnValue):
            return errors.located(ValueError, f"the {branch} branch must also have a return statement, since the "
                                              f"{other} branch of this conditional on a tensor returns a value (a "
                                              "function converted to a graph returns the same kind of value on every "
                                              "path). A return inside a loop works when the loop is a graph loop (it "
                                              "iterates over a tensor or its condition is a tensor), not when it runs "
                                              "as Python")
        where = ("has no value at the end of either branch of a conditional on a tensor (it is deleted or left "
                 "unassigned in both)" if in_both else
                 f"is assigned only in the {other} branch of a conditional on a tensor")
        return errors.located(ValueError, f"'{name}' must also be initialized in the {branch} branch: it {where}, "
                                          "and is used after the conditional (define it before the if statement, "
                                          "or in both branches)")

    # ---------------------------------------------------------- td.cond protocol
    def components(self, side, i):
        """The tensors of output i in branch `side` (called inside that branch's graph)."""
        plan = self._plan_all()[i]
        if plan.kind != "graph":
            return []
        graph = context.current_graph()
        out = []
        for leaf in plan.leaves[side]:
            if _is_composite(leaf):
                out.extend(leaf._to_components())
            elif type(leaf) is EagerTensor:
                out.append(graph.constant(leaf))
            else:
                out.append(leaf)
        return out

    def rebuild(self, i, outputs):
        plan = self._plan_all()[i]
        if plan.kind == "value":
            return plan.value
        if plan.kind == "pred":
            return self.pred
        if plan.kind == "not_pred":
            return math_ops.invert_(self.pred)
        it = iter(outputs)
        leaves = []
        for template in plan.leaves[0]:
            if _is_composite(template):
                n = len(template._to_components())
                leaves.append(template._from_components([next(it) for _ in range(n)]))
            else:
                leaves.append(next(it))
        return nest.pack_sequence_as(plan.structure, leaves)
