"""The TreeLSTM's parameters (Tai et al. 2015 sizes), made once from a fixed
seed so every implementation starts from the same weights."""

import numpy as np

EMBED = 300
HIDDEN = 150


def initial_weights(vocab=20000, embed=EMBED, hidden=HIDDEN, classes=5, seed=0):
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        "embedding": rng.normal(0.0, 0.1, (vocab, embed)).astype(np.float32),
        "W_leaf": uniform((embed, 3 * hidden), embed),
        "b_leaf": np.zeros(3 * hidden, np.float32),
        "W_node": uniform((2 * hidden, 5 * hidden), 2 * hidden),
        "b_node": np.zeros(5 * hidden, np.float32),
        "W_out": uniform((hidden, classes), hidden),
        "b_out": np.zeros(classes, np.float32),
    }


def flops_per_tree(tree, embed=EMBED, hidden=HIDDEN, classes=5):
    """Multiply-adds x 2 of the forward pass's matrix products for one tree."""
    leaves = tree.num_leaves
    nodes = tree.size - leaves
    return 2 * (leaves * embed * 3 * hidden + nodes * 2 * hidden * 5 * hidden + hidden * classes)
