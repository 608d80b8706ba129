"""td.debugging: run-time assertions and numeric checks (filled in by
treadle._api from ops/debugging_ops.py)."""
