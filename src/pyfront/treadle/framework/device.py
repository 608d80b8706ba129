"""td.device: TensorFlow's device scopes on a CPU-only runtime. treadle runs
every op on the CPU; like TensorFlow 2 with soft device placement (its
default), a scope naming another device (a GPU) is accepted and the ops in
it run on the CPU. A string that is not a device specification is refused,
as TensorFlow refuses it."""


from treadle import errors

_SHORT_DEVICE_TYPES = ("CPU", "GPU", "TPU", "CUSTOM", "EPU")  # the types "/gpu:0" may name without "device:"


def _index(text, spec):
    if text == "*":
        return
    if not text.isdigit():
        raise ValueError(f"'{text}' is not a device index (a number or *) in the device spec '{spec}'")


def check_device_spec(spec):
    """Raises ValueError unless `spec` is a device specification
    ("/job:localhost/replica:0/task:0/device:CPU:0", "/cpu:0", "GPU:1", "");
    returns whether it names this process (job localhost, replica and task 0)."""
    if not isinstance(spec, str):
        raise ValueError(f"device specification must be a string, got {spec!r}")
    types, local = 0, True
    for part in spec.split("/"):
        fields = part.split(":")
        n = len(fields)
        if not part:
            continue
        if n == 2 and fields[0] == "job":
            local = local and fields[1] == "localhost"
            continue
        if n == 2 and fields[0] in ("replica", "task"):
            _index(fields[1], spec)
            local = local and fields[1] in ("0", "*")
        elif n in (1, 2) and fields[0].upper() in _SHORT_DEVICE_TYPES:
            types += 1
            if n == 2:
                _index(fields[1], spec)
        elif n == 3 and fields[0] == "device":
            types += 1
            _index(fields[2], spec)
        else:
            raise ValueError(f"Unknown attribute '{fields[0]}' is encountered while parsing the device spec: "
                             f"'{spec}'.")
        if types > 1:
            raise ValueError(f"Multiple device types are not allowed while parsing the device spec: {spec}.")
    return local


class device:
    """`with td.device("/CPU:0"):` the ops inside run on the CPU (as every op
    does in treadle). As in TensorFlow, the specification is checked when the
    scope is entered; one naming another job, replica or task is an
    InvalidArgumentError (there is only this process). Device functions are
    not supported, as in TensorFlow 2."""

    __slots__ = ("_name",)

    def __init__(self, device_name):
        if callable(device_name):
            raise RuntimeError("td.device does not support functions when eager execution is enabled.")
        self._name = device_name

    def __enter__(self):
        if self._name is not None and not check_device_spec(self._name):
            raise errors.InvalidArgumentError(None, None, f"{self._name}: unknown device (this process is "
                                                          "/job:localhost/replica:0/task:0 and has one CPU)")
        return None  # as TensorFlow's eager device scope

    def __exit__(self, *exc):
        return False
