// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/cudnn_sdpa.cpp by scripts/variants.py.)
// cuDNN's fused attention (cudnn_sdpa.hpp) through the raw cuDNN 9 backend graph API, without the
// cudnn-frontend library. Worked example of a vendor call: the lesson is the graph cuDNN's
// flash-attention engines recognise, and the bench's yardstick is what it buys.
//
// The graph is the one cudnn-frontend's SDPA node emits for cuDNN < 9.21 (its softmax and causal
// mask nodes expanded by hand; no frontend code is copied):
//   S   = matmul(Q, K^T)                   FLOAT virtual (b, h, s, s)
//   S1  = S * attn_scale                   attn_scale: FLOAT by-value scalar
//   row = GEN_INDEX(S1, axis 2), col = GEN_INDEX(S1, axis 3)     INT32 virtual
//   msk = CMP_GE(row, col)                 BOOLEAN virtual
//   S2  = BINARY_SELECT(S1, -inf, msk)     msk ? S1 : -inf (-FLT_MAX before cuDNN 9.10)
//   M   = reduce MAX(S2), E = EXP(S2 - M), Z = reduce ADD(E)    M, Z: FLOAT virtual (b, h, s, 1)
//   St  = M + LOG(Z)                       a virtual Stats tensor: the frontend emits this chain
//                                          even for inference, and cuDNN's pattern matcher wants it
//                                          (9.19 rejects the graph without it)
//   P   = E / Z                            virtual, Q's type (rounded before the second matmul)
//   O   = matmul(P, V)
// The lab's [batch][token][head][dim] storage is described by strides of the logical (b, h, s, d)
// tensors; K is given as K^T, (b, h_kv, d, s). GQA: K and V are described with h_kv heads and the
// matmuls broadcast them (query head i reads KV head i / (h / h_kv)).
// First measured through this graph in a side harness on an H100 (cuDNN 9.14): engine 2 (runtime
// compiled) from heuristics mode A at every prefill shape of the bench.
#include "ch11/cudnn_sdpa.hpp"

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "cudalab/check.hpp"

#if CUDALAB_HAVE_CUDNN
#include <cudnn.h>
#endif

#if CUDALAB_HAVE_CUDNN && CUDNN_MAJOR >= 9

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <vector>

#include "cudalab/memory.hpp"

namespace cudalab::ch11 {

bool have_cudnn() noexcept {
  return true;
}

namespace {

// Attribute names by value: two are deprecated in cuDNN 9 headers (set anyway, as the frontend does
// while older runtimes need them), one is newer than 9.0's headers.
constexpr auto kAttrPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);
constexpr auto kAttrGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);
constexpr auto kAttrReductionDeterministic = static_cast<cudnnBackendAttributeName_t>(1602);

// A failed cuDNN call: LibraryError naming the call, with cuDNN's status and its own message
// (cudnnGetLastErrorString: why a graph or a plan was refused).
void check(cudnnStatus_t status, const std::string& call, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char buf[4096] = {};
  cudnnGetLastErrorString(buf, sizeof buf);
  std::string name = cudnnGetErrorString(status);
  if (buf[0] != '\0') name += std::string(": ") + buf;
  throw LibraryError("cuDNN", static_cast<long>(status), name, call, __FILE__, line);
}

// A backend descriptor, destroyed with its owner; `name` goes into error messages.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  std::string name;
  Desc(cudnnBackendDescriptorType_t type, std::string n) : name(std::move(n)) {
    check(cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor(" + name + ")",
          __LINE__);
  }
  ~Desc() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
};
using DescP = std::shared_ptr<Desc>;

void set(const Desc& d, cudnnBackendAttributeName_t a, const char* aname,
         cudnnBackendAttributeType_t t, std::int64_t n, const void* v, int line) {
  check(cudnnBackendSetAttribute(d.d, a, t, n, v),
        std::string("cudnnBackendSetAttribute(") + d.name + ", " + aname + ")", line);
}
#define SDPA_SET(desc, attr, type, n, ptr) set((desc), attr, #attr, type, n, ptr, __LINE__)

