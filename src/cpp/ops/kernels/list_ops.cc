// Tensor lists (TensorFlow's TensorList ops), the storage behind
// td.TensorArray. A list is an immutable value held by a variant tensor:
// setting an item returns a new list sharing the other items' buffers, so a
// list can flow through While loops and branches like any other value.
#include <cstring>
#include <mutex>

#include "ops/dispatch.h"
#include "ops/op_helpers.h"
#include "tensor/handle.h"

namespace treadle {
namespace {

// The items of a list. A list made from another gets its own copy of the
// items, except one that appends an item to a list whose items end their
// storage (a loop collecting a value per iteration, as gradients of While
// loops do): it shares the storage, so the append costs O(1) amortized
// instead of a copy of every item. Each list sees only its own prefix of a
// shared storage, which a mutex guards. Set/resize/push_back are only for a
// list no one else sees yet (just made or copied).
class ListItems {
 public:
  ListItems() : storage_(std::make_shared<Storage>()) {}
  ListItems(const ListItems& other) : storage_(std::make_shared<Storage>()), size_(other.size_) {
    std::lock_guard<std::mutex> lock(other.storage_->mu);
    storage_->items.assign(other.storage_->items.begin(), other.storage_->items.begin() + other.size_);
  }
  ListItems(ListItems&&) = default;
  ListItems& operator=(ListItems&&) = default;
  ListItems& operator=(const ListItems&) = delete;

  size_t size() const { return size_; }
  Tensor operator[](size_t i) const {
    std::lock_guard<std::mutex> lock(storage_->mu);
    return storage_->items[i];
  }
  void Set(size_t i, Tensor t) {
    std::lock_guard<std::mutex> lock(storage_->mu);
    storage_->items[i] = std::move(t);
  }
  void resize(size_t n) {
    std::lock_guard<std::mutex> lock(storage_->mu);
    storage_->items.resize(n);
    size_ = n;
  }
  void push_back(Tensor t) {
    std::lock_guard<std::mutex> lock(storage_->mu);
    storage_->items.push_back(std::move(t));
    ++size_;
  }
  // These items followed by `t`.
  ListItems Appended(Tensor t) const {
    {
      std::lock_guard<std::mutex> lock(storage_->mu);
      if (storage_->items.size() == size_) {
        storage_->items.push_back(std::move(t));
        return ListItems(storage_, size_ + 1);
      }
    }
    ListItems copy(*this);
    copy.push_back(std::move(t));
    return copy;
  }

