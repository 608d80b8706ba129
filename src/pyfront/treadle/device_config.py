"""td.config's device functions (and td.config.experimental), with TensorFlow
2's answers on a machine without accelerators: one physical CPU and no GPU.
set_logical_device_configuration splits the CPU into several logical CPU
devices (td.distribute.MirroredStrategy puts one replica on each)."""

import collections
import re


PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])

_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_state = {"visible": [_CPU], "soft_placement": True, "logical_cpus": None}  # None: one logical CPU


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


VirtualDeviceConfiguration = LogicalDeviceConfiguration   # TensorFlow's older name


def _check_type(device_type):
    if device_type is not None and not isinstance(device_type, str):
        raise ValueError(f"device_type must be a string such as 'CPU' or 'GPU', got {device_type!r}")


def list_physical_devices(device_type=None):
    """[PhysicalDevice('/physical_device:CPU:0', 'CPU')], or [] for another type."""
    _check_type(device_type)
    return [d for d in [_CPU] if device_type is None or d.device_type == device_type.upper()]


def list_logical_devices(device_type=None):
    """/device:CPU:0, and more where set_logical_device_configuration split the CPU."""
    _check_type(device_type)
    count = 1 if _state["logical_cpus"] is None else len(_state["logical_cpus"])
    visible = [LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(count)] if _state["visible"] else []
    return [d for d in visible if device_type is None or d.device_type == device_type.upper()]


def set_logical_device_configuration(device, logical_devices):
    """Splits physical `device` into one logical device per configuration
    (a list of LogicalDeviceConfiguration), or back to one with None."""
    _physical(device)
    if logical_devices is None:
        _state["logical_cpus"] = None
        return
    configs = list(logical_devices)
    if not configs or not all(isinstance(c, LogicalDeviceConfiguration) for c in configs):
        raise ValueError("logical_devices must be a non-empty list of td.config.LogicalDeviceConfiguration, "
                         f"got {logical_devices!r}")
    _state["logical_cpus"] = configs


def get_logical_device_configuration(device):
    """The configurations set for physical `device`, or None."""
    _physical(device)
    return None if _state["logical_cpus"] is None else list(_state["logical_cpus"])


set_virtual_device_configuration = set_logical_device_configuration       # TensorFlow's older names
get_virtual_device_configuration = get_logical_device_configuration

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


def get_visible_devices(device_type=None):
    _check_type(device_type)
    return [d for d in _state["visible"] if device_type is None or d.device_type == device_type.upper()]


def set_visible_devices(devices, device_type=None):
    """Only the CPU exists; it cannot be hidden (TensorFlow refuses too)."""
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    for d in devices:
        if not isinstance(d, PhysicalDevice) or d not in list_physical_devices():
            raise ValueError(f"Unrecognized device: {d!r}")
    if device_type in (None, "CPU") and _CPU not in devices:
        raise ValueError("Cannot hide the CPU: treadle runs every op on it")


def _physical(device):
    if not isinstance(device, PhysicalDevice) or device not in list_physical_devices():
        raise ValueError(f"Unrecognized device: {device!r}")
    return device


def set_memory_growth(device, enable):
    """Memory growth is a GPU setting; the CPU has none (as TensorFlow says)."""
    _physical(device)
    raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")


def get_memory_growth(device):
    _physical(device)
    raise ValueError("Cannot get memory growth on non-GPU and non-Pluggable devices")


def get_device_details(device):
    """{} for the CPU (TensorFlow gives details of GPUs only)."""
    _physical(device)
    return {}


def set_soft_device_placement(enabled):
    _state["soft_placement"] = bool(enabled)


def get_soft_device_placement():
    """Ops placed on a device this machine lacks run on the CPU."""
    return _state["soft_placement"]


__all__ = ["PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "VirtualDeviceConfiguration",
           "list_physical_devices", "list_logical_devices", "set_logical_device_configuration",
           "get_logical_device_configuration", "set_virtual_device_configuration",
           "get_virtual_device_configuration",
           "get_visible_devices", "set_visible_devices", "set_memory_growth", "get_memory_growth",
           "get_device_details", "set_soft_device_placement", "get_soft_device_placement"]


def __dir__():
    return sorted(__all__)
