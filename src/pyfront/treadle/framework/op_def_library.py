"""Op functions built from the C++ registry's descriptions.

Every registered op becomes `td.raw_ops.<OpName>(**kwargs)`; ops that declare
public API names also become those functions (`td.add`, `td.math.add`), with
TensorFlow's argument names. Nothing here lists ops: the registry does."""

import collections
import inspect

import numpy as np

from treadle import _core
from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import TENSOR_CLASSES, Tensor, convert_to_tensor


class OpSignature:
    """What the front end needs to know of one registered op."""

    def __init__(self, desc):
        self.name = desc["name"]
        self.inputs = desc["inputs"]
        self.attrs = [a for a in desc["attrs"]]
        self.api_names = desc["api_names"]
        self.doc = desc["doc"]
        self.stateful = desc["stateful"]
        self.input_names = [a["name"] for a in self.inputs]
        self.has_list_input = any(a["is_list"] for a in self.inputs)
        self.attr_names = [a["name"] for a in self.attrs]


# Element-wise binary ops, and their functions on other kinds of tensor
# (td.RaggedTensor): type -> fn(op_function, x, y), registered by the modules
# of those kinds (a higher layer).
ELEMENTWISE_BINARY_OPS = frozenset({
    "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "TruncateDiv", "Pow",
    "Maximum", "Minimum", "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
    "GreaterEqual", "LogicalAnd", "LogicalOr"})
BINARY_DISPATCH = {}


def convert_inputs(sig, values):
    """Converts the argument values of `sig`'s inputs to tensors. Arguments
    that share a type attr take the dtype of the first one that is already a
    tensor, as TensorFlow does (so `add(t, 1)` makes 1 a tensor of t's dtype)."""
    if not sig.has_list_input:
        for value in values:
            if type(value) not in TENSOR_CLASSES and not isinstance(value, Tensor):
                break
        else:
            return values  # tensors already (the usual case while tracing)
    flat_groups = []
    for arg, value in zip(sig.inputs, values):
        if arg["is_list"]:
            if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
                raise TypeError(f"Expected list for '{arg['name']}' argument to '{sig.name}' Op, not {value!r}.")
            flat_groups.append((arg, list(value)))
        else:
            flat_groups.append((arg, [value]))
    known = {}
    for arg, group in flat_groups:
        attr = arg["type_attr"]
        if attr and attr not in known:
            for v in group:
                if isinstance(v, Tensor) or hasattr(v, "dtype") and isinstance(getattr(v, "dtype"), dtypes.DType):
                    known[attr] = v.dtype
                    break
    out = []
    for arg, group in flat_groups:
        attr = arg["type_attr"]
        want = known.get(attr) if attr else None
        hint = None
        if want is None and len(arg["allowed"]) and not isinstance(group[0] if group else None, Tensor):
            hint = arg["allowed"][0] if dtypes.int32 not in arg["allowed"] else dtypes.int32
        for v in group:
            if isinstance(v, Tensor):
                t = v
            elif want is not None and not isinstance(v, (np.ndarray, np.generic)):
                # A Python value takes the dtype of the tensors beside it, or
                # fails with TypeError as in TensorFlow (`add(int_t, 1.5)`).
                t = convert_to_tensor(v, dtype=want)
            elif want is not None:
                t = convert_to_tensor(v)
            else:
                t = convert_to_tensor(v, dtype_hint=hint)
            if attr and attr not in known:
                known[attr] = t.dtype
                want = t.dtype
            out.append(t)
    return out


def make_op_function(sig, public_name=None):
    """A Python function for op `sig`: positional/keyword inputs, attrs as
    keyword arguments with the registry's defaults, and `name`."""
    input_names = sig.input_names
    attr_defs = sig.attrs
    n_inputs = len(input_names)
    op_name = sig.name

    def bind(args, kwargs):
        """The input values, attrs and node name a call gives, checked as Python checks a call."""
        name = kwargs.pop("name", None)
        if len(args) > n_inputs + len(attr_defs):
            raise TypeError(f"{public_name or op_name}() takes at most {n_inputs + len(attr_defs)} "
                            f"arguments ({len(args)} given)")
        values = list(args[:n_inputs])
        for input_name in input_names[len(values):]:
            if input_name not in kwargs:
                raise TypeError(f"{public_name or op_name}() missing required argument '{input_name}'")
            values.append(kwargs.pop(input_name))
        attrs = {}
        for attr, value in zip(attr_defs, args[n_inputs:]):
            attrs[attr["name"]] = value
        for attr in attr_defs:
            if attr["name"] in kwargs:
                attrs[attr["name"]] = kwargs.pop(attr["name"])
        if kwargs:
            raise TypeError(f"{public_name or op_name}() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        return values, attrs, name

    elementwise = op_name in ELEMENTWISE_BINARY_OPS

    def op_function(*args, **kwargs):
        if kwargs or len(args) != n_inputs:
            values, attrs, name = bind(args, kwargs)
        else:  # the inputs alone, by position: the usual call, bound without a loop
            values, attrs, name = list(args), {}, None
        if elementwise:
            other = BINARY_DISPATCH.get(type(values[0])) or BINARY_DISPATCH.get(type(values[1]))
            if other is not None:
                return other(op_function, values[0], values[1])
        outputs = execute(op_name, convert_inputs(sig, values), attrs, name=name)
        return outputs[0] if len(outputs) == 1 else outputs

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in input_names]
    for attr in attr_defs:
        default = attr["default"] if attr["has_default"] else inspect.Parameter.empty
        params.append(inspect.Parameter(attr["name"], inspect.Parameter.KEYWORD_ONLY, default=default))
    params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
    op_function.__signature__ = inspect.Signature(params)
    op_function.__name__ = (public_name or op_name).split(".")[-1]
    op_function.__qualname__ = op_function.__name__
    op_function.__doc__ = sig.doc or f"Runs the {op_name} op."
    return op_function


def load_signatures():
    return {d["name"]: OpSignature(d) for d in _core.op_defs()}


SIGNATURES = load_signatures()

FunctionAttr = collections.namedtuple("FunctionAttr", "attr first_input returns_outputs loop_body")
FunctionAttr.__doc__ = """How an op passes its inputs to a library function: the node's inputs
[first_input, ...) are the arguments of the function named by attr `attr`;
with `returns_outputs` its results are the node's outputs, with `loop_body`
also the next values of its arguments."""
_function_attrs = {}


def function_attrs(op_type):
    """The registry's FunctionAttrs of op `op_type` (empty for ops that call no function)."""
    found = _function_attrs.get(op_type)
    if found is None:
        found = _function_attrs[op_type] = tuple(FunctionAttr(*f) for f in _core.op_function_attrs(op_type))
    return found


class _RawOps:
    """`td.raw_ops.<OpName>(**kwargs)`: every registered op, keyword arguments only."""

    def __init__(self, signatures):
        for op_name, sig in signatures.items():
            fn = make_op_function(sig)

            def raw(fn=fn, op_name=op_name, **kwargs):
                return fn(**kwargs)

            raw.__name__ = op_name
            raw.__doc__ = fn.__doc__
            setattr(self, op_name, raw)

    def __dir__(self):
        return sorted(SIGNATURES)


raw_ops = _RawOps(SIGNATURES)


def api_functions():
    """(public dotted name, function) for every op that declares API names."""
    out = []
    for sig in SIGNATURES.values():
        for api_name in sig.api_names:
            out.append((api_name, make_op_function(sig, api_name)))
    return out