void get(const Desc& d, cudnnBackendAttributeName_t a, const char* aname,
         cudnnBackendAttributeType_t t, std::int64_t req, std::int64_t* got, void* v, int line) {
  check(cudnnBackendGetAttribute(d.d, a, t, req, got, v),
        std::string("cudnnBackendGetAttribute(") + d.name + ", " + aname + ")", line);
}
#define SDPA_GET(desc, attr, type, req, got, ptr) \
  get((desc), attr, #attr, type, req, got, ptr, __LINE__)

void finalize(const Desc& d, int line) {
  check(cudnnBackendFinalize(d.d), "cudnnBackendFinalize(" + d.name + ")", line);
}

enum : std::int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidScale = 10,
  kUidMaskValue,
  kUidS = 101,
  kUidS1,
  kUidRow,
  kUidCol,
  kUidMask,
  kUidS2,
  kUidM,
  kUidSub,
  kUidE,
  kUidZ,
  kUidP,
  kUidLogZ,
  kUidStats
};

// The two graphs tried, in order: the current frontend's (GEN_INDEX computed in FLOAT), then
// frontend 1.8's (GEN_INDEX in INT32, mask value -FLT_MAX).
struct Variant {
  const char* name;
  bool gen_index_int32;
  bool lowest_not_inf;
};

struct Graph {
  std::vector<DescP> keep;  // tensors and op descriptors the operations refer to
  std::vector<DescP> ops;
  DescP graph;
  float mask_value = 0;
};

DescP tensor(Graph& g, const char* name, std::int64_t uid, cudnnDataType_t dt,
             std::vector<std::int64_t> dims, std::vector<std::int64_t> strides, bool is_virtual,
             bool by_value = false) {
  auto t = std::make_shared<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR, std::string("tensor ") + name);
  const auto n = static_cast<std::int64_t>(dims.size());
  const std::int64_t align = 16;
  SDPA_SET(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  SDPA_SET(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, dims.data());
  SDPA_SET(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, strides.data());
  SDPA_SET(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  SDPA_SET(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  const bool yes = true;
  if (is_virtual) SDPA_SET(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  if (by_value) SDPA_SET(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
  finalize(*t, __LINE__);
  g.keep.push_back(t);
  return t;
}

// y = op(x), op(x, b), or BINARY_SELECT's y = t ? x : b.
void pointwise(Graph& g, const char* name, cudnnPointwiseMode_t mode, cudnnDataType_t compute,
               const DescP& x, const DescP& b, const DescP& t, const DescP& y,
               std::int64_t axis = -1) {
  auto pw =
      std::make_shared<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, std::string("pointwise ") + name);
  SDPA_SET(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  SDPA_SET(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  if (mode == CUDNN_POINTWISE_GEN_INDEX)
    SDPA_SET(*pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  finalize(*pw, __LINE__);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                                   std::string("op ") + name);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
           &pw->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x->d);
  if (b)
    SDPA_SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y->d);
  if (t)
    SDPA_SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t->d);
  finalize(*op, __LINE__);
  g.keep.push_back(pw);
  g.ops.push_back(op);
}

void matmul(Graph& g, const char* name, const DescP& a, const DescP& b, const DescP& c) {
  auto mm = std::make_shared<Desc>(CUDNN_BACKEND_MATMUL_DESCRIPTOR, std::string("matmul ") + name);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  SDPA_SET(*mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  finalize(*mm, __LINE__);
  auto op =
      std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, std::string("op ") + name);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm->d);
  finalize(*op, __LINE__);
  g.keep.push_back(mm);
  g.ops.push_back(op);
}

void reduction(Graph& g, const char* name, cudnnReduceTensorOp_t rop, const DescP& x,
               const DescP& y, int runtime) {
  auto rd =
      std::make_shared<Desc>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, std::string("reduction ") + name);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  SDPA_SET(*rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  SDPA_SET(*rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop);
  if (runtime >= 91100) {  // the frontend sets it (false) from cuDNN 9.11 on
    const bool deterministic = false;
    SDPA_SET(*rd, kAttrReductionDeterministic, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
  }
  finalize(*rd, __LINE__);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                                   std::string("op ") + name);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y->d);
  SDPA_SET(*op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd->d);
  finalize(*op, __LINE__);
  g.keep.push_back(rd);
  g.ops.push_back(op);
}

struct Key {
  int batch, q_heads, kv_heads, len, head_dim;
  DType dtype;
  SdpaLayout layout;
  auto operator<=>(const Key&) const = default;
};