 private:
  struct Storage {
    std::mutex mu;
    std::vector<Tensor> items;
  };
  ListItems(std::shared_ptr<Storage> storage, size_t size) : storage_(std::move(storage)), size_(size) {}
  std::shared_ptr<Storage> storage_;
  size_t size_ = 0;
};

class TensorList : public HandleBase {
 public:
  std::string TypeName() const override { return "TensorList"; }
  DType element_dtype = DType::kInvalid;
  PartialShape element_shape;
  ListItems items;  // undefined where nothing was written yet
};

const std::vector<DType> kVariantType = {DType::kVariant};

std::shared_ptr<TensorList> ListOf(const KernelContext& ctx, int input) {
  auto list = GetHandle<TensorList>(ctx.input(input), DType::kVariant, ctx.op.name.c_str());
  DType want = ctx.attrs.GetType("element_dtype");
  if (list->element_dtype != want) {
    ThrowInvalidArgument(ctx.op.name, ": the list holds ", DTypeName(list->element_dtype), " elements but ",
                         DTypeName(want), " was expected");
  }
  return list;
}

// The element shape given as an int tensor input: -1 (scalar) means unknown
// rank, -1 entries unknown dims.
PartialShape ShapeFromInput(const InferContext& c, int i) {
  const Tensor* t = c.value(i);
  if (!t) return PartialShape::Unknown();
  auto v = c.IntValues(i);
  if (t->rank() == 0) {
    if ((*v)[0] != -1) ThrowValueError(c.op.name, ": a scalar element_shape must be -1 (unknown)");
    return PartialShape::Unknown();
  }
  for (int64_t d : *v) {
    if (d < -1) ThrowValueError(c.op.name, ": element_shape has an invalid dimension ", d);
  }
  return PartialShape(*v);
}

PartialShape ShapeFromKernelInput(const KernelContext& ctx, int i) {
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
  std::vector<const Tensor*> values;
  for (const Tensor& t : ctx.inputs) {
    dtypes.push_back(t.dtype());
    shapes.emplace_back(t.shape());
    values.push_back(&t);
  }
  InferContext c{ctx.op, dtypes, shapes, values, ctx.attrs};
  return ShapeFromInput(c, i);
}

PartialShape MergeShapes(const PartialShape& a, const PartialShape& b, const std::string& where) {
  if (!a.known_rank) return b;
  if (!b.known_rank) return a;
  if (a.rank() != b.rank()) ThrowInvalidArgument(where, ": element shapes ", a.ToString(), " and ", b.ToString(), " differ in rank");
  Dims d(a.dims.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (a.dims[i] >= 0 && b.dims[i] >= 0 && a.dims[i] != b.dims[i]) {
      ThrowInvalidArgument(where, ": element shapes ", a.ToString(), " and ", b.ToString(), " are incompatible");
    }
    d[i] = a.dims[i] >= 0 ? a.dims[i] : b.dims[i];
  }
  return PartialShape(d);
}

int64_t IndexInput(const KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.num_elements() != 1) ThrowInvalidArgument(ctx.op.name, ": index must be a scalar");
  return t.dtype() == DType::kInt32 ? *t.data<int32_t>() : *t.data<int64_t>();
}

Tensor Zeros(DType dtype, const Dims& dims) {
  Tensor t(dtype, dims);
  if (dtype == DType::kString) return t;  // default-constructed: empty strings
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

// Item i, or zeros of the fully known element shape where nothing was written.
Tensor ItemOrZeros(const TensorList& list, int64_t i, const PartialShape& shape, const std::string& where) {
  Tensor item = list.items[i];
  if (item.defined()) return item;
  PartialShape s = MergeShapes(list.element_shape, shape, where);
  if (!s.fully_defined()) {
    ThrowInvalidArgument(where, ": element ", i, " was never written and the element shape ", s.ToString(),
                         " is not fully defined, so it cannot be read as zeros");
  }
  return Zeros(list.element_dtype, s.dims);
}

Tensor NewList(std::shared_ptr<TensorList> list) { return MakeHandleTensor(DType::kVariant, std::move(list)); }

OpDef ListOp(const char* name, std::vector<ArgDef> inputs, std::vector<AttrDef> extra_attrs) {
  OpDef op;
  op.name = name;
  op.inputs = std::move(inputs);
  op.attrs = {{"element_dtype", AttrType::kType, std::nullopt}};
  for (auto& a : extra_attrs) op.attrs.push_back(std::move(a));
  return op;
}

OpDef MakeReserve() {
  OpDef op = ListOp("TensorListReserve", {{"element_shape", false, "", kIndexTypes}, {"num_elements", false, "", kIndexTypes}}, {});
  op.outputs = {"handle"};
  op.dtype_fn = FixedDType(DType::kVariant);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    int64_t n = IndexInput(ctx, 1);
    if (n < 0 || n > (int64_t{1} << 31)) ThrowInvalidArgument("TensorListReserve: invalid number of elements ", n);
    auto list = std::make_shared<TensorList>();
    list->element_dtype = ctx.attrs.GetType("element_dtype");
    list->element_shape = ShapeFromKernelInput(ctx, 0);
    list->items.resize(n);
    ctx.set_output(0, NewList(std::move(list)));
  };
  op.doc = "A list of num_elements unwritten elements.";
  return op;
}

OpDef MakeFromTensor() {
  OpDef op = ListOp("TensorListFromTensor", {{"tensor", false, "", {}}, {"element_shape", false, "", kIndexTypes}}, {});
  op.outputs = {"output_handle"};
  op.dtype_fn = [](const InferContext& c) {
    if (c.dtypes[0] != c.attrs.GetType("element_dtype")) {
      ThrowTypeError("TensorListFromTensor: tensor has dtype ", DTypeName(c.dtypes[0]), " but element_dtype is ",
                     DTypeName(c.attrs.GetType("element_dtype")));
    }
    return std::vector<DType>{DType::kVariant};
  };
  op.shape_fn = [](const InferContext& c) {
    if (c.shapes[0].known_rank && c.shapes[0].rank() == 0) {
      ThrowValueError("TensorListFromTensor: the tensor must have rank >= 1 (it is unstacked along axis 0)");
    }
    return std::vector<PartialShape>{PartialShape(Dims{})};
  };
  op.kernel = [](KernelContext& ctx) {
    const Tensor& t = ctx.input(0);
    auto list = std::make_shared<TensorList>();
    list->element_dtype = t.dtype();
    Dims elem(t.shape().begin() + 1, t.shape().end());
    list->element_shape = MergeShapes(PartialShape(elem), ShapeFromKernelInput(ctx, 1), "TensorListFromTensor");
    int64_t n = t.dim(0);
    int64_t per = NumElements(elem);
    for (int64_t i = 0; i < n; ++i) {
      Tensor item(t.dtype(), elem);
      VisitAll(t.dtype(), "TensorListFromTensor", [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::copy(t.data<T>() + i * per, t.data<T>() + (i + 1) * per, item.data<T>());
      });
      list->items.push_back(std::move(item));
    }
    ctx.set_output(0, NewList(std::move(list)));
  };
  op.doc = "A list of the slices of tensor along its first dimension.";
  return op;
}

OpDef MakeGetItem() {
  OpDef op = ListOp("TensorListGetItem", {{"input_handle", false, "", kVariantType}, {"index", false, "", {DType::kInt32}},
                                          {"element_shape", false, "", kIndexTypes}}, {});
  op.outputs = {"item"};
  op.dtype_fn = DTypeFromAttr("element_dtype");
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ShapeFromInput(c, 2)}; };
  op.kernel = [](KernelContext& ctx) {
    auto list = ListOf(ctx, 0);
    int64_t i = IndexInput(ctx, 1);
    int64_t n = static_cast<int64_t>(list->items.size());
    if (i < 0 || i >= n) {
      ThrowInvalidArgument("Trying to access element ", i, " in a list with ", n, " elements.");
    }
    ctx.set_output(0, ItemOrZeros(*list, i, ShapeFromKernelInput(ctx, 2), "TensorListGetItem"));
  };
  op.doc = "Element index of the list.";
  return op;
}

