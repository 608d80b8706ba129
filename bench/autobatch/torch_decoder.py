"""The tree decoder in PyTorch, batched by hand as a masked frontier loop:
all unfinished nodes of one depth, across the batch, in one matrix product;
a mask splits them into leaves (added into their example's output) and
nodes to expand. Only imported when PyTorch is installed."""

import torch

from bench.autobatch.decoder import LEARNING_RATE, MAX_DEPTH, STATE


class FrontierDecoder:
    def __init__(self, weights, learning_rate=LEARNING_RATE):
        self.params = {k: torch.nn.Parameter(torch.from_numpy(v.copy())) for k, v in weights.items()}
        self.optimizer = torch.optim.SGD(self.params.values(), lr=learning_rate)

    def forward(self, states):
        """(outputs [batch, STATE], nodes per example) of root states [batch, STATE]."""
        p = self.params
        batch = states.shape[0]
        out = torch.zeros(batch, STATE)
        nodes = torch.ones(batch, dtype=torch.long)
        frontier, owner = states, torch.arange(batch)
        for depth in range(MAX_DEPTH + 1):
            if depth < MAX_DEPTH:
                expand = torch.sigmoid(frontier @ p["w_p"] + p["b_p"]).squeeze(1) > 0.5
            else:
                expand = torch.zeros(frontier.shape[0], dtype=torch.bool)
            leaf = ~expand
            out = out.index_add(0, owner[leaf], frontier[leaf])
            if not bool(expand.any()):
                break
            z = torch.tanh(frontier[expand] @ p["W_c"] + p["b_c"])
            owner = owner[expand].repeat(2)
            nodes = nodes.index_add(0, owner, torch.ones_like(owner))
            frontier = torch.cat([z[:, :STATE], z[:, STATE:]])
        return out, nodes

    def infer(self, states):
        with torch.no_grad():
            return self.forward(states)[0].numpy()

    def train(self, states):
        self.optimizer.zero_grad()
        loss = 0.5 * torch.mean(torch.square(self.forward(states)[0]))
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def weights(self):
        return {k: v.detach().numpy().copy() for k, v in self.params.items()}
