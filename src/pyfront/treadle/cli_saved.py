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
    """--input values as (args, kwargs, sources): `NAME=file.npy` by parameter
    name, a bare `file.npy` by position; sources maps a position or a name to
    its file, for messages."""
    args, kwargs, sources = [], {}, {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = None, item
        try:
            value = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CommandError(f"cannot read input {path}: {e}") from None
        if name is None:
            sources[len(args)] = path
            args.append(value)
        elif names and name not in names:
            raise CommandError(f"the saved function has no parameter '{name}' (it has: {', '.join(names)})")
        else:
            sources[name] = path
            kwargs[name] = value
    return args, kwargs, sources


def _spec_text(spec):
    dims = "unknown rank" if spec.shape.rank is None else \
        "[" + ", ".join("None" if d is None else str(d) for d in spec.shape.as_list()) + "]"
    return f"{spec.dtype.name} of shape {dims}"


def _mismatches(fn, args, kwargs, sources):
    """What is wrong with the inputs for one saved signature: a list of phrases
    naming each input and what it got (empty when nothing can be said)."""
    specs, _ = fn.structured_input_signature
    names = list(fn.parameter_names)
    if len(args) > len(names):
        return [f"{len(args)} inputs given by position, but it takes {len(names)} ({', '.join(names)})"]
    given = {names[i]: (value, sources.get(i)) for i, value in enumerate(args)}
    given.update({k: (v, sources.get(k)) for k, v in kwargs.items()})
    problems = []
    for name, spec in zip(names, specs):
        if not isinstance(spec, td.TensorSpec):
            continue  # a nested structure: the generic message below lists the signature
        if name not in given:
            problems.append(f"no input for '{name}' ({_spec_text(spec)}; give it with -i {name}=FILE.npy)")
            continue
        value, path = given[name]
        array = np.asarray(value)
        got = f"{array.dtype.name} of shape [{', '.join(str(d) for d in array.shape)}]"
        fits = array.dtype == spec.dtype.as_numpy_dtype and spec.shape.is_compatible_with(array.shape)
        if not fits:
            problems.append(f"input '{name}'{f' ({path})' if path else ''} is {got}, but it takes {_spec_text(spec)}")
    return problems


def _check_inputs(loaded, args, kwargs, sources):
    """A CommandError naming each input that no saved signature accepts, and what it got."""
    functions = getattr(loaded, "functions", [])
    if not functions or any(fn.accepts(args, kwargs) for fn in functions):
        return
    explained = [(i, _mismatches(fn, args, kwargs, sources)) for i, fn in enumerate(functions)]
    if len(functions) == 1 and explained[0][1]:
        raise CommandError("; ".join(explained[0][1]))
    parts = [f"signature {i + 1}: {'; '.join(p) if p else repr(functions[i].structured_input_signature)}"
             for i, p in explained]
    raise CommandError("no saved function accepts these inputs: " + " | ".join(parts))


def _flat_outputs(result):
    return [(i, leaf) for i, leaf in enumerate(nest.flatten(result)) if isinstance(leaf, Tensor)]


def cmd_run(args):
    if cli_files.file_kind(args.file) == cli_files.LOOM:
        raise CommandError(f"{args.file}: is a saved loom, not a saved function "
                           "(run it with 'treadle loom run LOOM SCHEDULES')")
    cli_files.require_kind(args.file, cli_files.FUNCTION, " (td.save writes one)")
    loaded = td.load(args.file)
    names = loaded.functions[0].parameter_names if hasattr(loaded, "functions") else []
    call_args, call_kwargs, sources = _parse_inputs(args.input, names)
    _check_inputs(loaded, call_args, call_kwargs, sources)
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
