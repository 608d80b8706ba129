"""td.distribute.MirroredStrategy: synchronous replicas in one process, one
per logical CPU device.

The replicas are threads. Run eagerly, each replica's Python runs on its
own thread and its ops and td.functions run in the C++ core without the
GIL, so the replicas compute at the same time; they meet only at
collectives (gradients, all_reduce, merge_call). The variables created in
scope() are shared by the replicas: one copy, which every replica reads and
an optimizer updates once a step with the gradients summed over the
replicas, so the copies can never drift apart.

`strategy.run` called inside a td.function traces every replica into that
function's graph, in turn (as TensorFlow's MirroredStrategy does), and the
collectives become graph ops; that graph runs its replicas one after
another. For replicas that compute at the same time, call `strategy.run`
eagerly with a replica function that calls td.functions."""

import threading

from treadle import device_config
from treadle.framework import context, distribution_context
from treadle.distribute.collectives import PeerFailedError, ThreadGroup
from treadle.distribute.replica_context import ReplicaContext
from treadle.distribute.strategy import Strategy
from treadle.distribute.values import regroup, select_replica


class MirroredStrategy(Strategy):
    """Synchronous training on several replicas of one process
    (TensorFlow's tf.distribute.MirroredStrategy). `devices` names the
    logical CPU devices to use, one replica each; by default, every logical
    CPU device (td.config.set_logical_device_configuration makes more)."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            names = [d.name for d in device_config.list_logical_devices("CPU")]
        else:
            if isinstance(devices, str):
                raise ValueError(f"devices must be a list of device names, got the string {devices!r}")
            names = [device_config.canonical_device(d) for d in devices]
            if not names:
                raise ValueError("MirroredStrategy needs at least one device")
            if len(set(names)) != len(names):
                raise ValueError(f"MirroredStrategy got a device twice: {list(devices)}")
        super().__init__(names)
        self.stats = None   # the CollectiveStats of the latest run (bytes and time of its all-reduces)

    @property
    def num_replicas_in_sync(self):
        return len(self.extended.worker_devices)

    def run(self, fn, args=(), kwargs=None, options=None):
        kwargs = kwargs or {}
        n = self.num_replicas_in_sync
        graph = context.current_graph()
        group = ThreadGroup(n, serialize=graph is not None)
        self.stats = group.stats
        if n == 1:
            with ReplicaContext(self, 0, group.member(0), trace_graph=graph):
                return fn(*select_replica(0, args), **select_replica(0, kwargs))
        return regroup(_run_replica_threads(self, fn, args, kwargs, group, graph))


def _run_replica_threads(strategy, fn, args, kwargs, group, graph):
    """Runs fn on each replica's thread; returns their results in replica
    order, or raises the first replica's error (the others are stopped)."""
    n = group.num_replicas
    results = [None] * n
    failures = [None] * n
    caller_state = context.thread_state()
    caller_strategies = distribution_context.strategy_stack()

    def replica_main(i):
        context.adopt_thread_state(caller_state)
        distribution_context.set_strategy_stack(caller_strategies)
        member = group.member(i)
        group.rendezvous.enter()
        try:
            with ReplicaContext(strategy, i, member, trace_graph=graph):
                results[i] = fn(*select_replica(i, args), **select_replica(i, kwargs))
        except BaseException as e:  # noqa: B902 - every error stops the other replicas
            failures[i] = e
            member.fail(e)
        finally:
            group.rendezvous.leave()

    threads = [threading.Thread(target=replica_main, args=(i,), name=f"td-replica-{i}", daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _raise_first_failure(failures)
    return results


def _raise_first_failure(failures):
    """Raises the error of the replica that failed first on its own (the
    others' are AbortedErrors caused by it), noting which replica it was."""
    raised = [(i, e) for i, e in enumerate(failures) if e is not None]
    if not raised:
        return
    from_errors = [(i, e) for i, e in raised if not _is_abort(e)]
    replica, error = (from_errors or raised)[0]
    if hasattr(error, "add_note"):
        error.add_note(f"(raised by replica {replica} of td.distribute.MirroredStrategy)")
    raise error


def _is_abort(error):
    return isinstance(error, PeerFailedError)
