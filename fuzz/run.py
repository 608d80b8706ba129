"""The fuzzing supervisor: feeds inputs to a worker process (fuzz/worker.py)
and classifies each as rejected, accepted, crashed (the worker died), hung
(no answer within --timeout), wrong (an unexpected exception or an oracle
failure) or oom (MemoryError under the worker's memory cap).

    python -m fuzz.run --corpus                      # every seed and regression input, once
    python -m fuzz.run --seconds 20 --seed 1         # mutation fuzzing, 20 s per kind
    python -m fuzz.run --kinds saved_loom --seconds 60
    python -m fuzz.run --write-seeds                 # regenerate fuzz/corpus/<kind>/seed-*.bin

Inputs that crashed, hung or went wrong are written to --findings-dir
(fuzz/findings/<kind>/); once fixed, move them to fuzz/regressions/<kind>/,
which the test suite replays (tests/test_fuzz_corpus.py). Exit status 1 when
any input crashed, hung or went wrong."""

import argparse
import collections
import hashlib
import os
import selectors
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")
REGRESSIONS = os.path.join(HERE, "regressions")
# "known": an oracle failure already reported, with a reproducer in fuzz/known/ (not a failure of the run)
OUTCOMES = ("inputs", "rejected", "accepted", "crashed", "hung", "wrong", "oom", "known")


class Worker:
    def __init__(self):
        self.proc = None
        self._buf = b""

    def start(self):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        self._buf = b""
        line = self._readline(180)
        if line != "ready":
            raise RuntimeError(f"the fuzz worker did not start ({line!r})")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def _readline(self, timeout):
        """A line of the worker's output; None if it died, 'TIMEOUT' after `timeout` s."""
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "TIMEOUT"
                if not sel.select(left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self._buf += chunk
        finally:
            sel.close()
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def run(self, kind, data, timeout):
        """(outcome, detail) for one input."""
        if self.proc is None:
            self.start()
        try:
            self.proc.stdin.write(f"{kind} {len(data)}\n".encode() + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._readline(timeout)
        if line is None or line == "TIMEOUT":
            self.stop() if line == "TIMEOUT" else None
            code = self.proc.wait() if self.proc else None
            self.proc = None
            return ("hung", f"no answer in {timeout} s") if line == "TIMEOUT" else ("crashed", f"exit status {code}")
        outcome, _, detail = line.partition(": ")
        return outcome, detail


def corpus_files(kind, dirs=(CORPUS, REGRESSIONS)):
    out = []
    for d in dirs:
        path = os.path.join(d, kind)
        if os.path.isdir(path):
            out.extend(os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".bin"))
    return out


def _save_finding(findings_dir, kind, outcome, data, detail):
    d = os.path.join(findings_dir, kind)
    os.makedirs(d, exist_ok=True)
    name = f"{outcome}-{hashlib.sha1(data).hexdigest()[:12]}"
    with open(os.path.join(d, name + ".bin"), "wb") as f:
        f.write(data)
    with open(os.path.join(d, name + ".txt"), "w") as f:
        f.write(detail + "\n")


def fuzz_kind(worker, kind, args, counts):
    from fuzz import targets
    rng = targets.rng_for(args.seed, kind)
    pool = [open(p, "rb").read() for p in corpus_files(kind)]
    grown = []
    end = time.monotonic() + args.seconds * targets.KINDS[kind].seconds_share
    while time.monotonic() < end and (args.max_inputs is None or counts["inputs"] < args.max_inputs):
        parent = rng.choice(pool + grown)
        data = targets.KINDS[kind].mutate(rng, parent)
        record(worker, kind, data, args, counts)
        if counts["_last"] == "accepted" and len(grown) < 256 and rng.random() < 0.2:
            grown.append(data)  # accepted mutants seed further mutation


def record(worker, kind, data, args, counts):
    outcome, detail = worker.run(kind, data, args.timeout)
    counts["inputs"] += 1
    counts[outcome if outcome in OUTCOMES else "wrong"] += 1
    counts["_last"] = outcome
    if outcome in ("crashed", "hung", "wrong"):
        print(f"  {kind}: {outcome}: {detail[:300]}", file=sys.stderr)
        _save_finding(args.findings_dir, kind, outcome, data, detail)


def write_seeds():
    sys.path.insert(0, ROOT)
    from fuzz import targets
    for name, kind in targets.KINDS.items():
        d = os.path.join(CORPUS, name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.startswith("seed-"):
                os.unlink(os.path.join(d, f))
        for i, data in enumerate(kind.seeds()):
            with open(os.path.join(d, f"seed-{i:02d}.bin"), "wb") as f:
                f.write(data)
        print(f"{name}: {i + 1} seeds")


def main(argv=None):
    sys.path.insert(0, ROOT)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default="all", help="comma-separated kinds, or all")
    ap.add_argument("--corpus", action="store_true", help="replay the seeds and regressions once, no mutation")
    ap.add_argument("--seconds", type=float, default=20.0,
                    help="mutation fuzzing time per kind (times the kind's seconds_share)")
    ap.add_argument("--max-inputs", type=int, default=None, help="at most this many mutants per kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before an input counts as hung")
    ap.add_argument("--findings-dir", default=os.path.join(HERE, "findings"))
    ap.add_argument("--write-seeds", action="store_true")
    args = ap.parse_args(argv)
    if args.write_seeds:
        write_seeds()
        return 0
    from fuzz.targets import KINDS  # noqa: F401 - only the names; the worker imports treadle itself
    kinds = list(KINDS) if args.kinds == "all" else args.kinds.split(",")
    table, bad = [], 0
    for kind in kinds:
        # A fresh worker per kind: what one kind's inputs leave in the worker
        # (allocator fragmentation under the memory cap, caches) must not turn
        # the next kind's inputs into "oom" (a 60 s run of all kinds in one
        # worker ended with every weave_csr input oom; alone it had none).
        worker = Worker()
        counts = collections.Counter()
        try:
            if args.corpus:
                for path in corpus_files(kind):
                    with open(path, "rb") as f:
                        record(worker, kind, f.read(), args, counts)
            else:
                fuzz_kind(worker, kind, args, counts)
        finally:
            worker.stop()
        table.append((kind, [counts[o] for o in OUTCOMES]))
        bad += counts["crashed"] + counts["hung"] + counts["wrong"]
        print(f"{kind:15s} " + " ".join(f"{o}={counts[o]}" for o in OUTCOMES), flush=True)
    print("\n| kind | " + " | ".join(OUTCOMES) + " |\n|" + " --- |" * (len(OUTCOMES) + 1))
    for kind, row in table:
        print(f"| {kind} | " + " | ".join(str(v) for v in row) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
