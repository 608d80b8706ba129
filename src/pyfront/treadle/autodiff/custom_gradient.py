"""td.custom_gradient: a function that returns its result and the function
computing its gradient.

The forward function runs with no tape recording it; its results then pass,
together with its inputs, through one IdentityN op, which is what tapes record
and graphs hold. That op's gradient rule calls the user's gradient function
for the op calls made here (eager or symbolic alike), and gives the inputs
what it returns; the forward function's own ops get no gradient."""

import functools
import weakref

from treadle.autodiff import helpers, tape
from treadle.autodiff.batching_registry import NeedsWholeFunction, RegisterBatchingRule, Unbatched
from treadle.autodiff.helpers import run_all
from treadle.autodiff.registry import RegisterGradient
from treadle.framework.op_execution import execute
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.util import nest

# id(first output of the IdentityN op) -> (weakref to that output, number of results, gradient function)
_CUSTOM = {}


def custom_gradient(f=None):
    """Decorator: `f(*x)` returns `(y, grad_fn)`; the gradient of y with
    respect to x is `grad_fn(*dy)` (one gradient per x, in order).
    Arguments must be tensors (or values convertible to them); gradients
    with respect to variables read inside f are not supported."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise TypeError("td.custom_gradient: the decorated function takes positional tensor arguments only, "
                            f"got keyword arguments {sorted(kwargs)}")
        xs = [a if isinstance(a, Tensor) else convert_to_tensor(a) for a in args]
        with _not_recorded():
            result, grad_fn = f(*xs)
        if not callable(grad_fn):
            raise TypeError(f"td.custom_gradient: {f.__name__} must return (result, gradient function), got "
                            f"{grad_fn!r} as the gradient function")
        flat = [convert_to_tensor(y) for y in nest.flatten(result)]
        if not flat:
            raise ValueError(f"td.custom_gradient: {f.__name__} returned no tensors")
        outputs = execute("IdentityN", flat + xs)
        first = outputs[0]
        key = id(first)
        _CUSTOM[key] = (weakref.ref(first, lambda _, key=key: _CUSTOM.pop(key, None)), len(flat), grad_fn)
        return nest.pack_sequence_as(result, outputs[:len(flat)])

    return decorated


class _not_recorded:
    """No tape of this thread records the ops run inside (the forward function)."""

    def __enter__(self):
        self.saved = tape._tapes.recording
        tape._tapes.recording = []

    def __exit__(self, *exc):
        tape._tapes.recording = self.saved
        return False


def _custom_rule_of(op):
    entry = _CUSTOM.get(id(op.outputs[0]))
    if entry is None or entry[0]() is not op.outputs[0]:
        return None
    return entry[1], entry[2]


@RegisterBatchingRule("IdentityN")
def _identity_n_batched(ctx, op, inputs, batched):
    # Each value passes through, with the batch dimension it came with. A
    # custom gradient function was written for one example's tensors: the
    # function is then run once per example, where it applies.
    if _custom_rule_of(op) is not None:
        raise NeedsWholeFunction(f"vectorized_map: the custom gradient at {op.name} is computed per example")
    outs = run_all("IdentityN", list(inputs))
    return [v if b else Unbatched(v) for v, b in zip(outs, batched)]


@RegisterGradient("IdentityN")
def _identity_n_grad(op, *dys):
    custom = _custom_rule_of(op)
    if custom is None:
        return list(dys)
    n, grad_fn = custom
    upstream = [dy if dy is not None else helpers.zeros_like(y) for dy, y in zip(dys[:n], op.outputs[:n])]
    grads = grad_fn(*upstream)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    num_inputs = len(op.inputs) - n
    if len(grads) != num_inputs:
        raise ValueError(f"td.custom_gradient: the gradient function returned {len(grads)} gradients for "
                         f"{num_inputs} inputs")
    return [None] * n + [None if g is None else convert_to_tensor(g) for g in grads]
