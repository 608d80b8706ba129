"""The collective operations replicas use, and their in-process group.

A group member (one per replica) offers:
- `all_reduce(arrays, op)`: the element-wise sum (or mean) of each NumPy array
  over the replicas, returned to every replica;
- `all_gather(arrays)`: for each array, the list of every replica's array;
- `all_reduce_and_gather(reduce_arrays, op, gather_arrays)`: both at once
  (a gradient's dense parts and its IndexedSlices' rows), each gathered array
  concatenated along its first dimension in replica order;
- `broadcast(arrays, root)`: root's arrays, returned to every replica;
- `merge(fn)`: all replicas wait; `fn()` runs once and its result goes to all.

`ThreadGroup` serves replicas that are threads of one process (MirroredStrategy).
The cross-process group over MPI is in mpi_collectives.py. Both count the
bytes they reduce (`stats`), which the benchmarks report."""

import threading
import time

import numpy as np

from treadle import errors
from treadle.distribute.reduce_op import ReduceOp


class PeerFailedError(errors.AbortedError):
    """A collective stopped because another replica failed (the message names it)."""

    def __init__(self, message):
        super().__init__(None, None, message)


class CollectiveStats:
    """Bytes all-reduced and seconds spent in collectives, since the last reset."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.calls = 0
        self.bytes = 0
        self.seconds = 0.0

    def add(self, nbytes, seconds):
        self.calls += 1
        self.bytes += int(nbytes)
        self.seconds += seconds

    def as_dict(self):
        return {"calls": self.calls, "bytes": self.bytes, "seconds": self.seconds}


def combine(arrays_per_replica, op):
    """The element-wise SUM or MEAN of each array over the replicas."""
    out = []
    for values in zip(*arrays_per_replica):
        total = np.array(values[0], copy=True)
        for v in values[1:]:
            total += v
        if op is ReduceOp.MEAN:
            total = (total / len(values)).astype(total.dtype, copy=False)
        out.append(total)
    return out


class _Rendezvous:
    """All replicas deposit a value; the last to arrive computes the result,
    which every replica gets. A replica that fails aborts the others' wait
    with an error naming it.

    `serialize` keeps the replicas' Python in lockstep (one thread at a time,
    switching at each rendezvous), for replicas that trace into one graph:
    each thread then holds the lock while it runs, and waiting releases it."""

    def __init__(self, num_replicas, serialize=False):
        self.num_replicas = num_replicas
        self.serialize = serialize
        self._cond = threading.Condition(threading.RLock())
        self._slots = [None] * num_replicas
        self._arrived = 0
        self._generation = 0
        self._result = None
        self._failure = None   # (replica id, error) of the first replica that failed

    def enter(self):
        """Called by a replica thread before it runs (takes its turn when serialized)."""
        if self.serialize:
            self._cond.acquire()

    def leave(self):
        if self.serialize:
            self._cond.release()

    def fail(self, replica_id, error):
        """Replica `replica_id` raised `error`: wake the others with an error."""
        with self._cond:
            if self._failure is None:
                self._failure = (replica_id, error)
            self._cond.notify_all()

    def _raise_failure(self, replica_id):
        failed, error = self._failure
        raise PeerFailedError(f"replica {replica_id} stopped: replica {failed} raised {type(error).__name__}: {error}")

    def exchange(self, replica_id, value, compute):
        """Deposits `value`; returns compute(values of all replicas, in order)."""
        with self._cond:
            if self._failure is not None:
                self._raise_failure(replica_id)
            generation = self._generation
            self._slots[replica_id] = value
            self._arrived += 1
            if self._arrived == self.num_replicas:
                try:
                    self._result = compute(list(self._slots))
                except BaseException as e:
                    self._failure = (replica_id, e)
                    self._cond.notify_all()
                    raise
                finally:
                    self._slots = [None] * self.num_replicas
                    self._arrived = 0
                    self._generation += 1
                    self._cond.notify_all()
                return self._result
            while self._generation == generation and self._failure is None:
                self._cond.wait()
            if self._generation == generation:
                self._raise_failure(replica_id)
            return self._result


class ThreadGroup:
    """The collectives of replicas that are threads of one process."""

    def __init__(self, num_replicas, serialize=False):
        self.num_replicas = num_replicas
        self.rendezvous = _Rendezvous(num_replicas, serialize)
        self.stats = CollectiveStats()

    def member(self, replica_id):
        return _ThreadMember(self, replica_id)


class _ThreadMember:
    def __init__(self, group, replica_id):
        self.group = group
        self.replica_id = replica_id
        self.num_replicas = group.num_replicas

    def _exchange(self, value, compute):
        return self.group.rendezvous.exchange(self.replica_id, value, compute)

    def all_reduce(self, arrays, op=ReduceOp.SUM):
        start = time.perf_counter()
        out = self._exchange([np.asarray(a) for a in arrays], lambda per_replica: combine(per_replica, op))
        if self.replica_id == 0:
            self.group.stats.add(sum(a.nbytes for a in out), time.perf_counter() - start)
        return out

    def all_gather(self, arrays):
        per_replica = self._exchange([np.asarray(a) for a in arrays], lambda values: values)
        return [list(column) for column in zip(*per_replica)]

    def all_reduce_and_gather(self, reduce_arrays, op, gather_arrays):
        start = time.perf_counter()
        mine = ([np.asarray(a) for a in reduce_arrays], [np.asarray(a) for a in gather_arrays])

        def compute(per_replica):
            reduced = combine([r for r, _ in per_replica], op)
            gathered = [np.concatenate(column) for column in zip(*[g for _, g in per_replica])]
            return reduced, gathered

        reduced, gathered = self._exchange(mine, compute)
        if self.replica_id == 0:
            self.group.stats.add(sum(a.nbytes for a in reduced + gathered), time.perf_counter() - start)
        return reduced, gathered

    def broadcast(self, arrays, root=0):
        return self._exchange(list(arrays), lambda values: values[root])

    def merge(self, fn):
        return self._exchange(None, lambda _values: fn())

    def fail(self, error):
        self.group.rendezvous.fail(self.replica_id, error)
