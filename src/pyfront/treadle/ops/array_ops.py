"""Array wrappers: shapes, joining and splitting, indexing."""

from treadle.framework.ops import execute
from treadle.framework.tensor import convert_to_tensor

PUBLIC = {"": []}