std::unique_ptr<Graph> build_graph(cudnnHandle_t handle, const Key& p, const Variant& v,
                                   int runtime) {
  auto g = std::make_unique<Graph>();
  const std::int64_t b = p.batch, h = p.q_heads, hkv = p.kv_heads, s = p.len, d = p.head_dim;
  const cudnnDataType_t io = p.dtype == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  const cudnnDataType_t F = CUDNN_DATA_FLOAT;
  const SdpaLayout& L = p.layout;
  // Logical (b, h, s, d) over [b][s][h][d] storage; K as K^T: (b, h_kv, d, s).
  auto Q = tensor(*g, "Q", kUidQ, io, {b, h, s, d}, {L.q.batch, L.q.head, L.q.token, 1}, false);
  auto K = tensor(*g, "K^T", kUidK, io, {b, hkv, d, s}, {L.k.batch, L.k.head, 1, L.k.token}, false);
  auto V = tensor(*g, "V", kUidV, io, {b, hkv, s, d}, {L.v.batch, L.v.head, L.v.token, 1}, false);
  auto O =
      tensor(*g, "O", kUidO, io, {b, h, s, d}, {L.out.batch, L.out.head, L.out.token, 1}, false);
  const std::vector<std::int64_t> one = {1, 1, 1, 1};
  auto SC = tensor(*g, "attn_scale", kUidScale, F, one, one, false, true);
  auto MV = tensor(*g, "mask value", kUidMaskValue, F, one, one, false, true);
  const std::vector<std::int64_t> sd = {b, h, s, s}, ss = {h * s * s, s * s, s, 1};
  const std::vector<std::int64_t> rd = {b, h, s, 1}, rs = {h * s, s, 1, 1};
  auto S = tensor(*g, "S", kUidS, F, sd, ss, true);
  auto S1 = tensor(*g, "S1", kUidS1, F, sd, ss, true);
  auto ROW = tensor(*g, "row", kUidRow, CUDNN_DATA_INT32, sd, ss, true);
  auto COL = tensor(*g, "col", kUidCol, CUDNN_DATA_INT32, sd, ss, true);
  auto MSK = tensor(*g, "mask", kUidMask, CUDNN_DATA_BOOLEAN, sd, ss, true);
  auto S2 = tensor(*g, "S2", kUidS2, F, sd, ss, true);
  auto M = tensor(*g, "M", kUidM, F, rd, rs, true);
  auto SUB = tensor(*g, "S2-M", kUidSub, F, sd, ss, true);
  auto E = tensor(*g, "E", kUidE, F, sd, ss, true);
  auto Z = tensor(*g, "Z", kUidZ, F, rd, rs, true);
  auto LZ = tensor(*g, "logZ", kUidLogZ, F, rd, rs, true);
  auto ST = tensor(*g, "Stats", kUidStats, F, rd, rs, true);
  auto P = tensor(*g, "P", kUidP, io, sd, ss, true);

  const cudnnDataType_t index_compute = v.gen_index_int32 ? CUDNN_DATA_INT32 : F;
  matmul(*g, "bmm1", Q, K, S);
  pointwise(*g, "scale", CUDNN_POINTWISE_MUL, F, S, SC, nullptr, S1);
  pointwise(*g, "row", CUDNN_POINTWISE_GEN_INDEX, index_compute, S1, nullptr, nullptr, ROW, 2);
  pointwise(*g, "col", CUDNN_POINTWISE_GEN_INDEX, index_compute, S1, nullptr, nullptr, COL, 3);
  pointwise(*g, "row>=col", CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, ROW, COL, nullptr, MSK);
  pointwise(*g, "select", CUDNN_POINTWISE_BINARY_SELECT, F, S1, MV, MSK, S2);
  reduction(*g, "max", CUDNN_REDUCE_TENSOR_MAX, S2, M, runtime);
  pointwise(*g, "sub", CUDNN_POINTWISE_SUB, F, S2, M, nullptr, SUB);
  pointwise(*g, "exp", CUDNN_POINTWISE_EXP, F, SUB, nullptr, nullptr, E);
  reduction(*g, "sum", CUDNN_REDUCE_TENSOR_ADD, E, Z, runtime);
  pointwise(*g, "log", CUDNN_POINTWISE_LOG, F, Z, nullptr, nullptr, LZ);
  pointwise(*g, "stats", CUDNN_POINTWISE_ADD, F, M, LZ, nullptr, ST);
  pointwise(*g, "div", CUDNN_POINTWISE_DIV, F, E, Z, nullptr, P);
  matmul(*g, "bmm2", P, V, O);
  g->mask_value = v.lowest_not_inf ? std::numeric_limits<float>::lowest()
                                   : -std::numeric_limits<float>::infinity();

  g->graph = std::make_shared<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& op : g->ops) raw.push_back(op->d);
  SDPA_SET(*g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
           static_cast<std::int64_t>(raw.size()), raw.data());
  // Required before cuDNN 9.8, optional since (the frontend sets it when it has a handle): a
  // runtime that no longer takes it goes on without it.
  try {
    SDPA_SET(*g->graph, kAttrGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  } catch (const LibraryError&) {
  }
  finalize(*g->graph, __LINE__);
  return g;
}

