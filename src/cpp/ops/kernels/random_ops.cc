// Seeded random ops: RandomUniform, RandomStandardNormal, RandomUniformInt.
//
// Numbers come from Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), a counter-based generator:
// block i of a stream is a pure function of (key, counter = i), so element k
// of an output depends only on the seeds and k, never on threads or chunking.
//
// As in TensorFlow, each eager call of an op with the same (seed, seed2)
// continues that op's stream instead of repeating it: a per-(op, dtype, seed,
// seed2) counter says where the next call starts. td.random.set_seed resets
// the counters. Seeds (0, 0) mean "nondeterministic": fresh random seeds.
#include "ops/kernels/array_util.h"
#include "ops/kernels/random_ops.h"

#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>

#include "ops/dispatch.h"
#include "ops/op_helpers.h"
#include "ops/shape_values.h"

namespace treadle {
namespace {

using PhiloxBlock = std::array<uint32_t, 4>;

PhiloxBlock Philox4x32(PhiloxBlock ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;   // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;  // key schedule increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint64_t p0 = uint64_t{kMul0} * ctr[0];
    const uint64_t p1 = uint64_t{kMul1} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ k0, static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ k1, static_cast<uint32_t>(p0)};
  }
  return ctr;
}

// A run of blocks reserved for one op call. The key is `seed`; the counter's
// high words are `seed2` and its low words the block index.
struct PhiloxStream {
  uint64_t seed = 0, seed2 = 0, first_block = 0;

