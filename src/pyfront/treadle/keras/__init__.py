"""td.keras: model building blocks with TensorFlow's Keras names, as
`td.Module`s that work eagerly, inside `td.function` and inside LoomOps:
layers, initializers, losses and optimizers. Keras models' `compile` and
`fit` are not here: write the training step with `td.GradientTape`."""

from treadle.keras import initializers, layers, losses, optimizers

__all__ = ["initializers", "layers", "losses", "optimizers"]


def __dir__():
    return sorted(__all__)
