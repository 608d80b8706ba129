"""td.config: run-time switches."""

from treadle import _core
from treadle import device_config as experimental  # noqa: F401 (td.config.experimental)
from treadle.device_config import (  # noqa: F401
    LogicalDevice, LogicalDeviceConfiguration, PhysicalDevice, get_logical_device_configuration,
    get_soft_device_placement, get_visible_devices, list_logical_devices, list_physical_devices,
    set_logical_device_configuration, set_soft_device_placement, set_visible_devices)
from treadle.function.polymorphic_function import functions_run_eagerly, run_functions_eagerly  # noqa: F401


def isa_info():
    """The SIMD level of treadle's own kernels, as a dict.

    ``level`` is the level they run at now ("avx512", "avx2", "sse4", "ssse3",
    "scalar" on x86-64; "sve2", "sve", "neon", "scalar" on aarch64), ``target``
    Highway's name for it, ``available`` the levels this CPU offers (best
    first) and ``known`` every level name of this CPU family. BLAS picks its
    own kernels: see ``treadle info``.
    """
    return dict(_core.isa_info())


def set_isa(level):
    """Caps treadle's SIMD kernels at ``level``, as the environment variable
    TREADLE_ISA does when treadle is imported.

    A cap above what the CPU has leaves the best level it has; an unknown name
    raises td.errors.InvalidArgumentError. Meant for tests and benchmarks:
    do not change the level while ops run on other threads.
    """
    _core.set_isa(str(level))
