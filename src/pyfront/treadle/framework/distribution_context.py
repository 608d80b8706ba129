"""Which replica of a td.distribute strategy a thread runs as.

This is the low layer that optimizers consult: when `apply_gradients` runs
inside `strategy.run`, the thread's replica context sums the gradients over
the replicas and applies them once per copy of the variables. td.distribute
(a higher layer) sets the context; nothing here knows a strategy's kind."""

import threading


class _State(threading.local):
    def __init__(self):
        super().__init__()
        self.replica = None        # the ReplicaContext this thread runs in, or None
        self.strategies = []       # strategies whose scope() this thread is in, innermost last


_state = _State()


def replica_context():
    """The replica context of this thread while `strategy.run` runs it, else None."""
    return _state.replica


def set_replica_context(ctx):
    """Makes `ctx` this thread's replica context; returns the previous one."""
    previous = _state.replica
    _state.replica = ctx
    return previous


def strategy_stack():
    """This thread's stack of strategies in scope (a list, innermost last)."""
    return _state.strategies


def set_strategy_stack(stack):
    """Replaces this thread's stack (replica threads inherit their caller's)."""
    _state.strategies = list(stack)
