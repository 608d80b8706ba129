"""TensorFlow Fold's Loom keyword arguments that tuned TensorFlow 1's graph
machinery, and what they mean in treadle.

- back_prop: accepted. False stops gradients at the loom's outputs, as
  tf.while_loop(back_prop=False) did (the forward pass then keeps nothing for
  a backward pass).
- parallel_iterations: accepted as None or 1, which is what treadle does. Fold
  handed it to tf.while_loop to overlap depths; a depth here needs the one
  below it finished, and the work inside a depth is spread over treadle's
  thread pool instead (its size: OPENBLAS_NUM_THREADS).
- swap_memory: accepted as False. It let tf.while_loop swap GPU memory to the
  host; treadle runs on the CPU and has nothing to swap.
- direct_feed_dict: accepted as False. It fed a schedule's arrays through
  TensorFlow 1 placeholders to skip parsing; treadle has no feed dicts and
  reads schedules in C++ (pass a Weaver, bytes or a string tensor to the loom).
- loom_input_tensor, weaver_op: refused. TensorFlow 1 graph plumbing: pass the
  schedule to `loom(schedule)` and weave with `loom.make_weaver()`.
"""

import contextlib

from treadle.framework import op_execution as ops

_ACCEPTED = {
    # name: (the values that describe what treadle does, why others are refused)
    "parallel_iterations": ((None, 1), "depths run one after another (each needs the one below); the work inside "
                                       "a depth uses treadle's thread pool, sized by OPENBLAS_NUM_THREADS"),
    "swap_memory": ((False,), "treadle runs on the CPU, so there is no GPU memory to swap to the host"),
    "direct_feed_dict": ((False,), "treadle has no feed dicts; pass the Weaver, its bytes or a string tensor to "
                                   "loom(schedule), which reads it in C++"),
}
_REFUSED = {
    "loom_input_tensor": "pass the schedule to loom(schedule) (a Weaver, bytes or a string tensor) instead",
    "weaver_op": "weave with loom.make_weaver(); treadle's Weaver is built in",
}


def back_prop_from_fold_kwargs(kwargs):
    """Checks TensorFlow Fold's extra Loom keyword arguments; returns back_prop
    (True unless given as False). TypeError naming the argument and why otherwise."""
    kwargs = dict(kwargs)
    back_prop = kwargs.pop("back_prop", None)
    if back_prop is not None and not isinstance(back_prop, bool):
        raise TypeError(f"Loom: back_prop must be True, False or None, got {back_prop!r}")
    for name, value in kwargs.items():
        if name in _ACCEPTED:
            allowed, why = _ACCEPTED[name]
            if not any(value is a or (type(value) is type(a) and value == a) for a in allowed):
                shown = " or ".join(repr(a) for a in allowed)
                raise TypeError(f"Loom: {name}={value!r} has no meaning in treadle ({why}); only {shown} is accepted")
        elif name in _REFUSED:
            raise TypeError(f"Loom: TensorFlow Fold's {name} is not needed in treadle: {_REFUSED[name]}")
        else:
            raise TypeError(f"Loom got an unexpected keyword argument {name!r}")
    return back_prop is not False


@contextlib.contextmanager
def not_recorded():
    """Op calls inside are seen by no GradientTape (eagerly or while tracing):
    back_prop=False. The tapes recording outside see nothing of the loom's run."""
    recorders = ops.op_recorders[:]
    del ops.op_recorders[:]
    try:
        yield
    finally:
        ops.op_recorders[:] = recorders
