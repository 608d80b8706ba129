"""td.saved_model: TensorFlow's names for treadle's saved files (one file,
not a SavedModel directory): save(obj, path, signatures=None) and load(path)."""

from treadle.io.saving import load, save

__all__ = ["load", "save"]
