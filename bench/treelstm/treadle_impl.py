"""treadle's TreeLSTM: a Loom with a leaf op and a node op, schedules woven
in bulk (`Weaver.weave_trees`), per node from Python, or read from a schedule file, and the root
classifier, loss and optimizer step in one td.function."""

import numpy as np

import treadle as td
from bench.treelstm.model import EMBED, HIDDEN


def tree_batch_arrays(trees):
    """The weave_trees description of a batch: global node numbering, children
    before parents; -1 children for leaves; token ids of the leaves. Built
    with one concatenation per array (this is part of the weaving time)."""
    sizes = np.fromiter((t.size for t in trees), np.int64, len(trees))
    ends = np.cumsum(sizes)
    offset = np.repeat(ends - sizes, sizes)
    left = np.concatenate([t.left for t in trees]).astype(np.int64)
    right = np.concatenate([t.right for t in trees]).astype(np.int64)
    leaf = left < 0
    left += offset
    right += offset
    left[leaf] = -1
    right[leaf] = -1
    values = np.maximum(np.concatenate([t.token for t in trees]), 0).astype(np.int64)
    return left, right, values, ends - 1


class TreeLSTM:
    def __init__(self, weights, learning_rate=0.05, optimizer="sgd", max_depth=None):
        self.vars = {k: td.Variable(v, name=k) for k, v in weights.items()}
        v = self.vars
        self.embed_ts = td.loom.TypeShape(td.float32, (EMBED,), "embedding")
        self.state_ts = td.loom.TypeShape(td.float32, (HIDDEN,), "state")
        state_ts = self.state_ts
        self.loom = self.build_loom(max_depth)
        self.trainable = [v[k] for k in ("embedding", "W_leaf", "b_leaf", "W_node", "b_node", "W_out", "b_out")]
        if optimizer == "adam":
            self.optimizer = td.optimizers.Adam(learning_rate)
        else:
            self.optimizer = td.optimizers.SGD(learning_rate)

        @td.function
        def logits_of(schedule):
            h = self.loom.output_tensor(state_ts, schedule)
            return td.matmul(h, v["W_out"]) + v["b_out"]

        @td.function
        def train_step(schedule, labels):
            with td.GradientTape() as tape:
                logits = logits_of(schedule)
                loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            grads = tape.gradient(loss, self.trainable)
            self.optimizer.apply_gradients(zip(grads, self.trainable))
            correct = td.reduce_sum(td.cast(td.equal(td.argmax(logits, axis=1, output_type=td.int32), labels),
                                            td.int32))
            return loss, correct

        self.logits_of = logits_of
        self.train_step = train_step

    def build_loom(self, max_depth=None):
        """A new Loom of the leaf and node ops (bench/function_calls.py times this)."""
        v, state_ts, embed_ts = self.vars, self.state_ts, self.embed_ts

        class Leaf(td.loom.LoomOp):
            def __init__(self):
                super().__init__([embed_ts], [state_ts, state_ts])

            def instantiate_batch(self, inputs):
                iou = td.matmul(inputs[0], v["W_leaf"]) + v["b_leaf"]
                i, o, u = td.split(iou, 3, axis=1)
                c = td.sigmoid(i) * td.tanh(u)
                return [c, td.sigmoid(o) * td.tanh(c)]

        class Node(td.loom.LoomOp):
            def __init__(self):
                super().__init__([state_ts, state_ts, state_ts, state_ts], [state_ts, state_ts])

            def instantiate_batch(self, inputs):
                c_l, h_l, c_r, h_r = inputs
                z = td.matmul(td.concat([h_l, h_r], axis=1), v["W_node"]) + v["b_node"]
                i, f_l, f_r, o, u = td.split(z, 5, axis=1)
                c = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
                return [c, td.sigmoid(o) * td.tanh(c)]

        return td.loom.Loom(max_depth=max_depth, named_ops={"leaf": Leaf(), "node": Node()},
                            batch_inputs={embed_ts: v["embedding"]})

    # ---------------------------------------------------------------- schedules
    def weave(self, trees):
        """One serialized schedule for a batch of trees (the bulk path)."""
        weaver = self.loom.make_weaver()
        left, right, values, roots = tree_batch_arrays(trees)
        weaver.weave_trees(left, right, values, roots, "leaf", "node", self.embed_ts, root_outputs=[1])
        return weaver.serialize()

    def weave_per_node(self, trees):
        """One serialized schedule for a batch, woven the Fold way: one Python
        Weaver call per node (and one batch_input per leaf), children first."""
        weaver = self.loom.make_weaver()
        leaf, node, row, embed_ts = weaver.leaf, weaver.node, weaver.batch_input, self.embed_ts
        for tree in trees:
            states = []
            for left, right, token in zip(tree.left.tolist(), tree.right.tolist(), tree.token.tolist()):
                if left < 0:
                    states.append(leaf(row(embed_ts, token)))
                else:
                    (c_l, h_l), (c_r, h_r) = states[left], states[right]
                    states.append(node(c_l, h_l, c_r, h_r))
            weaver.add_output(states[-1][1])
        return weaver.serialize()

    def weave_each(self, trees):
        """One serialized schedule per tree (to write to a schedule file)."""
        return [self.weave([t]) for t in trees]

    # ---------------------------------------------------------------- steps
    def infer(self, schedule):
        return self.logits_of(td.constant(schedule) if not isinstance(schedule, list)
                              else td.constant(np.array(schedule, dtype=object)))

    def infer_eagerly(self, schedule, record=False):
        """Inference run eagerly; with `record`, under a GradientTape that
        watches the weights, so that the loom runs its ops' training functions
        and saves what a backward pass reads (as every inference did before
        LoomRun learned when nothing reads its record)."""
        sched = td.constant(schedule)
        if not record:
            return self.logits_of.python_function(sched)
        with td.GradientTape() as tape:
            tape.watch(self.trainable)
            return self.logits_of.python_function(sched)

    def train(self, schedule, labels):
        sched = td.constant(schedule) if not isinstance(schedule, list) else td.constant(np.array(schedule, dtype=object))
        return self.train_step(sched, td.constant(np.asarray(labels, np.int32)))

    def per_tree_root_h(self, tree):
        """Root h of one tree computed without the Loom (reference for tests)."""
        v = {k: var.numpy() for k, var in self.vars.items()}

        def sig(x):
            return 1 / (1 + np.exp(-x))

        def visit(k):
            if tree.left[k] < 0:
                iou = v["embedding"][tree.token[k]] @ v["W_leaf"] + v["b_leaf"]
                i, o, u = np.split(iou, 3)
                c = sig(i) * np.tanh(u)
                return c, sig(o) * np.tanh(c)
            c_l, h_l = visit(tree.left[k])
            c_r, h_r = visit(tree.right[k])
            z = np.concatenate([h_l, h_r]) @ v["W_node"] + v["b_node"]
            i, f_l, f_r, o, u = np.split(z, 5)
            c = sig(i) * np.tanh(u) + sig(f_l) * c_l + sig(f_r) * c_r
            return c, sig(o) * np.tanh(c)

        return visit(tree.size - 1)[1]
