// Building blocks for op definitions: common dtype rules, shape functions and
// allowed-dtype lists, so each op's registration reads as one short block.
#pragma once

#include <vector>

#include "ops/registry.h"

namespace treadle {

// Inline variables: initialised before any registrar defined after this
// include, whatever order the translation units are initialised in.
inline const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat64};
inline const std::vector<DType> kIntTypes = {DType::kInt32, DType::kInt64};
inline const std::vector<DType> kNumericTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};
inline const std::vector<DType> kNumericBoolTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                                     DType::kInt64, DType::kBool};
inline const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                             DType::kInt64,   DType::kBool,    DType::kString};
inline const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};
inline const std::vector<DType> kBoolType = {DType::kBool};

// ---- dtype rules ----
DTypeFn SameDTypeAsInput(int i);          // one output with input i's dtype
DTypeFn FixedDType(DType t);              // one output of dtype t
DTypeFn DTypeFromAttr(const char* attr);  // one output of the dtype attr names

// The list(type) attr `attr` must list the dtypes of the inputs from `first`
// on (ops taking a list of any dtypes: If, While, calls, the Loom ops).
// Throws TypeError "Op: attr 'T' is (int32) but the inputs are (float32)".
void CheckInputTypesMatchAttr(const InferContext& c, const char* attr, size_t first);

// ---- shape functions ----
ShapeFn SameShapeAsInput(int i);
ShapeFn ScalarShape();
ShapeFn BroadcastShapeOfInputs();  // NumPy broadcasting of every input

// NumPy broadcasting of two shapes (unknown dims stay unknown where they could
// matter). Throws ValueError "Incompatible shapes: [2] vs. [3]".
PartialShape BroadcastPartial(const PartialShape& a, const PartialShape& b);
Dims BroadcastDims(const Dims& a, const Dims& b);

// Normalises a possibly negative axis for a tensor of `rank`; throws
// InvalidArgument naming the op when it is out of range.
int64_t NormalizeAxis(const OpDef& op, int64_t axis, int64_t rank);

}  // namespace treadle
