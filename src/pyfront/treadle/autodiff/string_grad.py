"""String ops have no gradient (their values are not numbers)."""

from treadle.autodiff.registry import NotDifferentiable

NotDifferentiable("StringJoin", "ReduceJoin", "AsString")
