"""The `treadle` command line (also `python -m treadle`).

Subcommands:
  info   versions of treadle and the libraries it runs on, and the op count
  demo   a short tour of eager execution: ops, NumPy interop, protobuf, DLPack
  loom   run a saved loom over a schedule file (`loom run`), or describe a schedule file (`loom info`)
  run    run a saved function (td.save) on .npy inputs
  show   print a saved function's signatures and graph
"""

import argparse
import platform
import sys
import time


def _cmd_info(args):
    import numpy as np
    import google.protobuf

    import treadle as td
    from treadle import _core

    ops = _core.op_defs()
    public = sorted(name for name in dir(td) if not name.startswith("_"))
    print(f"treadle        {td.__version__}  ({td.__file__})")
    print(f"python         {platform.python_version()} ({platform.python_implementation()}, {platform.machine()})")
    print(f"numpy          {np.__version__}")
    print(f"protobuf       {google.protobuf.__version__} (Python runtime), "
          f"{_format_protobuf_version(_core.protobuf_version())} (libprotobuf the core was built with)")
    blas_config, blas_core, blas_threads = _core.blas_config()
    print(f"BLAS           {blas_config}; kernels for {blas_core}")
    print(f"threads        {blas_threads} (matmuls and looms; BLAS runs single-threaded on each)")
    print(f"registered ops {len(ops)}")
    print(f"public names   {len(public)} in td")
    if args.verbose:
        print("ops:", " ".join(sorted(op["name"] for op in ops)))
    return 0


def _format_protobuf_version(v):
    # GOOGLE_PROTOBUF_VERSION is major * 1000000 + minor * 1000 + patch.
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"


def _cmd_demo(args):
    import numpy as np

    import treadle as td

    print("treadle", td.__version__, "- eager execution demo\n")

    a = td.constant([[1.0, 2.0], [3.0, 4.0]])
    b = td.constant([[0.5, -1.0], [2.0, 0.25]])
    print("a =", a)
    print("b =", b)
    print("a + b =", a + b)
    print("a @ b =", a @ b)
    print("td.matmul(a, b) matches NumPy:", np.allclose((a @ b).numpy(), a.numpy() @ b.numpy()))

    # Zero-copy in both directions: NumPy views the tensor's memory, and a
    # tensor made with DLPack views the array's.
    view = np.asarray(a)
    print("\nnp.asarray(a) shares memory with a:", view.__array_interface__["data"][0] == a._data_ptr(),
          "(read-only:", not view.flags.writeable, end=")\n")
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = td.experimental.dlpack.from_dlpack(arr)
    print("td.experimental.dlpack.from_dlpack(arr) shares memory:",
          t._data_ptr() == arr.__array_interface__["data"][0])

    # The wire format both languages share.
    proto = td.make_tensor_proto([[1, 2, 3], [4, 5, 6]])
    back = td.make_ndarray(proto)
    print(f"\nTensorProto: dtype={proto.dtype} shape={[d.size for d in proto.shape.dim]} "
          f"content={len(proto.tensor_content)} bytes -> make_ndarray:\n{back}")

    # Errors are Python exceptions with TensorFlow's names, never crashes.
    try:
        td.constant([1.0, 2.0]) + td.constant([1.0, 2.0, 3.0])
    except td.errors.InvalidArgumentError as e:
        print(f"\nadding shapes (2,) and (3,) raises InvalidArgumentError: {e}")

    x = td.constant(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
    n = args.repeats
    start = time.perf_counter()
    for _ in range(n):
        x @ x
    per_matmul = (time.perf_counter() - start) / n
    start = time.perf_counter()
    small = td.constant([[1.0, 2.0], [3.0, 4.0]])
    for _ in range(n * 100):
        small + small
    per_add = (time.perf_counter() - start) / (n * 100)
    print(f"\n256x256 float32 matmul: {per_matmul * 1e6:.1f} us/call;  2x2 a + b: {per_add * 1e6:.2f} us/call")
    print("(full comparison with NumPy and PyTorch: python bench/eager_ops.py)")
    return 0


def _progress(done_bytes, total_bytes, count, stream):
    width = 30
    frac = done_bytes / total_bytes if total_bytes else 1.0
    filled = int(frac * width)
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {frac * 100:5.1f}%  {count} schedules")
    stream.flush()


def _cmd_loom_run(args):
    import os

    import numpy as np

    import treadle as td
    from treadle import _core

    loom = td.load(args.loom)
    if not isinstance(loom, td.loom.Loom):
        print(f"treadle loom run: {args.loom} holds a saved function, not a loom", file=sys.stderr)
        return 2
    reader = _core.LoomScheduleReader(args.schedules)
    total = os.path.getsize(args.schedules)
    outputs = {ts: [] for ts in loom.type_shapes}
    count = 0
    start = time.perf_counter()
    while True:
        batch = reader.read_batch(loom._spec, args.batch_size)  # read, validated and merged in C++
        if batch is None:
            break
        schedule, n = batch
        for ts, value in loom(schedule).items():
            outputs[ts].append(value.numpy())
        count += n
        if not args.quiet:
            _progress(reader.offset, total, count, sys.stderr)
    if not args.quiet:
        sys.stderr.write("\n")
    elapsed = time.perf_counter() - start
    os.makedirs(args.output_dir, exist_ok=True)
    for i, ts in enumerate(loom.type_shapes):
        parts = outputs[ts]
        array = np.concatenate(parts) if parts else np.zeros((0,) + ts.shape, ts.dtype.as_numpy_dtype)
        path = os.path.join(args.output_dir, f"outputs_{i}.npy")
        np.save(path, array)
        print(f"{path}: {ts} x {array.shape[0]}")
    print(f"ran {count} schedules in {elapsed:.2f} s ({count / elapsed if elapsed else 0:.0f} schedules/s)")
    return 0


def _cmd_loom_info(args):
    from treadle import _core, loom_pb2

    records = _core.read_records(args.schedules)
    results = depth = outputs = 0
    for r in records:
        m = loom_pb2.WeaverMessage.FromString(r)
        results += len(m.result_depth)
        depth = max([depth] + list(m.result_depth))
        outputs += len(m.outputs)
    print(f"{args.schedules}: {len(records)} schedules, {results} results, {outputs} outputs, deepest {depth}")
    return 0


def add_timeout_argument(parser):
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="stop the runs after SECONDS (td.experimental.deadline); exit status 124")


