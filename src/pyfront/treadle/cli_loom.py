"""`treadle loom run` and `treadle loom info`: a saved loom over a schedule file."""

import os
import re
import sys
import time

import numpy as np
from tqdm import tqdm

import treadle as td
from treadle import _core, cli_files
from treadle.cli_common import add_timeout_argument, existing_file, positive_int
from treadle.io import examples

FORMATS = ("npy", "npz", "tfrecord")


def _load_loom(path):
    cli_files.require_kind(path, cli_files.LOOM, " (td.save(loom, path) writes one)")
    return td.load(path)


def _check_schedule_file(path):
    cli_files.require_kind(path, cli_files.SCHEDULES, " (td.loom.write_schedules writes one)")


def _progress_bar(total_bytes, quiet):
    """A tqdm bar over the schedule file's bytes, counting schedules on the side."""
    return tqdm(total=total_bytes, disable=quiet, file=sys.stderr, unit="B", unit_scale=True,
                bar_format="{percentage:5.1f}% |{bar}| {n_fmt}B of {total_fmt}B [{elapsed}<{remaining}]{postfix}")


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def output_name(type_shape, index):
    """The file name stem of a type shape's outputs: outputs_<tag> for a tag
    that makes a plain file name (a tag names one type shape), else outputs_<index>."""
    tag = type_shape.tag
    if tag and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", tag):
        return f"outputs_{tag}"
    return f"outputs_{index}"


def run_schedules(loom, path, batch_size, quiet):
    """{TypeShape: [arrays]} of every output of the schedules in `path`, and the schedule count."""
    reader = _core.LoomScheduleReader(path)
    outputs = {ts: [] for ts in loom.type_shapes}
    count = 0
    bar = _progress_bar(os.path.getsize(path), quiet)
    try:
        while True:
            batch = reader.read_batch(loom._spec, batch_size)  # read, validated and merged in C++
            if batch is None:
                break
            schedule, n = batch
            for ts, value in loom(schedule).items():
                outputs[ts].append(value.numpy())
            count += n
            bar.set_postfix_str(f"{count} schedules", refresh=False)
            bar.update(reader.offset - bar.n)
    except BaseException:
        # The error message must start a line of its own: on a terminal the bar
        # is erased; elsewhere (a log, a pipe) its last state ends with a newline.
        bar.leave = not _is_terminal(sys.stderr)
        raise
    finally:
        bar.close()
    return outputs, count


def _write_outputs(loom, outputs, output_dir, fmt):
    """One file per type shape (npy, tfrecord) or one for all (npz), each reported on a line."""
    os.makedirs(output_dir, exist_ok=True)
    arrays = []
    for ts in loom.type_shapes:
        parts = outputs[ts]
        arrays.append(np.concatenate(parts) if parts else np.zeros((0,) + ts.shape, ts.dtype.as_numpy_dtype))
    names = [output_name(ts, i) for i, ts in enumerate(loom.type_shapes)]
    if fmt == "npz":
        np.savez(os.path.join(output_dir, "outputs.npz"), **dict(zip(names, arrays)))
    for i, (ts, array, name) in enumerate(zip(loom.type_shapes, arrays, names)):
        if fmt == "npy":
            path = os.path.join(output_dir, f"{name}.npy")
            np.save(path, array)
        elif fmt == "tfrecord":
            path = os.path.join(output_dir, f"{name}.tfrecord")
            examples.write_arrays_as_examples(path, array, type_shape_index=i)
        else:
            path = f"{os.path.join(output_dir, 'outputs.npz')}[{name}]"
        print(f"{path}: {ts} x {array.shape[0]}")


def cmd_loom_run(args):
    existing_file(args.schedules, "schedule file")
    loom = _load_loom(args.loom)
    _check_schedule_file(args.schedules)
    start = time.perf_counter()
    outputs, count = run_schedules(loom, args.schedules, args.batch_size, args.quiet)
    elapsed = time.perf_counter() - start
    _write_outputs(loom, outputs, args.output_dir, args.format)
    rate = f" ({count / elapsed:.0f} schedules/s)" if elapsed > 0 else ""
    print(f"ran {count} schedules in {elapsed:.2f} s{rate}")
    return 0


def cmd_loom_info(args):
    return cli_files.describe(args.file, full=args.verbose)


def add_run_arguments(run):
    run.add_argument("loom", metavar="LOOM", help="a loom saved with td.save(loom, path)")
    run.add_argument("schedules", metavar="SCHEDULES",
                     help="a schedule file (td.loom.write_schedules: TFRecord records of WeaverMessages)")
    run.add_argument("-o", "--output-dir", default="loom_outputs", metavar="DIR",
                     help="where the outputs go (default loom_outputs): one file per type shape, named by "
                          "its tag (outputs_<tag>.npy or .tfrecord; outputs_<i> for an untagged type shape "
                          "i), or one outputs.npz holding arrays of those names")
    run.add_argument("-f", "--format", choices=FORMATS, default="npy",
                     help="npy (default), npz, or tfrecord: one tf.train.Example per output, with features "
                          "'value' (raw little-endian bytes), 'dtype', 'shape' and 'type_shape'")
    run.add_argument("-b", "--batch-size", type=positive_int, default=256, metavar="N",
                     help="schedules merged into one run (default 256)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_timeout_argument(run)


def register(sub):
    loom = sub.add_parser("loom", help="run a saved loom over a schedule file, or describe one",
                          description="Saved looms (td.save) and schedule files (td.loom.write_schedules).")
    loom_sub = loom.add_subparsers(dest="loom_command", metavar="LOOM_COMMAND", required=True)
    run = loom_sub.add_parser(
        "run", help="run a saved loom over a schedule file and write its outputs",
        description="Runs LOOM over every schedule in SCHEDULES, --batch-size schedules per run, and writes "
                    "the outputs of each type shape in the order the schedules added them.")
    add_run_arguments(run)
    run.set_defaults(run=cmd_loom_run)
    info = loom_sub.add_parser("info", help="describe a saved loom or a schedule file (as 'treadle info FILE')",
                               description="What a saved loom or schedule file holds (also 'treadle info FILE').")
    info.add_argument("file", metavar="FILE", help="a saved loom (td.save) or a schedule file")
    info.add_argument("-v", "--verbose", action="store_true", help="in full: every op's graph, every record")
    info.set_defaults(run=cmd_loom_info)
