//===- CUBLASLt.cpp - cuBLASLt's matmul as a library call -----------------===//

#include "CUBLASLt.h"
#include "Error.h"
#include "Shape.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

using namespace te::runtime::cublaslt;

namespace {

using Handle = void *;

/// The entry points, resolved once per process.
struct Library {
  std::string unavailable; // why there is none ("" if there is)
  std::string path;
  size_t version = 0;
  size_t (*getVersion)() = nullptr;
  Status (*create)(Handle *) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  Status (*descCreate)(Handle *, int, int) = nullptr;
  Status (*descDestroy)(Handle) = nullptr;
  Status (*descSetAttribute)(Handle, int, const void *, size_t) = nullptr;
  Status (*layoutCreate)(Handle *, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*layoutDestroy)(Handle) = nullptr;
  Status (*preferenceCreate)(Handle *) = nullptr;
  Status (*preferenceDestroy)(Handle) = nullptr;
  Status (*preferenceSetAttribute)(Handle, int, const void *, size_t) = nullptr;
  Status (*getHeuristic)(Handle, Handle, Handle, Handle, Handle, Handle, Handle,
                         int, HeuristicResult *, int *) = nullptr;
  Status (*matmul)(Handle, Handle, const void *, const void *, Handle,
                   const void *, Handle, const void *, const void *, Handle,
                   void *, Handle, const MatmulAlgo *, void *, size_t,
                   void *) = nullptr;
};

void load(Library &library) {
  std::vector<std::string> candidates;
  if (const char *configured = std::getenv("TE_CUBLASLT");
      configured && *configured)
    candidates = {configured};
  else
    candidates = {"libcublasLt.so.13", "libcublasLt.so.12",
                  "/usr/local/cuda/lib64/libcublasLt.so.13",
                  "/usr/local/cuda/lib64/libcublasLt.so.12"};
  void *handle = nullptr;
  std::string why;
  for (const std::string &candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library.path = candidate;
      break;
    }
    if (why.empty())
      if (const char *error = dlerror())
        why = error;
  }
  if (!handle) {
    library.unavailable =
        "cuBLASLt is not installed (" + why +
        "); install the CUDA toolkit's libcublasLt (CUDA 12 or 13), set "
        "TE_CUBLASLT to it, or compile with TE_CUDA_GEMM=codegen";
    return;
  }
  std::string missing;
  auto resolve = [&](const char *name, auto &entry) {
    void *function = dlsym(handle, name);
    if (!function) {
      missing += missing.empty() ? "" : ", ";
      missing += name;
      return;
    }
    entry =
        reinterpret_cast<std::remove_reference_t<decltype(entry)>>(function);
  };
  resolve("cublasLtGetVersion", library.getVersion);
  resolve("cublasLtCreate", library.create);
  resolve("cublasLtDestroy", library.destroy);
  resolve("cublasLtMatmulDescCreate", library.descCreate);
  resolve("cublasLtMatmulDescDestroy", library.descDestroy);
  resolve("cublasLtMatmulDescSetAttribute", library.descSetAttribute);
  resolve("cublasLtMatrixLayoutCreate", library.layoutCreate);
  resolve("cublasLtMatrixLayoutDestroy", library.layoutDestroy);
  resolve("cublasLtMatmulPreferenceCreate", library.preferenceCreate);
  resolve("cublasLtMatmulPreferenceDestroy", library.preferenceDestroy);
  resolve("cublasLtMatmulPreferenceSetAttribute",
          library.preferenceSetAttribute);
  resolve("cublasLtMatmulAlgoGetHeuristic", library.getHeuristic);
  resolve("cublasLtMatmul", library.matmul);
  if (!missing.empty()) {
    library.unavailable = library.path + " lacks " + missing +
                          "; install cuBLASLt from CUDA 12 or 13";
    return;
  }
  library.version = library.getVersion();
  // FP8 matmuls with scale pointers came with CUDA 12.0's cuBLASLt.
  if (library.version < 120000)
    library.unavailable = library.path + " is version " +
                          std::to_string(library.version) +
                          "; te-mlir's matmuls need cuBLASLt 12.0 or newer";
}

Library &getLibrary() {
  // Leaked: contexts may be destroyed from static destructors.
  static Library *library = [] {
    auto *loaded = new Library();
    load(*loaded);
    return loaded;
  }();
  return *library;
}