const char* knob_name(std::int64_t t) {
  switch (t) {
    case CUDNN_KNOB_TYPE_KERNEL_CFG:
      return "KERNEL_CFG";
    case CUDNN_KNOB_TYPE_SPLIT_K:
      return "SPLIT_K";
    case CUDNN_KNOB_TYPE_TILE_SIZE:
      return "TILE_SIZE";
    case CUDNN_KNOB_TYPE_STAGES:
      return "STAGES";
    default:
      return nullptr;
  }
}

// "engine 2 {KERNEL_CFG=7}"; never throws (a description only).
std::string describe(const Desc& cfg) {
  std::ostringstream o;
  try {
    Desc eng(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine of the configuration");
    std::int64_t n = 0, index = -1;
    SDPA_GET(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng.d);
    SDPA_GET(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
    o << "engine " << index << " {";
    std::vector<std::unique_ptr<Desc>> knobs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
      knobs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, "knob choice"));
      raw.push_back(knobs.back()->d);
    }
    std::int64_t count = 0;
    SDPA_GET(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             CUDNN_KNOB_TYPE_COUNTS, &count, raw.data());
    for (std::int64_t i = 0; i < count; ++i) {
      cudnnBackendKnobType_t type{};
      std::int64_t value = 0, c = 0;
      SDPA_GET(*knobs[static_cast<std::size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
               CUDNN_TYPE_KNOB_TYPE, 1, &c, &type);
      SDPA_GET(*knobs[static_cast<std::size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
               CUDNN_TYPE_INT64, 1, &c, &value);
      const char* kn = knob_name(type);
      o << (i ? " " : "") << (kn ? kn : "knob " + std::to_string(type)) << "=" << value;
    }
    o << "}";
  } catch (const std::exception&) {
    o << " (not described)";
  }
  return o.str();
}

std::vector<DescP> heuristics(const Graph& g, cudnnBackendHeurMode_t mode, const char* mname) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, std::string("engine heuristics ") + mname);
  SDPA_SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
           &g.graph->d);
  SDPA_SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(heur, __LINE__);
  std::int64_t count = 0;
  SDPA_GET(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  std::vector<DescP> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    cfgs.push_back(std::make_shared<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                          std::string(mname) + " configuration"));
    raw.push_back(cfgs.back()->d);
  }
  std::int64_t got = 0;
  if (count > 0)
    SDPA_GET(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
             raw.data());
  cfgs.resize(static_cast<std::size_t>(got < count ? got : count));
  return cfgs;
}

DescP make_plan(cudnnHandle_t handle, const Desc& cfg) {
  auto plan = std::make_shared<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
  try {  // deprecated in cuDNN 9, needed by its first releases; optional where refused
    SDPA_SET(*plan, kAttrPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  } catch (const LibraryError&) {
  }
  SDPA_SET(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
           &cfg.d);
  finalize(*plan, __LINE__);
  return plan;
}

// A plan of one problem, with the variant pack of its last pointers (rebuilt when they change:
// the bench calls it on the same buffers, and a variant pack costs host time inside the timed
// window).
struct Plan {
  std::unique_ptr<Graph> graph;
  DescP plan;
  std::int64_t workspace = 0;
  std::string what;
  float scale = 0;       // by-value scalars: the variant pack holds their host addresses
  float mask_value = 0;  // (stable: Plan lives in a std::map)
  std::unique_ptr<Desc> pack;
  const void* pack_ptrs[5] = {};
};

}  // namespace

SdpaLayout prefill_layout(const DecodeShape& s, int len) {
  const std::int64_t L = len, D = s.head_dim, H = s.q_heads, HK = s.kv_heads;
  const SdpaStrides q{L * H * D, H * D, D}, kv{L * HK * D, HK * D, D};
  return {q, kv, kv, q};
}