def run_with_timeout(args):
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        return args.run(args)
    import treadle as td
    try:
        with td.experimental.deadline(timeout):
            return args.run(args)
    except td.errors.DeadlineExceededError:
        print(f"treadle: timed out after {timeout:g} s", file=sys.stderr)
        return 124


def _build_parser():
    parser = argparse.ArgumentParser(prog="treadle", description="treadle: a dataflow runtime for dynamic computation")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="print versions and the number of registered ops")
    info.add_argument("-v", "--verbose", action="store_true", help="also list every registered op")
    info.set_defaults(run=_cmd_info)
    demo = sub.add_parser("demo", help="run a short eager-execution demo")
    demo.add_argument("--repeats", type=int, default=200, help="timing repetitions (default 200)")
    demo.set_defaults(run=_cmd_demo)
    loom = sub.add_parser("loom", help="run a saved loom over schedule files")
    loom_sub = loom.add_subparsers(dest="loom_command", metavar="LOOM_COMMAND", required=True)
    run = loom_sub.add_parser("run", help="run a saved loom (td.save) over a schedule file, writing .npy outputs")
    run.add_argument("loom", help="a loom saved with td.save")
    run.add_argument("schedules", help="a schedule file (td.loom.write_schedules, TFRecord format)")
    run.add_argument("-o", "--output-dir", default="loom_outputs", help="where outputs_<i>.npy go, one per type shape")
    run.add_argument("-b", "--batch-size", type=int, default=256, help="schedules merged per run (default 256)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_timeout_argument(run)
    run.set_defaults(run=_cmd_loom_run)
    info_cmd = loom_sub.add_parser("info", help="count the schedules, results and outputs of a schedule file")
    info_cmd.add_argument("schedules")
    info_cmd.set_defaults(run=_cmd_loom_info)
    from treadle import cli_saved
    cli_saved.register(sub)
    return parser


def main(argv=None):
    parser = _build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    if getattr(args, "repeats", 1) < 1:
        parser.error("--repeats must be at least 1")
    if getattr(args, "batch_size", 1) < 1:
        parser.error("--batch-size must be at least 1")
    if (getattr(args, "timeout", None) or 0) < 0:
        parser.error("--timeout must be at least 0")
    return run_with_timeout(args)


if __name__ == "__main__":
    sys.exit(main())