/// The largest power of two up to 256 that divides `pointer`'s address
/// (256 for null): what cuBLASLt's alignment preferences take.
uint32_t alignmentOf(const void *pointer) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// 32 MiB, what cuBLASLt's Hopper kernels want at most.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// The descriptors and algorithm of one configuration.
struct Plan {
  Handle desc = nullptr, a = nullptr, b = nullptr, d = nullptr;
  MatmulAlgo algo;
  bool hasAlgo = false;
  ~Plan() {
    Library &library = getLibrary();
    for (Handle layout : {a, b, d})
      if (layout)
        library.layoutDestroy(layout);
    if (desc)
      library.descDestroy(desc);
  }
};

/// cuBLASLt's cudaDataType of the te element type `name` (te_dtype's
/// spelling), or -1 for one it has no GEMM for.
int dataType(const char *name) {
  te_dtype dtype;
  if (!te::runtime::lookupDType(name, dtype))
    return -1;
  switch (dtype) {
  case TE_DTYPE_F32:
    return kDataF32;
  case TE_DTYPE_F16:
    return kDataF16;
  case TE_DTYPE_BF16:
    return kDataBF16;
  case TE_DTYPE_F8E4M3FN:
    return kDataE4M3;
  case TE_DTYPE_F8E5M2:
    return kDataE5M2;
  default:
    return -1;
  }
}

te_status reject(const std::string &message) {
  te::runtime::setDeviceDetail("cublaslt.matmul: %s", message.c_str());
  return TE_ERROR_UNSUPPORTED;
}

te_status check(Status status, const char *call) {
  if (status == kSuccess)
    return TE_OK;
  te::runtime::setDeviceDetail("cublaslt.matmul: %s failed with "
                               "cublasStatus_t %d",
                               call, status);
  return status == 3 /* CUBLAS_STATUS_ALLOC_FAILED */ ? TE_ERROR_OUT_OF_MEMORY
                                                      : TE_ERROR_INTERNAL;
}

/// Builds the descriptors of `config` in cuBLASLt's column-major terms:
/// te's row-major D[m, n] is D^T[n, m] column-major = op(B)^T op(A)^T, so
/// cuBLASLt's A is te's b (stored [n, k] row-major under TE's T: k x n
/// column-major, transposed; [k, n] under N: n x k as is) and its B is
/// te's a ([m, k]: k x m as is under N; [k, m]: m x k, transposed, under
/// T). C, when there is one, has D's layout.
te_status buildPlan(const MatmulConfig &config, Plan &plan) {
  Library &library = getLibrary();
  if (te_status status =
          check(library.descCreate(&plan.desc, kComputeF32, kDataF32),
                "cublasLtMatmulDescCreate"))
    return status;
  auto set = [&](int attribute, auto value) {
    return check(
        library.descSetAttribute(plan.desc, attribute, &value, sizeof(value)),
        "cublasLtMatmulDescSetAttribute");
  };
  if (te_status status = set(kDescTransA, int32_t(config.transA)))
    return status;
  if (te_status status = set(kDescTransB, int32_t(config.transB)))
    return status;
  if (te_status status = set(kDescEpilogue, int32_t(config.epilogue)))
    return status;
  // As TE: the bias type is set for FP8 GEMMs only (it is D's otherwise).
  if (config.fp8 && config.bias >= 0)
    if (te_status status = set(kDescBiasType, int32_t(config.bias)))
      return status;
  // The GELU matrix has D's layout.
  if (config.operands.auxIn >= 0 || config.operands.auxOut >= 0)
    if (te_status status = set(kDescAuxLd, int64_t(config.n)))
      return status;
  bool aTransposed = config.transA == kOpT, bTransposed = config.transB == kOpT;
  if (te_status status =
          check(library.layoutCreate(&plan.a, config.b,
                                     aTransposed ? config.k : config.n,
                                     aTransposed ? config.n : config.k,
                                     aTransposed ? config.k : config.n),
                "cublasLtMatrixLayoutCreate"))
    return status;
  if (te_status status =
          check(library.layoutCreate(&plan.b, config.a,
                                     bTransposed ? config.m : config.k,
                                     bTransposed ? config.k : config.m,
                                     bTransposed ? config.m : config.k),
                "cublasLtMatrixLayoutCreate"))
    return status;
  return check(
      library.layoutCreate(&plan.d, config.d, config.n, config.m, config.n),
      "cublasLtMatrixLayoutCreate");
}

} // namespace

struct te::runtime::cublaslt::Context {
  te::runtime::DeviceMemory memory;
  std::mutex mutex;
  Handle handle = nullptr;
  void *workspace = nullptr;
  std::map<std::string, std::unique_ptr<Plan>, std::less<>> plans;
};

