"""Data-parallel training of the binary TreeLSTM (the bundled SST-like trees,
Tai et al. sizes) with td.distribute, against PyTorch DistributedDataParallel.

    python bench/distribute_treelstm.py                  # 3 rounds, 12 timed steps each
    python bench/distribute_treelstm.py --rounds 5 --steps 20

Each replica trains on its own 256 trees a step (weak scaling: two replicas
train on 512 trees a step). Configurations, each in fresh processes with one
BLAS thread per replica, interleaved round by round:
- treadle, 1 replica (one process, no strategy);
- treadle, MirroredStrategy, 2 replicas as threads of one process;
- treadle, MultiWorkerMirroredStrategy, 2 processes under mpiexec;
- PyTorch batched by height, 1 process; and DDP (gloo), 2 processes;
- for each engine, two 1-replica processes side by side with no
  communication: the ceiling that two replicas can reach on this machine.
Reported: trees/s (median over rounds), scaling efficiency (2-replica
trees/s over twice the 1-replica trees/s), the bytes and time of treadle's
collectives per step, and a projection to 8 and 64 replicas from the measured
compute time and a ring all-reduce on a stated network."""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

PER_REPLICA_BATCH = 256
CONFIGS = ["treadle 1 replica", "treadle mirrored 2", "treadle mpi 2", "treadle 2 alone", "torch 1 process",
           "torch ddp 2", "torch 2 alone"]
# "2 alone": two 1-replica processes side by side, each training on its own
# with no communication at all. No data-parallel run on this machine can beat
# their summed trees/s: it is the machine's ceiling for two replicas (two
# processes share the L3 cache and the memory bandwidth).


# ---------------------------------------------------------------- workers (run in child processes)

