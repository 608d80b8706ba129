"""User functions of a pipeline (map, filter, scan, ...), traced once into a
graph as TensorFlow does: the function sees symbolic tensors shaped like the
element_spec, and each element then runs the graph in the C++ executor with
the GIL released. Python code inside goes through td.py_function."""

from treadle.autograph import converter
from treadle.data import structure
from treadle.framework.tensor_spec import TensorSpec
from treadle.function.polymorphic_function import function
from treadle.util import nest


class StructuredFunction:
    """`fn` traced on arguments with the structures `arg_specs` (a tuple:
    one structure per argument group; an element that is a tuple is unpacked
    into positional arguments, as tf.data does)."""

    def __init__(self, fn, arg_specs, what, unpack_tuples=True):
        fn = converter.convert(fn)  # AutoGraph, as td.function would: `if x > 0` on tensors becomes an If
        self._what = what
        self._arg_specs = arg_specs
        self._arg_flat = [structure.flat_specs(s) for s in arg_specs]
        holder = {}

        def traced(*flat):
            groups, at = [], 0
            for specs, spec in zip(self._arg_flat, arg_specs):
                groups.append(structure.pack(spec, flat[at:at + len(specs)]))
                at += len(specs)
            if unpack_tuples and len(groups) == 1 and isinstance(groups[0], tuple):
                args = groups[0]
            else:
                args = groups
            out = fn(*args)
            if out is None:
                raise TypeError(f"td.data: the {what} function returned None; it must return tensors")
            out = structure.to_tensors(out, f"{what} function's result")
            holder["structure"] = out
            return tuple(nest.flatten(out))

        traced.__name__ = getattr(fn, "__name__", what).replace("<", "_").replace(">", "_")
        flat_in = [s for specs in self._arg_flat for s in specs]
        self._concrete = function(traced, autograph=False).get_concrete_function(*flat_in)
        self.output_structure = holder["structure"]
        self.output_spec = nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), self.output_structure)
        self._output_flat_specs = structure.flat_specs(self.output_spec)
        self._run = None

    def __call__(self, flat_args):
        """Runs the graph on flat eager tensors; returns the flat outputs."""
        run = self._run
        if run is None:
            self._concrete._prepare_run()
            captures = self._concrete._capture_values
            executable_run = self._concrete._get_executable().run
            run = self._run = lambda args: executable_run(list(args) + captures)
        return run(flat_args)

    def executable(self):
        """(the _core.Executable, the captured values it takes after the arguments)."""
        self._concrete._prepare_run()
        return self._concrete._get_executable(), list(self._concrete._capture_values)

    @property
    def output_flat_specs(self):
        return self._output_flat_specs
