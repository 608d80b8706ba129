"""td.save / td.load for traced functions: one self-contained file with the
graph library, the captured constants and variables, and the signatures. Other
kinds of files (looms) are saved and loaded by the code registered for them in
io/file_kinds."""

import os

from treadle import _core, errors, saved_pb2
from treadle.framework import graph_serialization
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.framework.tensor_spec import TensorSpec
from treadle.framework.variables import variable_for_handle
from treadle.function.concrete_function import ConcreteFunction
from treadle.function.polymorphic_function import Function, as_function
from treadle.io import file_kinds, structure
from treadle.io.container import KIND_FUNCTION, file_kind, read_container, version_field, write_container
from treadle.io.saved_values import SavedValueWriter, read_value, restore_variables
from treadle.util import nest

FORMAT_VERSION = 1
_VERSION = version_field(KIND_FUNCTION, FORMAT_VERSION)


def _concrete_functions(obj):
    obj = as_function(obj)
    if isinstance(obj, ConcreteFunction):
        return [obj]
    if isinstance(obj, Function):
        if obj.input_signature is not None:
            obj.get_concrete_function()
        fns = list(obj._concrete_functions)
        if not fns:
            raise ValueError("td.save: the td.function has not been traced yet; call it or "
                             "get_concrete_function() first, or give it an input_signature")
        return fns
    raise TypeError(f"td.save expects a td.function, a ConcreteFunction or a Loom, got {type(obj).__name__}")


def _is_function(obj):
    return isinstance(as_function(obj), (Function, ConcreteFunction))


def _attribute_functions(obj):
    """(attribute name, td.function) for the public td.function attributes of
    an object (methods bound to it included), in name order."""
    names = set(n for n in dir(type(obj)) if isinstance(getattr(type(obj), n, None), Function))
    if hasattr(obj, "__dict__"):
        names.update(n for n, v in vars(obj).items() if isinstance(v, Function))
    return [(n, as_function(getattr(obj, n))) for n in sorted(names) if not n.startswith("_") or n == "__call__"]


def _signature_functions(signatures):
    """(signature key, ConcreteFunction) for td.save's `signatures`: a td.function
    (traced for its input_signature) or ConcreteFunction for the key
    "serving_default", or a dict of them by key."""
    if signatures is None:
        return []
    items = signatures.items() if isinstance(signatures, dict) else [("serving_default", signatures)]
    out = []
    for key, fn in items:
        if not _is_function(fn):
            raise ValueError(f"td.save: signature {key!r} must be a td.function or a ConcreteFunction, got {fn!r}")
        if not hasattr(fn, "graph"):  # a td.function: its one concrete function
            if fn.input_signature is None:
                raise ValueError(f"td.save: the td.function for signature {key!r} needs an input_signature (or "
                                 "pass its get_concrete_function(...))")
            fn = fn.get_concrete_function()
        out.append((str(key), fn))
    return out


def _saved_entries(obj, signatures):
    """(attribute, signature key, ConcreteFunction) for everything to save."""
    entries = []
    if _is_function(obj):
        entries = [("", "", fn) for fn in _concrete_functions(obj)]
    else:
        attrs = _attribute_functions(obj)
        for name, fn in attrs:
            try:
                entries.extend((name, "", c) for c in _concrete_functions(fn))
            except ValueError:  # never traced and no input_signature: nothing to save for it
                continue
        if not entries and signatures is None:
            raise TypeError(f"td.save expects a td.function, a ConcreteFunction, a Loom or an object (such as a "
                            f"td.Module) with traced td.function attributes; {type(obj).__name__} has none")
    entries.extend(("", key, fn) for key, fn in _signature_functions(signatures))
    return entries


def _output_spec(outputs):
    return nest.map_structure(lambda v: TensorSpec(v.shape, v.dtype) if isinstance(v, Tensor) else v, outputs)


def save(obj, path, signatures=None, options=None):
    """Writes `obj` to `path`: a td.function, ConcreteFunction or Loom, or an
    object (a td.Module) whose td.function attributes are saved with their
    traces (as tf.saved_model.save does), plus the `signatures` given (a
    td.function with an input_signature or a ConcreteFunction, or a dict of
    them by key; one alone is "serving_default")."""
    other_kind = file_kinds.saver_for(obj)
    if other_kind is not None:
        description, save_other = other_kind
        if signatures is not None:
            raise ValueError(f"td.save: {description} has no signatures")
        return save_other(obj, path)
    saved = saved_pb2.SavedFile()
    saved.graph.versions.producer = graph_serialization.GRAPH_VERSION
    saved.graph.versions.min_consumer = graph_serialization.MIN_CONSUMER
    seen_functions = set()
    writer = SavedValueWriter(saved.variables)
    for attribute, signature_key, fn in _saved_entries(obj, signatures):
        graph_serialization.merge_function_library(saved.graph.library, fn.library_graph_def().library,
                                                   seen_functions)
        sf = saved.functions.add(function_name=fn.name, attribute=attribute, signature_key=signature_key)
        for external, _ in fn.graph.captures.values():
            var = variable_for_handle(external)
            writer.write(external if var is None else var, sf.captures.add(), "a capture of")
        sf.input_signature.CopyFrom(structure.encode(fn.structured_input_signature))
        sf.output_structure.CopyFrom(structure.encode(_output_spec(fn.structured_outputs)))
        if fn.function_type is not None:
            sf.parameter_names.extend(p.name for p in fn.function_type.parameters)
    write_container(path, _VERSION, saved.SerializeToString())