struct CudnnSdpa::Impl {
  static constexpr std::size_t kMaxConfigs = 3;
  cudnnHandle_t handle = nullptr;
  int runtime = 0;
  std::map<Key, Plan> plans;
  DeviceBuffer<unsigned char> workspace;

  ~Impl() {
    plans.clear();
    if (handle) cudnnDestroy(handle);
  }

  void open() {
    if (handle) return;
    runtime = static_cast<int>(cudnnGetVersion());
    if (runtime < 90000)
      throw SdpaUnsupported("cuDNN runtime " + std::to_string(runtime) +
                            " is older than 9.0: the fused attention graph needs cuDNN 9");
    check(cudnnCreate(&handle), "cudnnCreate(&handle)", __LINE__);
  }

  Plan& plan(const Key& key) {
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    open();
    const Variant variants[] = {
        {"graph of cudnn-frontend 1.14+", false, runtime < 91000},
        {"graph of cudnn-frontend 1.8", true, true},
    };
    const struct {
      cudnnBackendHeurMode_t mode;
      const char* name;
    } modes[] = {{CUDNN_HEUR_MODE_A, "heuristics mode A"},
                 {CUDNN_HEUR_MODE_FALLBACK, "fallback heuristics"}};
    std::ostringstream why;
    // Unsupported only when every refusal was a NOT_SUPPORTED status (cuDNN 9's 3000-3999) or an
    // empty list; any other failure (a bad parameter, a driver error) is an error, not a skip.
    bool unsupported = true;
    const auto note = [&](const LibraryError& e) {
      if (e.status() / 1000 != CUDNN_STATUS_NOT_SUPPORTED / 1000) unsupported = false;
      return e.what();
    };
    for (const Variant& v : variants) {
      std::unique_ptr<Graph> g;
      try {
        g = build_graph(handle, key, v, runtime);
      } catch (const LibraryError& e) {
        why << "\n  " << v.name << ": " << note(e);
        continue;
      }
      for (const auto& m : modes) {
        std::vector<DescP> cfgs;
        try {
          cfgs = heuristics(*g, m.mode, m.name);
        } catch (const LibraryError& e) {
          why << "\n  " << v.name << ", " << m.name << ": " << note(e);
          continue;
        }
        if (cfgs.empty()) why << "\n  " << v.name << ", " << m.name << ": no engine configuration";
        // A plan of a runtime-compiled engine takes about a second to fail or succeed: the first
        // kMaxConfigs of each list.
        if (cfgs.size() > kMaxConfigs) cfgs.resize(kMaxConfigs);
        for (const DescP& cfg : cfgs) {
          const std::string engine = describe(*cfg);
          DescP p;
          try {
            p = make_plan(handle, *cfg);
          } catch (const LibraryError& e) {
            why << "\n  " << v.name << ", " << m.name << ", " << engine << ": " << note(e);
            continue;
          }
          std::int64_t ws = 0, n = 0;
          SDPA_GET(*p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
          // The workspace first: a failed allocation leaves no plan behind that would run short.
          if (static_cast<std::size_t>(ws) > workspace.bytes())
            workspace = DeviceBuffer<unsigned char>(static_cast<std::size_t>(ws));
          Plan& out = plans[key];
          out.mask_value = g->mask_value;
          out.graph = std::move(g);
          out.plan = std::move(p);
          out.workspace = ws;
          out.what = engine + ", " + m.name + ", " + v.name + ", workspace " + std::to_string(ws) +
                     " B, cuDNN " + std::to_string(runtime);
          return out;
        }
      }
    }
    const std::string what =
        "cuDNN " + std::to_string(runtime) + " has no plan for the causal attention graph (batch " +
        std::to_string(key.batch) + ", heads " + std::to_string(key.q_heads) + "/" +
        std::to_string(key.kv_heads) + ", len " + std::to_string(key.len) + ", head_dim " +
        std::to_string(key.head_dim) + "):" + why.str();
    if (unsupported) throw SdpaUnsupported(what);
    throw std::runtime_error(what);
  }
};

namespace {
Key make_key(const DecodeShape& s, int len, DType dtype, const SdpaLayout* layout) {
  Key k{s.batch,
        s.q_heads,
        s.kv_heads,
        len,
        s.head_dim,
        dtype,
        layout ? *layout : prefill_layout(s, len)};
  for (const SdpaStrides* st : {&k.layout.q, &k.layout.k, &k.layout.v, &k.layout.out})
    require(st->batch > 0 && st->token > 0 && st->head > 0 && st->batch % 8 == 0 &&
                st->token % 8 == 0 && st->head % 8 == 0,
            "layout", "strides must be positive multiples of 8 elements (16 bytes)");
  return k;
}

void require_aligned(const void* p, const char* name) {
  require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, name,
          "must be 16-byte aligned (as cudaMalloc returns it)");
}
}  // namespace

