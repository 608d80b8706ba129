"""The tree decoder of the automatic-batching benchmark, defined once, with its per-example
NumPy reference (forward and gradients) that every implementation is checked
against.

A state s of STATE floats is expanded while p = sigmoid(s . w_p + b_p) > 0.5
and its depth is below MAX_DEPTH: its children are the two halves of
tanh(s W_c + b_c). The output is the sum of the leaf states. A training step
minimises 0.5 * mean(output ** 2) over the batch's outputs with SGD; the
decisions themselves carry no gradient.

The weights and initial states below are drawn so that trees have about 24
nodes on average (1 to about 180): W_c ~ N(0, 4 / STATE), w_p ~ N(0, 1 /
STATE), b_p = 0.22, initial states N(0, 1)."""

import numpy as np

STATE = 256
MAX_DEPTH = 8
LEARNING_RATE = 0.01
P_BIAS = 0.22


def initial_weights(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "W_c": rng.normal(0.0, 2.0 / np.sqrt(STATE), (STATE, 2 * STATE)).astype(np.float32),
        "b_c": np.zeros(2 * STATE, np.float32),
        "w_p": rng.normal(0.0, 1.0 / np.sqrt(STATE), (STATE, 1)).astype(np.float32),
        "b_p": np.full(1, P_BIAS, np.float32),
    }


def initial_states(count, seed=1):
    """`count` root states, one row each."""
    return np.random.default_rng(seed).normal(0.0, 1.0, (count, STATE)).astype(np.float32)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def expands(w, s, depth):
    """Whether a node of state s at `depth` (the root's is 0) gets children."""
    return depth < MAX_DEPTH and float(_sigmoid(s @ w["w_p"] + w["b_p"])[0]) > 0.5


def children(w, s):
    z = np.tanh(s @ w["W_c"] + w["b_c"])
    return z[:STATE], z[STATE:]


def decode(w, s, depth=0):
    """(sum of the leaf states, number of nodes) of the tree grown from s."""
    if not expands(w, s, depth):
        return s.copy(), 1
    left, right = children(w, s)
    out_l, n_l = decode(w, left, depth + 1)
    out_r, n_r = decode(w, right, depth + 1)
    return out_l + out_r, 1 + n_l + n_r


def tree_sizes(w, states):
    return np.array([decode(w, s)[1] for s in states])


def loss(outputs):
    """The training loss of a batch's outputs [batch, STATE]."""
    return 0.5 * float(np.mean(np.square(outputs)))


def gradients(w, states):
    """{name: d loss / d weight} for a batch of root states, by a per-example
    backward recursion (the decisions are constants)."""
    outputs = np.stack([decode(w, s)[0] for s in states])
    d_out = outputs / outputs.size  # d(0.5 * mean(out ** 2)) / d out
    grads = {"W_c": np.zeros_like(w["W_c"]), "b_c": np.zeros_like(w["b_c"]),
             "w_p": np.zeros_like(w["w_p"]), "b_p": np.zeros_like(w["b_p"])}

    def backward(s, depth, g):
        """Accumulates the weights' gradients of the subtree at s, whose
        leaves' sum receives gradient g; returns d loss / d s."""
        if not expands(w, s, depth):
            return g
        left, right = children(w, s)
        dz = np.concatenate([backward(left, depth + 1, g), backward(right, depth + 1, g)])
        dz *= 1.0 - np.square(np.concatenate([left, right]))
        grads["W_c"] += np.outer(s, dz)
        grads["b_c"] += dz
        return w["W_c"] @ dz

    for s, g in zip(states, d_out):
        backward(s, 0, g)
    return grads


def sgd_step(w, states, learning_rate=LEARNING_RATE):
    """The weights after one training step on `states` (NumPy reference)."""
    grads = gradients(w, states)
    return {k: v - learning_rate * grads[k] for k, v in w.items()}