def _load_batches(rank, world, steps, batch):
    """This replica's `batch` trees for each step: every step's world * batch
    trees are shared out with equal node counts (as near as the sizes allow),
    so that no replica waits for one with more nodes to compute."""
    from bench.treelstm.data import DEFAULT_PATH, load_trees
    trees = load_trees(DEFAULT_PATH)
    need = (steps + 2) * world * batch
    trees = (trees * (need // len(trees) + 1))[:need]
    return [balanced_shares(trees[k * world * batch:(k + 1) * world * batch], world)[rank] for k in range(steps + 2)]


def balanced_shares(trees, world):
    """`trees` cut into `world` shares of equal length whose node counts are
    balanced: the largest trees first, each to the share with the fewest nodes
    that still has room."""
    per_share = len(trees) // world
    shares, nodes = [[] for _ in range(world)], [0] * world
    for tree in sorted(trees, key=lambda t: -t.size):
        open_shares = [r for r in range(world) if len(shares[r]) < per_share]
        r = min(open_shares, key=lambda j: nodes[j])
        shares[r].append(tree)
        nodes[r] += tree.size
    return shares


def _timed(step, batches):
    """Wall-clock and CPU seconds (this process's, all its threads) of the
    timed steps, after two warm-up steps."""
    for b in batches[:2]:
        step(b)
    start, cpu = time.perf_counter(), time.process_time()
    for b in batches[2:]:
        step(b)
    return time.perf_counter() - start, time.process_time() - cpu


def _treadle_worker(kind, steps, batch):
    import treadle as td
    from bench.treelstm.model import initial_weights
    from bench.treelstm.treadle_impl import TreeLSTM

    if kind == "single":
        model = TreeLSTM(initial_weights())
        seconds, cpu = _timed(lambda b: model.train(model.weave(b), [t.label for t in b]),
                              _load_batches(0, 1, steps, batch))
        return {"seconds": seconds, "cpu_seconds": cpu, "trees": steps * batch}
    if kind == "mirrored":
        cpu = td.config.list_physical_devices("CPU")[0]
        td.config.set_logical_device_configuration(cpu, [td.config.LogicalDeviceConfiguration()] * 2)
        strategy = td.distribute.MirroredStrategy()
        with strategy.scope():
            model = TreeLSTM(initial_weights())
        shards = [_load_batches(r, 2, steps, batch) for r in range(2)]

        def replica_step(trees):
            return model.train(model.weave(trees), [t.label for t in trees])

        def step(k):
            return strategy.run(replica_step, args=(td.distribute.PerReplica([shards[0][k], shards[1][k]]),))

        seconds, cpu = _timed(step, list(range(steps + 2)))
        return {"seconds": seconds, "cpu_seconds": cpu, "trees": 2 * steps * batch,
                "collectives": _per_step(strategy.stats, 1)}
    strategy = td.distribute.MultiWorkerMirroredStrategy()
    rank, world = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    with strategy.scope():
        model = TreeLSTM(initial_weights())
    batches = _load_batches(rank, world, steps, batch)

    def mpi_step(trees):
        return strategy.run(lambda: model.train(model.weave(trees), [t.label for t in trees]))

    for b in batches[:2]:
        mpi_step(b)
    strategy._group.barrier()
    strategy.stats.reset()
    start, cpu = time.perf_counter(), time.process_time()
    for b in batches[2:]:
        mpi_step(b)
    strategy._group.barrier()
    seconds = time.perf_counter() - start
    cpu = float(strategy._group.all_gather_equal(np.array(time.process_time() - cpu)).sum())   # all processes'
    collectives = _per_step(strategy.stats, steps)
    collectives["transfer_seconds"] = _transfer_seconds(strategy._group, model, batches[-1])
    return {"seconds": seconds, "cpu_seconds": cpu, "trees": world * steps * batch, "rank": rank,
            "collectives": collectives}


def _transfer_seconds(group, model, trees, repeats=7):
    """Seconds of the collectives of one step's gradients (the dense weights
    all-reduced, the embedding rows of this replica's leaves gathered) when
    every replica is already waiting: the median over `repeats` rounds, each
    started after a barrier, so that no replica waits for a slower one."""
    from bench.treelstm.model import EMBED
    dense = [v.numpy() for k, v in model.vars.items() if k != "embedding"]
    leaves = sum(t.num_leaves for t in trees)
    rows = [np.ones((leaves, EMBED), np.float32), np.arange(leaves, dtype=np.int64)]
    times = []
    for _ in range(repeats):
        group.barrier()
        start = time.perf_counter()
        group.all_reduce_and_gather(dense, None, rows)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _per_step(stats, steps):
    return {"bytes_per_step": stats.bytes / steps, "seconds_per_step": stats.seconds / steps,
            "calls_per_step": stats.calls / steps}


def _torch_worker(kind, steps, batch):
    import torch
    import torch.nn.functional as F
    from bench.treelstm.model import initial_weights
    from bench.treelstm.torch_peers import TorchTreeLSTM

    torch.set_num_threads(1)
    rank, world = 0, 1
    model = TorchTreeLSTM(initial_weights())
    forward = model.batched_logits
    if kind == "ddp":
        import torch.distributed as dist
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", rank=rank, world_size=world)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        forward = ddp.module.batched_logits
        model_for_step = ddp
    else:
        model_for_step = model
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def step(trees):
        opt.zero_grad()
        if kind == "ddp":   # DDP all-reduces in backward only when its forward ran through the wrapper
            logits = model_for_step(trees)
        else:
            logits = forward(trees)
        F.cross_entropy(logits, torch.tensor([t.label for t in trees])).backward()
        opt.step()

    if kind == "ddp":
        model.forward = model.batched_logits
    seconds, cpu = _timed(step, _load_batches(rank, world, steps, batch))
    if kind == "ddp":
        total = torch.tensor([cpu], dtype=torch.float64)
        dist.all_reduce(total)   # all processes' CPU seconds
        cpu = float(total[0])
        dist.barrier()
        dist.destroy_process_group()
    return {"seconds": seconds, "cpu_seconds": cpu, "trees": world * steps * batch, "rank": rank}


def worker_main(argv):
    kind, steps, batch = argv[0], int(argv[1]), int(argv[2])
    if kind.startswith("torch-"):
        result = _torch_worker(kind[len("torch-"):], steps, batch)
    else:
        result = _treadle_worker(kind, steps, batch)
    if result.get("rank", 0) == 0:
        print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------- orchestration

def _env(threads):
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _result(out, what):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{what} printed no result:\n{out[-3000:]}")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_config(name, steps, batch):
    me = [sys.executable, os.path.abspath(__file__), "--worker"]
    if name == "treadle 1 replica":
        done = subprocess.run(me + ["single", str(steps), str(batch)], env=_env(1), capture_output=True, text=True)
    elif name == "treadle mirrored 2":
        done = subprocess.run(me + ["mirrored", str(steps), str(batch)], env=_env(1), capture_output=True, text=True)
    elif name == "treadle mpi 2":
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        done = subprocess.run([mpiexec, "-n", "2"] + me + ["mpi", str(steps), str(batch)], env=_env(1),
                              capture_output=True, text=True)
    elif name.endswith(" 2 alone"):
        return _side_by_side(me + ["single" if name.startswith("treadle") else "torch-single", str(steps), str(batch)])
    elif name == "torch 1 process":
        done = subprocess.run(me + ["torch-single", str(steps), str(batch)], env=_env(1), capture_output=True, text=True)
    else:
        port = str(_free_port())
        procs = []
        for rank in range(2):
            env = _env(1)
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="2")
            procs.append(subprocess.Popen(me + ["torch-ddp", str(steps), str(batch)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate()[0] for p in procs]
        return _result(outs[0], name)
    return _result(done.stdout + done.stderr, name)


def _side_by_side(command, copies=2):
    """Runs `copies` independent processes at once; their trees and CPU
    seconds add up, and the slowest one's wall time is the run's."""
    procs = [subprocess.Popen(command, env=_env(1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(copies)]
    results = [_result(p.communicate()[0], " ".join(command[-3:])) for p in procs]
    return {"seconds": max(r["seconds"] for r in results), "cpu_seconds": sum(r["cpu_seconds"] for r in results),
            "trees": sum(r["trees"] for r in results)}


def project(step_seconds, dense_bytes, sparse_bytes_per_replica, replicas, gbit, latency_us=10.0):
    """Step time of `replicas` replicas: the measured compute, plus a ring
    all-reduce of the dense gradients (2(N-1)/N of their bytes cross each
    link) and an all-gather of the sparse rows ((N-1) replicas' rows arrive
    at each), at `gbit` Gbit/s and `latency_us` per message, not overlapped."""
    bandwidth = gbit * 1e9 / 8
    n = replicas
    ring = 2 * (n - 1) / n * dense_bytes / bandwidth + 2 * (n - 1) * latency_us * 1e-6
    gather = (n - 1) * sparse_bytes_per_replica / bandwidth + (n - 1) * latency_us * 1e-6
    total = step_seconds + ring + gather
    return {"replicas": n, "step_seconds": total, "communication_seconds": ring + gather, "ring_seconds": ring,
            "gather_seconds": gather, "efficiency": step_seconds / total}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--steps", type=int, default=12, help="timed training steps per run (default 12)")
    parser.add_argument("--batch", type=int, default=PER_REPLICA_BATCH, help="trees per replica per step")
    parser.add_argument("--gbit", type=float, nargs="+", default=[10.0, 100.0],
                        help="network bandwidths (Gbit/s) for the projection (default 10 100)")
    parser.add_argument("--no-torch", action="store_true", help="leave out the PyTorch peers")
    args = parser.parse_args()
    import bench.common as common
    configs = [c for c in CONFIGS if not (args.no_torch and c.startswith("torch"))]
    if common.optional_import("torch") is None and not args.no_torch:
        print("PyTorch is not installed: its peers are left out (pip install torch)")
        configs = [c for c in configs if not c.startswith("torch")]
    runs = {c: [] for c in configs}
    load_before = os.getloadavg()
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for name in order:
            result = run_config(name, args.steps, args.batch)
            result["trees_per_second"] = result["trees"] / result["seconds"]
            runs[name].append(result)
            print(f"round {r + 1}/{args.rounds}  {name:20s} {result['trees_per_second']:8.0f} trees/s", flush=True)
    report = summarize(runs, args, load_before, common)
    print(report["markdown"])


def _median(runs, key):
    return statistics.median(r[key] for r in runs)


def summarize(runs, args, load_before, common):
    rate = {name: _median(rs, "trees_per_second") for name, rs in runs.items()}
    cpu_per_tree = {name: statistics.median(r["cpu_seconds"] / r["trees"] for r in rs) for name, rs in runs.items()}
    single = rate["treadle 1 replica"]
    rows = []
    for name in runs:
        engine = name.split()[0]
        one = "treadle 1 replica" if engine == "treadle" else "torch 1 process"
        base = rate.get(one)
        replicas = 2 if name.endswith((" 2", " 2 alone")) else 1
        eff = rate[name] / (replicas * base) if base else None
        cpu_eff = cpu_per_tree[one] / cpu_per_tree[name] if one in cpu_per_tree else None
        ceiling = rate.get(f"{engine} 2 alone") if name.endswith(" 2") else None
        rows.append((name, rate[name], rate[name] / base if base else None, eff, cpu_per_tree[name], cpu_eff,
                     rate[name] / ceiling if ceiling else None))
    collectives = runs["treadle mpi 2"][0].get("collectives", {})
    mpi_coll = {k: statistics.median(r["collectives"][k] for r in runs["treadle mpi 2"]) for k in collectives}
    step_seconds = args.batch / single
    dense_bytes, sparse_bytes = _gradient_bytes(args.batch)
    projections = {g: [project(step_seconds, dense_bytes, sparse_bytes, n, g) for n in (2, 8, 64)] for g in args.gbit}
    machine = common.machine_info()
    lines = [f"# Data-parallel TreeLSTM training ({args.batch} trees per replica per step)", "",
             f"{machine['cpu_model']}, {machine['cores']} cores; {common.kernels_sentence(machine)} "
             f"One BLAS thread per replica; load average before the run {load_before[0]:.1f}"
             f"{' (loaded: other work shared the cores, so the figures are low and noisy)' if load_before[0] >= 1.5 else ''}; "
             f"median of {args.rounds} interleaved rounds of {args.steps} timed steps.", "",
             "CPU time counts every thread and process of a configuration, and waiting costs none; its "
             "efficiency (the 1-replica run's CPU time per tree over this one's) shows the work that distributing "
             "adds, and depends much less than trees/s on how much of the cores other work took.", "",
             "\"2 alone\" is two 1-replica processes side by side that never communicate: the most two replicas "
             "can reach on this machine, where two processes share the L3 cache and the memory bandwidth. "
             "\"Of the ceiling\" is a 2-replica run's trees/s over that.", "",
             "| configuration | trees/s | × its 1-replica run | scaling efficiency | of the ceiling | "
             "CPU ms per tree | CPU efficiency |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r, ratio, eff, cpu, cpu_eff, of_ceiling in rows:
        lines.append(f"| {name} | {r:,.0f} | {common.fmt_ratio(ratio)} | {'—' if eff is None else f'{eff:.0%}'} | "
                     f"{'—' if of_ceiling is None else f'{of_ceiling:.0%}'} | "
                     f"{cpu * 1e3:.2f} | {'—' if cpu_eff is None else f'{cpu_eff:.0%}'} |")
    if mpi_coll:
        lines += ["", f"treadle over MPI moved {mpi_coll['bytes_per_step'] / 1e6:.2f} MB per step and process "
                  f"(received) in {mpi_coll['calls_per_step']:.0f} collective round(s), taking "
                  f"{mpi_coll['seconds_per_step'] * 1e3:.1f} ms of a {2 * args.batch / rate['treadle mpi 2'] * 1e3:.0f} ms "
                  "step, waiting for the slower replica included; the same collectives take "
                  f"{mpi_coll['transfer_seconds'] * 1e3:.1f} ms when both replicas are already waiting."]
    lines += ["", f"Projection from the 1-replica step (T = {step_seconds * 1e3:.0f} ms), dense gradients "
              f"D = {dense_bytes / 1e6:.2f} MB (ring all-reduce) and embedding rows S = {sparse_bytes / 1e6:.2f} MB "
              "per replica (all-gather), a network of B bytes/s, 10 µs per message, no overlap: for N replicas, "
              "communication = 2(N-1)/N·D/B + 2(N-1)·10 µs + (N-1)·S/B + (N-1)·10 µs, and "
              "efficiency = T / (T + communication).", "",
              "| network | replicas | ring all-reduce | row gather | scaling efficiency |", "|---|---:|---:|---:|---:|"]
    for g, ps in projections.items():
        for p in ps:
            lines.append(f"| {g:g} Gbit/s | {p['replicas']} | {p['ring_seconds'] * 1e3:.1f} ms | "
                         f"{p['gather_seconds'] * 1e3:.1f} ms | {p['efficiency']:.0%} |")
    markdown = "\n".join(lines) + "\n"
    payload = {"machine": machine, "load_before": load_before, "args": vars(args), "runs": runs, "trees_per_second": rate,
               "mpi_collectives": mpi_coll, "projection": {str(g): ps for g, ps in projections.items()},
               "gradient_bytes": {"dense": dense_bytes, "sparse_per_replica": sparse_bytes}}
    common.write_report("distribute_treelstm", payload, markdown)
    return {"markdown": markdown}


def _gradient_bytes(batch):
    """float32 bytes of one replica's gradients: the dense weights, and the
    embedding rows of its leaves (one row per leaf, as the loom's IndexedSlices)."""
    from bench.treelstm.data import DEFAULT_PATH, load_trees
    from bench.treelstm.model import EMBED, initial_weights
    weights = initial_weights()
    dense = sum(v.size for k, v in weights.items() if k != "embedding") * 4
    trees = load_trees(DEFAULT_PATH, limit=batch)
    leaves = sum(t.num_leaves for t in trees)
    return dense, leaves * (EMBED * 4 + 8)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
    else:
        main()
