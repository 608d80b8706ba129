"""The fuzzers' seeds and regression inputs (fuzz/corpus, fuzz/regressions):
every input that ever crashed, hung or misbehaved is replayed in a supervised
worker process and must now be rejected with a Python exception or run to a
result its oracle accepts."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fuzz import run  # noqa: E402


def test_every_kind_has_seeds():
    from fuzz.targets import KINDS
    for kind in KINDS:
        assert run.corpus_files(kind, dirs=(run.CORPUS,)), kind


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    findings = tmp_path_factory.mktemp("findings")
    proc = subprocess.run([sys.executable, "-m", "fuzz.run", "--corpus", "--findings-dir", str(findings)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc


def test_corpus_replays_without_crash_hang_or_wrong_result(replay):
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-3000:]
    rows = [line for line in replay.stdout.splitlines() if line.startswith("| ") and "kind" not in line and "---" not in line]
    from fuzz.targets import KINDS
    assert len(rows) == len(KINDS)
    for row in rows:
        kind, inputs, rejected, accepted, crashed, hung, wrong, oom, known = [
            c.strip() for c in row.strip("|").split("|")]
        assert int(inputs) > 0 and (crashed, hung, wrong, oom) == ("0", "0", "0", "0"), row


def test_the_regressions_are_rejected_where_their_input_is_wrong():
    """Each finding's input is refused, except the deep saved loom, which now runs bounded."""
    sys.path.insert(0, ROOT)
    import warnings
    from fuzz import targets
    expect_accepted = {"finding3-max-depth-2-20", "empty-file", "protobuf-tag-beyond-32-bits"}
    for kind in targets.KINDS:
        for path in run.corpus_files(kind, dirs=(run.REGRESSIONS,)):
            name = os.path.basename(path)[:-4]
            with open(path, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome = targets.consume(kind, f.read())
            assert outcome == "accepted" if name in expect_accepted else outcome.startswith("rejected"), (name,
                                                                                                         outcome)


def test_every_seed_is_accepted():
    """A seed the current treadle rejects (say, a WeaverMessage made before a
    change of the loom's fingerprint) would make its kind's fuzzing explore
    only the rejection path: regenerate with `python -m fuzz.run --write-seeds`."""
    import warnings
    from fuzz import targets
    for kind in targets.KINDS:
        for path in run.corpus_files(kind, dirs=(run.CORPUS,)):
            with open(path, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert targets.consume(kind, f.read()) == "accepted", (kind, os.path.basename(path))


def test_known_findings_still_reproduce():
    """fuzz/known/ holds reproducers of findings reported to code this fuzzing
    does not own. Each must still show its finding; once fixed (rejected, or
    accepted with a right result), move it to fuzz/regressions/<kind>/ and
    drop its entry from fuzz/known/README.md."""
    import warnings
    from fuzz import targets
    known = os.path.join(ROOT, "fuzz", "known")
    for kind in targets.KINDS:
        for path in run.corpus_files(kind, dirs=(known,)):
            with open(path, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome = targets.consume(kind, f.read())
            assert outcome.startswith("known: "), (os.path.basename(path), outcome)
