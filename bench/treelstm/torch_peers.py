"""PyTorch peers of the TreeLSTM benchmark: recursion per tree (what most
users write) and hand-written batching by height. Only imported when PyTorch
is installed; it is never a dependency of treadle."""

import numpy as np
import torch
import torch.nn.functional as F

from bench.treelstm.model import HIDDEN


class TorchTreeLSTM(torch.nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.params = torch.nn.ParameterDict({k: torch.nn.Parameter(torch.from_numpy(v.copy()))
                                              for k, v in weights.items()})

    def leaf(self, x):
        p = self.params
        i, o, u = (x @ p["W_leaf"] + p["b_leaf"]).chunk(3, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(u)
        return torch.sigmoid(o) * torch.tanh(c), c

    def node(self, hl, cl, hr, cr):
        p = self.params
        z = torch.cat([hl, hr], dim=-1) @ p["W_node"] + p["b_node"]
        i, fl, fr, o, u = z.chunk(5, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cl + torch.sigmoid(fr) * cr
        return torch.sigmoid(o) * torch.tanh(c), c

    def logits(self, h):
        return h @ self.params["W_out"] + self.params["b_out"]

    # ---------------------------------------------------------------- recursion
    def recursive_root(self, tree):
        """The root's h of one tree, one node at a time (batch 1 matrices)."""
        emb = self.params["embedding"]

        def visit(k):
            if tree.left[k] < 0:
                return self.leaf(emb[int(tree.token[k])].unsqueeze(0))
            hl, cl = visit(int(tree.left[k]))
            hr, cr = visit(int(tree.right[k]))
            return self.node(hl, cl, hr, cr)

        return visit(tree.size - 1)[0]

    def recursive_logits(self, trees):
        return torch.cat([self.logits(self.recursive_root(t)) for t in trees])

    # ---------------------------------------------------------------- by height
    def batched_logits(self, trees):
        """All trees at once, level by level: every node of one height in one
        matrix product, children gathered from the state of lower levels."""
        plan = _height_plan(trees)
        emb = self.params["embedding"]
        total = plan["total"]
        h_state = torch.zeros(total, HIDDEN)
        c_state = torch.zeros(total, HIDDEN)
        leaves = plan["levels"][0]
        h, c = self.leaf(emb[torch.from_numpy(plan["tokens"])])
        h_state = h_state.index_copy(0, torch.from_numpy(leaves), h)
        c_state = c_state.index_copy(0, torch.from_numpy(leaves), c)
        for nodes, lefts, rights in plan["internal"]:
            li, ri = torch.from_numpy(lefts), torch.from_numpy(rights)
            h, c = self.node(h_state[li], c_state[li], h_state[ri], c_state[ri])
            idx = torch.from_numpy(nodes)
            h_state = h_state.index_copy(0, idx, h)
            c_state = c_state.index_copy(0, idx, c)
        return self.logits(h_state[torch.from_numpy(plan["roots"])])


def _height_plan(trees):
    """Global node numbering and, per height, the nodes and their children."""
    offsets = np.cumsum([0] + [t.size for t in trees])
    heights = np.concatenate([t.heights() for t in trees])
    left = np.concatenate([np.where(t.left >= 0, t.left + o, -1) for t, o in zip(trees, offsets)])
    right = np.concatenate([np.where(t.right >= 0, t.right + o, -1) for t, o in zip(trees, offsets)])
    token = np.concatenate([t.token for t in trees])
    levels = [np.nonzero(heights == h)[0].astype(np.int64) for h in range(int(heights.max()) + 1)]
    internal = [(lv, left[lv].astype(np.int64), right[lv].astype(np.int64)) for lv in levels[1:]]
    return {"total": int(offsets[-1]), "levels": levels, "tokens": token[levels[0]].astype(np.int64),
            "internal": internal, "roots": (offsets[1:] - 1).astype(np.int64)}


def make_steps(weights, learning_rate=0.05):
    """{(implementation, mode): fn(trees)} for the benchmark harness."""
    model = TorchTreeLSTM(weights)
    opt = torch.optim.SGD(model.parameters(), lr=learning_rate)

    def labels(trees):
        return torch.tensor([t.label for t in trees])

    def infer(forward):
        def run(trees):
            with torch.no_grad():
                return forward(trees)
        return run

    def train(forward):
        def run(trees):
            opt.zero_grad()
            loss = F.cross_entropy(forward(trees), labels(trees))
            loss.backward()
            opt.step()
            return loss
        return run

    return {
        ("torch recursive", "inference"): infer(model.recursive_logits),
        ("torch recursive", "training"): train(model.recursive_logits),
        ("torch by height", "inference"): infer(model.batched_logits),
        ("torch by height", "training"): train(model.batched_logits),
    }, model
