"""Input pipelines: td.data against tf.data, and
the TreeLSTM fed by schedules woven per node in Python by worker processes.

    python -m bench.data_pipelines              # from the repository root
    python -m bench.data_pipelines --quick      # fewer trees and rounds

Figures:
- pipeline overhead: elements/s of from_tensor_slices + map + batch +
  prefetch over small tensors, td.data and tf.data (when TensorFlow is
  installed) in interleaved rounds;
- weaving throughput: trees/s woven per node (one Python Weaver call per
  node) and serialized, by parallel_weave with 1 and 2 worker processes (the
  workers get tree indices and read the trees file themselves), the weaving
  drained on its own (no training), and in this process for reference;
- the costs per schedule of each side of parallel_weave, measured in one
  process (weaving, the worker's pickling, the consumer), and the speedup
  they allow 2 workers on 2 idle cores (per_schedule_costs);
- training fed by the parallel pipeline against the serial loop (weave, then
  step), and the share of the step the trainer spends waiting for schedules;
- reading schedule files through TFRecordDataset(...).batch(256) against a
  batch-256 inference step.
"""

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402

import numpy as np  # noqa: E402

import treadle as td  # noqa: E402
from bench.treelstm.data import load_trees  # noqa: E402
from bench.treelstm.model import EMBED, HIDDEN, initial_weights  # noqa: E402
from bench.treelstm.treadle_impl import TreeLSTM  # noqa: E402

EMBED_TS = td.loom.TypeShape(td.float32, (EMBED,), "embedding")


def weave_tree_per_node(weaver, tree):
    """Fold style: one Weaver call per node, children before parents; the
    root's h is the output. Returns the label (the example's extra value)."""
    states = [None] * tree.size
    for k in range(tree.size):
        if tree.left[k] < 0:
            states[k] = weaver.leaf(weaver.batch_input(EMBED_TS, max(int(tree.token[k]), 0)))
        else:
            c_l, h_l = states[tree.left[k]]
            c_r, h_r = states[tree.right[k]]
            states[k] = weaver.node(c_l, h_l, c_r, h_r)
    weaver.add_output(states[tree.size - 1][1])
    return tree.label


_TREES = {}


def weave_tree_by_index(weaver, index):
    """weave_tree_per_node of tree `index` of the bundled file, which each
    worker loads once: the examples sent to a worker are then plain ints, so
    the measure is the weaving, not the pickling of trees."""
    trees = _TREES.get("trees")
    if trees is None:
        trees = _TREES["trees"] = load_trees()
    return weave_tree_per_node(weaver, trees[index])


# ---------------------------------------------------------------- pipeline overhead
def pipeline_overhead(rounds, n=20000):
    tf = common.optional_import("tensorflow")
    x = np.random.default_rng(0).random((n, 8), dtype=np.float32)

    def run_td():
        ds = td.data.Dataset.from_tensor_slices(x).map(lambda v: v * 2.0 + 1.0).batch(32).prefetch(td.data.AUTOTUNE)
        t = time.perf_counter()
        for _ in ds:
            pass
        return n / (time.perf_counter() - t)

    def run_tf():
        ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: v * 2.0 + 1.0).batch(32).prefetch(tf.data.AUTOTUNE)
        t = time.perf_counter()
        for _ in ds:
            pass
        return n / (time.perf_counter() - t)

    run_td()
    if tf is not None:
        run_tf()
    td_rates, tf_rates = [], []
    for _ in range(rounds):
        td_rates.append(run_td())
        if tf is not None:
            tf_rates.append(run_tf())
    out = {"elements": n, "treadle_elements_per_s": statistics.median(td_rates),
           "tf_data_elements_per_s": statistics.median(tf_rates) if tf_rates else None,
           "tensorflow": tf.__version__ if tf is not None else None}
    out["ratio"] = (statistics.median(a / b for a, b in zip(td_rates, tf_rates)) if tf_rates else None)
    return out


# ---------------------------------------------------------------- weaving
def weaving_throughput(model, trees, rounds):
    """Trees/s woven (and serialized), one schedule per tree: in this process,
    and drained from parallel_weave with 1 and 2 worker processes.

    On a shared machine the workers get less than a core each; so each round
    also records the CPU time the workers got (from /proc), and with it the
    cores they obtained and the trees woven per worker CPU-second. Equal
    trees per CPU-second with 1 and 2 workers means the weaving scales with
    the cores it gets, and a speedup below 2 is the machine's share."""
    out = {}
    t = time.perf_counter()
    for tree in trees:
        weaver = model.loom.make_weaver()
        weave_tree_per_node(weaver, tree)
        weaver.serialize()
    out["in_process_trees_per_s"] = len(trees) / (time.perf_counter() - t)
    for processes in (1, 2):
        ds = td.data.experimental.parallel_weave(range(len(trees)), weave_tree_by_index, model.loom,
                                                 processes=processes, chunk_size=64)
        for _ in ds:  # starts the workers
            pass
        pids = list(ds._pool._processes)
        rates, cores, per_cpu_s = [], [], []
        for _ in range(rounds):
            cpu = _cpu_seconds(pids)
            t = time.perf_counter()
            for _ in ds:
                pass
            wall = time.perf_counter() - t
            cpu = _cpu_seconds(pids) - cpu
            rates.append(len(trees) / wall)
            cores.append(cpu / wall)
            per_cpu_s.append(len(trees) / cpu)
        ds.close()
        out[f"workers_{processes}_trees_per_s"] = statistics.median(rates)
        out[f"workers_{processes}_cores_obtained"] = statistics.median(cores)
        out[f"workers_{processes}_trees_per_cpu_s"] = statistics.median(per_cpu_s)
    out["speedup_2_over_1"] = out["workers_2_trees_per_s"] / out["workers_1_trees_per_s"]
    return out


