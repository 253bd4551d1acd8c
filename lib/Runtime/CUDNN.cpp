//===- CUDNN.cpp - cuDNN's fused attention as a library call --------------===//

#include "CUDNN.h"
#include "Error.h"
#include "Shape.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#ifdef TE_HAVE_CUDNN_FRONTEND
#include <dlfcn.h>

#include <cudnn_frontend.h>

// The frontend's dynamic loading resolves cuDNN through this handle.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

using namespace te::runtime::cudnn;

namespace {

const char *callName(bool backward) {
  return backward ? "cudnn.sdpa_backward" : "cudnn.sdpa_forward";
}

te_status reject(bool backward, const std::string &message) {
  te::runtime::setDeviceDetail("%s: %s", callName(backward), message.c_str());
  return TE_ERROR_UNSUPPORTED;
}

// Only the build with the cudnn_frontend headers calls the library.
[[maybe_unused]] te_status internal(bool backward, const std::string &message) {
  te::runtime::setDeviceDetail("%s: %s", callName(backward), message.c_str());
  return TE_ERROR_INTERNAL;
}

} // namespace

std::array<int64_t, 4> te::runtime::cudnn::strides(const std::string &layout,
                                                   int64_t b, int64_t h,
                                                   int64_t s, int64_t d) {
  (void)b;
  if (layout == "sbhd") // [s, b, h, d]
    return {h * d, d, b * h * d, 1};
  if (layout == "bhsd") // [b, h, s, d]
    return {h * s * d, s * d, d, 1};
  return {s * h * d, d, h * d, 1}; // bshd: [b, s, h, d]
}

bool te::runtime::cudnn::parseSdpaConfig(const char *parameters,
                                         SdpaConfig &config,
                                         std::string &error) {
  config = SdpaConfig();
  if (!te::abi::SdpaCall::decode(parameters, config, error))
    return false;
  config.f16 = config.dtype == "f16";
  return true;
}

std::vector<size_t> te::runtime::cudnn::operandBytes(const SdpaConfig &config) {
  size_t element = 2; // bf16 or f16
  size_t q = size_t(config.b) * config.hq * config.sq * config.d * element;
  size_t kv = size_t(config.b) * config.hkv * config.skv * config.d * element;
  size_t lse = size_t(config.b) * config.hq * config.sq * 4;
  if (config.backward) // q, k, v, o, dO, lse -> dq, dk, dv
    return {q, kv, kv, q, q, lse, q, kv, kv};
  std::vector<size_t> sizes = {q, kv, kv, q};
  if (config.stats)
    sizes.push_back(lse);
  return sizes;
}

namespace {

/// Parses a call's parameters and checks its operands against them.
te_status checkCall(bool backward, const char *parameters, const size_t *sizes,
                    int nargs, SdpaConfig &config) {
  std::string error;
  if (!parseSdpaConfig(parameters, config, error))
    return reject(backward, error);
  config.backward = backward;
  if (backward && !config.stats)
    return reject(backward, "the backward reads the forward's statistics: "
                            "stats=1");
  if (std::string why = te::runtime::checkOperands(parameters, sizes, nargs,
                                                   operandBytes(config));
      !why.empty())
    return reject(backward, why);
  return TE_OK;
}

} // namespace

#ifdef TE_HAVE_CUDNN_FRONTEND

namespace fe = cudnn_frontend;

