"""The dynamic-tree batching benchmark (shared BENCHMARKS.md §2): a binary
TreeLSTM on SST-like trees, for treadle's Loom and its peers."""