def _cpu_seconds(pids):
    """User + system CPU seconds of these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


class _FinishedWork:
    """An executor whose chunks were woven beforehand (pickled, as a worker
    sends them): parallel_weave's consumer then runs alone, unpickling
    included, with no worker and no pipe."""

    def __init__(self, pickled):
        self._pickled = iter(pickled)

    def submit(self, fn, *args):
        import concurrent.futures
        import pickle
        future = concurrent.futures.Future()
        future.set_result(pickle.loads(next(self._pickled)))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def per_schedule_costs(model, trees, rounds, chunk=64):
    """What one schedule costs each side of parallel_weave, measured in this
    process, and the speedup 2 workers can reach from them.

    A worker spends W (weaving and serializing a tree) plus O (its share of
    pickling the chunk's result); the consumer spends C (unpickling, the
    fingerprint check, the element's tensor, the iterator). With 1 worker the
    consumer runs beside it on the other core, so trees/s = 1 / (W + O); with
    2 workers the 3 processes share 2 cores: at best 2 / (W + O + C). The
    ceiling is 2 (W + O) / (W + O + C), on a machine whose 2 cores are idle.
    The costs are CPU time (time.process_time), which other processes'
    load does not inflate the way it does wall time."""
    import pickle

    from treadle.data import weaving
    indices = list(range(len(trees)))
    state = weaving._WorkerState(model.loom.weaving_loom(), weave_tree_by_index)
    weave_tree_by_index(model.loom.make_weaver(), 0)  # loads the trees file, as a worker does once
    w_s, o_s, c_s = [], [], []
    for _ in range(rounds):
        t = time.process_time()
        results = [weaving.weave_chunk(i, indices[i:i + chunk], 1, state) for i in range(0, len(indices), chunk)]
        w_s.append((time.process_time() - t) / len(indices))
        t = time.process_time()
        pickled = [pickle.dumps(r, pickle.HIGHEST_PROTOCOL) for r in results]
        o_s.append((time.process_time() - t) / len(indices))
        ds = td.data.experimental.parallel_weave(indices, weave_tree_by_index, model.loom, processes=1,
                                                 chunk_size=chunk)
        ds._pool = _FinishedWork(pickled)
        t = time.process_time()
        for _ in ds:
            pass
        c_s.append((time.process_time() - t) / len(indices))
    w, o, c = statistics.median(w_s), statistics.median(o_s), statistics.median(c_s)
    return {"weave_us": w * 1e6, "worker_overhead_us": o * 1e6, "consumer_us": c * 1e6,
            "ceiling_2_over_1": 2 * (w + o) / (w + o + c)}


def training(model, trees, batch, processes):
    """The serial loop (weave a batch in this process, then step) and the
    pipeline (batches woven by workers, prefetched), over the same trees."""
    batches = [trees[i:i + batch] for i in range(0, len(trees) - batch + 1, batch)]
    # serial: weave then step
    weave_s = step_s = 0.0
    model.train_step(*_serial_batch(model, batches[0]))  # traces the step
    for b in batches:
        t0 = time.perf_counter()
        schedule, labels = _serial_batch(model, b)
        t1 = time.perf_counter()
        model.train_step(schedule, labels)
        t2 = time.perf_counter()
        weave_s += t1 - t0
        step_s += t2 - t1
    serial = {"trees_per_s": len(batches) * batch / (weave_s + step_s), "weave_share": weave_s / (weave_s + step_s)}
    # pipeline: workers weave a whole batch into one schedule, two batches ahead
    ds = td.data.experimental.parallel_weave(
        [t for b in batches for t in b], weave_tree_per_node, model.loom, processes=processes,
        examples_per_schedule=batch, chunk_size=1, extra_signature=td.TensorSpec([None], td.int32))
    for _ in ds:  # starts the workers
        pass
    it = iter(ds.prefetch(2))
    wait_s = step_s = 0.0
    t_start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        element = next(it, None)
        t1 = time.perf_counter()
        if element is None:
            break
        model.train_step(*element)
        step_s += time.perf_counter() - t1
        wait_s += t1 - t0
    total = time.perf_counter() - t_start
    ds.close()
    pipelined = {"trees_per_s": len(batches) * batch / total, "wait_share_of_step": wait_s / step_s,
                 "processes": processes}
    return {"batch": batch, "batches": len(batches), "serial": serial, "pipelined": pipelined}


def _serial_batch(model, trees):
    weaver = model.loom.make_weaver()
    labels = [weave_tree_per_node(weaver, t) for t in trees]
    return td.constant(weaver.serialize()), td.constant(np.asarray(labels, np.int32))


# ---------------------------------------------------------------- schedule files
def schedule_files(model, trees, batch, rounds):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "schedules.tfrecord")
        td.loom.write_schedules(path, model.weave_each(trees))
        ds = td.data.TFRecordDataset(path).batch(batch, drop_remainder=True)
        batches = list(ds)
        model.logits_of(batches[0])  # traces
        read, infer = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            n = sum(1 for _ in ds)
            read.append((time.perf_counter() - t) / n)
            t = time.perf_counter()
            for b in batches:
                model.logits_of(b).numpy()
            infer.append((time.perf_counter() - t) / len(batches))
    r, i = statistics.median(read), statistics.median(infer)
    return {"batch": batch, "read_and_batch_ms": r * 1e3, "inference_step_ms": i * 1e3, "read_share": r / i}


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trees and rounds")
    parser.add_argument("--out-dir", default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    trees = load_trees(limit=1024 if args.quick else 4096)
    model = TreeLSTM(initial_weights())
    payload = {"machine": common.machine_info(), "load_average": os.getloadavg()}
    payload["pipeline_overhead"] = pipeline_overhead(rounds)
    payload["weaving"] = weaving_throughput(model, trees, rounds)
    payload["weaving_costs"] = per_schedule_costs(model, trees, rounds)
    payload["training"] = training(model, trees, 256, processes=2)
    payload["schedule_files"] = schedule_files(model, trees, 256, rounds)
    payload["load_average_after"] = os.getloadavg()
    common.write_report("data_pipelines", payload, markdown(payload), args.out_dir)
    print(markdown(payload))


def markdown(p):
    o, w, t, s = p["pipeline_overhead"], p["weaving"], p["training"], p["schedule_files"]
    c = p["weaving_costs"]
    tf_rate = "—" if o["tf_data_elements_per_s"] is None else f"{o['tf_data_elements_per_s']:,.0f}"
    lines = [
        "# Input pipelines", "",
        f"Machine: {p['machine']['cpu_model']}, {p['machine']['cores']} cores, load average "
        f"{', '.join(f'{x:.2f}' for x in p['load_average'])}.", "",
        "| measurement | treadle | peer | ratio / share | target |", "| --- | ---: | ---: | ---: | --- |",
        f"| from_tensor_slices+map+batch(32)+prefetch, elements/s | {o['treadle_elements_per_s']:,.0f} | "
        f"tf.data {tf_rate} | {common.fmt_ratio(o['ratio'])} | ≥ 1× |",
        f"| per-node weaving, trees/s, 1 worker process | {w['workers_1_trees_per_s']:,.0f} | in process "
        f"{w['in_process_trees_per_s']:,.0f} | | |",
        f"| per-node weaving, trees/s, 2 worker processes | {w['workers_2_trees_per_s']:,.0f} | 1 worker "
        f"{w['workers_1_trees_per_s']:,.0f} | {w['speedup_2_over_1']:.2f}× | ≥ 1.7× |",
        f"| cores the workers obtained (1 / 2 workers); trees per worker CPU-second | "
        f"{w['workers_1_cores_obtained']:.2f} / {w['workers_2_cores_obtained']:.2f} | "
        f"{w['workers_1_trees_per_cpu_s']:,.0f} / {w['workers_2_trees_per_cpu_s']:,.0f} | | |",
        f"| CPU per schedule, in one process: weave W / worker's pickling O / consumer C | {c['weave_us']:.1f} / "
        f"{c['worker_overhead_us']:.1f} / {c['consumer_us']:.1f} µs | ceiling 2(W+O)/(W+O+C) on 2 idle cores | "
        f"{c['ceiling_2_over_1']:.2f}× | ≥ 1.7× |",
        f"| TreeLSTM training (batch {t['batch']}), trees/s, parallel pipeline | "
        f"{t['pipelined']['trees_per_s']:,.0f} | serial loop {t['serial']['trees_per_s']:,.0f} | "
        f"{t['pipelined']['trees_per_s'] / t['serial']['trees_per_s']:.2f}× | |",
        f"| time the step waits for schedules | {t['pipelined']['wait_share_of_step']:.1%} of a step | serial: "
        f"weaving is {t['serial']['weave_share']:.1%} of the loop | | ≤ 5% |",
        f"| reading schedule files (TFRecordDataset.batch({s['batch']})) | {s['read_and_batch_ms']:.2f} ms | "
        f"inference step {s['inference_step_ms']:.2f} ms | {s['read_share']:.1%} | ≤ 5% |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
