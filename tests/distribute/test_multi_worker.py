"""td.distribute.MultiWorkerMirroredStrategy as a two-process MPI world,
started with the launcher of the MPI library installed beside Python
(pip's mpich: `mpiexec`), running the programs of mpi_programs.py."""

import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"


def _launch(program, tmp_path, timeout=180):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    start = time.monotonic()
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "tests.distribute.mpi_programs", program,
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - start


def _passed(done):
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "RANK 0 OK" in out and "RANK 1 OK" in out, out


def test_the_launcher_is_installed():
    assert MPIEXEC.exists(), "mpiexec is missing: scripts/setup.sh installs treadle[distribute] (mpi4py, mpich)"


def test_two_processes_equal_one_process_on_the_whole_batch(tmp_path):
    _passed(_launch("equivalence", tmp_path)[0])


def test_the_collectives_match_numpy_with_uneven_rows(tmp_path):
    _passed(_launch("collectives", tmp_path)[0])


def test_processes_with_other_variables_all_raise(tmp_path):
    done = _launch("different_variables", tmp_path)[0]
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "RANK 0 CAUGHT" in out and "RANK 1 CAUGHT" in out, out


def test_mirrored_copies_stay_identical_over_100_steps(tmp_path):
    _passed(_launch("identical_after_100_steps", tmp_path)[0])


def test_checkpoint_saved_by_the_chief_resumes_everywhere(tmp_path):
    _passed(_launch("checkpoint_resume", tmp_path)[0])


def test_a_replica_that_raises_stops_the_other_naming_it(tmp_path):
    done, seconds = _launch("replica_raises", tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    # replica 0's error names replica 1 and carries its traceback
    caught = [line for line in out.splitlines() if line.startswith("RANK 0 CAUGHT")]
    assert caught, out
    assert "replica 1 (process" in caught[0] and "raised:" in caught[0], out
    assert 'raise ZeroDivisionError("the step of replica one divided by zero")' in out, out
    assert seconds < 60, seconds


def test_a_replica_that_is_killed_does_not_leave_the_other_waiting(tmp_path):
    done, seconds = _launch("replica_killed", tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "RANK 0 OK" not in out
    # treadle notices the dead process, or the launcher ends the job first
    assert "replica 1 (process" in out and "is gone" in out or "BAD TERMINATION" in out, out
    assert seconds < 60, seconds
