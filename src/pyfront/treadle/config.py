"""td.config: run-time switches."""

from treadle.function.polymorphic_function import functions_run_eagerly, run_functions_eagerly  # noqa: F401
