"""td.linalg: the linear-algebra names (filled in by treadle._api from ops/linalg_ops.py)."""
