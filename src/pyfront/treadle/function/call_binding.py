"""Binding a call of a ConcreteFunction to its traced parameters, as
TensorFlow does: first through the Python signature (keywords, defaults,
*args, nested structures, Python values that must equal the traced ones),
then, if that fails, through the flat signature (the graph's tensor inputs,
positionally or by placeholder name). When both fail the error says why each
did."""

import inspect

from treadle import errors
from treadle.framework.tensor import Tensor, convert_to_tensor

def bind_structured(function_type, name, args, kwargs):
    """The flat tensor arguments of a call, bound through the traced
    parameters (their names and kinds, every one required: a traced function
    has no defaults, as in TensorFlow) and cast to each parameter's traced
    type. TypeError when they do not bind."""
    signature = inspect.Signature([inspect.Parameter(p.name, p.kind) for p in function_type.parameters])
    try:
        bound = signature.bind(*args, **kwargs)
        arguments = {}
        for p in function_type.parameters:
            arguments[p.name] = p.type.cast(bound.arguments.get(p.name, _empty_variadic(p.kind)))
    except (TypeError, ValueError) as e:
        raise TypeError(f"Binding inputs to td.function `{name}` failed due to `{e}`. Received args: {args} and "
                        f"kwargs: {kwargs} for signature: {function_type}.") from None
    return function_type.flatten_tensors(arguments)


def _empty_variadic(kind):
    """What Python binds to a *args or **kwargs parameter given nothing."""
    return {} if kind is inspect.Parameter.VAR_KEYWORD else ()


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
