"""The fuzz kind of parallel weaving under worker faults. An input is
[processes][chunk size][examples per schedule][flags: ordered, extras] and
then one byte per example naming what weave_fn does with it: weave it,
raise, exit the worker (os._exit), kill it (SIGKILL), hang, return a value
that cannot be pickled, or weave it slowly.

The oracle: with no fault, the schedules are those woven in this process
(in order when ordered, as a multiset otherwise) with their extra values;
with faults, iteration raises WeaveError (naming weave_fn and an example
that raises or returns the unpicklable value), WorkerDiedError or
WorkerTimeoutError (naming weave_fn), within the harness's timeout, and
close() returns. The workers come from a fork server that has imported
treadle, so each input starts its pool in milliseconds."""

import multiprocessing
import os
import signal
import threading
import time

import numpy as np

import treadle as td
from treadle.data.weaving import WeaveError, WorkerDiedError, WorkerTimeoutError

from fuzz.base import REJECTIONS, Kind, Wrong
from fuzz.mutate import Mutator

OK, RAISE, EXIT, KILL, HANG, UNPICKLABLE, SLOW = range(7)
BEHAVIOURS = ("ok", "raise", "exit", "kill", "hang", "unpicklable", "slow")
CHUNK_TIMEOUT_S = 3.0  # parallel_weave's timeout: a hung worker is reported after this
FN_NAME = "fuzz.weave_faults.weave_program"
FAULTS = (WeaveError, WorkerDiedError, WorkerTimeoutError)


def weave_program(weaver, example):
    """The weave function: example = (index, behaviour)."""
    index, behaviour = example
    if behaviour == RAISE:
        raise ValueError(f"weave_program refuses example {index}")
    if behaviour == EXIT:
        os._exit(7)
    if behaviour == KILL:
        os.kill(os.getpid(), signal.SIGKILL)
    if behaviour == HANG:
        threading.Event().wait()
    if behaviour == SLOW:
        time.sleep(0.05)
    x = weaver.named_tensor("x")
    weaver.add_output(weaver.op("add", [x, weaver.constant(np.full(3, float(index)))])[0])
    if behaviour == UNPICKLABLE:
        return threading.Lock()
    return np.int64(index * 3)


def decode(data):
    head = (data + b"\0\0\0\0")[:4]
    examples = [(i, b % len(BEHAVIOURS)) for i, b in enumerate(data[4:16])]
    return {"processes": head[0] % 2 + 1, "chunk_size": head[1] % 4 + 1, "per_schedule": head[2] % 3 + 1,
            "ordered": not head[3] & 1, "extras": bool(head[3] & 2)}, examples


def encode(processes, chunk_size, per_schedule, ordered, extras, behaviours):
    flags = (0 if ordered else 1) | (2 if extras else 0)
    return bytes([processes - 1, chunk_size - 1, per_schedule - 1, flags]) + bytes(behaviours)


def _local(loom, examples, per_schedule):
    """(message, extras) of each schedule, woven in this process."""
    out = []
    for start in range(0, len(examples), per_schedule):
        w = loom.make_weaver()
        extras = [weave_program(w, e) for e in examples[start:start + per_schedule]]
        out.append((w.serialize(), extras))
    return out


class WeaveFaultsKind(Kind):
    name = "weave_faults"
    seconds_share = 0.5  # half the CI run's time of the other kinds
    rejections = REJECTIONS + FAULTS
    deadline_s = None  # the waits are bounded by parallel_weave's timeout, and hangs by the supervisor's

    def seeds(self):
        return [encode(2, 2, 1, True, True, [OK] * 7), encode(1, 3, 2, False, False, [OK, SLOW] * 4),
                encode(2, 1, 3, True, False, [OK] * 5), encode(1, 4, 1, False, True, [SLOW] * 3)]

    def mutate(self, rng, data):
        b = bytearray(data)
        for _ in range(rng.choice([1, 1, 2])):
            r = rng.random()
            if r < 0.2:
                b[rng.randrange(4)] = rng.randrange(256)
            elif r < 0.6 and len(b) > 4:
                b[rng.randrange(4, len(b))] = rng.choice([RAISE, EXIT, KILL, HANG, UNPICKLABLE, SLOW, OK])
            elif r < 0.8:
                b.insert(rng.randrange(4, len(b) + 1), rng.randrange(len(BEHAVIOURS)))
            elif len(b) > 4:
                del b[rng.randrange(4, len(b))]
        out = bytes(b)
        return Mutator(rng).damage(out) if rng.random() < 0.02 else out

    def consume(self, data):
        from fuzz.targets import _loom  # the fixture loom, defined once
        options, examples = decode(data)
        loom = _loom()
        extra = td.TensorSpec([None] if options["per_schedule"] > 1 else [], td.int64)
        ds = td.data.experimental.parallel_weave(
            examples, weave_program, loom, processes=options["processes"], ordered=options["ordered"],
            examples_per_schedule=options["per_schedule"], chunk_size=options["chunk_size"],
            extra_signature=extra if options["extras"] else None, start_method=_start_method(),
            timeout=CHUNK_TIMEOUT_S)
        faulty = {i for i, b in examples if b not in (OK, SLOW)}
        try:
            got = [_element(e) for e in ds]
        except FAULTS as e:
            _check_fault(e, faulty, examples)
            raise
        finally:
            ds.close()
        if faulty:
            raise Wrong(f"examples {sorted(faulty)} fault, yet the iteration ended normally")
        want = [(m, np.array(x if options["per_schedule"] > 1 else x[0], np.int64) if options["extras"] else None)
                for m, x in _local(loom, examples, options["per_schedule"])]
        if not options["ordered"]:
            got, want = sorted(got, key=_key), sorted(want, key=_key)
        if len(got) != len(want) or any(g[0] != w[0] or not _same_extra(g[1], w[1]) for g, w in zip(got, want)):
            raise Wrong(f"{len(got)} schedules differ from the {len(want)} woven locally")


def _start_method():
    if "forkserver" in multiprocessing.get_all_start_methods():
        multiprocessing.set_forkserver_preload(["treadle", "fuzz.weave_faults"])
        return "forkserver"
    return "spawn"


def _element(e):
    if isinstance(e, tuple):
        return bytes(e[0].numpy()), e[1].numpy()
    return bytes(e.numpy()), None


def _key(item):
    return item[0]


def _same_extra(a, b):
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _check_fault(error, faulty, examples):
    text = str(error)
    if FN_NAME not in text:
        raise Wrong(f"{type(error).__name__} does not name weave_fn: {text[:300]}") from None
    if not faulty:
        raise Wrong(f"no example faults, yet {type(error).__name__}: {text[:300]}") from None
    if isinstance(error, WeaveError):
        named = {i for i, b in examples if b in (RAISE, UNPICKLABLE) and f"failed on example {i} in" in text}
        if not named:
            raise Wrong(f"WeaveError names no example that raises or returns an unpicklable value: {text[:300]}")