CudnnSdpa::CudnnSdpa() : impl_(std::make_unique<Impl>()) {}
CudnnSdpa::~CudnnSdpa() = default;
CudnnSdpa::CudnnSdpa(CudnnSdpa&&) noexcept = default;
CudnnSdpa& CudnnSdpa::operator=(CudnnSdpa&&) noexcept = default;

std::string CudnnSdpa::prepare(const DecodeShape& shape, int len, DType dtype,
                               const SdpaLayout* layout) {
  require(shape.batch > 0, "batch", "must be positive to build a graph");
  require(len > 0, "len", "must be positive to build a graph");
  return impl_->plan(make_key(shape, len, dtype, layout)).what;
}

void CudnnSdpa::run(const void* q, const void* k, const void* v, void* out,
                    const DecodeShape& shape, int len, DType dtype, cudaStream_t stream,
                    const SdpaLayout* layout) {
  if (!check_prefill_args(q, k, v, out, shape, len)) return;
  require_aligned(q, "q");
  require_aligned(k, "k");
  require_aligned(v, "v");
  require_aligned(out, "out");
  Plan& p = impl_->plan(make_key(shape, len, dtype, layout));
  check(cudnnSetStream(impl_->handle, stream), "cudnnSetStream(handle, stream)", __LINE__);
  p.scale = shape.scale;
  const void* ptrs[5] = {q, k, v, out, impl_->workspace.data()};
  bool same = p.pack != nullptr;
  for (int i = 0; i < 5 && same; ++i) same = ptrs[i] == p.pack_ptrs[i];
  if (!same) {
    auto pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
    std::int64_t uids[] = {kUidQ, kUidK, kUidV, kUidO, kUidScale, kUidMaskValue};
    void* data[] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), out, &p.scale,
                    &p.mask_value};
    void* ws = p.workspace > 0 ? impl_->workspace.data() : nullptr;
    SDPA_SET(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 6, uids);
    SDPA_SET(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 6, data);
    SDPA_SET(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    finalize(*pack, __LINE__);
    p.pack = std::move(pack);
    for (int i = 0; i < 5; ++i) p.pack_ptrs[i] = ptrs[i];
  }
  check(cudnnBackendExecute(impl_->handle, p.plan->d, p.pack->d),
        "cudnnBackendExecute(handle, plan, variant pack)", __LINE__);
}

}  // namespace cudalab::ch11

#else  // built without cuDNN 9: the API exists and says why it cannot run.

namespace cudalab::ch11 {

bool have_cudnn() noexcept {
  return false;
}

namespace {
[[noreturn]] void no_cudnn() {
#if CUDALAB_HAVE_CUDNN
  throw SdpaUnsupported("cudalab was built against cuDNN " + std::to_string(CUDNN_MAJOR) +
                        ": the fused attention graph needs cuDNN 9 (install it and reconfigure)");
#else
  throw SdpaUnsupported(
      "cudalab was configured without cuDNN (CUDALAB_HAVE_CUDNN=OFF): install cuDNN 9 and "
      "reconfigure");
#endif
}
}  // namespace

SdpaLayout prefill_layout(const DecodeShape& s, int len) {
  const std::int64_t L = len, D = s.head_dim, H = s.q_heads, HK = s.kv_heads;
  const SdpaStrides q{L * H * D, H * D, D}, kv{L * HK * D, HK * D, D};
  return {q, kv, kv, q};
}

struct CudnnSdpa::Impl {};
CudnnSdpa::CudnnSdpa() = default;
CudnnSdpa::~CudnnSdpa() = default;
CudnnSdpa::CudnnSdpa(CudnnSdpa&&) noexcept = default;
CudnnSdpa& CudnnSdpa::operator=(CudnnSdpa&&) noexcept = default;
std::string CudnnSdpa::prepare(const DecodeShape&, int, DType, const SdpaLayout*) {
  no_cudnn();
}
void CudnnSdpa::run(const void*, const void*, const void*, void*, const DecodeShape&, int, DType,
                    cudaStream_t, const SdpaLayout*) {
  no_cudnn();
}

}  // namespace cudalab::ch11

#endif
