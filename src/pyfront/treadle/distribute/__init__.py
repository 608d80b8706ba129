"""td.distribute: data-parallel training with TensorFlow's names.

- MirroredStrategy: synchronous replicas in one process (threads), one per
  logical CPU device.
- MultiWorkerMirroredStrategy: one replica per process, the processes
  started by MPI's launcher (`mpiexec -n 4 python train.py`), their
  collectives MPI's through mpi4py.

Both: scope(), run(fn, args), reduce(op, value, axis), num_replicas_in_sync,
experimental_distribute_dataset, distribute_datasets_from_function; inside
run, get_replica_context().all_reduce(...), and optimizers' apply_gradients
sum the gradients over the replicas."""

from treadle.distribute.input_lib import InputContext
from treadle.distribute.mirrored import MirroredStrategy
from treadle.distribute.multi_worker import (CommunicationImplementation, CommunicationOptions,
                                             MultiWorkerMirroredStrategy)
from treadle.distribute.reduce_op import ReduceOp
from treadle.distribute.replica_context import ReplicaContext
from treadle.distribute.strategy import (Strategy, get_replica_context, get_strategy, has_strategy,
                                         in_cross_replica_context)
from treadle.distribute.values import PerReplica

class _Experimental:
    """td.distribute.experimental: TensorFlow's names for the collective options."""

    CommunicationImplementation = CommunicationImplementation
    CommunicationOptions = CommunicationOptions


experimental = _Experimental()

__all__ = ["CommunicationImplementation", "CommunicationOptions", "InputContext", "MirroredStrategy",
           "MultiWorkerMirroredStrategy", "PerReplica", "ReduceOp", "ReplicaContext", "Strategy", "experimental",
           "get_replica_context", "get_strategy", "has_strategy", "in_cross_replica_context"]


def __dir__():
    return sorted(__all__)
