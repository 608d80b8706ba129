"""experimental_attributes of td.function: TensorFlow's function attributes.

TensorFlow accepts a fixed set of attribute names on a polymorphic function
(the others belong to its internal machinery and are refused), each with a
bool, int, float, string or list value. treadle keeps them on the function;
the one that changes how a trace is built here is `_disable_acd`."""

DISABLE_ACD = "_disable_acd"

# The names TensorFlow 2.21's tf.function accepts.
ALLOWED = frozenset({
    "api_implements", "api_preferred_device", DISABLE_ACD, "disable_summaries_at_runtime", "go_backwards",
    "_implements", "experimental_ints_on_device", "_noinline", "function_runs_at_most_once",
    "runtime_constant_optimization", "_tf_data_function", "time_major", "_OutputsOnOpDevice",
})

_SCALARS = (bool, int, float, str, bytes)


def parse(attributes):
    """The attributes as a new dict, after checking their names and values."""
    if attributes is None:
        return {}
    if not isinstance(attributes, dict):
        raise TypeError(f"td.function(experimental_attributes=...) must be a dict of attribute names to values, "
                        f"got {type(attributes).__name__}")
    parsed = {}
    for key, value in attributes.items():
        if key not in ALLOWED:
            raise ValueError(f"`{key} is not supported by td.function as an attribute.")
        parsed[key] = _checked_value(key, value)
    return parsed


def _checked_value(key, value):
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, list):
        for v in value:
            if not isinstance(v, _SCALARS):
                raise ValueError(f"Attributes for {key} must be bool, int, float, or string. Got {type(v)}.")
        return list(value)
    raise ValueError(f"Attribute {key} must be bool, int, float, string, or list. Got {type(value)}.")


def automatic_control_dependencies(attributes):
    """Whether a trace orders the function's stateful ops and runs them all
    (TensorFlow's automatic control dependencies), unless `_disable_acd`."""
    return not attributes.get(DISABLE_ACD, False)
