"""`treadle run` and `treadle show`: saved functions from the command line,
without the Python source that made them."""

import os

import numpy as np


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
            raise SystemExit(f"treadle: cannot read input {path}: {e}")
        if name is None:
            args.append(value)
        elif names and name not in names:
            raise SystemExit(f"treadle: the saved function has no parameter '{name}' (it has: {', '.join(names)})")
        else:
            kwargs[name] = value
    return args, kwargs


def _flat_outputs(result):
    from treadle.framework.tensor import Tensor
    from treadle.util import nest
    return [(i, leaf) for i, leaf in enumerate(nest.flatten(result)) if isinstance(leaf, Tensor)]


def cmd_run(args):
    import treadle as td
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


def cmd_show(args):
    from treadle.io.saving import read_saved_file
    from treadle.io import structure

    saved = read_saved_file(args.file)
    print(f"{args.file}: {len(saved.functions)} function(s), {len(saved.variables)} variable(s), "
          f"{len(saved.graph.library.function)} library function(s)")
    for v in saved.variables:
        dims = [d.size for d in v.shape.dim]
        print(f"  variable {v.name}: shape {dims} trainable={v.trainable}")
    for fn in saved.functions:
        print(f"\nfunction {fn.function_name}")
        print(f"  inputs:  {structure.decode(fn.input_signature)!r}")
        print(f"  outputs: {structure.decode(fn.output_structure)!r}")
    for fdef in saved.graph.library.function:
        sig = fdef.signature
        print(f"\n{sig.name}({', '.join(a.name for a in sig.input_arg)}) -> "
              f"{', '.join(a.name for a in sig.output_arg)}")
        for node in fdef.node_def:
            print(f"  {node.name} = {node.op}({', '.join(node.input)})")
        for out, ref in fdef.ret.items():
            print(f"  return {out} = {ref}")
    return 0


def register(sub):
    run = sub.add_parser("run", help="run a saved function (td.save) on inputs from .npy files")
    run.add_argument("file", help="a file written by td.save")
    run.add_argument("--input", "-i", action="append", default=[],
                     help="NAME=file.npy (by parameter name) or file.npy (by position); repeatable")
    run.add_argument("--output-dir", "-o", help="also write each output as output_<k>.npy here")
    from treadle.cli import add_timeout_argument
    add_timeout_argument(run)
    run.set_defaults(run=cmd_run)
    show = sub.add_parser("show", help="print a saved function's signatures and graph")
    show.add_argument("file", help="a file written by td.save")
    show.set_defaults(run=cmd_show)
