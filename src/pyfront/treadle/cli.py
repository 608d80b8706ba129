"""The `treadle` command line (also `python -m treadle`).

Subcommands:
  info   versions of treadle and the libraries it runs on, and the op count
  demo   a short tour of eager execution: ops, NumPy interop, protobuf, DLPack
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


def _build_parser():
    parser = argparse.ArgumentParser(prog="treadle", description="treadle: a dataflow runtime for dynamic computation")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="print versions and the number of registered ops")
    info.add_argument("-v", "--verbose", action="store_true", help="also list every registered op")
    info.set_defaults(run=_cmd_info)
    demo = sub.add_parser("demo", help="run a short eager-execution demo")
    demo.add_argument("--repeats", type=int, default=200, help="timing repetitions (default 200)")
    demo.set_defaults(run=_cmd_demo)
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
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
