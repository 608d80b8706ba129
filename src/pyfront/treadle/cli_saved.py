"""`treadle run`: a saved function from the command line, without the Python
source that made it. (`treadle show` is in cli_files, with the other kinds of file.)"""

import os

import numpy as np

import treadle as td
from treadle import cli_files
from treadle.cli_common import CommandError, add_timeout_argument
from treadle.framework.tensor import Tensor
from treadle.util import nest


def _parse_inputs(items, names):
    """--input values as (args, kwargs): `NAME=file.npy` by parameter name, a
    bare `file.npy` by position."""
    args, kwargs = [], {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = None, item
        try:
            value = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CommandError(f"cannot read input {path}: {e}") from None
        if name is None:
            args.append(value)
        elif names and name not in names:
            raise CommandError(f"the saved function has no parameter '{name}' (it has: {', '.join(names)})")
        else:
            kwargs[name] = value
    return args, kwargs


def _flat_outputs(result):
    return [(i, leaf) for i, leaf in enumerate(nest.flatten(result)) if isinstance(leaf, Tensor)]


def cmd_run(args):
    if cli_files.file_kind(args.file) == cli_files.LOOM:
        raise CommandError(f"{args.file}: is a saved loom, not a saved function "
                           "(run it with 'treadle loom run LOOM SCHEDULES')")
    cli_files.require_kind(args.file, cli_files.FUNCTION, " (td.save writes one)")
    loaded = td.load(args.file)
    names = loaded.functions[0].parameter_names if hasattr(loaded, "functions") else []
    call_args, call_kwargs = _parse_inputs(args.input, names)
    result = loaded(*call_args, **call_kwargs)
    outputs = _flat_outputs(result)
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    for i, t in outputs:
        value = t.numpy()
        print(f"output {i}: {t.dtype.name} {list(value.shape)}")
        print(value)
        if args.output_dir:
            path = os.path.join(args.output_dir, f"output_{i}.npy")
            np.save(path, value)
            print(f"  written to {path}")
    return 0


def add_run_arguments(run):
    run.add_argument("file", metavar="FILE", help="a function saved with td.save")
    run.add_argument("--input", "-i", action="append", default=[],
                     help="NAME=file.npy (by parameter name) or file.npy (by position); repeatable")
    run.add_argument("--output-dir", "-o", metavar="DIR", help="also write each output as output_<k>.npy here")
    add_timeout_argument(run)


def register(sub):
    run = sub.add_parser("run", help="run a saved function (td.save) on inputs from .npy files",
                         description="Calls the saved function in FILE on the inputs and prints its outputs.")
    add_run_arguments(run)
    run.set_defaults(run=cmd_run)
