// Elementwise fusion: a planning pass over a validated body (graph_ir.h)
// that replaces each chain of float32 elementwise ops with one
// _FusedElementwise node (fused_elementwise_op.h), which runs the chain as
// one SIMD pass instead of one pass, one buffer and one dispatch per op.
//
// What fuses: Exp, Log, Tanh, Sigmoid, Neg, Square, Relu, AddV2, Sub, Mul,
// RealDiv, Maximum, Minimum, SigmoidGrad, TanhGrad and AddN on float32
// values whose last dimension is known and at least 16 (a whole vector at
// every SIMD level), connected to each other, plus at most one Split along
// the last axis whose pieces only fused ops read (the LSTM cell's gates: the
// bias add before the Split is computed piece by piece, and the pieces are
// read in place). A group fuses when it has two ops or more, no control
// edges, and no path that leaves it and comes back.
//
// Results are bit-identical to the ops run one by one (the kernels share
// their vector math), and gradients are untouched: they are built from the
// unfused graph, and their own bodies are fused like any other.
#pragma once

#include <memory>

#include "graph/graph_ir.h"

namespace treadle::graph {

// Whether Executables planned from now on fuse. On by default; the
// environment variable TREADLE_ELEMENTWISE_FUSION=0 turns it off when the
// core loads, SetElementwiseFusion at run time (tests and benchmarks compare
// both).
bool ElementwiseFusionEnabled();
void SetElementwiseFusion(bool on);

// `body` with its fusible groups fused, or `body` itself when none is (or
// fusion is off). The returned body owns the fused nodes' OpDefs; the nodes
// it replaced stay in `nodes` (so indices keep their meaning) but nothing
// reads them and `topo_order` leaves them out.
std::shared_ptr<const Body> FuseElementwise(std::shared_ptr<const Body> body);

}  // namespace treadle::graph
