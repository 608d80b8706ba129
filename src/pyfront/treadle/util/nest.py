"""tf.nest-style nested structures; the work is done in the Cython module _nest."""

from treadle.util._nest import (  # noqa: F401
    assert_same_structure, flatten, is_nested, map_structure, pack_sequence_as)
