"""`treadle demo`: the Loom, treadle's main job, on a few random trees.

It weaves the trees into one schedule, shows the schedule's depths (how many
calls of each op run together at each depth), runs the batch, checks it
against a NumPy recursion over each tree, and prints what batching saved:
batched op runs against one run per node, and the time against running the
trees one at a time."""

import time

import numpy as np

import treadle as td
from treadle import loom_pb2
from treadle.cli_common import int_at_least, positive_int
from treadle.loom import trees as tree_utils

HIDDEN = 16
VOCAB = 100


def random_tree(rng, leaves):
    """A random binary tree with `leaves` integer leaves (word ids), as nested pairs."""
    if leaves == 1:
        return int(rng.integers(VOCAB))
    left = int(rng.integers(1, leaves))
    return (random_tree(rng, left), random_tree(rng, leaves - left))


def _tree_stats(tree):
    """(leaves, depth) of a nested-pair tree; a lone leaf has depth 1 (one leaf call)."""
    if not isinstance(tree, tuple):
        return 1, 1
    (nl, dl), (nr, dr) = _tree_stats(tree[0]), _tree_stats(tree[1])
    return nl + nr, 1 + max(dl, dr)


def build_loom(rng):
    """A loom over HIDDEN-wide float32 vectors: `leaf` embeds a word id, `node` combines two children."""
    word = td.loom.TypeShape(td.float32, (HIDDEN,), "word")
    hidden = td.loom.TypeShape(td.float32, (HIDDEN,), "hidden")
    weights = {
        "embedding": rng.normal(0, 1, (VOCAB, HIDDEN)).astype(np.float32),
        "w_leaf": rng.normal(0, 0.3, (HIDDEN, HIDDEN)).astype(np.float32),
        "w_node": rng.normal(0, 0.3, (2 * HIDDEN, HIDDEN)).astype(np.float32),
        "b_node": rng.normal(0, 0.1, HIDDEN).astype(np.float32),
    }

    class Leaf(td.loom.LoomOp):
        def __init__(self):
            super().__init__([word], [hidden])

        def instantiate_batch(self, inputs):
            return [td.tanh(inputs[0] @ weights["w_leaf"])]

    class Node(td.loom.LoomOp):
        def __init__(self):
            super().__init__([hidden, hidden], [hidden])

        def instantiate_batch(self, inputs):
            return [td.tanh(td.concat(inputs, axis=1) @ weights["w_node"] + weights["b_node"])]

    loom = td.loom.Loom(named_ops={"leaf": Leaf(), "node": Node()},
                        batch_inputs={word: weights["embedding"]})
    return loom, word, hidden, weights


def numpy_reference(tree, weights):
    """The same model, one node at a time in NumPy."""
    if not isinstance(tree, tuple):
        return np.tanh(weights["embedding"][tree] @ weights["w_leaf"])
    both = np.concatenate([numpy_reference(tree[0], weights), numpy_reference(tree[1], weights)])
    return np.tanh(both @ weights["w_node"] + weights["b_node"])


def weave(loom, word, trees):
    """One Weaver holding all of `trees`, woven in one C++ call (weave_trees)."""
    weaver = loom.make_weaver()
    left, right, values, roots = tree_utils.tree_arrays(trees)
    weaver.weave_trees(left, right, values, roots, "leaf", "node", word)
    return weaver


def schedule_depths(loom, weaver):
    """{depth: {op name: calls}} of a schedule, from its WeaverMessage."""
    message = loom_pb2.WeaverMessage.FromString(weaver.serialize())
    names = {i: op.name for i, op in enumerate(loom._metadata.ops)}
    depths = {}
    for depth, op, output in zip(message.result_depth, message.result_op, message.result_output):
        if depth > 0 and output == 0:  # one result per call: its first output
            name = names[op] if not names[op].startswith("_pass_through") else "pass-through"
            calls = depths.setdefault(depth, {})
            calls[name] = calls.get(name, 0) + 1
    return depths


