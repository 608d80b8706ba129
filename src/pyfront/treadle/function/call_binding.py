"""Binding a call of a ConcreteFunction to its traced parameters, as
TensorFlow does: first through the Python signature (keywords, defaults,
*args, nested structures, Python values that must equal the traced ones),
then, if that fails, through the flat signature (the graph's tensor inputs,
positionally or by placeholder name). When both fail the error says why each
did."""

import inspect

from treadle import errors
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.function import trace_type

def bind_structured(function_type, call_signature, name, args, kwargs):
    """The flat tensor arguments of a call, bound through the traced
    parameters and cast to each parameter's traced type. As in TensorFlow, a
    traced function has no defaults (every parameter is required), *args
    traced with k values is k positional parameters `args_0`... and **kwargs
    one keyword-only parameter per key traced. TypeError when the call does
    not bind."""
    signature, gather = call_signature
    try:
        bound = signature.bind(*args, **kwargs)
        arguments = {}
        for p in function_type.parameters:
            arguments[p.name] = _cast(p.type, gather[p.name](bound.arguments))
    except (TypeError, ValueError) as e:
        raise TypeError(f"Binding inputs to td.function `{name}` failed due to `{e}`. Received args: {args} and "
                        f"kwargs: {kwargs} for signature: {function_type}.") from None
    return function_type.flatten_tensors(arguments)


def _cast(traced, value):
    """`value` cast to its parameter's traced type; when the value is of
    another kind (a dict for a ragged tensor, another ragged rank), the error
    says so in TensorFlow's words."""
    try:
        return traced.cast(value)
    except (TypeError, ValueError) as e:
        try:
            kind = trace_type.from_value(value)
        except TypeError:
            raise e from None
        if type(kind) is not type(traced) or getattr(kind, "ragged_rank", None) != getattr(traced, "ragged_rank", None):
            raise ValueError(f"{e}: the two structures don't have the same nested structure") from None
        raise


def call_signature(function_type):
    """The inspect.Signature calls bind to (so that Python's binding rules and
    messages apply) and, per traced parameter, how to take its value from
    the bound arguments (bind_structured's `call_signature`)."""
    P = inspect.Parameter
    variadic = any(p.kind is P.VAR_POSITIONAL for p in function_type.parameters)
    params, keyword_only, gather = [], [], {}
    for p in function_type.parameters:
        if p.kind is P.VAR_POSITIONAL:
            names = [f"{p.name}_{i}" for i in range(len(getattr(p.type, "components", ())))]
            params.extend(P(n, P.POSITIONAL_ONLY) for n in names)
            gather[p.name] = lambda bound, names=names: tuple(bound[n] for n in names)
        elif p.kind is P.VAR_KEYWORD:
            keys = sorted(getattr(p.type, "mapping", {}))
            keyword_only.extend(P(k, P.KEYWORD_ONLY) for k in keys)
            gather[p.name] = lambda bound, keys=keys: {k: bound[k] for k in keys}
        else:
            # Parameters before *args can only be given by position.
            kind = P.POSITIONAL_ONLY if variadic and p.kind is P.POSITIONAL_OR_KEYWORD else p.kind
            (keyword_only if kind is P.KEYWORD_ONLY else params).append(P(p.name, kind))
            gather[p.name] = lambda bound, n=p.name: bound[n]
    return inspect.Signature(params + keyword_only), gather


def bind_flat(inputs, keywords, summary, args, kwargs, convert=False):
    """The flat tensor arguments of a call made with the graph's tensor inputs
    themselves: positionally, or by their placeholder names (`keywords`);
    with `convert`, values that are not tensors are converted (functions with
    no Python signature, e.g. loaded ones). TypeError or ValueError when the
    call does not fit."""
    if len(args) > len(keywords):
        raise TypeError(f"{summary} takes {len(keywords)} positional arguments, got {len(args)}.")
    flat = list(args)
    remaining = dict(kwargs)
    for keyword in keywords[len(flat):]:
        if keyword not in remaining:
            given = set(keywords[:len(args)]) | set(kwargs)
            missing = sorted(set(keywords) - given)
            raise TypeError(f"{summary} missing required arguments: {', '.join(missing)}.")
        flat.append(remaining.pop(keyword))
    if remaining:
        for key in remaining:
            if key in keywords[:len(args)]:
                raise TypeError(f"{summary} got two values for '{key}'.")
        raise TypeError(f"{summary} got unexpected keyword arguments: {', '.join(sorted(remaining))}.")
    if convert:
        flat = [v if isinstance(v, Tensor) else convert_to_tensor(v) for v in flat]
    for i, (value, placeholder) in enumerate(zip(flat, inputs)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{summary}: expected argument #{i}(zero-based) to be a Tensor; got "
                            f"{type(value).__name__} ({value}).")
        if not value.shape.is_compatible_with(placeholder.shape):
            raise ValueError(f"{summary}: argument #{i}(zero-based) has shape {value.shape} but the function "
                             f"was traced for shape {placeholder.shape}.")
    return flat


def check_dtypes(inputs, tensors, function_name):
    """InvalidArgumentError (as the runtime of TensorFlow raises) for an
    argument whose dtype is not the placeholder's."""
    for i, (value, placeholder) in enumerate(zip(tensors, inputs)):
        if value.dtype != placeholder.dtype:
            raise errors.InvalidArgumentError(
                None, None, f"cannot compute {function_name} as input #{i}(zero-based) was expected to be a "
                            f"{placeholder.dtype.name} tensor but is a {value.dtype.name} tensor [Op:{function_name}]")
