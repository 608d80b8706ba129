"""Peers, references and user-style treadle models of the automatic-batching
benchmarks (bench/autobatch_*.py)."""