OpDef MakeSetItem() {
  OpDef op = ListOp("TensorListSetItem",
                    {{"input_handle", false, "", kVariantType}, {"index", false, "", {DType::kInt32}}, {"item", false, "", {}}},
                    {{"resize_if_index_out_of_bounds", AttrType::kBool, AttrValue(false)}});
  op.outputs = {"output_handle"};
  op.dtype_fn = [](const InferContext& c) {
    if (c.dtypes[2] != c.attrs.GetType("element_dtype")) {
      ThrowTypeError("TensorListSetItem: item has dtype ", DTypeName(c.dtypes[2]), " but the list holds ",
                     DTypeName(c.attrs.GetType("element_dtype")));
    }
    return std::vector<DType>{DType::kVariant};
  };
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    auto list = ListOf(ctx, 0);
    int64_t i = IndexInput(ctx, 1);
    const Tensor& item = ctx.input(2);
    int64_t n = static_cast<int64_t>(list->items.size());
    bool resize = ctx.attrs.GetBool("resize_if_index_out_of_bounds");
    if (i < 0 || (i >= n && !resize)) {
      ThrowInvalidArgument("Tried to write to index ", i, " but array is not resizeable and size is: ", n);
    }
    if (i > (int64_t{1} << 31)) ThrowInvalidArgument("TensorListSetItem: index ", i, " is too large");
    if (!list->element_shape.IsCompatibleWith(item.shape())) {
      ThrowInvalidArgument("TensorListSetItem: item of shape ", DimsToString(item.shape()),
                           " is incompatible with the list's element shape ", list->element_shape.ToString());
    }
    std::shared_ptr<TensorList> out;
    if (i == n) {  // an append: shares the items' storage when it can
      out = std::make_shared<TensorList>();
      out->element_dtype = list->element_dtype;
      out->element_shape = list->element_shape;
      out->items = list->items.Appended(item);
    } else {
      out = std::make_shared<TensorList>(*list);  // copies the items, sharing their buffers
      if (i >= n) out->items.resize(i + 1);
      out->items.Set(i, item);
    }
    ctx.set_output(0, NewList(std::move(out)));
  };
  op.doc = "A new list with element index set to item.";
  return op;
}

