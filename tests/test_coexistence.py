"""treadle and TensorFlow in one process: each keeps its own protobuf (our
core is loaded with RTLD_DEEPBIND and binds its symbols at load time)."""

import subprocess
import sys

import pytest

ORDERS = [("treadle", "tensorflow"), ("tensorflow", "treadle")]


@pytest.mark.parametrize("order", ORDERS, ids=["treadle-first", "tensorflow-first"])
def test_protobuf_users_coexist(order):
    pytest.importorskip("tensorflow")
    script = f"""
import importlib
mods = {{n: importlib.import_module(n) for n in {list(order)!r}}}
td, tf = mods["treadle"], mods["tensorflow"]
t = td.constant([1.5, 2.0])
assert td._core.tensor_from_proto_bytes(td._core.tensor_to_proto_bytes(t)).numpy().tolist() == [1.5, 2.0]
assert tf.make_ndarray(tf.make_tensor_proto([1, 2])).tolist() == [1, 2]
f = td.function(lambda x: x * 2.0)
assert f(t).numpy().tolist() == [3.0, 4.0]
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("ok")
