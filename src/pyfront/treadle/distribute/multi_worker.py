"""td.distribute.MultiWorkerMirroredStrategy: one replica per process, in
processes started by MPI's launcher on one machine or many:

    mpiexec -n 4 python train.py          (a hostfile or Slurm for a cluster)

Each process keeps its own copy of the variables created in scope(); the
first `run` (and `run` after new variables appear) broadcasts process 0's
values, so all copies start equal. Optimizers then apply the same summed
gradients to every copy. The collectives are MPI's (mpi4py), on contiguous
buffers; see mpi_collectives.py for how failed peers are reported."""

import hashlib

import numpy as np

from treadle.framework import context
from treadle.framework.tensor import convert_to_tensor
from treadle.ops.script_ops import py_function
from treadle.distribute import input_lib
from treadle.distribute.collectives import PeerFailedError
from treadle.distribute.mpi_collectives import DEFAULT_BUCKET_BYTES, MPIGroup
from treadle.distribute.replica_context import ReplicaContext, failure_text
from treadle.distribute.strategy import Strategy


class CommunicationImplementation:
    """TensorFlow's names for the collective implementation; treadle's is MPI."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous training with one replica in each process of an MPI world
    (TensorFlow's tf.distribute.MultiWorkerMirroredStrategy). Process 0 is the
    chief (`cluster_resolver.task_id == 0`): save checkpoints there."""

    _replicas_are_processes = True

    def __init__(self, cluster_resolver=None, communication_options=None, comm=None):
        options = communication_options or CommunicationOptions()
        bucket = options.bytes_per_pack or DEFAULT_BUCKET_BYTES
        self._group = MPIGroup(comm, timeout=options.timeout_seconds, bucket_bytes=bucket)
        super().__init__(["/device:CPU:0"])
        self.cluster_resolver = _ClusterResolver(self._group)
        self._synced = set()   # creation numbers of the scope's variables already broadcast

    @property
    def num_replicas_in_sync(self):
        return self._group.size

    @property
    def stats(self):
        """Bytes and seconds of the collectives since `stats.reset()`."""
        return self._group.stats

    # ---------------------------------------------------------- running
    def run(self, fn, args=(), kwargs=None, options=None):
        try:
            self._broadcast_new_variables()
            with ReplicaContext(self, self._group.rank, _ProcessMember(self._group)):
                return fn(*args, **(kwargs or {}))
        except BaseException as e:  # noqa: B902 - every error stops the other replicas
            if not isinstance(e, PeerFailedError):
                self._group.notify_failure(failure_text(e))
            raise

    def _broadcast_new_variables(self):
        """Process 0's values of the scope's variables not yet broadcast (done
        eagerly, also when `run` is being traced: every process traces it)."""
        with context.init_scope():
            self._broadcast_fresh()

    def _broadcast_fresh(self):
        fresh = []
        for key, ref in list(self._scope_variables.items()):   # in the order they were created
            v = ref()
            if v is not None and key not in self._synced:
                fresh.append((key, v))
        signature = [(v.name, tuple(v.shape.as_list()), v.dtype.name) for _, v in fresh]
        # Every process compares every process's list, so all of them raise together: a digest
        # each step (one small collective that notices failed peers), the lists when they differ.
        digests = self._group.all_gather_equal(_digest(signature))
        if (digests == digests[0]).all():
            theirs_by_rank = [signature] * self._group.size
        else:
            theirs_by_rank = self._group.comm.allgather(signature)
        for rank, theirs in enumerate(theirs_by_rank):
            if theirs != signature:
                raise ValueError(
                    f"replica {rank} created other variables in strategy.scope() than replica {self._group.rank} "
                    f"(every process must create the same ones, in the same order): {theirs} there, {signature} "
                    "here")
        if not fresh:
            return
        values = self._group.broadcast([v.numpy() for _, v in fresh], root=0)
        for (key, v), value in zip(fresh, values):
            v.assign(value)
            self._synced.add(key)

    # ---------------------------------------------------------- across processes
    def _process_all_reduce(self, tensors):
        tensors = [convert_to_tensor(t) for t in tensors]
        if context.current_graph() is None:
            return [convert_to_tensor(a) for a in self._group.all_reduce([t.numpy() for t in tensors])]
        group = self._group
        out = py_function(lambda *xs: [convert_to_tensor(a) for a in group.all_reduce([x.numpy() for x in xs])],
                          inp=tensors, Tout=[t.dtype for t in tensors])
        for o, t in zip(out, tensors):
            o.set_shape(t.shape)
        return out

    def _process_all_gather(self, tensor, axis):
        if context.current_graph() is not None:
            raise NotImplementedError("strategy.gather across processes inside a td.function; call it eagerly")
        parts = self._group.all_gather([np.moveaxis(tensor.numpy(), axis, 0)])[0]
        return convert_to_tensor(np.moveaxis(np.concatenate(parts), 0, axis))

    def _replica_shares(self):
        return self._group.size, [self._group.rank]

    def _input_context(self):
        return input_lib.InputContext(self._group.size, self._group.rank, self._group.size)


def _digest(signature):
    """The variable list's length and a hash of it, as int64s."""
    digest = hashlib.blake2b(repr(signature).encode(), digest_size=8).digest()
    return np.array([len(signature), int.from_bytes(digest, "little", signed=True)], np.int64)


class _ProcessMember:
    """The group as the one replica of this process sees it: merges run here
    (each process updates its own copy of the variables)."""

    def __init__(self, group):
        self.group = group
        self.num_replicas = group.size

    def all_reduce(self, arrays, op):
        return self.group.all_reduce(arrays, op)

    def all_gather(self, arrays):
        return self.group.all_gather(arrays)

    def all_reduce_and_gather(self, reduce_arrays, op, gather_arrays):
        return self.group.all_reduce_and_gather(reduce_arrays, op, gather_arrays)

    def broadcast(self, arrays, root=0):
        return self.group.broadcast(arrays, root)

    def merge(self, fn):
        return fn()

    def fail(self, error):
        self.group.notify_failure(failure_text(error))


class _ClusterResolver:
    """The process's place in the world (TensorFlow's cluster_resolver fields)."""

    def __init__(self, group):
        self.task_type = "worker"
        self.task_id = group.rank
        self.num_workers = group.size

    def cluster_spec(self):
        return {"worker": [f"rank:{r}" for r in range(self.num_workers)]}
