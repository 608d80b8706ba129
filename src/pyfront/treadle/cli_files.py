"""`treadle info [FILE]` and `treadle show FILE`: what a file treadle wrote
holds. Three kinds are recognised: a saved function and a saved loom (td.save,
the treadle container) and a schedule file (td.loom.write_schedules, TFRecord
records of WeaverMessages). Anything else is refused with a one-line reason."""

import platform

import google.protobuf
import numpy as np
from google.protobuf.message import DecodeError

import treadle as td
from treadle import _core, errors, loom_pb2
from treadle.cli_common import CommandError, existing_file
from treadle.framework import dtypes
from treadle.io import structure
from treadle.io.container import KIND_FUNCTION, KIND_LOOM, MAGIC, file_kind as container_kind, kind_name
from treadle.io.saving import read_saved_file
from treadle.loom.saving import read_saved_loom

FUNCTION, LOOM, SCHEDULES = "saved function", "saved loom", "schedule file"


# ------------------------------------------------------------ recognising files

def file_kind(path):
    """FUNCTION, LOOM or SCHEDULES for `path`; CommandError when it is none of them."""
    existing_file(path)
    with open(path, "rb") as f:
        head = f.read(len(MAGIC))
    if not head:
        raise CommandError(f"{path}: the file is empty")
    if head == MAGIC:
        kind = container_kind(path)
        if kind == KIND_FUNCTION:
            return FUNCTION
        if kind == KIND_LOOM:
            return LOOM
        raise CommandError(f"{path}: holds {kind_name(kind)}; this treadle reads saved functions and looms")
    return SCHEDULES


def require_kind(path, wanted, hint=""):
    """CommandError unless `path` is a `wanted` (FUNCTION, LOOM or SCHEDULES)."""
    kind = file_kind(path)
    if kind == wanted:
        return
    if kind == SCHEDULES:  # what file_kind calls anything that is not a treadle container
        raise CommandError(f"{path}: is not a treadle file, so not a {wanted}{hint}")
    raise CommandError(f"{path}: is a {kind}, not a {wanted}{hint}")


def read_schedule_file(path):
    """The WeaverMessages of a schedule file, each checked to be a schedule."""
    try:
        records = td.loom.read_schedules(path)
    except errors.DataLossError as e:
        raise CommandError(f"{path}: neither a saved function or loom nor a schedule file (TFRecord): "
                           f"{e.message}") from None
    return [parse_schedule(record, f"{path}: record {i}") for i, record in enumerate(records)]


def parse_schedule(record, where):
    """A WeaverMessage from a record; CommandError when the record is not one.

    Protobuf parses almost any bytes into almost any message (fields it does
    not know are kept aside), so a record counts as a schedule only if every
    field is a WeaverMessage field, it names the loom it was woven for, and
    its per-result lists agree."""
    message = loom_pb2.WeaverMessage()
    try:
        message.ParseFromString(record)
    except DecodeError as e:
        raise CommandError(f"{where} is not a schedule (not a WeaverMessage: {e})") from None
    known = loom_pb2.WeaverMessage()
    known.CopyFrom(message)
    known.DiscardUnknownFields()
    if known.ByteSize() != message.ByteSize():
        raise CommandError(f"{where} is not a schedule (it has fields a WeaverMessage does not; "
                           "a tf.train.Example, perhaps)")
    if message.loom_fingerprint == 0:
        raise CommandError(f"{where} is not a schedule (it names no loom fingerprint)")
    n = len(message.result_depth)
    lengths = {len(message.result_type_shape), len(message.result_op), len(message.result_output),
               len(message.result_position)}
    if lengths != {n}:
        raise CommandError(f"{where} is not a valid schedule (its per-result lists differ in length)")
    bad = [o for o in message.outputs if not 0 <= o < n]
    if bad:
        raise CommandError(f"{where} is not a valid schedule (output {bad[0]} names no result; it has {n})")
    return message


def _read_saved(path, kind):
    """The file's message; td.errors.DataLossError (one line, status 1) when
    the container or its payload is malformed."""
    return read_saved_file(path) if kind == FUNCTION else read_saved_loom(path)


# ------------------------------------------------------------ describing them

