"""Collectives across processes, over MPI (mpi4py): one replica per process.

Gradients cross as contiguous buffers: the arrays of one dtype are packed
into buckets of at most `bucket_bytes`, and every bucket's all-reduce is in
flight at once (non-blocking MPI_Iallreduce), so many small gradients cost
one or a few collectives. The rows of sparse gradients are gathered in the
same round (`all_reduce_and_gather`), straight into one buffer each.

No collective waits forever on a failed peer:
- a replica whose step raises tells every other process (a message on a
  duplicate communicator), and their pending collective raises
  td.errors.AbortedError naming that replica, with its traceback;
- a replica process on this machine that died (killed, crashed) is noticed
  by its process id and reported as td.errors.UnavailableError;
- every collective also has an optional deadline (`timeout` seconds, or
  the environment variable TREADLE_COLLECTIVE_TIMEOUT).
The launcher (mpiexec) also ends the job when a process dies."""

import atexit
import os
import socket
import sys
import time

import numpy as np

from treadle import errors
from treadle.distribute.collectives import CollectiveStats, PeerFailedError
from treadle.distribute.reduce_op import ReduceOp

_ABORT_TAG = 7301
_ACK_TAG = 7302
DEFAULT_BUCKET_BYTES = 4 << 20


def _mpi():
    try:
        from mpi4py import MPI  # an optional dependency: pip install "treadle[distribute]"
    except ImportError as e:
        raise ImportError(
            "td.distribute.MultiWorkerMirroredStrategy needs mpi4py and an MPI library: "
            "pip install mpi4py mpich (or treadle[distribute]), then start the processes with mpiexec") from e
    return MPI


def _env_timeout():
    value = os.environ.get("TREADLE_COLLECTIVE_TIMEOUT")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"TREADLE_COLLECTIVE_TIMEOUT must be a number of seconds, got {value!r}") from None


def pack_buckets(arrays, bucket_bytes):
    """Groups the indices of `arrays` into buckets: same dtype, at most
    `bucket_bytes` each (an array larger than that gets a bucket of its own)."""
    buckets, current, current_bytes, current_dtype = [], [], 0, None
    for i, a in enumerate(arrays):
        if current and (a.dtype != current_dtype or current_bytes + a.nbytes > bucket_bytes):
            buckets.append(current)
            current, current_bytes = [], 0
        current.append(i)
        current_bytes += a.nbytes
        current_dtype = a.dtype
    if current:
        buckets.append(current)
    return buckets


