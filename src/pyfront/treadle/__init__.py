"""treadle: a dataflow runtime for dynamic computation.

`import treadle as td`: TensorFlow's public names where treadle does the same
thing (see shared/API.md)."""

import os as _os
import sys as _sys

# Our C++ core links the system's libprotobuf. Libraries such as TensorFlow
# export a different protobuf into the global symbol scope; RTLD_DEEPBIND makes
# the core (and its own libprotobuf) resolve symbols among themselves first,
# whichever of the two was imported first.
# OpenBLAS, loaded with the core, chooses its kernels then (see _blas.py).
from treadle import _blas

# The sanitizer runtimes refuse RTLD_DEEPBIND: scripts/sanitizers.sh sets
# TREADLE_NO_DEEPBIND (the core is also linked -Bsymbolic).
_flags = _sys.getdlopenflags()
_deepbind = 0 if _os.environ.get("TREADLE_NO_DEEPBIND") else getattr(_os, "RTLD_DEEPBIND", 0)
_sys.setdlopenflags(_flags | _deepbind)
try:
    with _blas.chosen_kernels():
        from treadle import _core
finally:
    _sys.setdlopenflags(_flags)
del _flags, _deepbind

from treadle import errors
from treadle.framework import dtypes as _dtypes

_core._set_dtype_objects(_dtypes._ALL)
_core._set_error_classes(errors._BY_CODE)

from treadle.framework.dtypes import (  # noqa: E402
    DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int8, int32, int64, resource,
    string, uint8, variant)
from treadle.framework.tensor import (  # noqa: E402
    Tensor, constant, convert_to_tensor, register_tensor_conversion_function)
from treadle.framework.tensor_shape import TensorShape  # noqa: E402
from treadle.framework.indexed_slices import IndexedSlices  # noqa: E402
from treadle.framework.tensor_util import make_ndarray, make_tensor_proto  # noqa: E402
from treadle.framework import op_def_library as _op_def_library  # noqa: E402
from treadle.framework.op_def_library import raw_ops  # noqa: E402

from treadle.framework.tensor_spec import TensorSpec  # noqa: E402
from treadle.framework.type_spec import TypeSpec  # noqa: E402
from treadle.function.polymorphic_function import function  # noqa: E402
from treadle.framework.context import executing_eagerly, init_scope  # noqa: E402
from treadle.framework.name_scope import name_scope  # noqa: E402
from treadle.framework.device import device  # noqa: E402
from treadle.framework.variable_creators import variable_creator_scope  # noqa: E402
from treadle.framework.variables import Variable  # noqa: E402
from treadle.framework.tensor_array import TensorArray  # noqa: E402
from treadle.io.saving import load, save  # noqa: E402

from treadle.module.module import Module  # noqa: E402
from treadle.autodiff import GradientTape, UnconnectedGradients  # noqa: E402
from treadle.autodiff.custom_gradient import custom_gradient  # noqa: E402

from treadle import bitwise, config, debugging, linalg, math, nest, nn, random, saved_model, train, types  # noqa: E402
from treadle import experimental  # noqa: E402
from treadle import optimizers  # noqa: E402
from treadle import keras  # noqa: E402
from treadle.ragged import RaggedTensor, RaggedTensorSpec  # noqa: E402
from treadle import sparse, strings  # noqa: E402
from treadle.sparse import SparseTensor, SparseTensorSpec  # noqa: E402
from treadle import loom  # noqa: E402
from treadle import distribute  # noqa: E402
from treadle import data  # noqa: E402
from treadle import autograph  # noqa: E402
from treadle import testing as test  # noqa: E402
from treadle._api import install_api as _install_api  # noqa: E402

_install_api(globals())

__version__ = "0.1.0"

# The package's own modules are attributes of `treadle` once imported; they
# are not part of its public names (dir(td) lists those only; `function` is
# td.function, which replaced the subpackage of that name).
_INTERNAL_MODULES = frozenset({
    "autodiff", "cli", "cli_common", "cli_demo", "cli_files", "cli_loom", "cli_saved", "framework", "io",
    "module", "ops", "ragged", "util", "graph_pb2", "loom_pb2", "saved_pb2", "tensor_pb2",
    "device_config", "testing"})  # the last two are public as td.config.experimental and td.test


def __dir__():
    return sorted(n for n in globals() if not n.startswith("_") and n not in _INTERNAL_MODULES)
