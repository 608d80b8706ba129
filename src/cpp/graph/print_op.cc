// Print: writes its inputs to standard error (or output) when it runs, like tf.print.
#include <cstdio>

#include "graph/print_format.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

void PrintKernel(KernelContext& ctx) {
  const std::string& separator = ctx.attrs.GetString("separator");
  const int64_t summarize = ctx.attrs.GetInt("summarize");
  std::string line;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (i) line += separator;
    line += graph::FormatTensorForPrint(ctx.input(i), summarize);
  }
  line += ctx.attrs.GetString("end");
  const std::string& stream = ctx.attrs.GetString("output_stream");
  if (stream != "stderr" && stream != "stdout") {
    ThrowInvalidArgument("Print: output_stream must be \"stderr\" or \"stdout\", got \"", stream, "\"");
  }
  std::FILE* out = stream == "stdout" ? stdout : stderr;
  // One write per call, so lines printed from concurrent runs do not interleave.
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

OpDef PrintOp() {
  OpDef op;
  op.name = "Print";
  op.inputs = {{"inputs", true, "", {}}};
  op.attrs = {{"separator", AttrType::kString, AttrValue(std::string(" "))},
              {"end", AttrType::kString, AttrValue(std::string("\n"))},
              {"summarize", AttrType::kInt, AttrValue(int64_t{3})},
              {"output_stream", AttrType::kString, AttrValue(std::string("stderr"))}};
  op.dtype_fn = [](const InferContext&) { return std::vector<DType>{}; };
  op.shape_fn = [](const InferContext&) { return std::vector<PartialShape>{}; };
  op.kernel = PrintKernel;
  op.stateful = true;
  op.doc = "Writes the inputs to output_stream (\"stderr\" or \"stdout\"), separated by `separator` and followed by `end`; "
           "`summarize` elements are shown at each end of long dimensions (-1: all).";
  return op;
}

OpRegistrar print_op(PrintOp());

}  // namespace
}  // namespace treadle
