"""The table of batching rules: one per op type, written once, beside the op's
gradient rule (in the *_grad modules).

A batching rule says how an op computes when some of its inputs carry an
added leading batch dimension (one row per example) and the others are the
same for every example (variables, captures, constants). It is
`rule(ctx, op, inputs, batched) -> outputs`: `op` is the per-example
Operation (its `.type`, `.inputs` with their per-example shapes, attributes
read with registry.get_attr), `inputs` the values now standing for its
inputs, and `batched[i]` whether input i has the batch dimension. The rule
builds the batched computation with ordinary op calls and returns one value
per output: a tensor with the batch dimension, or `Unbatched(t)` for an output
that is the same for every example. `ctx` (vectorization.BatchContext) gives
the batch size and helpers (tile an unbatched value, vectorize a library
function, run an op once per example).

A rule raises NotBatchable for a case it cannot batch (a batched axis, say):
the op then runs once per example, with a warning; NeedsWholeFunction where
not even that works, and then the whole function runs once per example. Ops that cannot be batched
at all (Python callbacks, printing) are declared with RunsPerExample and a
reason.

The vectorizer calls a rule only when some input is batched, except for the
rules registered with `always=True` (random draws and accumulating writes,
whose result differs when an op runs once per example rather than once)."""

_RULES = {}
_ALWAYS = set()
_PER_EXAMPLE = {}  # op type -> why it runs once per example


class NotBatchable(Exception):
    """Raised by a batching rule for inputs it cannot batch."""


class NeedsWholeFunction(Exception):
    """Raised for an op that has no batched form and cannot run once per
    example on its own either (its results cannot be stacked, or it belongs
    to one example's trace): vectorized_map then runs the whole function once
    per example."""


class Unbatched:
    """A rule's output that is the same for every example."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _check_new(op_type):
    if op_type in _RULES or op_type in _PER_EXAMPLE:
        raise KeyError(f"a batching rule for {op_type} is already registered")


class RegisterBatchingRule:
    """Decorator: `@RegisterBatchingRule("AddV2")` registers the rule for an op
    type; `always=True` runs it even when no input is batched."""

    def __init__(self, *op_types, always=False):
        self._op_types = op_types
        self._always = always

    def __call__(self, fn):
        for op_type in self._op_types:
            _check_new(op_type)
            _RULES[op_type] = fn
            if self._always:
                _ALWAYS.add(op_type)
        return fn


def RunsPerExample(reason, *op_types):  # noqa: N802 (named like NotDifferentiable)
    """Declares op types that run once per example inside vectorized_map, and why."""
    for op_type in op_types:
        _check_new(op_type)
        _PER_EXAMPLE[op_type] = reason


def get_batching_rule(op_type):
    """The rule for `op_type`; None for an op that runs once per example;
    LookupError for an op nobody declared either way."""
    rule = _RULES.get(op_type)
    if rule is not None:
        return rule
    if op_type in _PER_EXAMPLE:
        return None
    raise LookupError(f"No batching rule defined for operation of type '{op_type}'")


def runs_even_unbatched(op_type):
    """Whether the op's rule runs even when no input is batched."""
    return op_type in _ALWAYS


def per_example_reason(op_type):
    return _PER_EXAMPLE.get(op_type)


def registered_rules():
    return dict(_RULES)


def per_example_ops():
    return dict(_PER_EXAMPLE)
