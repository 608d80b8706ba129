"""The devices treadle runs on, as TensorFlow names them: one physical CPU,
which td.config.set_logical_device_configuration can split into several
logical CPU devices (td.distribute.MirroredStrategy puts one replica on each)."""

import re
import typing


class PhysicalDevice(typing.NamedTuple):
    name: str
    device_type: str


class LogicalDevice(typing.NamedTuple):
    name: str
    device_type: str


class LogicalDeviceConfiguration:
    """One logical device to make from a physical one. `memory_limit` and
    `experimental_priority` are accepted for TensorFlow's sake; a CPU's
    logical devices share its memory."""

    def __init__(self, memory_limit=None, experimental_priority=None, experimental_device_ordinal=0):
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __eq__(self, other):
        return isinstance(other, LogicalDeviceConfiguration) and vars(self) == vars(other)

    def __repr__(self):
        return f"LogicalDeviceConfiguration(memory_limit={self.memory_limit!r})"


_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")
_logical_cpu_configs = None   # None: one logical CPU (TensorFlow's default)


def list_physical_devices(device_type=None):
    """The physical devices: one CPU (treadle runs on the CPU only)."""
    if device_type is None or str(device_type).upper() == "CPU":
        return [_CPU]
    return []


def _check_physical(device):
    if not isinstance(device, PhysicalDevice) or device != _CPU:
        raise ValueError(f"Unrecognized device: {device!r}; the physical devices are {list_physical_devices()}")


def set_logical_device_configuration(device, logical_devices):
    """Splits physical `device` into one logical device per configuration
    (a list of LogicalDeviceConfiguration), or back to one with None."""
    global _logical_cpu_configs
    _check_physical(device)
    if logical_devices is None:
        _logical_cpu_configs = None
        return
    configs = list(logical_devices)
    if not configs or not all(isinstance(c, LogicalDeviceConfiguration) for c in configs):
        raise ValueError("logical_devices must be a non-empty list of td.config.LogicalDeviceConfiguration, "
                         f"got {logical_devices!r}")
    _logical_cpu_configs = configs


def get_logical_device_configuration(device):
    """The configurations set for physical `device`, or None."""
    _check_physical(device)
    return None if _logical_cpu_configs is None else list(_logical_cpu_configs)


def list_logical_devices(device_type=None):
    """The logical devices: /device:CPU:0, and more where the CPU is split."""
    if device_type is not None and str(device_type).upper() != "CPU":
        return []
    count = 1 if _logical_cpu_configs is None else len(_logical_cpu_configs)
    return [LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(count)]


_DEVICE = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(?P<type>[A-Za-z_]+):(?P<index>\d+)$")


def canonical_device(spec):
    """A device string ("/cpu:0", "CPU:1", "/device:CPU:0") as the name of a
    logical device, checked to exist."""
    text = spec.name if isinstance(spec, LogicalDevice) else str(spec)
    match = _DEVICE.match(text.strip())
    if match is None:
        raise ValueError(f"cannot parse device {spec!r}; expected a name like '/cpu:0' or '/device:CPU:1'")
    name = f"/device:{match['type'].upper()}:{int(match['index'])}"
    known = [d.name for d in list_logical_devices()]
    if name not in known:
        raise ValueError(f"device {spec!r} does not exist; the logical devices are {known} "
                         "(td.config.set_logical_device_configuration splits the CPU into more)")
    return name