class LoadedFunction:
    """One function of a saved file: callable like the original."""

    def __init__(self, library_bytes, proto, variables, path="saved file"):
        self.name = proto.function_name
        self.attribute = proto.attribute
        self.signature_key = proto.signature_key
        self._executable = _core.Executable.from_function(library_bytes, proto.function_name)
        where = f"{path}: saved function {self.name}"
        self.structured_input_signature = structure.decode_input_signature(proto.input_signature,
                                                                           f"{where}: input_signature")
        self.structured_outputs = structure.decode(proto.output_structure, f"{where}: output_structure")
        self._captures = [read_value(cap, variables, f"saved function {self.name}: capture {i}")
                          for i, cap in enumerate(proto.captures)]
        self.parameter_names = list(proto.parameter_names)
        self._check_against_graph()

    def _check_against_graph(self):
        """The file declares the function's structure and its graph has its own
        signature: both come from the file, so they must agree (DataLossError
        naming both), or a call would return values other than declared."""
        cap_specs = [TensorSpec(v.shape, v.dtype) for v in self._capture_values()]
        declared_in = [s for s in nest.flatten(self.structured_input_signature) if isinstance(s, TensorSpec)]
        declared_out = [s for s in nest.flatten(self.structured_outputs) if isinstance(s, TensorSpec)]
        _check_specs(self.name, "inputs", declared_in + cap_specs, self._executable.input_signature,
                     f" ({len(declared_in)} arguments and {len(cap_specs)} captured values)")
        _check_specs(self.name, "outputs", declared_out, self._executable.output_signature, "")

    def _capture_values(self):
        """The captured values as the graph takes them: a variable by its handle."""
        return [c.handle if hasattr(c, "handle") else c for c in self._captures]

    def _flat_args(self, args, kwargs):
        sig_args, sig_kwargs = self.structured_input_signature
        if len(args) > len(sig_args):
            raise TypeError(f"{self.name} takes {len(sig_args)} positional arguments but {len(args)} were given")
        # keyword arguments naming positional parameters
        args = list(args)
        for i in range(len(args), len(sig_args)):
            pname = self.parameter_names[i] if i < len(self.parameter_names) else None
            if pname is not None and pname in kwargs:
                args.append(kwargs.pop(pname))
            else:
                args.append(sig_args[i])
        call = (tuple(args), dict(sig_kwargs, **kwargs))
        nest.assert_same_structure(call, (tuple(sig_args), sig_kwargs), check_types=False)
        flat = []
        for value, spec in zip(nest.flatten(call), nest.flatten((tuple(sig_args), sig_kwargs))):
            if isinstance(spec, TensorSpec):
                t = convert_to_tensor(value, dtype_hint=spec.dtype)
                if not spec.is_compatible_with(t):
                    raise TypeError(f"{self.name}: argument {t!r} does not match {spec}")
                flat.append(t)
            elif value != spec:
                raise TypeError(f"{self.name}: was traced for the Python value {spec!r}, got {value!r}")
        return flat

    def accepts(self, args, kwargs):
        try:
            self._flat_args(args, dict(kwargs))
            return True
        except (TypeError, ValueError):
            return False

    def __call__(self, *args, **kwargs):
        flat = self._flat_args(args, dict(kwargs))
        out = self._executable.run(flat + self._capture_values())
        it = iter(out)
        leaves = [next(it) if isinstance(s, TensorSpec) else s for s in nest.flatten(self.structured_outputs)]
        return nest.pack_sequence_as(self.structured_outputs, leaves)


