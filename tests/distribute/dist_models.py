"""Models trained by the td.distribute tests, in one process and across
processes: a dense two-layer network and a TreeLSTM loom (whose embedding
gradients are IndexedSlices), each with a step usable under any strategy."""

import numpy as np

import treadle as td
from tests.loom.loom_testlib import TreeLSTMWeights, random_tree, tree_lstm_loom, weave_tree

GLOBAL_BATCH = 8


class DenseModel:
    def __init__(self, seed=0, inputs=3, hidden=5):
        rng = np.random.default_rng(seed)
        self.w1 = td.Variable(rng.normal(0, 0.5, (inputs, hidden)), name="w1")
        self.b1 = td.Variable(np.zeros(hidden), name="b1")
        self.w2 = td.Variable(rng.normal(0, 0.5, (hidden, 1)), name="w2")
        self.b2 = td.Variable(np.zeros(1), name="b2")

    @property
    def variables(self):
        return [self.w1, self.b1, self.w2, self.b2]

    def loss(self, x, y, global_batch=GLOBAL_BATCH):
        out = td.matmul(td.tanh(td.matmul(x, self.w1) + self.b1), self.w2) + self.b2
        return td.reduce_sum(td.square(out - y)) / global_batch


def dense_data(steps, seed=1, inputs=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(steps * GLOBAL_BATCH, inputs))
    y = np.sin(x.sum(axis=1, keepdims=True))
    return x, y


def train_step(model, optimizer):
    """A replica's step: the loss of its share, gradients, the update."""
    def step(x, y):
        with td.GradientTape() as tape:
            loss = model.loss(x, y)
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(zip(grads, model.variables))
        return loss
    return step


class LoomModel:
    """The TreeLSTM of the loom tests, with a softmax loss over its roots."""

    def __init__(self, seed=0):
        self.weights = TreeLSTMWeights(seed=seed)
        self.loom = tree_lstm_loom(self.weights)

    @property
    def variables(self):
        return self.weights.variables()

    def schedule(self, trees):
        weaver = self.loom.make_weaver()
        for tree in trees:
            weaver.add_output(weave_tree(weaver, self.weights, tree)[1])
        return weaver.serialize()

    def loss(self, schedule, labels, global_batch=GLOBAL_BATCH):
        h = self.loom.output_tensor(self.weights.h_ts, schedule)
        logits = td.matmul(h, self.weights.w_out) + self.weights.b_out
        losses = td.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return td.reduce_sum(losses) / global_batch


def loom_data(count, seed=2, vocab=50):
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng, int(rng.integers(1, 7)), vocab) for _ in range(count)]
    labels = rng.integers(0, 3, size=count).astype(np.int32)
    return trees, labels


def loom_step(model, optimizer):
    def step(trees, labels):
        schedule = model.schedule(trees)
        with td.GradientTape() as tape:
            loss = model.loss(schedule, labels)
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(zip(grads, model.variables))
        return loss
    return step
