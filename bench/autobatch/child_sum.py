"""The child-sum TreeLSTM of bench/child_sum_ast.py as plain per-example
code: its weights as NumPy arrays (drawn as that script's TreadleModel draws
them), its trees as nested (kind, [subtrees]) tuples, and a NumPy recursion
that the DyNet and treadle autobatched models are checked against."""

import numpy as np

EMBED, HIDDEN, CLASSES = 300, 150, 5


def initial_weights(vocab, seed=0):
    """The same draws, in the same order, as child_sum_ast.TreadleModel."""
    rng = np.random.default_rng(seed)
    f = np.float32
    return {"embedding": rng.normal(0, 0.1, (vocab, EMBED)).astype(f),
            "w": rng.normal(0, 0.05, (EMBED, 4 * HIDDEN)).astype(f),
            "u_iou": rng.normal(0, 0.05, (HIDDEN, 3 * HIDDEN)).astype(f),
            "u_f": rng.normal(0, 0.05, (HIDDEN, HIDDEN)).astype(f),
            "b": np.zeros(4 * HIDDEN, f),
            "w_out": rng.normal(0, 0.05, (HIDDEN, CLASSES)).astype(f),
            "b_out": np.zeros(CLASSES, f)}


def nested(kinds, kids):
    """A post-ordered tree (bench/child_sum_ast.py's kinds and children lists)
    as nested (kind, [subtrees]), the root outermost."""
    made = []
    for kind, children in zip(kinds, kids):
        made.append((kind, [made[j] for j in children]))
    return made[-1]


def examples(functions):
    """[(nested tree, label)] of child_sum_ast.stdlib_functions' trees."""
    return [(nested(kinds, kids), label) for kinds, kids, label in functions]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def root_h(w, tree):
    def visit(node):
        kind, kids = node
        states = [visit(k) for k in kids]
        i, o, u, f_x = np.split(w["embedding"][kind] @ w["w"] + w["b"], 4)
        if states:
            i_h, o_h, u_h = np.split(sum(h for _, h in states) @ w["u_iou"], 3)
            i, o, u = i + i_h, o + o_h, u + u_h
        c = _sigmoid(i) * np.tanh(u)
        for c_k, h_k in states:
            c = c + _sigmoid(f_x + h_k @ w["u_f"]) * c_k
        return c, _sigmoid(o) * np.tanh(c)

    return visit(tree)[1]


def logits(w, tree):
    return root_h(w, tree) @ w["w_out"] + w["b_out"]
