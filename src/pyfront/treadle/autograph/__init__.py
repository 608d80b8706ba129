"""td.autograph: converts Python control flow on tensors into graph control
flow when td.function traces a function (see converter.py)."""

from treadle.autograph import experimental
from treadle.autograph.converter import AutoGraphWarning, to_code, to_graph

__all__ = ["experimental", "to_code", "to_graph", "AutoGraphWarning"]


def __dir__():
    return sorted(__all__)