OpDef MakeStack() {
  OpDef op = ListOp("TensorListStack", {{"input_handle", false, "", kVariantType}, {"element_shape", false, "", kIndexTypes}},
                    {{"num_elements", AttrType::kInt, AttrValue(int64_t{-1})}});
  op.outputs = {"tensor"};
  op.dtype_fn = DTypeFromAttr("element_dtype");
  op.shape_fn = [](const InferContext& c) {
    PartialShape elem = ShapeFromInput(c, 1);
    if (!elem.known_rank) return std::vector<PartialShape>{PartialShape::Unknown()};
    Dims d = {c.attrs.GetInt("num_elements")};
    d.insert(d.end(), elem.dims.begin(), elem.dims.end());
    return std::vector<PartialShape>{PartialShape(d)};
  };
  op.kernel = [](KernelContext& ctx) {
    auto list = ListOf(ctx, 0);
    int64_t n = static_cast<int64_t>(list->items.size());
    PartialShape shape = MergeShapes(list->element_shape, ShapeFromKernelInput(ctx, 1), "TensorListStack");
    for (int64_t i = 0; i < n; ++i) {
      Tensor t = list->items[i];
      if (t.defined()) shape = MergeShapes(shape, PartialShape(t.shape()), "TensorListStack");
    }
    if (!shape.fully_defined()) {
      if (n == 0) ThrowInvalidArgument("TensorListStack: cannot stack an empty list whose element shape ",
                                       shape.ToString(), " is not fully defined");
      ThrowInvalidArgument("TensorListStack: element shape ", shape.ToString(), " is not fully defined");
    }
    Dims out_dims = {n};
    out_dims.insert(out_dims.end(), shape.dims.begin(), shape.dims.end());
    Tensor& out = ctx.allocate_output(0, out_dims);
    int64_t per = NumElements(shape.dims);
    VisitAll(list->element_dtype, "TensorListStack", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i) {
        Tensor item = ItemOrZeros(*list, i, shape, "TensorListStack");
        std::copy(item.data<T>(), item.data<T>() + per, out.data<T>() + i * per);
      }
    });
  };
  op.doc = "The elements stacked along a new first dimension.";
  return op;
}

OpDef MakeLength() {
  OpDef op;
  op.name = "TensorListLength";
  op.inputs = {{"input_handle", false, "", kVariantType}};
  op.outputs = {"length"};
  op.dtype_fn = FixedDType(DType::kInt32);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    auto list = GetHandle<TensorList>(ctx.input(0), DType::kVariant, "TensorListLength");
    Tensor& out = ctx.allocate_output(0);
    *out.data<int32_t>() = static_cast<int32_t>(list->items.size());
  };
  op.doc = "The number of elements of the list.";
  return op;
}

