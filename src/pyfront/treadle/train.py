"""td.train: checkpoints (TensorFlow's tf.train.Checkpoint and latest_checkpoint)."""

from treadle.io.checkpoint import Checkpoint, CheckpointLoadStatus, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointLoadStatus", "latest_checkpoint"]