  PhiloxBlock Block(uint64_t i) const {
    const uint64_t b = first_block + i;
    return Philox4x32({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(seed2),
                       static_cast<uint32_t>(seed2 >> 32)},
                      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  }
};

struct StreamCounters {
  std::mutex mu;
  std::map<std::tuple<std::string, DType, int64_t, int64_t>, uint64_t> next_block;
  std::mt19937_64 entropy{std::random_device{}()};
};

StreamCounters& Counters() {
  static StreamCounters* counters = new StreamCounters();  // never destroyed: ops may run at exit
  return *counters;
}

PhiloxStream ReserveStream(const std::string& op, DType dtype, int64_t seed, int64_t seed2, uint64_t blocks) {
  StreamCounters& c = Counters();
  std::lock_guard<std::mutex> lock(c.mu);
  if (seed == 0 && seed2 == 0) return PhiloxStream{c.entropy(), c.entropy(), 0};
  uint64_t& next = c.next_block[{op, dtype, seed, seed2}];
  PhiloxStream s{static_cast<uint64_t>(seed), static_cast<uint64_t>(seed2), next};
  next += blocks;
  return s;
}

// ---------------------------------------------------------------- distributions
// Each maps one Philox block (4 x 32 random bits) to kPerBlock values.

constexpr double kTwoPi = 6.283185307179586476925286766559;

uint64_t Bits64(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

template <typename T> struct Uniform;
template <> struct Uniform<float> {
  static constexpr int kPerBlock = 4;
  static void Fill(const PhiloxBlock& b, float* out, int n) {
    for (int i = 0; i < n; ++i) out[i] = static_cast<float>(b[i] >> 8) * 0x1p-24f;  // [0, 1), 24 bits
  }
};
template <> struct Uniform<double> {
  static constexpr int kPerBlock = 2;
  static void Fill(const PhiloxBlock& b, double* out, int n) {
    for (int i = 0; i < n; ++i) out[i] = static_cast<double>(Bits64(b[2 * i], b[2 * i + 1]) >> 11) * 0x1p-53;
  }
};

// Box-Muller: u1 in (0, 1] keeps the logarithm finite.
void BoxMuller(double u1, double u2, double* z0, double* z1) {
  const double r = std::sqrt(-2.0 * std::log(u1));
  *z0 = r * std::cos(kTwoPi * u2);
  *z1 = r * std::sin(kTwoPi * u2);
}

template <typename T> struct Normal;
template <> struct Normal<float> {
  static constexpr int kPerBlock = 4;
  // Single precision throughout: the output is float anyway, and float
  // log/sin/cos are about twice as fast.
  static void Fill(const PhiloxBlock& b, float* out, int n) {
    float z[4];
    for (int p = 0; p < 2; ++p) {
      const float u1 = static_cast<float>((b[2 * p] >> 8) + 1) * 0x1p-24f;  // (0, 1]
      const float u2 = static_cast<float>(b[2 * p + 1] >> 8) * 0x1p-24f;    // [0, 1)
      const float r = std::sqrt(-2.0f * std::log(u1));
      const float theta = static_cast<float>(kTwoPi) * u2;
      z[2 * p] = r * std::cos(theta);
      z[2 * p + 1] = r * std::sin(theta);
    }
    for (int i = 0; i < n; ++i) out[i] = z[i];
  }
};
template <> struct Normal<double> {
  static constexpr int kPerBlock = 2;
  static void Fill(const PhiloxBlock& b, double* out, int n) {
    double z[2];
    BoxMuller(((Bits64(b[0], b[1]) >> 11) + 1.0) * 0x1p-53, (Bits64(b[2], b[3]) >> 11) * 0x1p-53, &z[0], &z[1]);
    for (int i = 0; i < n; ++i) out[i] = z[i];
  }
};

// Integers in [lo, lo + range) from 64 random bits each; the modulo bias is
// at most range / 2^64.
template <typename T> struct UniformInt {
  static constexpr int kPerBlock = 2;
  T lo;
  uint64_t range;
  void Fill(const PhiloxBlock& b, T* out, int n) const {
    for (int i = 0; i < n; ++i) {
      out[i] = static_cast<T>(static_cast<uint64_t>(lo) + Bits64(b[2 * i], b[2 * i + 1]) % range);
    }
  }
};

template <typename T, typename Dist>
void FillFromStream(Tensor& out, const PhiloxStream& stream, const Dist& dist) {
  const int64_t n = out.num_elements();
  const uint64_t blocks = static_cast<uint64_t>((n + Dist::kPerBlock - 1) / Dist::kPerBlock);
  T* po = out.data<T>();
  for (uint64_t bi = 0; bi < blocks; ++bi) {
    const int64_t start = static_cast<int64_t>(bi) * Dist::kPerBlock;
    dist.Fill(stream.Block(bi), po + start, static_cast<int>(std::min<int64_t>(Dist::kPerBlock, n - start)));
  }
}

template <typename T, typename Dist>
void FillRandom(KernelContext& ctx, const Dist& dist) {
  Tensor& out = ctx.allocate_output(0);
  const int64_t n = out.num_elements();
  const uint64_t blocks = static_cast<uint64_t>((n + Dist::kPerBlock - 1) / Dist::kPerBlock);
  PhiloxStream stream =
      ReserveStream(ctx.op.name, out.dtype(), ctx.attrs.GetInt("seed"), ctx.attrs.GetInt("seed2"), blocks);
  FillFromStream<T>(out, stream, dist);
}

// ---------------------------------------------------------------- op defs

// The output shape named by the `shape` input (a vector of dims).
PartialShape ShapeFromInput(const InferContext& c, int i) {
  const PartialShape& ss = c.shapes[i];
  if (ss.known_rank && ss.rank() != 1) {
    ThrowValueError(c.op.name, ": 'shape' must be a 1-D tensor, got a tensor of shape ", ss.ToString());
  }
  std::optional<std::vector<int64_t>> dims = c.IntValues(i);
  if (!dims) {  // a computed shape: what is known of it
    PartialShape out = ShapeOperand(c, i);
    return out.rank() <= kMaxRank ? out : PartialShape::Unknown();
  }
  if (dims->size() > static_cast<size_t>(kMaxRank)) {
    ThrowValueError(c.op.name, ": 'shape' has ", dims->size(), " dims; at most ", kMaxRank, " are supported");
  }
  for (int64_t d : *dims) {
    if (d < 0) {
      std::string listed;
      for (int64_t e : *dims) listed += (listed.empty() ? "" : ", ") + std::to_string(e);
      ThrowValueError(c.op.name, ": 'shape' dims must be non-negative, got [", listed, "]");
    }
  }
  NumElements(*dims);  // rejects sizes that overflow
  return PartialShape(*dims);
}

std::vector<AttrDef> SeedAttrs() {
  return {{"seed", AttrType::kInt, AttrValue(int64_t{0})}, {"seed2", AttrType::kInt, AttrValue(int64_t{0})}};
}

template <template <typename> class Dist>
OpDef FloatRandomOp(const char* name, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"shape", false, "T", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = SeedAttrs();
  op.attrs.push_back({"dtype", AttrType::kType, std::nullopt});
  op.dtype_fn = [name](const InferContext& c) {
    DType t = c.attrs.GetType("dtype");
    if (t != DType::kFloat32 && t != DType::kFloat64) {
      ThrowTypeError(name, ": dtype must be float32 or float64, got ", DTypeName(t));
    }
    return std::vector<DType>{t};
  };
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ShapeFromInput(c, 0)}; };
  op.kernel = [name](KernelContext& ctx) {
    VisitFloat(ctx.out_dtypes[0], name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      FillRandom<T>(ctx, Dist<T>{});
    });
  };
  op.stateful = true;
  op.doc = doc;
  return op;
}