def _median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cmd_demo(args):
    rng = np.random.default_rng(args.seed)
    loom, word, hidden, weights = build_loom(rng)
    trees = [random_tree(rng, int(n)) for n in rng.integers(2, args.max_leaves + 1, args.trees)]

    print(f"treadle {td.__version__}: the Loom batches tree-shaped computations\n")
    print(f"A loom over {hidden.dtype.name} vectors of {HIDDEN}: op 'leaf' embeds a word id "
          f"(tanh(embedding[id] @ W)), op 'node' combines two children (tanh([l, r] @ W + b)).\n")
    print(f"{len(trees)} random binary trees:")
    for i, tree in enumerate(trees):
        leaves, depth = _tree_stats(tree)
        print(f"  tree {i}: {leaves:3d} leaves, {2 * leaves - 1:3d} op calls, depth {depth}")

    weaver = weave(loom, word, trees)
    depths = schedule_depths(loom, weaver)
    ops = {d: {name: n for name, n in c.items() if name != "pass-through"} for d, c in depths.items()}
    calls = sum(sum(c.values()) for c in ops.values())
    runs = sum(len(c) for c in ops.values())
    copies = sum(c.get("pass-through", 0) for c in depths.values())
    print(f"\nOne schedule for all of them (weave_trees, one C++ call): {calls} op calls at depths 1 to "
          f"{max(depths)}. Each depth runs each of its ops once, on the batch of its calls; a pass-through "
          f"copies a result up to the depth where it is used ({copies} in all):")
    for depth in sorted(depths):
        line = ", ".join(f"{name} x {n}" for name, n in sorted(depths[depth].items()))
        print(f"  depth {depth:2d}: {line}")

    batched = loom.output_tensor(hidden, weaver).numpy()
    reference = np.stack([numpy_reference(tree, weights) for tree in trees])
    print(f"\nOutputs: {batched.shape[0]} root vectors, dtype {batched.dtype.name}; equal to a NumPy recursion "
          f"over each tree: {bool(np.allclose(batched, reference, rtol=1e-4, atol=1e-5))}")

    one_at_a_time = [weave(loom, word, [tree]) for tree in trees]
    t_batched = _median_seconds(lambda: loom.output_tensor(hidden, weaver), args.repeats)
    t_single = _median_seconds(lambda: [loom.output_tensor(hidden, w) for w in one_at_a_time], args.repeats)
    print("\nWhat batching saved:")
    print(f"  op runs: {runs} batched runs instead of {calls} one per call ({calls / runs:.1f}x fewer)")
    print(f"  time:    {t_batched * 1e3:.2f} ms for the batch, {t_single * 1e3:.2f} ms running the trees one "
          f"at a time ({t_single / t_batched:.1f}x; median of {args.repeats} runs)")
    print("\nMore: the Loom guide (docs/loom.md in the repository, or the documentation site) and the TreeLSTM "
          "benchmark (bench/treelstm_bench.py).")
    return 0


def register(sub):
    demo = sub.add_parser(
        "demo", help="the Loom on a few random trees: the schedule's depths and what batching saved",
        description="Builds a small loom, weaves random binary trees into one schedule, shows its depths, runs "
                    "it, checks it against NumPy and prints what batching saved.")
    demo.add_argument("--trees", type=positive_int, default=6, metavar="N", help="how many trees (default 6)")
    demo.add_argument("--max-leaves", type=int_at_least(2), default=30, metavar="N",
                      help="the most leaves a tree may have (default 30; at least 2)")
    demo.add_argument("--seed", type=int, default=0, help="random seed for the trees and weights (default 0)")
    demo.add_argument("--repeats", type=positive_int, default=20, metavar="N",
                      help="timing repetitions; the median is printed (default 20)")
    demo.set_defaults(run=cmd_demo)