class MPIGroup:
    """The collectives of the processes of an MPI communicator (COMM_WORLD by default)."""

    def __init__(self, comm=None, timeout=None, bucket_bytes=DEFAULT_BUCKET_BYTES):
        MPI = _mpi()
        self.MPI = MPI
        self.comm = (comm or MPI.COMM_WORLD).Dup()
        self.control = self.comm.Dup()      # failure notices travel apart from the data
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = _env_timeout() if timeout is None else float(timeout)
        self.bucket_bytes = int(bucket_bytes)
        self.stats = CollectiveStats()
        self._failure = None      # the message of a peer's failure, once received
        self._failed_here = False
        self._notices = []
        host = socket.gethostname()
        self.peers = self.comm.allgather((host, os.getpid()))
        self._local_peers = [(r, pid) for r, (h, pid) in enumerate(self.peers) if h == host and r != self.rank]
        self._next_liveness_check = 0.0
        atexit.register(self._exit_without_hanging)

    # ---------------------------------------------------------- waiting
    def _peer_name(self, rank):
        host, pid = self.peers[rank]
        return f"replica {rank} (process {pid} on {host})"

    def _check_failures(self, what):
        if self._failure is not None:
            raise PeerFailedError(f"{what} on replica {self.rank} stopped: {self._failure}")
        status = self.MPI.Status()
        while self.control.Iprobe(source=self.MPI.ANY_SOURCE, tag=_ABORT_TAG, status=status):
            source = status.Get_source()
            notice = self.control.recv(source=source, tag=_ABORT_TAG)
            self.control.isend(b"ack", dest=source, tag=_ACK_TAG)
            self._failure = notice
            raise PeerFailedError(f"{what} on replica {self.rank} stopped: {notice}")
        now = time.monotonic()
        if now >= self._next_liveness_check:
            self._next_liveness_check = now + 0.2
            for rank, pid in self._local_peers:
                if not _process_alive(pid):
                    self._failure = f"{self._peer_name(rank)} is gone (it exited or was killed)"
                    raise errors.UnavailableError(None, None, f"{what} on replica {self.rank}: {self._failure}")

    def _wait(self, requests, what):
        """Waits for `requests`, checking for failed peers and the deadline."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        spins = 0
        while not self.MPI.Request.Testall(requests):
            self._check_failures(what)
            if deadline is not None and time.monotonic() > deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"{what} on replica {self.rank} waited more than {self.timeout:g} s for the "
                    f"other replicas (TREADLE_COLLECTIVE_TIMEOUT)")
            spins += 1
            if spins > 200:
                time.sleep(0.0002)

    # ---------------------------------------------------------- collectives
    def all_reduce(self, arrays, op=ReduceOp.SUM):
        """Each array summed (or averaged) over the processes, bucketed."""
        return self.all_reduce_and_gather(arrays, op, [])[0]

    def all_gather(self, arrays):
        """For each array (same dtype and trailing shape everywhere, any first
        dimension), the list of every process's array."""
        start = time.perf_counter()
        self._check_failures("all_gather")
        gathered, counts = self._gather(arrays, [], "all_gather")
        self.stats.add(sum(g.nbytes for g in gathered), time.perf_counter() - start)
        result = []
        for k, (a, whole) in enumerate(zip(arrays, gathered)):
            parts = np.split(whole, np.cumsum(counts[:, k])[:-1])
            result.append(parts if np.ndim(a) else [p.reshape(()) for p in parts])
        return result

    def all_reduce_and_gather(self, reduce_arrays, op, gather_arrays):
        """(each of `reduce_arrays` summed or averaged over the processes, each
        of `gather_arrays` concatenated along its first dimension over the
        processes in rank order), in one round: the all-reduces of the buckets,
        the exchange of the row counts and then the gathers are all in flight
        together, and a gathered array arrives as one contiguous buffer."""
        start = time.perf_counter()
        self._check_failures("all_reduce")
        arrays = [np.asarray(a, order="C") for a in reduce_arrays]
        requests, unpack = [], []
        for bucket in pack_buckets(arrays, self.bucket_bytes):
            send = np.concatenate([arrays[i].reshape(-1) for i in bucket]) if len(bucket) > 1 \
                else arrays[bucket[0]].reshape(-1)
            recv = np.empty_like(send)
            requests.append(self.comm.Iallreduce(send, recv, op=self.MPI.SUM))
            unpack.append((bucket, recv, send))
        gathered, _counts = self._gather(gather_arrays, requests, "all_reduce")
        out = [None] * len(arrays)
        nbytes = sum(g.nbytes for g in gathered)
        for bucket, recv, _send in unpack:
            offset = 0
            for i in bucket:
                n = arrays[i].size
                out[i] = recv[offset:offset + n].reshape(arrays[i].shape)
                offset += n
            nbytes += recv.nbytes
        if op is ReduceOp.MEAN:
            out = [(o / self.size).astype(o.dtype, copy=False) for o in out]
        self.stats.add(nbytes, time.perf_counter() - start)
        return out, gathered

    def _gather(self, arrays, pending, what):
        """Every process's `arrays` concatenated along their first dimension
        (a scalar counts as one row), and the (processes x arrays) row counts.
        One exchange of the counts of all arrays, then all the gathers in
        flight at once; returns when they and the `pending` requests are done."""
        arrays = [np.asarray(a, order="C") for a in arrays]
        if not arrays:
            self._wait(pending, what)
            return [], np.zeros((self.size, 0), np.int64)
        mine = np.array([a.shape[0] if a.ndim else 1 for a in arrays], np.int64)
        counts = np.empty((self.size, len(arrays)), np.int64)
        self._wait([self.comm.Iallgather(mine, counts)], what)
        requests, gathered = list(pending), []
        for k, a in enumerate(arrays):
            row_shape = a.shape[1:] if a.ndim else ()
            row = int(np.prod(row_shape, dtype=np.int64))
            sizes = counts[:, k] * row
            recv = np.empty((int(counts[:, k].sum()),) + row_shape, a.dtype)
            displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            requests.append(self.comm.Iallgatherv(a.reshape(-1), [recv.reshape(-1), (sizes, displs)]))
            gathered.append(recv)
        self._wait(requests, what)
        return gathered, counts

    def all_gather_equal(self, array):
        """Every process's `array` (the same shape and dtype everywhere), stacked
        in rank order: one collective."""
        array = np.ascontiguousarray(array)
        out = np.empty((self.size,) + array.shape, array.dtype)
        self._check_failures("all_gather")
        self._wait([self.comm.Iallgather(array, out)], "all_gather")
        return out

    def broadcast(self, arrays, root=0):
        """Process `root`'s arrays, on every process (same shapes and dtypes)."""
        self._check_failures("broadcast")
        out = [np.array(a, copy=True, order="C") for a in arrays]
        requests = [self.comm.Ibcast(o, root=root) for o in out]
        self._wait(requests, "broadcast")
        return out

    def barrier(self):
        self._wait([self.comm.Ibarrier()], "barrier")

    # ---------------------------------------------------------- failures
    def notify_failure(self, text):
        """Tells every other process that this replica failed (`text`: what and
        where), and waits briefly for them to take the notice."""
        if self._failed_here or self._failure is not None:
            return
        self._failed_here = True
        notice = f"{self._peer_name(self.rank)} raised:\n{text}"
        for rank in range(self.size):
            if rank != self.rank:
                self._notices.append(self.control.isend(notice, dest=rank, tag=_ABORT_TAG))
        deadline = time.monotonic() + 2.0
        acks = 0
        status = self.MPI.Status()
        while acks < self.size - 1 and time.monotonic() < deadline:
            if self.control.Iprobe(source=self.MPI.ANY_SOURCE, tag=_ACK_TAG, status=status):
                self.control.recv(source=status.Get_source(), tag=_ACK_TAG)
                acks += 1
            else:
                time.sleep(0.001)

    def _exit_without_hanging(self):
        """After a failure, MPI_Finalize would wait for collectives that never
        complete: end the process at once instead (the launcher then ends the job)."""
        if self._failed_here or self._failure is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped by the launcher) is gone too
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True