OpRegistrar uniform_op(FloatRandomOp<Uniform>("RandomUniform", "Uniform floats in [0, 1) of the given shape."));
OpRegistrar normal_op(FloatRandomOp<Normal>("RandomStandardNormal",
                                            "Normally distributed floats (mean 0, stddev 1) of the given shape."));

OpDef MakeRandomUniformInt() {
  OpDef op;
  op.name = "RandomUniformInt";
  op.inputs = {{"shape", false, "T", kIndexTypes}, {"minval", false, "Tout", kIntTypes},
               {"maxval", false, "Tout", kIntTypes}};
  op.outputs = {"output"};
  op.attrs = SeedAttrs();
  op.dtype_fn = SameDTypeAsInput(1);
  op.shape_fn = [](const InferContext& c) {
    for (int i : {1, 2}) {
      if (c.shapes[i].known_rank && c.shapes[i].rank() != 0) {
        ThrowValueError(c.op.name, ": '", c.op.inputs[i].name, "' must be a scalar, got shape ",
                        c.shapes[i].ToString());
      }
    }
    return std::vector<PartialShape>{ShapeFromInput(c, 0)};
  };
  op.kernel = [](KernelContext& ctx) {
    VisitInt(ctx.input(1).dtype(), "RandomUniformInt", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T lo = *ctx.input(1).data<T>(), hi = *ctx.input(2).data<T>();
      if (lo >= hi) ThrowInvalidArgument("Need minval < maxval: ", lo, " >= ", hi);
      FillRandom<T>(ctx, UniformInt<T>{lo, static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo)});
    });
  };
  op.stateful = true;
  op.doc = "Uniform integers in [minval, maxval) of the given shape.";
  return op;
}

OpRegistrar uniform_int_op(MakeRandomUniformInt());

// Stateless random ops: the values depend only on the shape and the `seed`
// input (two integers), never on earlier calls; the same seed gives the same
// values, as TensorFlow's StatelessRandomUniform/StatelessRandomNormal.
template <template <typename> class Dist>
OpDef StatelessFloatRandomOp(const char* name, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"shape", false, "T", kIndexTypes}, {"seed", false, "Tseed", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"dtype", AttrType::kType, AttrValue(DType::kFloat32)}};
  op.dtype_fn = [name](const InferContext& c) {
    DType t = c.attrs.GetType("dtype");
    if (t != DType::kFloat32 && t != DType::kFloat64) {
      ThrowTypeError(name, ": dtype must be float32 or float64, got ", DTypeName(t));
    }
    return std::vector<DType>{t};
  };
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& seed = c.shapes[1];
    if (seed.known_rank && (seed.rank() != 1 || (seed.dims[0] != kUnknownDim && seed.dims[0] != 2))) {
      ThrowValueError(c.op.name, ": seed must have shape [2], got ", seed.ToString());
    }
    return std::vector<PartialShape>{ShapeFromInput(c, 0)};
  };
  op.kernel = [name](KernelContext& ctx) {
    const std::vector<int64_t> seed = ReadInts(ctx.input(1));
    if (seed.size() != 2) ThrowInvalidArgument(name, ": seed must have shape [2], got ", seed.size(), " values");
    const PhiloxStream stream{static_cast<uint64_t>(seed[0]), static_cast<uint64_t>(seed[1]), 0};
    Tensor& out = ctx.allocate_output(0);
    VisitFloat(ctx.out_dtypes[0], name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      FillFromStream<T>(out, stream, Dist<T>{});
    });
  };
  op.doc = doc;
  return op;
}

OpRegistrar stateless_uniform_op(StatelessFloatRandomOp<Uniform>(
    "StatelessRandomUniform", "Uniform floats in [0, 1) of the given shape, a function of `seed` ([2] integers)."));
OpRegistrar stateless_normal_op(StatelessFloatRandomOp<Normal>(
    "StatelessRandomNormal", "Standard normal floats of the given shape, a function of `seed` ([2] integers)."));

}  // namespace

void ResetRandomOpCounters() {
  StreamCounters& c = Counters();
  std::lock_guard<std::mutex> lock(c.mu);
  c.next_block.clear();
}

}  // namespace treadle