namespace {

/// libcudnn, opened once per process (TE_CUDNN, else libcudnn.so.9 on the
/// loader's path or in the CUDA toolkit); "" or why it is not there.
const std::string &loadCuDNN() {
  static const std::string *unavailable = [] {
    std::vector<std::string> candidates;
    if (const char *configured = std::getenv("TE_CUDNN");
        configured && *configured) {
      candidates = {configured};
    } else {
      const char *toolkit = std::getenv("TE_CUDA_PATH");
      candidates = {
          "libcudnn.so.9",
          std::string(toolkit && *toolkit ? toolkit : "/usr/local/cuda") +
              "/lib64/libcudnn.so.9"};
    }
    std::string why;
    for (const std::string &candidate : candidates) {
      if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        fe::cudnn_dlhandle = handle;
        return new std::string();
      }
      if (const char *error = dlerror(); error && why.empty())
        why = error;
    }
    return new std::string("cuDNN 9 is not installed (" + why +
                           "); install libcudnn 9, set TE_CUDNN to it, or "
                           "compile with NVTE_FUSED_ATTN=0");
  }();
  return *unavailable;
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/// One configuration's graph, built and planned.
struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

std::string describe(fe::error_object error) { return error.get_message(); }

/// `config`'s graph as te.attention means it (see CUDNN.h), not yet
/// validated.
/// With `smVersion` (and `smCount`) the graph is for that GPU rather than
/// the current device's.
std::shared_ptr<fe::graph::Graph>
makeGraph(const SdpaConfig &config, int smVersion = 0, int smCount = 0) {
  auto graph = std::make_shared<fe::graph::Graph>();
  if (smVersion > 0)
    graph->set_sm_version(smVersion).set_sm_count(smCount);
  graph
      ->set_io_data_type(config.f16 ? fe::DataType_t::HALF
                                    : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char *name, int64_t uid, int64_t h, int64_t s) {
    std::array<int64_t, 4> stride =
        strides(config.layout, config.b, h, s, config.d);
    return graph->tensor(
        fe::graph::Tensor_attributes()
            .set_name(name)
            .set_uid(uid)
            .set_dim({config.b, h, s, config.d})
            .set_stride({stride[0], stride[1], stride[2], stride[3]}));
  };
  auto q = tensor("Q", kQ, config.hq, config.sq);
  auto k = tensor("K", kK, config.hkv, config.skv);
  auto v = tensor("V", kV, config.hkv, config.skv);
  auto output = [&](std::shared_ptr<fe::graph::Tensor_attributes> value,
                    int64_t uid, int64_t h, int64_t s) {
    std::array<int64_t, 4> stride =
        strides(config.layout, config.b, h, s, config.d);
    value->set_output(true)
        .set_uid(uid)
        .set_dim({config.b, h, s, config.d})
        .set_stride({stride[0], stride[1], stride[2], stride[3]});
  };
  // The diagonal and the band, the same for both passes. cuDNN's left bound
  // excludes the key it names: te's L keys to the left of the diagonal are
  // L + 1 (as TE passes it); its right bound is te's.
  auto setBand = [&](auto &options) {
    options.set_diagonal_alignment(config.bottomRight
                                       ? fe::DiagonalAlignment_t::BOTTOM_RIGHT
                                       : fe::DiagonalAlignment_t::TOP_LEFT);
    if (config.left >= 0)
      options.set_diagonal_band_left_bound(static_cast<int>(config.left + 1));
    if (config.right >= 0)
      options.set_diagonal_band_right_bound(static_cast<int>(config.right));
  };
  std::vector<int64_t> statsDim = {config.b, config.hq, config.sq, 1};
  std::vector<int64_t> statsStride = {config.hq * config.sq, config.sq, 1, 1};
  if (config.backward) {
    auto o = tensor("O", kO, config.hq, config.sq);
    auto dO = tensor("dO", kDO, config.hq, config.sq);
    auto stats = graph->tensor(fe::graph::Tensor_attributes()
                                   .set_name("Stats")
                                   .set_uid(kStats)
                                   .set_data_type(fe::DataType_t::FLOAT)
                                   .set_dim(statsDim)
                                   .set_stride(statsStride));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("te_attention_backward")
                       .set_attn_scale(config.scale);
    setBand(options);
    auto [dQ, dK, dV] = graph->sdpa_backward(q, k, v, o, dO, stats, options);
    output(dQ, kDQ, config.hq, config.sq);
    output(dK, kDK, config.hkv, config.skv);
    output(dV, kDV, config.hkv, config.skv);
    return graph;
  }
  auto options = fe::graph::SDPA_attributes()
                     .set_name("te_attention")
                     .set_generate_stats(config.stats)
                     .set_attn_scale(config.scale);
  setBand(options);
  auto [o, stats] = graph->sdpa(q, k, v, options);
  output(o, kO, config.hq, config.sq);
  if (config.stats)
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(statsDim)
        .set_stride(statsStride);
  return graph;
}

/// Builds and plans `config`'s graph for `handle`.
te_status buildPlan(const SdpaConfig &config, cudnnHandle_t handle,
                    Plan &plan) {
  std::shared_ptr<fe::graph::Graph> graph = makeGraph(config);
  auto step = [&](fe::error_object status, const char *what) {
    if (status.is_bad())
      return reject(config.backward, std::string("cuDNN ") + what + ": " +
                                         describe(status) +
                                         "; compile with NVTE_FUSED_ATTN=0");
    return TE_OK;
  };
  if (te_status status = step(graph->validate(), "refuses the graph"))
    return status;
  if (te_status status =
          step(graph->build_operation_graph(handle), "cannot build the graph"))
    return status;
  if (te_status status = step(
          graph->create_execution_plans({fe::HeurMode_t::A}), "has no plan"))
    return status;
  if (te_status status =
          step(graph->check_support(handle), "does not support the graph"))
    return status;
  if (te_status status =
          step(graph->build_plans(handle), "cannot build the plan"))
    return status;
  if (te_status status = step(graph->get_workspace_size(plan.workspace),
                              "has no workspace size"))
    return status;
  plan.graph = std::move(graph);
  return TE_OK;
}

} // namespace

struct te::runtime::cudnn::Context {
  DeviceMemory memory;
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  /// Workspaces outgrown while calls may still use them.
  std::vector<void *> retired;
  std::map<std::string, Plan, std::less<>> plans;
};