bool te::runtime::cublaslt::parseMatmulConfig(const char *parameters,
                                              MatmulConfig &config,
                                              std::string &error) {
  using Epilogue = te::abi::MatmulCall::Epilogue;
  config = MatmulConfig();
  te::abi::MatmulCall call;
  if (!te::abi::MatmulCall::decode(parameters, call, error))
    return false;
  config.m = call.m;
  config.n = call.n;
  config.k = call.k;
  // The decoder admits only the types cuBLASLt's call takes.
  config.a = dataType(call.a.c_str());
  config.b = dataType(call.b.c_str());
  config.d = dataType(call.d.c_str());
  if (!call.bias.empty())
    config.bias = dataType(call.bias.c_str());
  static const std::pair<Epilogue, int> epilogues[] = {
      {Epilogue::None, kEpilogueDefault},
      {Epilogue::Bias, kEpilogueBias},
      {Epilogue::Gelu, kEpilogueGelu},
      {Epilogue::GeluBias, kEpilogueGeluBias},
      {Epilogue::GeluAux, kEpilogueGeluAux},
      {Epilogue::GeluAuxBias, kEpilogueGeluAuxBias},
      {Epilogue::DGelu, kEpilogueDGelu},
      {Epilogue::DGeluBGrad, kEpilogueDGeluBGrad},
      {Epilogue::BGradB, kEpilogueBGradB}};
  for (const auto &[epilogue, value] : epilogues)
    if (call.epilogue == epilogue)
      config.epilogue = value;
  // te's B is cuBLASLt's A: the layout's first letter; te's A its B.
  config.transA = call.layout[0] == 'T' ? kOpT : kOpN;
  config.transB = call.layout[1] == 'T' ? kOpT : kOpN;
  config.fp8 = call.hasFP8Operands();
  config.accumulate = call.accumulate;
  if (call.hasBiasGrad())
    config.biasGradLength = call.getBiasLength();
  MatmulConfig::Operands &operands = config.operands;
  int next = 2;
  if (config.fp8) {
    operands.aScale = next++;
    operands.bScale = next++;
  }
  if (call.hasBiasInput())
    operands.bias = next++;
  if (call.hasAuxInput())
    operands.auxIn = next++;
  if (call.accumulate)
    operands.c = next++;
  operands.d = next++;
  if (call.hasAuxOutput())
    operands.auxOut = next++;
  if (call.hasBiasGrad())
    operands.biasGrad = next++;
  operands.count = next;
  return true;
}

Context *
te::runtime::cublaslt::createContext(te::runtime::DeviceMemory memory) {
  auto *context = new Context();
  context->memory = memory;
  return context;
}

void te::runtime::cublaslt::destroyContext(Context *context) {
  if (!context)
    return;
  context->plans.clear();
  if (context->handle)
    getLibrary().destroy(context->handle);
  if (context->workspace)
    context->memory.free(context->memory.owner, context->workspace);
  delete context;
}

std::vector<size_t>
te::runtime::cublaslt::operandBytes(const MatmulConfig &config) {
  auto bytes = [](int type) -> size_t {
    return type == kDataF32                         ? 4
           : type == kDataE4M3 || type == kDataE5M2 ? 1
                                                    : 2;
  };
  const MatmulConfig::Operands &operands = config.operands;
  // Sizes are at most 2^31 each: the products fit in 64 bits.
  size_t matrix = size_t(config.m) * size_t(config.n) * bytes(config.d);
  std::vector<size_t> sizes(operands.count);
  sizes[0] = size_t(config.m) * size_t(config.k) * bytes(config.a);
  sizes[1] = size_t(config.n) * size_t(config.k) * bytes(config.b);
  for (int scale : {operands.aScale, operands.bScale})
    if (scale >= 0)
      sizes[scale] = 4;
  if (operands.bias >= 0)
    sizes[operands.bias] = size_t(config.n) * bytes(config.bias);
  for (int same : {operands.auxIn, operands.c, operands.d, operands.auxOut})
    if (same >= 0)
      sizes[same] = matrix;
  if (operands.biasGrad >= 0)
    sizes[operands.biasGrad] =
        size_t(config.biasGradLength) * bytes(config.bias);
  return sizes;
}

