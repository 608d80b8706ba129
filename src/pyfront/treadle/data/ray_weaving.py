"""Weaving in Ray tasks (`pip install treadle[ray]`): the executor behind
parallel_weave(..., use_ray=True, ray_address=...). With no address it uses
the Ray already initialised in this process, or starts a local one (the
embedded default); given an address it joins that cluster. Tasks run the
same worker code as the process pool (weaving.weave_chunk)."""

import os
import sys

from treadle.data import weaving

_remote_weave = None


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError("parallel_weave(use_ray=True) needs Ray: pip install 'treadle[ray]'") from None
    return ray


def ensure_ray(address=None, num_cpus=None):
    """Connects to `address`, or starts a local Ray, unless Ray is already initialised."""
    ray = _ray()
    if not ray.is_initialized():
        if address is None:
            # Local workers import weave functions as spawned processes do: from the driver's sys.path.
            path = os.pathsep.join(p for p in sys.path if p)
            ray.init(num_cpus=num_cpus, include_dashboard=False, configure_logging=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path}})
        else:
            ray.init(address=address)
    return ray


def _weave_task(loom, weave_fn, first_index, examples, examples_per_schedule):
    # Results travel through Ray's serializer (cloudpickle): what it refuses is reported per example.
    state = weaving._WorkerState(loom, weave_fn, dumps=_ray().cloudpickle.dumps,
                                 worker=f"Ray task (worker process {os.getpid()})")
    return weaving.weave_chunk(first_index, examples, examples_per_schedule, state=state)


class RayExecutor:
    """submit() like a concurrent.futures executor: each chunk is one Ray task
    (not retried: a task whose worker dies is reported, not run again)."""

    def __init__(self, weaving_loom, weave_fn, address, num_cpus=None):
        global _remote_weave
        ray = ensure_ray(address, num_cpus)
        if _remote_weave is None:
            _remote_weave = ray.remote(max_retries=0)(_weave_task)
        self._loom = ray.put(weaving_loom)
        self._weave_fn = ray.put(weave_fn)
        self._refs = {}  # future -> ObjectRef of the tasks in flight
        # What a task whose worker died raises.
        self.died_errors = (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                            ray.exceptions.LocalRayletDiedError)

    def submit(self, fn, first_index, examples, examples_per_schedule):
        if fn is not weaving.weave_chunk:
            raise ValueError("RayExecutor runs weaving.weave_chunk only")
        ref = _remote_weave.remote(self._loom, self._weave_fn, first_index, examples, examples_per_schedule)
        future = ref.future()
        self._refs[future] = ref
        future.add_done_callback(lambda f: self._refs.pop(f, None))
        return future

    def cancel_all(self):
        """Ends the tasks not finished (a hung one included: its worker is killed)."""
        ray = _ray()
        for ref in list(self._refs.values()):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - a task that finished meanwhile
                pass
        self._refs.clear()