bool te::runtime::cudnn::isBuiltIn(std::string *) { return true; }

bool te::runtime::cudnn::validateSdpa(const SdpaConfig &config,
                                      std::string &error) {
  if (const std::string &unavailable = loadCuDNN(); !unavailable.empty()) {
    error = unavailable;
    return false;
  }
  try {
    // Validated for an H100/H200 (sm_90, 132 SMs), without asking the
    // driver for a GPU.
    fe::error_object status = makeGraph(config, 90, 132)->validate();
    if (status.is_bad()) {
      error = status.get_message();
      return false;
    }
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
  return true;
}

Context *te::runtime::cudnn::createContext(DeviceMemory memory) {
  auto *context = new Context();
  context->memory = memory;
  return context;
}

void te::runtime::cudnn::destroyContext(Context *context) {
  if (!context)
    return;
  context->plans.clear();
  if (context->handle)
    fe::detail::destroy_handle(context->handle);
  if (context->workspace)
    context->memory.free(context->memory.owner, context->workspace);
  for (void *workspace : context->retired)
    context->memory.free(context->memory.owner, workspace);
  delete context;
}

te_status te::runtime::cudnn::runSdpa(Context &context, bool backward,
                                      const char *parameters, void **args,
                                      const size_t *sizes, int nargs,
                                      void *stream) {
  SdpaConfig config;
  if (te_status status = checkCall(backward, parameters, sizes, nargs, config))
    return status;
  if (const std::string &unavailable = loadCuDNN(); !unavailable.empty())
    return reject(backward, unavailable);
  std::lock_guard<std::mutex> lock(context.mutex);
  try {
    if (!context.handle &&
        fe::detail::create_handle(&context.handle) != CUDNN_STATUS_SUCCESS)
      return internal(backward, "cudnnCreate failed");
    if (fe::detail::set_stream(context.handle,
                               static_cast<cudaStream_t>(stream)) !=
        CUDNN_STATUS_SUCCESS)
      return internal(backward, "cudnnSetStream failed");
    std::string key = std::string(callName(backward)) + " " + parameters;
    auto found = context.plans.find(key);
    if (found == context.plans.end()) {
      Plan plan;
      if (te_status status = buildPlan(config, context.handle, plan))
        return status;
      found = context.plans.emplace(key, std::move(plan)).first;
    }
    Plan &plan = found->second;
    if (plan.workspace > context.workspaceBytes) {
      // Calls enqueued on the stream may still use the smaller one: it is
      // freed with the context, which the device destroys once the stream
      // is idle.
      if (context.workspace)
        context.retired.push_back(context.workspace);
      context.workspace = nullptr;
      context.workspaceBytes = 0;
      if (te_status status = context.memory.allocate(
              context.memory.owner, static_cast<size_t>(plan.workspace),
              &context.workspace))
        return status;
      context.workspaceBytes = plan.workspace;
    }
    std::unordered_map<int64_t, void *> pack = {
        {kQ, args[0]}, {kK, args[1]}, {kV, args[2]}, {kO, args[3]}};
    if (backward) {
      for (auto [uid, index] : {std::pair<int64_t, int>{kDO, 4},
                                {kStats, 5},
                                {kDQ, 6},
                                {kDK, 7},
                                {kDV, 8}})
        pack.emplace(uid, args[index]);
    } else if (config.stats) {
      pack.emplace(kStats, args[4]);
    }
    fe::error_object status =
        plan.graph->execute(context.handle, pack, context.workspace);
    if (status.is_bad()) {
      return internal(backward, "execution failed: " + status.get_message());
    }
  } catch (const std::exception &e) {
    return reject(backward, std::string("cuDNN failed: ") + e.what());
  }
  return TE_OK;
}

#else // !TE_HAVE_CUDNN_FRONTEND

struct te::runtime::cudnn::Context {};

bool te::runtime::cudnn::isBuiltIn(std::string *why) {
  if (why)
    *why = "this te-mlir was built without cuDNN's headers (cudnn_frontend "
           "from PyPI's nvidia-cudnn-frontend, cudnn.h and cuda.h from the "
           "CUDA toolkit); rebuild after scripts/bootstrap.sh, or compile "
           "with NVTE_FUSED_ATTN=0";
  return false;
}

bool te::runtime::cudnn::validateSdpa(const SdpaConfig &, std::string &error) {
  isBuiltIn(&error);
  return false;
}

Context *te::runtime::cudnn::createContext(DeviceMemory) {
  return new Context();
}

void te::runtime::cudnn::destroyContext(Context *context) { delete context; }

te_status te::runtime::cudnn::runSdpa(Context &, bool backward,
                                      const char *parameters, void **,
                                      const size_t *sizes, int nargs, void *) {
  SdpaConfig config;
  if (te_status status = checkCall(backward, parameters, sizes, nargs, config))
    return status;
  std::string why;
  isBuiltIn(&why);
  return reject(backward, why);
}

#endif
