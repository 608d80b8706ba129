"""td.train.Checkpoint: saves and restores the variables of the objects given
to it (variables, td.Modules, optimizers with their slots, random
Generators, and lists and dicts of them), each under its path of attribute
names ("model/layer/w"; an optimizer slot as
"optimizer/slots/<variable path>/<slot name>"). The file is a treadle
container holding a SavedFile message whose variables are named by path."""

import os

from treadle import errors, saved_pb2
from treadle.framework import graph_serialization
from treadle.framework.variables import Variable
from treadle.io.container import KIND_CHECKPOINT, file_kind, read_container, version_field, write_container
from treadle.io.saved_values import decode_tensor
from treadle.module.module import Module
from treadle.ops.stateless_random_ops import Generator
from treadle.optimizers import Optimizer

_FORMAT_VERSION = 1


def _is_optimizer(obj):
    return isinstance(obj, Optimizer)


def _is_trackable(obj):
    return isinstance(obj, (Module, Generator, Checkpoint))


class _Walk:
    """Paths of the variables reachable from the checkpoint's objects."""

    def __init__(self):
        self.variables = {}       # path -> Variable
        self.path_of = {}         # variable id -> path
        self.optimizers = []      # (path, optimizer)
        self._seen = set()

    def visit(self, obj, path):
        if id(obj) in self._seen:
            return
        if isinstance(obj, Variable):
            self._seen.add(id(obj))
            self.variables[path] = obj
            self.path_of[obj._unique_id] = path
        elif _is_optimizer(obj):
            self._seen.add(id(obj))
            self.optimizers.append((path, obj))
            self.visit(obj.iterations, f"{path}/iterations")
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                self.visit(v, f"{path}/{i}")
        elif isinstance(obj, dict):
            for k in sorted(obj, key=str):
                self.visit(obj[k], f"{path}/{k}")
        elif _is_trackable(obj):
            self._seen.add(id(obj))
            for key in sorted(vars(obj)):
                if not key.startswith("__"):
                    self.visit(vars(obj)[key], f"{path}/{key.lstrip('_')}" if path else key.lstrip("_"))

    def slots(self):
        """(path, optimizer, slot name, variable) for each existing slot of a tracked variable."""
        out = []
        for opt_path, opt in self.optimizers:
            for (slot_name, var_id), slot in opt._slots.items():
                var_path = self.path_of.get(var_id)
                if var_path is not None:
                    out.append((f"{opt_path}/slots/{var_path}/{slot_name}", slot))
        return out


class CheckpointLoadStatus:
    """What restore() returns: which saved values were used."""

    def __init__(self, unused, unmatched):
        self._unused = unused        # saved paths with no object to go to
        self._unmatched = unmatched  # tracked variables the file has no value for

    def assert_consumed(self):
        if self._unused or self._unmatched:
            raise AssertionError(f"Unresolved checkpoint values: saved but not restored {sorted(self._unused)}; "
                                 f"tracked but not in the file {sorted(self._unmatched)}")
        return self

    def assert_existing_objects_matched(self):
        if self._unmatched:
            raise AssertionError(f"tracked variables not in the checkpoint: {sorted(self._unmatched)}")
        return self

    def expect_partial(self):
        return self


