"""Regression test of the third reliability audit's item 12: a hung
parallel_weave worker blocks neither close() nor the interpreter's exit."""

import pytest

from test_audit3_data import run_script


# ------------------------------------------------------------------ item 12: a hung parallel_weave worker

HUNG_WORKER = """
import os, signal, threading, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "loom"))
import treadle as td
from loom_testlib import vector_loom
from audit3_helpers import weave_hangs_on_3
loom, _, _ = vector_loom()
ds = td.data.experimental.parallel_weave(range(8), weave_hangs_on_3, loom, processes=2, chunk_size=1)
it = iter(ds)
for _ in range(3):
    next(it)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    next(it)  # example 3 never comes
except KeyboardInterrupt:
    print("interrupted", flush=True)
{after}
print("done", flush=True)
"""


@pytest.mark.parametrize("after", ["ds.close(); print('closed', flush=True)", "pass"])
def test_item12_hung_weave_worker_neither_blocks_close_nor_exit(after):
    r = run_script(HUNG_WORKER.replace("{after}", after), timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "interrupted" in r.stdout and "done" in r.stdout, (r.stdout, r.stderr[-3000:])
    if "close" in after:
        assert "closed" in r.stdout