te_status te::runtime::cublaslt::runMatmul(Context &context,
                                           const char *parameters, void **args,
                                           const size_t *sizes, int nargs,
                                           void *stream) {
  MatmulConfig config;
  std::string error;
  if (!parseMatmulConfig(parameters, config, error))
    return reject(error);
  if (std::string why = te::runtime::checkOperands(parameters, sizes, nargs,
                                                   operandBytes(config));
      !why.empty())
    return reject(why);
  Library &library = getLibrary();
  if (!library.unavailable.empty())
    return reject(library.unavailable);
  const MatmulConfig::Operands &operands = config.operands;
  void *d = args[operands.d];
  const void *c = config.accumulate ? args[operands.c] : d;
  int bias = operands.bias >= 0 ? operands.bias : operands.biasGrad;
  int aux = operands.auxIn >= 0 ? operands.auxIn : operands.auxOut;
  // cuBLASLt's A is te's b, its B te's a. Buffers are aligned to their
  // elements only (a view into a larger tensor, as TE's main_grad), so the
  // algorithm is chosen for the alignments of this call's pointers, as TE
  // chooses it: one plan per configuration and alignment class.
  const uint32_t alignments[] = {alignmentOf(args[1]),
                                 alignmentOf(args[0]),
                                 alignmentOf(c),
                                 alignmentOf(d),
                                 bias >= 0 ? alignmentOf(args[bias]) : 0u,
                                 aux >= 0 ? alignmentOf(args[aux]) : 0u};
  std::string key = parameters;
  for (uint32_t alignment : alignments)
    key += ";" + std::to_string(alignment);
  std::lock_guard<std::mutex> lock(context.mutex);
  auto found = context.plans.find(key);
  if (!context.handle)
    if (te_status status =
            check(library.create(&context.handle), "cublasLtCreate"))
      return status;
  if (!context.workspace)
    if (te_status status = context.memory.allocate(
            context.memory.owner, kWorkspaceBytes, &context.workspace))
      return status;
  if (found == context.plans.end()) {
    auto plan = std::make_unique<Plan>();
    if (te_status status = buildPlan(config, *plan))
      return status;
    found = context.plans.emplace(key, std::move(plan)).first;
  }
  Plan &plan = *found->second;
  // The pointers change from call to call. cuBLASLt's A is te's b, so A's
  // scale is b's.
  auto setPointer = [&](int attribute, void *pointer) {
    return check(library.descSetAttribute(plan.desc, attribute, &pointer,
                                          sizeof(pointer)),
                 "cublasLtMatmulDescSetAttribute");
  };
  if (config.fp8) {
    if (te_status status = setPointer(kDescAScale, args[operands.bScale]))
      return status;
    if (te_status status = setPointer(kDescBScale, args[operands.aScale]))
      return status;
  }
  // The bias pointer is the bias (an input) or its gradient (an output);
  // the auxiliary pointer the GELU's input (dgelu) or the values before it.
  if (bias >= 0)
    if (te_status status = setPointer(kDescBiasPointer, args[bias]))
      return status;
  if (aux >= 0)
    if (te_status status = setPointer(kDescAuxPointer, args[aux]))
      return status;
  if (!plan.hasAlgo) {
    Handle preference = nullptr;
    if (te_status status = check(library.preferenceCreate(&preference),
                                 "cublasLtMatmulPreferenceCreate"))
      return status;
    uint64_t workspace = kWorkspaceBytes;
    Status set = library.preferenceSetAttribute(preference, kPrefMaxWorkspace,
                                                &workspace, sizeof(workspace));
    const int minAlignments[] = {kPrefMinAlignmentA, kPrefMinAlignmentB,
                                 kPrefMinAlignmentC, kPrefMinAlignmentD};
    for (int i = 0; i < 4 && set == kSuccess; ++i)
      set = library.preferenceSetAttribute(
          preference, minAlignments[i], &alignments[i], sizeof(alignments[i]));
    HeuristicResult result{};
    int count = 0;
    Status heuristic =
        set == kSuccess ? library.getHeuristic(context.handle, plan.desc,
                                               plan.a, plan.b, plan.d, plan.d,
                                               preference, 1, &result, &count)
                        : set;
    library.preferenceDestroy(preference);
    if (heuristic != kSuccess || count < 1)
      return reject("cuBLASLt " + std::to_string(library.version) +
                    " has no algorithm for '" + parameters +
                    "' on this GPU (cublasStatus_t " +
                    std::to_string(heuristic) +
                    "); compile with TE_CUDA_GEMM=codegen");
    plan.algo = result.algo;
    plan.hasAlgo = true;
  }
  // alpha is 1 (FP8 operands are scaled through the scale pointers); with
  // accumulate, beta = 1 and C is its own operand, else C is D, unread.
  const float alpha = 1.0f, beta = config.accumulate ? 1.0f : 0.0f;
  // cuBLASLt's A is te's b, its B te's a.
  return check(library.matmul(context.handle, plan.desc, &alpha, args[1],
                              plan.a, args[0], plan.b, &beta, c, plan.d, d,
                              plan.d, &plan.algo, context.workspace,
                              kWorkspaceBytes, stream),
               "cublasLtMatmul");
}
