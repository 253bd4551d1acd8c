//===- Environment.h - The environment that changes generated code -*- C++
//-*-===//
//
// Every environment variable a built-in target reads while compiling, in
// one table: the targets read their settings through it
// (te::abi::getSetting), the JIT puts each one's value into the kernel
// cache keys (so that a kernel compiled under one setting never answers a
// compile under another), and the tools list them in --help. A variable a
// target reads that is not here is a stale-cache bug; add it here first.
//
// The plugin layer's variables (NVTE_PLUGIN, NVTE_PLUGIN_POLICY, ...) join
// the keys through the plugin fingerprint (te_compiler_plugins) instead.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_ENVIRONMENT_H
#define TE_ABI_ENVIRONMENT_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace te::abi {

struct EnvironmentVariable {
  const char *name;
  /// The target that reads it ("cpu", "cuda").
  const char *target;
  /// What it sets, for --help.
  const char *meaning;
};

inline constexpr EnvironmentVariable kCodeGenerationEnvironment[] = {
    {"TE_CPU_ARCH", "cpu",
     "LLVM processor host kernels are compiled for (default: this host), "
     "e.g. x86-64-v3, znver4, sapphirerapids"},
    {"TE_CPU_AMX", "cpu",
     "AMX tiles for bf16 and FP8 GEMMs: auto (default: where the processor "
     "has them and the OS grants them), off, or emulate (the tile "
     "instructions as scalar code, on any x86-64 host: slow, for tests)"},
    {"TE_CUDA_ARCH", "cuda",
     "GPU arch kernels are compiled for: sm_80, sm_86, sm_89, sm_90, sm_90a "
     "(default: the cuda device's, else sm_80)"},
    {"TE_CUDA_PATH", "cuda",
     "CUDA toolkit whose ptxas and fatbinary are used (default: CUDA_HOME, "
     "else /usr/local/cuda)"},
    {"CUDA_HOME", "cuda", "CUDA toolkit, when TE_CUDA_PATH is unset"},
    {"TE_CUDA_GEMM", "cuda",
     "te.scaled_matmul: cublaslt (default, where cuBLASLt takes it) or "
     "codegen"},
    {"TE_CUDA_ATTENTION", "cuda",
     "attention strategy preferred where both can: codegen (default) or "
     "cudnn"},
    {"NVTE_FUSED_ATTN", "cuda", "0 disables cuDNN attention (as in TE)"},
    {"NVTE_FLASH_ATTN", "cuda",
     "0 disables the generated flash-attention kernels (as in TE)"},
};

/// The value of code-generation variable `name`, "" when unset. `name`
/// must be one of the table's: reading another is a programming error that
/// stops the process (every test that reaches the read finds it).
inline std::string getSetting(const char *name) {
  bool known = false;
  for (const EnvironmentVariable &variable : kCodeGenerationEnvironment)
    known = known || std::strcmp(variable.name, name) == 0;
  if (!known) {
    std::fprintf(stderr,
                 "te-mlir: internal error: code generation reads %s, which "
                 "is not in te/ABI/Environment.h (the kernel cache would "
                 "not key on it)\n",
                 name);
    std::abort();
  }
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// "NAME=value\n" for every variable of the table, in its order: what of
/// the environment a compile depends on.
inline std::string describeEnvironment() {
  std::string text;
  for (const EnvironmentVariable &variable : kCodeGenerationEnvironment)
    text += std::string(variable.name) + "=" + getSetting(variable.name) + "\n";
  return text;
}

/// "  NAME  meaning" lines for --help.
inline std::string formatEnvironmentHelp() {
  std::string text;
  for (const EnvironmentVariable &variable : kCodeGenerationEnvironment)
    text += std::string("  ") + variable.name + " (" + variable.target +
            "): " + variable.meaning + "\n";
  return text;
}

} // namespace te::abi

#endif // TE_ABI_ENVIRONMENT_H
