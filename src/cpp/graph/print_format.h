// Tensor values as text, the way tf.print writes them: scalars plainly,
// tensors as nested brackets ("[[1 2]\n [3 4]]"), long dimensions summarized
// as "first ... last", strings quoted inside tensors.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace treadle::graph {

// `summarize` elements are shown at each end of a dimension longer than
// 2 * summarize; a negative value shows everything. A scalar string is
// written unquoted.
std::string FormatTensorForPrint(const Tensor& t, int64_t summarize);

}  // namespace treadle::graph
