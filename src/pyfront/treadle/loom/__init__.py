"""td.loom: dynamic batching (TensorFlow Fold's Loom, TensorFlow 2 style)."""

from treadle.loom.loom import Loom
from treadle.loom.loom_op import LoomOp, PassThroughLoomOp, Ragged
from treadle.loom.schedule import Schedule
from treadle.loom.schedules import read_schedules, write_schedules
from treadle.loom.type_shape import TypeShape
from treadle.loom.weaver import Weaver

__all__ = ["autobatch", "Loom", "LoomOp", "PassThroughLoomOp", "Ragged", "Schedule", "TypeShape", "Weaver", "read_schedules", "write_schedules"]
from treadle.loom import gradients as _gradients  # noqa: E402,F401 - registers the gradient of LoomRun
from treadle.loom import saving as _saving  # noqa: E402,F401 - registers the saved loom with io's file kinds
from treadle.loom.autobatch import autobatch  # noqa: E402 - per-example Python batched through the Loom