class Checkpoint:
    """Saves and restores the variables of the objects passed as keyword
    arguments (TensorFlow's tf.train.Checkpoint)."""

    def __init__(self, root=None, **kwargs):
        if root is not None:
            kwargs["root"] = root
        for name, value in kwargs.items():
            setattr(self, name, value)
        self.save_counter = 0

    def _walk(self):
        walk = _Walk()
        for key in sorted(vars(self)):
            if key != "save_counter" and not key.startswith("_"):
                walk.visit(vars(self)[key], key)
        return walk

    def write(self, file_prefix):
        """Writes the variables to `file_prefix` (the exact path); returns it.
        The file is replaced atomically: a reader, or a writer killed
        mid-way, leaves the previous checkpoint or this one, whole."""
        walk = self._walk()
        saved = saved_pb2.SavedFile()
        for path, var in list(walk.variables.items()) + walk.slots():
            sv = saved.variables.add(name=path, trainable=var.trainable)
            graph_serialization.tensor_to_proto(var.read_value(), sv.value)
            graph_serialization.shape_to_proto(var.shape.dims, sv.shape)
        write_container(file_prefix, version_field(KIND_CHECKPOINT, _FORMAT_VERSION), saved.SerializeToString())
        return file_prefix

    def save(self, file_prefix):
        """Writes to `file_prefix-<n>` (n counts the saves) and returns that path."""
        self.save_counter += 1
        directory = os.path.dirname(file_prefix)
        if directory:
            os.makedirs(directory, exist_ok=True)
        return self.write(f"{file_prefix}-{self.save_counter}")

    def read(self, save_path):
        return self.restore(save_path)

    def restore(self, save_path):
        """Assigns the saved values to the tracked variables (creating the
        optimizer slots the file has for tracked variables, so a restored
        optimizer continues where it was). Every entry of the file is decoded
        and checked against its variable first: a bad file changes nothing."""
        if save_path is None:
            return CheckpointLoadStatus(set(), set())
        values = _read_entries(save_path)
        walk = self._walk()
        targets = dict(walk.variables)   # path -> the variable it restores
        slots = {}                       # path -> (optimizer, variable, slot name): made once all is checked
        for opt_path, opt in walk.optimizers:
            for var_id, var_path in walk.path_of.items():
                prefix = f"{opt_path}/slots/{var_path}/"
                for name in values:
                    if name.startswith(prefix):
                        slots[name] = (opt, walk.variables[var_path], name[len(prefix):])
                        targets[name] = walk.variables[var_path]  # a slot has its variable's dtype and shape
        for path, var in targets.items():
            if path in values:
                _check_entry(save_path, path, values[path], var)
        for path, (opt, var, slot_name) in slots.items():
            targets[path] = opt.add_slot(var, slot_name)
        for path, var in targets.items():
            if path in values:
                var.assign(values[path])
        return CheckpointLoadStatus(set(values) - set(targets), set(targets) - set(values))


def _read_entries(save_path):
    """{path: value tensor} of every entry of a checkpoint file, each decoded;
    DataLossError naming the file (and the entry) for anything malformed."""
    if file_kind(save_path) != KIND_CHECKPOINT:
        raise errors.DataLossError(None, None, f"{save_path}: not a checkpoint written by td.train.Checkpoint")
    saved = saved_pb2.SavedFile()
    try:
        saved.ParseFromString(read_container(save_path, version_field(KIND_CHECKPOINT, _FORMAT_VERSION)))
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"{save_path}: corrupt checkpoint: {e}") from None
    values = {}
    for sv in saved.variables:
        def bad(what):
            return errors.DataLossError(None, None, f"checkpoint {save_path}: the value of '{sv.name}' {what}")
        if sv.name in values:
            raise bad("appears twice")
        if not sv.HasField("value"):
            raise bad("is missing")
        value = decode_tensor(sv.value, f"checkpoint {save_path}: the value of '{sv.name}'")
        declared = tuple(d.size for d in sv.shape.dim)
        if sv.HasField("shape") and not sv.shape.unknown_rank and not _shape_fits(declared, value.shape):
            raise bad(f"has shape {tuple(value.shape)}, but the entry declares {declared}")
        values[sv.name] = value
    return values


def _shape_fits(declared, shape):
    """Whether a saved shape (-1: any size) admits `shape`."""
    return len(declared) == len(shape) and all(d < 0 or d == n for d, n in zip(declared, shape))


def _check_entry(save_path, path, value, var):
    if value.dtype != var.dtype or not var.shape.is_compatible_with(value.shape):
        raise ValueError(f"checkpoint {save_path}: '{path}' holds a {value.dtype.name} tensor of shape "
                         f"{tuple(value.shape)}, but the variable is {var.dtype.name} of shape "
                         f"{tuple(var.shape)}; no variable was changed")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint file in `checkpoint_dir` (by save number), or None."""
    if not os.path.isdir(checkpoint_dir):
        return None
    best = None
    for name in os.listdir(checkpoint_dir):
        stem, _, number = name.rpartition("-")
        if stem and number.isdigit():
            key = (int(number), name)
            best = key if best is None or key > best else best
    return None if best is None else os.path.join(checkpoint_dir, best[1])