def count(n, noun):
    """'1 schedule', '23 schedules'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _dtype_name(enum):
    try:
        return dtypes.as_dtype(enum).name
    except (TypeError, ValueError):
        return f"dtype {enum}"


def _dims(shape_proto):
    return [d.size for d in shape_proto.dim]


def _print_variables(variables):
    for v in variables:
        print(f"  variable {v.name or '(unnamed)'}: {_dtype_name(v.value.dtype)} {_dims(v.shape)} "
              f"trainable={v.trainable}")


def describe_function(path, saved, full):
    print(f"{path}: {FUNCTION}; {count(len(saved.functions), 'signature')}, "
          f"{count(len(saved.variables), 'variable')}, {count(len(saved.graph.library.function), 'library function')}")
    _print_variables(saved.variables)
    for fn in saved.functions:
        print(f"\nfunction {fn.function_name}")
        where = f"{path}: saved function {fn.function_name}"
        print(f"  inputs:  {structure.decode(fn.input_signature, f'{where}: input_signature')!r}")
        print(f"  outputs: {structure.decode(fn.output_structure, f'{where}: output_structure')!r}")
    if full:
        _print_library(saved.graph.library)


def _print_library(library):
    for fdef in library.function:
        sig = fdef.signature
        print(f"\n{sig.name}({', '.join(a.name for a in sig.input_arg)}) -> "
              f"{', '.join(a.name for a in sig.output_arg)}")
        for node in fdef.node_def:
            print(f"  {node.name} = {node.op}({', '.join(node.input)})")
        for out, ref in fdef.ret.items():
            print(f"  return {out} = {ref}")


def _op_inputs(op):
    """An op's input type shapes as a list, a ragged input (any number of
    results per call) written Ragged(i)."""
    ragged = set(op.ragged_inputs)
    return "[" + ", ".join(f"Ragged({t})" if k in ragged else str(t) for k, t in enumerate(op.input_type_shapes)) + "]"


def describe_loom(path, saved, full):
    md = saved.loom.metadata
    try:
        fingerprint = _core.LoomSpec(md.SerializeToString()).fingerprint
    except ValueError as e:
        raise CommandError(f"{path}: the saved loom's description is invalid: {e}") from None
    ops = md.ops[len(md.type_shapes):]  # the first ones are the implicit pass-throughs
    print(f"{path}: {LOOM}; {count(len(md.type_shapes), 'type shape')}, {count(len(ops), 'op')}, "
          f"{count(len(md.named_tensors), 'named tensor')}, "
          f"{count(len(md.batch_input_type_shapes), 'batch input')}")
    print(f"  fingerprint {fingerprint:#018x}")
    print(f"  max depth   {md.max_depth or 'unbounded'}")
    print("type shapes:")
    for i, ts in enumerate(md.type_shapes):
        print(f"  {i}: {_dtype_name(ts.dtype)} {tuple(ts.shape)} tag={ts.tag!r}")
    print("ops:")
    for op in ops:
        kind = "pass-through" if op.pass_through else ("with gradient" if op.backward_function_name else
                                                       "no gradient")
        print(f"  {op.name}: {_op_inputs(op)} -> {list(op.output_type_shapes)} ({kind})")
    if md.named_tensors:
        print("named tensors:")
    for nt in md.named_tensors:
        print(f"  {nt.name}: type shape {nt.type_shape}")
    if md.batch_input_type_shapes:
        print("batch inputs (rows a weaver reads with batch_input):")
    for i in md.batch_input_type_shapes:
        print(f"  type shape {i}")
    if saved.variables:
        print("variables:")
    _print_variables(saved.variables)
    if full:
        _print_library(saved.loom.library.library)


def describe_schedules(path, messages, full):
    results = sum(len(m.result_depth) for m in messages)
    outputs = sum(len(m.outputs) for m in messages)
    deepest = max((max(m.result_depth, default=0) for m in messages), default=0)
    fingerprints = sorted({m.loom_fingerprint for m in messages})
    print(f"{path}: {SCHEDULES}; {count(len(messages), 'schedule')}, {count(results, 'result')}, "
          f"{count(outputs, 'output')}, "
          f"deepest {deepest}")
    if fingerprints:
        print("  for the loom(s) with fingerprint " + ", ".join(f"{f:#018x}" for f in fingerprints))
    if full:
        for i, m in enumerate(messages):
            print(f"record {i}: {count(len(m.result_depth), 'result')}, {count(len(m.outputs), 'output')}, "
                  f"{count(len(m.constants), 'constant')}, deepest {max(m.result_depth, default=0)}")


def describe(path, full):
    kind = file_kind(path)
    if kind == SCHEDULES:
        describe_schedules(path, read_schedule_file(path), full)
    elif kind == LOOM:
        describe_loom(path, _read_saved(path, kind), full)
    else:
        describe_function(path, _read_saved(path, kind), full)
    return 0


# ------------------------------------------------------------ the commands

def _format_protobuf_version(v):
    # GOOGLE_PROTOBUF_VERSION is major * 1000000 + minor * 1000 + patch.
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"


def print_versions(verbose):
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
    isa = td.config.isa_info()
    print(f"SIMD kernels   {isa['level']} (Highway target {isa['target']}); this CPU offers "
          f"{', '.join(isa['available'])}; cap with TREADLE_ISA={'|'.join(isa['known'])}")
    print(f"registered ops {len(ops)}")
    print(f"public names   {len(public)} in td")
    if verbose:
        print("ops:", " ".join(sorted(op["name"] for op in ops)))
    return 0


def cmd_info(args):
    if args.file is None:
        return print_versions(args.verbose)
    return describe(args.file, full=args.verbose)


def cmd_show(args):
    return describe(args.file, full=True)


def register(sub):
    info = sub.add_parser(
        "info", help="versions and libraries; or, given a FILE, what it holds",
        description="Without FILE: the versions of treadle and the libraries it runs on, and the op count. "
                    "With FILE: what a saved function, saved loom or schedule file holds.")
    info.add_argument("file", nargs="?", metavar="FILE",
                      help="a saved function or loom (td.save) or a schedule file (td.loom.write_schedules)")
    info.add_argument("-v", "--verbose", action="store_true",
                      help="also list every registered op (without FILE), or describe FILE in full (as 'show')")
    info.set_defaults(run=cmd_info)
    show = sub.add_parser(
        "show", help="a file in full: a function's graph, a loom's ops and graphs, a schedule file's records",
        description="Prints what a saved function, saved loom or schedule file holds, in full.")
    show.add_argument("file", metavar="FILE",
                      help="a saved function or loom (td.save) or a schedule file (td.loom.write_schedules)")
    show.set_defaults(run=cmd_show)
