"""td.config's device functions (and td.config.experimental), with TensorFlow
2's answers on a machine without accelerators: one CPU, physical and
logical, and no GPU."""

import collections


PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])

_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_CPU_LOGICAL = LogicalDevice(name="/device:CPU:0", device_type="CPU")
_state = {"visible": [_CPU], "soft_placement": True}


def _check_type(device_type):
    if device_type is not None and not isinstance(device_type, str):
        raise ValueError(f"device_type must be a string such as 'CPU' or 'GPU', got {device_type!r}")


def list_physical_devices(device_type=None):
    """[PhysicalDevice('/physical_device:CPU:0', 'CPU')], or [] for another type."""
    _check_type(device_type)
    return [d for d in [_CPU] if device_type is None or d.device_type == device_type.upper()]


def list_logical_devices(device_type=None):
    _check_type(device_type)
    visible = [_CPU_LOGICAL] if _state["visible"] else []
    return [d for d in visible if device_type is None or d.device_type == device_type.upper()]


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


__all__ = ["PhysicalDevice", "LogicalDevice", "list_physical_devices", "list_logical_devices",
           "get_visible_devices", "set_visible_devices", "set_memory_growth", "get_memory_growth",
           "get_device_details", "set_soft_device_placement", "get_soft_device_placement"]