// Elementwise sum of lists (how gradients of a list add up): items written in
// several lists are added, an item written in one is taken as it is, and one
// written in none stays unwritten (zeros). The result is as long as the longest.
Tensor AddItems(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    ThrowInvalidArgument("TensorListAddN: items of shapes ", DimsToString(a.shape()), " and ",
                         DimsToString(b.shape()), " cannot be added");
  }
  Tensor sum(a.dtype(), a.shape());
  VisitNumeric(a.dtype(), "TensorListAddN", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = sum.data<T>();
    for (int64_t i = 0; i < sum.num_elements(); ++i) po[i] = pa[i] + pb[i];
  });
  return sum;
}

OpDef MakeListAddN() {
  OpDef op;
  op.name = "TensorListAddN";
  op.inputs = {{"inputs", true, "", kVariantType}};
  op.outputs = {"sum"};
  op.dtype_fn = [](const InferContext& c) {
    if (c.dtypes.empty()) ThrowValueError("TensorListAddN: needs at least one input");
    return std::vector<DType>{DType::kVariant};
  };
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    // An empty variant (an unwritten item of a list of lists read as zeros)
    // is a zero list: it adds nothing.
    std::vector<int> present;
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor& t = ctx.input(k);
      if (t.dtype() != DType::kVariant || t.num_elements() != 1 || *t.data<Handle>()) present.push_back(k);
    }
    if (present.empty()) {
      ctx.set_output(0, ctx.input(0));
      return;
    }
    auto first = GetHandle<TensorList>(ctx.input(present[0]), DType::kVariant, "TensorListAddN");
    auto out = std::make_shared<TensorList>(*first);
    for (size_t p = 1; p < present.size(); ++p) {
      auto list = GetHandle<TensorList>(ctx.input(present[p]), DType::kVariant, "TensorListAddN");
      if (list->element_dtype != out->element_dtype) {
        ThrowInvalidArgument("TensorListAddN: lists of ", DTypeName(out->element_dtype), " and ",
                             DTypeName(list->element_dtype), " elements cannot be added");
      }
      // Lists of gradients may hold items of different shapes (a While that
      // collects a branch's outputs): the sum then has an unknown element shape.
      try {
        out->element_shape = MergeShapes(out->element_shape, list->element_shape, "TensorListAddN");
      } catch (const Error&) {
        out->element_shape = PartialShape::Unknown();
      }
      if (list->items.size() > out->items.size()) out->items.resize(list->items.size());
      for (size_t i = 0; i < list->items.size(); ++i) {
        Tensor item = list->items[i];
        if (!item.defined()) continue;
        Tensor mine = out->items[i];
        out->items.Set(i, mine.defined() ? AddItems(mine, item) : item);
      }
    }
    ctx.set_output(0, NewList(std::move(out)));
  };
  op.doc = "Elementwise sum of lists of numbers; unwritten items count as zeros.";
  return op;
}

// The zero gradient of a list: as long as `input_handle`, with its element
// dtype and shape, and nothing written.
OpDef MakeZerosLike() {
  OpDef op;
  op.name = "TensorListZerosLike";
  op.inputs = {{"input_handle", false, "", kVariantType}};
  op.outputs = {"output_handle"};
  op.dtype_fn = FixedDType(DType::kVariant);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    auto list = GetHandle<TensorList>(ctx.input(0), DType::kVariant, "TensorListZerosLike");
    auto out = std::make_shared<TensorList>();
    out->element_dtype = list->element_dtype;
    out->element_shape = list->element_shape;
    out->items.resize(list->items.size());
    ctx.set_output(0, NewList(std::move(out)));
  };
  op.doc = "A list as long as input_handle, of its element dtype and shape, with no element written (zeros).";
  return op;
}

OpRegistrar reserve_op(MakeReserve());
OpRegistrar zeros_like_op(MakeZerosLike());
OpRegistrar list_add_n_op(MakeListAddN());
OpRegistrar from_tensor_op(MakeFromTensor());
OpRegistrar get_item_op(MakeGetItem());
OpRegistrar set_item_op(MakeSetItem());
OpRegistrar stack_op(MakeStack());
OpRegistrar length_op(MakeLength());

}  // namespace
}  // namespace treadle
