// The _core extension module: pybind11 glue only.
#include "py_common.h"
#include "util/cancel.h"
#include "util/parallel.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "treadle's C++ core: tensors, the op registry and its kernels";
  treadle::python::RegisterErrors(m);
  treadle::python::RegisterTensor(m);
  treadle::python::RegisterOps(m);
  treadle::python::RegisterProto(m);
  treadle::python::RegisterGraph(m);
  treadle::python::RegisterDispatch(m);
  treadle::python::RegisterFunctionAttrs(m);
  treadle::python::RegisterDLPack(m);
  treadle::python::RegisterLoom(m);
  treadle::python::RegisterData(m);
  treadle::python::RegisterExitHook(m);  // treadle's threads leave Python before the interpreter finalizes
  treadle::cancel::InstallInterruptHook();  // Ctrl-C reaches runs in C++ (util/cancel.h)
  treadle::parallel::NumThreads();  // BLAS single-threaded from the start: treadle's pool parallelises
}
