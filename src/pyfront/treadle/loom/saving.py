"""td.save / td.load for looms: one file (the treadle container, kind 2) with
the loom's metadata, its ops' batched functions and the values it reads
(variables saved as variables), so a saved loom runs without its Python code."""

from treadle import errors, loom_pb2
from treadle.io.container import file_kind, read_container, write_container
from treadle.io.saved_values import SavedValueWriter, read_value, restore_variables

KIND_LOOM = 2
FORMAT_VERSION = 1


def save_loom(loom, path):
    if loom._dry_run:
        raise ValueError("td.save: a loom built with dry_run=True has no functions to save")
    saved = loom_pb2.SavedLoom()
    saved.loom.ParseFromString(loom._loom_def)
    writer = SavedValueWriter(saved.variables)

    def add(value, field):
        writer.write(value, field.add(), "the loom input")

    for _, value, _ in loom._named:
        add(value, saved.named_tensors)
    for ts in loom._batch_input_order:
        add(loom._batch_inputs[ts], saved.batch_inputs)
    for value in loom._captures:
        add(value, saved.captures)
    write_container(path, (KIND_LOOM << 8) | FORMAT_VERSION, saved.SerializeToString())


def load_loom(path):
    """A td.loom.Loom from a file written by td.save(loom, path)."""
    from treadle.loom.loom import Loom
    kind = file_kind(path)
    if kind != KIND_LOOM:
        raise errors.DataLossError(None, None, f"{path}: not a saved loom (file kind {kind})")
    payload = read_container(path, (KIND_LOOM << 8) | FORMAT_VERSION)
    saved = loom_pb2.SavedLoom()
    try:
        saved.ParseFromString(payload)
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"{path}: not a valid SavedLoom: {e}") from None
    variables = restore_variables(saved.variables)

    def value(cap, what):
        return read_value(cap, variables, f"{path}: {what}")

    md = saved.loom.metadata
    if len(saved.named_tensors) != len(md.named_tensors) or \
            len(saved.batch_inputs) != len(md.batch_input_type_shapes):
        raise errors.DataLossError(None, None, f"{path}: the saved values do not match the loom's metadata")
    named = [value(c, f"named tensor {i}") for i, c in enumerate(saved.named_tensors)]
    batch = [value(c, f"batch input {i}") for i, c in enumerate(saved.batch_inputs)]
    captures = [value(c, f"captured value {i}") for i, c in enumerate(saved.captures)]
    return Loom._restore(saved.loom, named, batch, captures)
