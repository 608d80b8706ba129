"""Models trained by the td.distribute tests, in one process and across
processes: a dense two-layer network and a TreeLSTM loom (whose embedding
gradients are IndexedSlices), each with a step usable under any strategy."""

import numpy as np

import treadle as td
from tests.data import weave_helpers
from tests.loom.loom_testlib import VEC3, TreeLSTMWeights, random_tree, tree_lstm_loom, vector_loom, weave_tree

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
        return loom_schedule_step(model, optimizer, model.schedule(trees), labels)
    return step


def loom_schedule_step(model, optimizer, schedule, labels):
    """One training step of `model` on a woven schedule (eager, or traced in a td.function)."""
    with td.GradientTape() as tape:
        loss = model.loss(schedule, labels)
    grads = tape.gradient(loss, model.variables)
    optimizer.apply_gradients(zip(grads, model.variables))
    return loss


# ------------------------------------------------------------------ looms fed by parallel weaving

def train_woven(strategy, examples=8, per_batch=2):
    """The vector loom trained under `strategy` on schedules woven in worker
    processes (parallel_weave through distribute_datasets_from_function,
    each input pipeline weaving its share of the examples); returns its
    variable x."""
    with strategy.scope():
        loom, x, _ = vector_loom()
        opt = td.optimizers.SGD(0.1)

    def woven(ctx):
        mine = range(ctx.input_pipeline_id, examples, ctx.num_input_pipelines)
        return td.data.experimental.parallel_weave(mine, weave_helpers.weave_vector, loom, processes=1).batch(per_batch)

    @td.function
    def step(schedules):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.square(loom.output_tensor(VEC3, schedules))) / float(examples)
        opt.apply_gradients(zip(tape.gradient(loss, [x]), [x]))

    for schedules in strategy.distribute_datasets_from_function(woven):
        strategy.run(step, args=(schedules,))
    return x


def woven_reference(steps, examples=8):
    """x after one process trains the vector loom on `steps` (lists of the
    examples each step covers), each step's examples woven into one schedule."""
    loom, x, _ = vector_loom()
    opt = td.optimizers.SGD(0.1)
    for step_examples in steps:
        weaver = loom.make_weaver()
        for i in step_examples:
            weave_helpers.weave_vector(weaver, i)
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.square(loom.output_tensor(VEC3, weaver))) / float(examples)
        opt.apply_gradients(zip(tape.gradient(loss, [x]), [x]))
    return x
