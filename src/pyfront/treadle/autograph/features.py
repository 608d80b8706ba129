"""AutoGraph's optional conversions (tf.autograph.experimental.Feature), as
td.function(experimental_autograph_options=...) and
td.autograph.to_graph(experimental_optional_features=...) turn them on:

- ASSERT_STATEMENTS: `assert` on a tensor becomes an Assert op, which raises
  InvalidArgumentError when the graph runs and the condition is false;
- BUILTIN_FUNCTIONS: `print` of a tensor prints its value each time the graph
  runs (not the symbolic tensor once, while tracing);
- NAME_SCOPES: each converted function runs inside td.name_scope(<its name>),
  so the ops it makes are named after it;
- EQUALITY_OPERATORS and AUTO_CONTROL_DEPS: accepted, with nothing more to do:
  as in TensorFlow 2.21, chained comparisons (`a == b == c`, `a < b < c`)
  become the logical and of each pair whatever the features, `==` of tensors
  is elementwise, and treadle always runs stateful ops in program order.

The features in effect while a function is converted and traced are kept per
thread, so the functions it calls are converted with the same ones."""

import enum
import threading


class Feature(enum.Enum):
    """As tf.autograph.experimental.Feature. ALL turns on every feature treadle
    implements; LISTS (lists turned into TensorArrays) is not implemented."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


IMPLEMENTED = frozenset((Feature.AUTO_CONTROL_DEPS, Feature.ASSERT_STATEMENTS, Feature.BUILTIN_FUNCTIONS,
                         Feature.EQUALITY_OPERATORS, Feature.NAME_SCOPES))
NONE = frozenset()


def normalize(options, where="experimental_autograph_options"):
    """The frozenset of features `options` names (None, one Feature, or a
    list/tuple/set of them)."""
    if options is None:
        return NONE
    items = options if isinstance(options, (list, tuple, set, frozenset)) else (options,)
    result = set()
    for item in items:
        if not isinstance(item, Feature):
            raise TypeError(f"{where}: expected tf.autograph.experimental.Feature values, got {item!r}")
        if item is Feature.ALL:
            result |= IMPLEMENTED
        elif item not in IMPLEMENTED:
            raise NotImplementedError(f"{where}: Feature.{item.name} is not implemented by treadle's AutoGraph "
                                      f"(implemented: {', '.join(sorted(f.name for f in IMPLEMENTED))}, and ALL)")
        else:
            result.add(item)
    return frozenset(result)


class _Active(threading.local):
    def __init__(self):
        super().__init__()
        self.features = NONE


_active = _Active()


def active():
    """The features in effect for the code being converted or traced now."""
    return _active.features


def uses(feature):
    return feature in _active.features


class enabled:
    """`with enabled(features):` converts and traces with `features`."""

    __slots__ = ("_features", "_old")

    def __init__(self, features):
        self._features = features

    def __enter__(self):
        self._old = _active.features
        _active.features = self._features
        return self

    def __exit__(self, *exc):
        _active.features = self._old
        return False