def _check_specs(name, what, declared, graph_specs, detail):
    if len(declared) != len(graph_specs):
        raise errors.DataLossError(None, None, f"saved function {name}: the file declares {len(declared)} {what}"
                                               f"{detail}, but its graph {'takes' if what == 'inputs' else 'returns'} "
                                               f"{len(graph_specs)}")
    for i, (spec, (dtype, shape)) in enumerate(zip(declared, graph_specs)):
        graph_spec = TensorSpec(shape, dtype)
        # An argument is checked against the declared spec, then against the
        # graph's: the two need only be compatible. A result is what the graph
        # makes: the declared spec must hold every shape the graph's allows.
        fits = (spec.shape.is_compatible_with(graph_spec.shape) if what == "inputs"
                else graph_spec.shape.is_subtype_of(spec.shape))
        if spec.dtype != dtype or not fits:
            raise errors.DataLossError(None, None, f"saved function {name}: {what[:-1]} {i} is declared "
                                                   f"{spec.dtype.name} {_shape_str(spec.shape)}, but the graph's is "
                                                   f"{graph_spec.dtype.name} {_shape_str(graph_spec.shape)}")


def _shape_str(shape):
    return "<unknown rank>" if shape.rank is None else str(tuple(shape.as_list()))


class LoadedObject:
    """What td.load returns for a saved td.function: callable, dispatching to
    the first saved concrete function whose signature accepts the arguments."""

    def __init__(self, functions, variables):
        self.functions = functions
        self.variables = variables  # every saved variable, restored (td.Variables to train or read)

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    def __call__(self, *args, **kwargs):
        for fn in self.functions:
            if fn.accepts(args, kwargs):
                return fn(*args, **kwargs)
        sigs = "\n".join(repr(f.structured_input_signature) for f in self.functions)
        raise TypeError(f"no saved function accepts these arguments; saved signatures:\n{sigs}")

    def __repr__(self):
        return f"<td.load'ed function with {len(self.functions)} signature(s)>"


def read_saved_file(path):
    """The SavedFile message of a saved function's file; DataLossError when the
    file or its payload is malformed."""
    payload = read_container(path, _VERSION)
    saved = saved_pb2.SavedFile()
    try:
        saved.ParseFromString(payload)
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"{path}: the saved function is not a valid SavedFile: {e}") from None
    return saved


def load(path):
    """Loads a file written by td.save. Every error a damaged file causes
    names the file (a reader deep inside may know only the entry)."""
    try:
        return file_kinds.loader_for(file_kind(path), path)(path)
    except errors.OpError as e:
        if os.fspath(path) in e.message:
            raise
        raise type(e)(e.node_def, e.op, f"{os.fspath(path)}: {e.message}") from None


def _load_functions(path):
    saved = read_saved_file(path)
    variables = restore_variables(saved.variables, path)
    library = saved.graph.SerializeToString()
    functions = [LoadedFunction(library, f, variables, path) for f in saved.functions]
    if not functions:
        raise errors.DataLossError(None, None, f"{path}: the file holds no function")
    if all(not f.attribute and not f.signature_key for f in saved.functions):
        return LoadedObject(functions, variables)
    return LoadedModule([(f.attribute, f.signature_key, fn) for f, fn in zip(saved.functions, functions)],
                        variables)


class LoadedModule:
    """What td.load returns for a saved object: each saved td.function
    attribute as a callable attribute, `signatures` by key (called with
    keyword arguments, returning a dict of outputs as TensorFlow's do), and
    the restored `variables`. Functions saved by themselves make it callable."""

    def __init__(self, entries, variables):
        self.variables = variables
        self.trainable_variables = [v for v in variables if getattr(v, "trainable", False)]
        # Every saved function, whatever it was saved as (as LoadedObject.functions).
        self.functions = [fn for _, _, fn in entries]
        by_attribute, self._own = {}, []
        self.signatures = {}
        for attribute, key, fn in entries:
            if key:
                self.signatures[key] = _LoadedSignature(key, fn)
            elif attribute:
                by_attribute.setdefault(attribute, []).append(fn)
            else:
                self._own.append(fn)
        self._own.extend(by_attribute.pop("__call__", []))  # a saved __call__ makes the object callable
        for attribute, fns in by_attribute.items():
            setattr(self, attribute, LoadedObject(fns, variables))

    def __call__(self, *args, **kwargs):
        if not self._own:
            raise TypeError("this saved object is not callable (call one of its attributes or signatures)")
        return LoadedObject(self._own, self.variables)(*args, **kwargs)

    def __repr__(self):
        return f"<td.load'ed object with signatures {sorted(self.signatures)}>"


class _LoadedSignature:
    """A saved signature: keyword arguments in, a dict of tensors out."""

    def __init__(self, key, fn):
        self.key = key
        self.function = fn
        self.structured_input_signature = fn.structured_input_signature

    def __call__(self, *args, **kwargs):
        out = self.function(*args, **kwargs)
        if isinstance(out, dict):
            return out
        flat = nest.flatten(out)
        return {f"output_{i}": v for i, v in enumerate(flat)}

    def __repr__(self):
        return f"<signature {self.key!r}>"


file_kinds.register(KIND_FUNCTION, (), "a td.function", save, _load_functions)
