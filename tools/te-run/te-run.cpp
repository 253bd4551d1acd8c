//===- te-run.cpp - Compile, cache and run a te program -------------------===//
//
// te-run FILE.mlir [--entry NAME] [--backend DEVICE] [--input PATH.npy]...
//        [--random-inputs] [--seed N] [--output-dir DIR] [--outputs-f32]
//        [--bench N] [--explain] [--check] [--te-plugin=LIST]
//        [--runtime-plugin=LIST] [-v]
// te-run FILE.mlir --emit=STAGE -o FILE
// te-run --version
//
// Links the runtime, the kernel cache and .npy support only: on a cache hit
// no MLIR or LLVM code is loaded; on a miss the compiler library is.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/Environment.h"
#include "te/JIT/Jit.h"
#include "te/JIT/KernelProvider.h"
#include "te/Plugin/PluginSearch.h"
#include "te/Runtime/Plugin.h"
#include "te/Runtime/Runtime.h"
#include "te/Support/Compare.h"
#include "te/Support/ConvertArray.h"
#include "te/Support/ExplainTable.h"
#include "te/Support/FloatConversion.h"
#include "te/Support/Npy.h"
#include "te/Support/RandomInputs.h"
#include "te/Version.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace te;
using support::DType;
using support::NpyArray;

namespace {

constexpr int kUsageError = 2;
/// --check found an output outside its tolerance.
constexpr int kCheckFailed = 1;

const char *kUsage =
    "usage: te-run FILE.mlir [--entry NAME] [--backend DEVICE] "
    "[--input PATH.npy]...\n"
    "              [--random-inputs] [--seed N] [--output-dir DIR] "
    "[--outputs-f32] [--bench N]\n"
    "              [--threads N] [--explain] [--check] [--te-plugin=LIST] "
    "[--runtime-plugin=LIST] [-v]\n"
    "       te-run FILE.mlir --emit=STAGE -o FILE [--backend "
    "DEVICE]\n"
    "       te-run --version\n"
    "\n"
    "Options that take a value accept --opt VALUE and --opt=VALUE (-o FILE\n"
    "and -oFILE). A missing value, an unknown option or a bad number is one\n"
    "error line and exit status 2.\n"
    "\n"
    "Compiles the te program FILE (or takes it from the kernel cache), runs\n"
    "the entry function on the inputs and writes its results to\n"
    "DIR/out0.npy, out1.npy, ... Inputs are .npy files in argument order:\n"
    "an array of the argument's exact dtype is used as is, f32/f64 arrays\n"
    "are rounded (to nearest even) to bf16/f16/fp8 arguments, and bf16/fp8\n"
    "arguments also take raw bits (uint16/uint8). bf16 and fp8 results are\n"
    "written as raw bits unless --outputs-f32. --explain prints which\n"
    "backend lowers each op, and which plugin providers declined it and\n"
    "why (it loads the compiler even on a cache hit). Alone (no --input,\n"
    "--random-inputs or other run option) it runs nothing: no inputs,\n"
    "device or GPU are needed, and the exit status is 0 when every op\n"
    "has a lowering, 2 when one has none.\n"
    "\n"
    "--random-inputs generates the inputs from --seed N (default 0), each\n"
    "by its role in the program: cu_seqlens are valid prefix sums within\n"
    "the tokens, seqlens lie in [0, s], scales are positive, amaxes and\n"
    "histories non-negative, other floats roughly N(0, 1). The generator is\n"
    "defined in docs/Runtime.md so that numpy reproduces it; with\n"
    "--output-dir the inputs are also written, as DIR/in0.npy, ...\n"
    "\n"
    "A program with collectives (te.all_reduce, ...) runs as one rank of\n"
    "a job: mpirun -np N te-run FILE ... (MPI on the cpu device). Each\n"
    "rank reads and writes its own files where a path holds {rank}\n"
    "(--input x.{rank}.npy --output-dir out.{rank}), and draws its own\n"
    "--random-inputs from seed N + rank. A collective whose group's ranks\n"
    "disagree on its shapes fails on every rank; one that waits longer than\n"
    "TE_COLLECTIVE_TIMEOUT seconds (default 300) for the others fails too.\n"
    "\n"
    "--threads N runs host (cpu) kernels on N threads. The default is\n"
    "TE_NUM_THREADS, else the CPUs the process may use (its affinity\n"
    "mask); the kernels' parallel loops run on LLVM's OpenMP runtime.\n"
    "\n"
    "--te-plugin=LIST loads te-mlir plugins (comma-separated paths or\n"
    "names) after those of NVTE_PLUGIN: the same as appending LIST to\n"
    "NVTE_PLUGIN. The plugins and their versions are part of the kernel\n"
    "cache key; see docs/PluginAPI.md.\n"
    "\n"
    "--backend DEVICE runs on the runtime device DEVICE (default cpu),\n"
    "compiling for the target registered for it: cpu is built in, a\n"
    "plugin's target (loaded with NVTE_PLUGIN or --te-plugin) serves its\n"
    "own device, which its runtime plugin provides: --runtime-plugin=LIST\n"
    "loads runtime plugins (paths or names, searched like plugins) after\n"
    "those of TE_RUNTIME_PLUGIN.\n"
    "\n"
    "--check also builds the reference kernel (te-lower-cpu-reference:\n"
    "te.attention as a dense, independently written decomposition; other\n"
    "ops lower as usual, their host lowering being bit-exact), runs it on\n"
    "the same inputs and prints per output\n"
    "  check outN: max abs err A, max rel err R (tolerance T): ok|FAILED\n"
    "An element passes when |out - ref| <= rel * |ref| + abs, with\n"
    "abs = 1e-5 * max(1, max |ref|) and rel = 0 for f32, 2^-7 for bf16,\n"
    "2^-10 for f16; fp8, integer and bool outputs must match exactly.\n"
    "For bf16 and f16 (and f32 outputs of a program with such inputs or\n"
    "outputs), abs is at least 2^-8 (f16: 2^-11) * max |ref|, and in a\n"
    "job of n > 1 ranks n * 2^-7 (f16: 2^-10) * max |ref|: an output may\n"
    "sum one rounded partial result per rank (docs/CPULowering.md).\n"
    "Exit status: 0 when every output is within tolerance, 1 when one is\n"
    "not, 2 for usage and compile errors (including a program the\n"
    "reference does not cover: attention with dynamic shapes).\n"
    "\n"
    "A kernel that refuses its inputs (index operands such as cu_seqlens\n"
    "or seqlens that describe no valid sequences, a plugin library call\n"
    "that fails) stops te-run with one error line naming the op, its\n"
    "location and the operand, and exit status 2.\n"
    "\n"
    "-v, --verbose prints on stderr the kernel cache keys (of the source\n"
    "text, and of the canonical IR when known) and the time of each compile\n"
    "stage: canonicalize (the canonical key), mlir-passes (the te pipeline),\n"
    "llvm-translate, llvm-optimize, llvm-codegen, link. A cache hit compiles\n"
    "nothing and says so. With --check, the reference kernel's lines start\n"
    "with 'reference'.\n"
    "\n"
    "--emit=STAGE -o FILE compiles the program for --backend (default cpu)\n"
    "and writes one stage of it to FILE (- for stdout) instead of running\n"
    "it: mlir, the module after the target's pipeline (the LLVM dialect for\n"
    "cpu), and module, the kernel module the device loads (cpu: a shared\n"
    "library, cuda: a fatbin), for every target; then the target's own\n"
    "stages, for cpu llvm (the LLVM IR after optimization), asm (the\n"
    "assembly) and obj (the object file before linking), for cuda llvm\n"
    "(the NVVM LLVM IR after optimization), ptx, cubin, sass (the cubin\n"
    "disassembled by the toolkit's cuobjdump, else the one on PATH), fatbin\n"
    "and manifest (the plan of steps, launches and library calls the\n"
    "fatbin carries, as text); an unknown stage is refused with the\n"
    "target's list. "
    "--emit always compiles: it neither reads nor writes the\n"
    "kernel cache, and takes no run options (--input, --check, ...).\n"
    "\n"
    "TE_DUMP_DIR=DIR makes every compile write the IR of each stage to\n"
    "DIR/<program>/ (FILE's name without .mlir; .DEVICE added for other\n"
    "devices than cpu, .reference for --check's reference): 00-input.mlir,\n"
    "NN-<pass>.mlir after each pass, then the target's stages: for cpu\n"
    "NN-llvm.ll and NN-llvm-optimized.ll (before and after LLVM's\n"
    "optimization) and NN-assembly.s, for cuda NN-manifest.txt,\n"
    "NN-nvvm.ll, NN-nvvm-optimized.ll and NN-ptx.ptx; replacing an\n"
    "earlier dump of the program. A cache hit compiles nothing and so\n"
    "dumps nothing: add TE_CACHE_DISABLE=1 (or use --emit) to force a\n"
    "compile. TE_DUMP_DIR does not change the code, so it is not part of\n"
    "the cache key.\n"
    "\n"
    "--version prints te-mlir's version, revision and LLVM version.\n"
    "\n"
    "Environment: TE_CACHE_DIR, TE_CACHE_DISABLE=1, TE_CACHE_MAX_BYTES,\n"
    "TE_COMPILER_LIBRARY (path of libTECompiler.so), TE_DUMP_DIR,\n"
    "NVTE_PLUGIN, TE_PLUGIN_PATH, NVTE_PLUGIN_POLICY, NVTE_PLUGIN_DENY,\n"
    "NVTE_PLUGIN_STRICT=1, TE_RUNTIME_PLUGIN.\n"
    "\n"
    "Code generation reads these (each is part of the kernel cache key):\n";

struct Options {
  std::string file;
  std::string entry;
  std::string backend = "cpu";
  std::vector<std::string> runtimePlugins;
  std::vector<std::string> inputs;
  bool randomInputs = false;
  uint64_t seed = 0;
  std::string outputDir;
  bool outputsF32 = false;
  int bench = 0;
  /// --threads: host kernel threads; 0 keeps the runtime's default.
  int threads = 0;
  bool explain = false;
  /// --explain with nothing to run: no inputs, device or GPU needed.
  bool explainOnly = false;
  bool check = false;
  bool verbose = false;
  /// --emit's artifact and -o's file: compile to that stage, run nothing.
  std::string emit;
  std::string emitOutput;
};

/// A user error: one line on stderr, exit code 2.
[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "te-run: error: %s\n", message.c_str());
  std::exit(kUsageError);
}

/// A runtime failure, with the runtime's own message.
void check(te_status status, const std::string &what) {
  if (status != TE_OK)
    fail(what + ": " + te_last_error_message());
}

uint64_t parseNumber(const std::string &flag, const std::string &text,
                     uint64_t max) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno || text.empty() || *end || text[0] == '-' || value > max)
    fail(flag + " expects a non-negative integer" +
         (max < UINT64_MAX ? " up to " + std::to_string(max) : "") + ", got '" +
         text + "'");
  return value;
}

/// The compiler's diagnostics as one te-run error: the first line names the
/// problem, the rest (source excerpt, notes) follows for context. MLIR
/// writes "file:line:col: error: message"; te-run's own "error:" says it
/// once, so the compiler's goes.
std::string compilerMessage(std::string message) {
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  const std::string marker = "error: ";
  size_t at = message.find(marker);
  if (at != std::string::npos && at < message.find('\n') &&
      (at == 0 || message.compare(at - 2, 2, ": ") == 0))
    message.erase(at, marker.size());
  return message;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  // Options that only make sense when the program runs (not with --emit).
  std::vector<std::string> runOptions;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // --name=VALUE is --name VALUE; -oFILE and -o=FILE are -o FILE.
    std::string name = arg;
    std::optional<std::string> attached;
    if (size_t equals = arg.find('=');
        arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      name = arg.substr(0, equals);
      attached = arg.substr(equals + 1);
    } else if (arg.rfind("-o", 0) == 0 && arg.size() > 2) {
      name = "-o";
      attached = arg.substr(arg[2] == '=' ? 3 : 2);
    }
    // The option as written, for messages: "--te-plugin=" or "--te-plugin".
    std::string spelled = attached && name != "-o" ? name + "=" : name;
    // The option's value, which must not be empty; `what` says what it is.
    auto value = [&](const std::string &what) -> std::string {
      std::string text;
      if (attached) {
        text = *attached;
      } else if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
        text = argv[++i];
      } else {
        fail(name + " needs " + what +
             (i + 1 < argc ? std::string(" (got option ") + argv[i + 1] + ")"
                           : std::string()));
      }
      if (text.empty())
        fail(spelled + " needs " + what);
      return text;
    };
    auto flag = [&] {
      if (attached)
        fail(name + " takes no value, got '" + arg + "'");
    };
    bool isRunOption = true;
    if (name == "--help" || name == "-h") {
      flag();
      std::fputs(kUsage, stdout);
      std::fputs(te::abi::formatEnvironmentHelp().c_str(), stdout);
      std::exit(0);
    } else if (name == "--version") {
      flag();
      // What te-opt --version says of te-mlir.
      std::printf("te-mlir %s (%s)\n  built with LLVM/MLIR %s\n",
                  TE_MLIR_VERSION, TE_MLIR_GIT_REVISION, TE_MLIR_LLVM_VERSION);
      std::exit(0);
    } else if (name == "-v" || name == "--verbose") {
      flag();
      options.verbose = true;
      isRunOption = false;
    } else if (name == "--entry") {
      options.entry = value("a function name");
    } else if (name == "--backend") {
      options.backend = value("a device name");
      isRunOption = false;
    } else if (name == "--runtime-plugin") {
      for (const std::string &spec :
           plugin::splitList(value("a list of runtime plugins"), ','))
        options.runtimePlugins.push_back(spec);
    } else if (name == "--input") {
      options.inputs.push_back(value("a .npy file"));
    } else if (name == "--random-inputs") {
      flag();
      options.randomInputs = true;
    } else if (name == "--seed") {
      options.seed = parseNumber(name, value("a number"), UINT64_MAX);
    } else if (name == "--output-dir") {
      options.outputDir = value("a directory");
    } else if (name == "--outputs-f32") {
      flag();
      options.outputsF32 = true;
    } else if (name == "--explain") {
      flag();
      options.explain = true;
      isRunOption = false;
    } else if (name == "--check") {
      flag();
      options.check = true;
    } else if (name == "--te-plugin") {
      // Plugins reach the compiler through NVTE_PLUGIN, which also keys the
      // kernel cache.
      std::string list = value("a list of plugins");
      const char *current = std::getenv("NVTE_PLUGIN");
      std::string combined =
          current && *current ? std::string(current) + "," + list : list;
      setenv("NVTE_PLUGIN", combined.c_str(), 1);
      isRunOption = false;
    } else if (name == "--threads") {
      options.threads =
          static_cast<int>(parseNumber(name, value("a number"), 4096));
      if (options.threads == 0)
        fail("--threads needs a count from 1 to 4096, got 0");
    } else if (name == "--bench") {
      options.bench =
          static_cast<int>(parseNumber(name, value("a number"), INT_MAX));
    } else if (name == "--emit") {
      // Which stages exist is the target's to say (the compiler names
      // them when one does not).
      options.emit = value("a stage: mlir, module, or one of the target's "
                           "(cpu: llvm, asm, obj)");
      if (options.emit.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos)
        fail("--emit expects a stage name such as mlir, llvm, asm or obj, "
             "got '" +
             options.emit + "'");
      isRunOption = false;
    } else if (name == "-o") {
      options.emitOutput = value("a file name (- for stdout)");
      isRunOption = false;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      fail("unknown option " + arg + " (see te-run --help)");
    } else if (options.file.empty()) {
      options.file = arg;
      isRunOption = false;
    } else {
      fail("more than one program given: " + options.file + " and " + arg);
    }
    if (isRunOption)
      runOptions.push_back(name);
  }
  if (options.file.empty())
    fail("no program given (see te-run --help)");
  if (!options.inputs.empty() && options.randomInputs)
    fail("--input and --random-inputs exclude each other");
  if (!options.emit.empty() && options.emitOutput.empty())
    fail("--emit needs -o FILE (- for stdout)");
  if (options.emit.empty() && !options.emitOutput.empty())
    fail("-o names the file of --emit; results go to --output-dir DIR");
  if (!options.emit.empty() && !runOptions.empty())
    fail("--emit compiles without running the program: " + runOptions[0] +
         " does not apply");
  options.explainOnly =
      options.explain && runOptions.empty() && options.emit.empty();
  return options;
}

std::string readProgram(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    fail("cannot read " + path + ": " + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    fail(path + " is a directory, not a te program");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof())
    fail("cannot read " + path);
  return text.str();
}

/// libTECompiler.so next to this executable (bin/../lib), unless overridden.
std::string findCompilerLibrary() {
  if (const char *path = std::getenv("TE_COMPILER_LIBRARY"); path && *path)
    return path;
  char self[4096];
  ssize_t size = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (size <= 0)
    return "libTECompiler.so";
  std::string exe(self, size);
  std::string bin = exe.substr(0, exe.find_last_of('/'));
  return bin.substr(0, bin.find_last_of('/')) + "/lib/libTECompiler.so";
}

/// Loads the runtime plugins of TE_RUNTIME_PLUGIN, then those of
/// --runtime-plugin; a name is searched like a compiler plugin's
/// (TE_PLUGIN_PATH, then the installed plugin directory).
void loadRuntimePlugins(const Options &options,
                        const std::string &compilerLibrary) {
  std::vector<std::pair<std::string, std::string>> specs;
  if (const char *list = std::getenv("TE_RUNTIME_PLUGIN"))
    for (const std::string &spec : plugin::splitList(list, ','))
      specs.emplace_back(spec, "TE_RUNTIME_PLUGIN");
  for (const std::string &spec : options.runtimePlugins)
    specs.emplace_back(spec, "--runtime-plugin");
  std::string installed = plugin::pluginDirectoryBeside(compilerLibrary);
  for (const auto &[spec, source] : specs) {
    std::string path = plugin::findPluginLibrary(spec, installed);
    if (path.empty())
      fail(source + ": no runtime plugin '" + spec + "' in TE_PLUGIN_PATH or " +
           installed + " (give a path, or the NAME of libNAME.so)");
    check(te_runtime_load_plugin(path.c_str()),
          source + ": cannot load runtime plugin '" + spec + "'");
  }
}

DType toSupportDType(te_dtype dtype) {
  std::optional<DType> parsed = support::parseDType(te_dtype_name(dtype));
  if (!parsed)
    fail(std::string("unsupported kernel element type ") +
         te_dtype_name(dtype));
  return *parsed;
}

std::string describe(te_dtype dtype, const std::vector<int64_t> &shape) {
  std::string text = te_dtype_name(dtype);
  text += "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text + "]";
}

/// An element type and a shape as the runtime's messages write them:
/// "bf16 256x512", "f32 scalar".
std::string describeType(std::string_view dtype,
                         const std::vector<int64_t> &shape) {
  std::string text = std::string(dtype) + " ";
  if (shape.empty())
    return text + "scalar";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

struct Argument {
  te_dtype dtype;
  std::vector<int64_t> shape;
  /// What an input's values must be like (te_kernel_arg_role).
  std::string role;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// The generated input `index`: by its role, from te-mlir's documented
/// generator (te/Support/RandomInputs.h), which numpy reproduces.
NpyArray makeRandomInput(const Argument &arg, uint64_t seed, size_t index) {
  support::Expected<NpyArray> array = support::generateInput(
      toSupportDType(arg.dtype), arg.shape, arg.role, seed, index);
  if (!array)
    fail("--random-inputs: " + array.message());
  return std::move(*array);
}

NpyArray loadInput(const std::string &path, const Argument &arg, int index) {
  support::Expected<NpyArray> array = support::readNpy(path);
  if (!array)
    fail(array.message());
  // The file as it is, not as it would be converted.
  std::string expected = describeType(te_dtype_name(arg.dtype), arg.shape);
  if (array->shape != arg.shape)
    fail(path + ": argument " + std::to_string(index) + " must be " + expected +
         ", got " +
         describeType(support::dtypeName(array->dtype), array->shape));
  support::Expected<NpyArray> converted =
      support::convertArray(*array, toSupportDType(arg.dtype), path);
  if (!converted)
    fail(converted.message() + " (argument " + std::to_string(index) + " is " +
         expected + ")");
  return std::move(*converted);
}

/// Fills input `index`, `buffer`, from the file `path`. Where the file holds
/// the argument's shape as its element type (or that type's raw bits) and
/// the buffer is in host memory, the payload is read straight into the
/// buffer, so an input is held once however large it is; otherwise the file
/// is read and converted as loadInput does.
void readInput(const std::string &path, const Argument &arg, int index,
               te_buffer *buffer) {
  DType dtype = toSupportDType(arg.dtype);
  auto *memory = static_cast<uint8_t *>(te_buffer_host_pointer(buffer));
  bool direct = false;
  support::Expected<NpyArray> header = support::readNpy(
      path,
      [&](const NpyArray &array, size_t bytes) -> support::Expected<uint8_t *> {
        bool rawBits =
            support::isFloat(dtype) &&
            ((array.dtype == DType::U16 && support::dtypeSize(dtype) == 2) ||
             (array.dtype == DType::U8 && support::dtypeSize(dtype) == 1));
        direct = memory && array.shape == arg.shape &&
                 (array.dtype == dtype || rawBits) &&
                 bytes == te_buffer_size_bytes(buffer);
        return direct ? memory : nullptr;
      });
  if (!header)
    fail(header.message());
  if (direct)
    return;
  NpyArray array = loadInput(path, arg, index);
  check(te_buffer_write(buffer, array.data.data(), array.data.size()),
        "cannot fill input " + std::to_string(index));
}

/// A result as an .npy array: raw bits for bf16/fp8, or f32 values.
NpyArray toOutputArray(const std::vector<uint8_t> &bytes, const Argument &arg,
                       bool asF32) {
  NpyArray array;
  array.shape = arg.shape;
  DType dtype = toSupportDType(arg.dtype);
  bool narrowFloat = dtype == DType::BF16 || dtype == DType::F8E4M3FN ||
                     dtype == DType::F8E5M2 || dtype == DType::F8E8M0FNU;
  if (asF32 && support::isFloat(dtype) && dtype != DType::F64) {
    size_t size = support::dtypeSize(dtype);
    array.dtype = DType::F32;
    array.data.resize(arg.numElements() * 4);
    for (int64_t i = 0; i < arg.numElements(); ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * size, size);
      float value = support::floatBitsToF32(bits, dtype);
      std::memcpy(array.data.data() + i * 4, &value, 4);
    }
    return array;
  }
  array.dtype = dtype;
  if (narrowFloat)
    array.dtype = dtype == DType::BF16 ? DType::U16 : DType::U8;
  array.data = bytes;
  return array;
}

/// min / max / mean of a result, for the summary line.
std::string summarize(const uint8_t *bytes, const Argument &arg) {
  DType dtype = toSupportDType(arg.dtype);
  size_t size = support::dtypeSize(dtype);
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < arg.numElements(); ++i) {
    double value;
    if (dtype == DType::F64) {
      std::memcpy(&value, bytes + i * 8, 8);
    } else if (support::isFloat(dtype)) {
      uint32_t bits = 0;
      std::memcpy(&bits, bytes + i * size, size);
      value = support::floatBitsToF32(bits, dtype);
    } else {
      int64_t integer = 0;
      std::memcpy(&integer, bytes + i * size, size);
      if (size < 8 && dtype != DType::I1 &&
          (integer >> (8 * size - 1)) & 1) // sign-extend
        integer -= int64_t(1) << (8 * size);
      value = double(integer);
    }
    if (std::isnan(value)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, value);
    hi = std::max(hi, value);
    sum += value;
  }
  int64_t counted = arg.numElements() - nans;
  char text[160];
  std::snprintf(text, sizeof(text), "min %.6g  max %.6g  mean %.6g", lo, hi,
                counted ? sum / counted : NAN);
  std::string result = text;
  if (nans)
    result += "  nan " + std::to_string(nans);
  return result;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// -v: what a load did (te_jit_last_compile_report's text), on stderr, each
/// line after `prefix`; the outcome line too for a prefixed (reference)
/// load, whose outcome te-run does not print otherwise.
void printCompileReport(const std::string &report, const std::string &prefix) {
  std::string outcome, canonicalize;
  std::vector<std::vector<std::string>> lines;
  std::istringstream text(report);
  for (std::string line; std::getline(text, line);) {
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; std::getline(split, field, '\t');)
      fields.push_back(field);
    if (fields.size() >= 2 && fields[0] == "outcome")
      outcome = fields[1];
    else if (fields.size() >= 3 && fields[0] == "stage" &&
             fields[1] == "canonicalize")
      canonicalize = fields[2];
    else if (!fields.empty())
      lines.push_back(fields);
  }
  const char *p = prefix.c_str();
  for (const std::vector<std::string> &fields : lines) {
    if (fields[0] == "source-key" && fields.size() >= 2)
      std::fprintf(stderr, "%scache key (source): %s\n", p, fields[1].c_str());
    else if (fields[0] == "canonical-key" && fields.size() >= 3)
      std::fprintf(stderr, "%scache key (canonical): %s (%s)\n", p,
                   fields[1].c_str(),
                   fields[2] == "alias"
                       ? "from the source key's alias"
                       : ("computed in " + canonicalize + " ms").c_str());
    else if (fields[0] == "stage" && fields.size() >= 3)
      std::fprintf(stderr, "%scompile stage %s: %s ms\n", p, fields[1].c_str(),
                   fields[2].c_str());
  }
  if (outcome != "miss")
    std::fprintf(stderr,
                 "%scompile stages: none, the kernel came from the cache\n", p);
  if (!prefix.empty())
    std::fprintf(stderr, "%scache: %s\n", p, outcome.c_str());
}

/// --check: runs the reference kernel of `program` on the cpu device, on
/// copies of the input buffers of `buffers` (the first `numInputs`),
/// compares its outputs with those in the rest of `buffers` and prints one
/// line per output. Returns the exit status (0 or kCheckFailed); a
/// reference that cannot be built is a usage error. On a rank of a job of
/// `worldSize`, an output may sum one rounded partial result per rank.
int checkAgainstReference(const std::string &compilerLib,
                          const std::string &program, const Options &options,
                          const std::string &entry,
                          const std::vector<te_buffer *> &buffers,
                          size_t numInputs,
                          const std::vector<Argument> &outputs, int worldSize) {
  cache::KernelProvider provider(compilerLib, [](const std::string &warning) {
    std::fprintf(stderr, "%s\n", warning.c_str());
  });
  support::Expected<cache::ProvidedKernel> provided =
      provider.provide(program, options.file, /*reference=*/true);
  if (!provided)
    fail("--check: cannot build the reference kernel: " +
         compilerMessage(provided.message()));
  if (options.verbose)
    printCompileReport(
        cache::formatCompileReport(*provided, provided->outcome ==
                                                      cache::CacheOutcome::Miss
                                                  ? "miss"
                                                  : "hit (disk)"),
        "reference ");
  te_device *device = nullptr;
  check(te_device_open("cpu", 0, &device), "--check: cannot open the cpu "
                                           "device");
  te_module *module = nullptr;
  check(te_module_load_image(device, provided->library.data(),
                             provided->library.size(),
                             provided->libraryPath.c_str(), &module),
        "--check: cannot load the reference kernel");
  check(
      te_module_set_source_locations(module, provided->sourceLocations.c_str()),
      "--check: reference kernel");
  te_kernel *kernel = nullptr;
  check(te_module_get_kernel(module, entry.c_str(), &kernel),
        "--check: reference kernel");
  if (te_kernel_num_args(kernel) != int(buffers.size()))
    fail("--check: the reference kernel of @" + entry +
         " has another signature");

  // The inputs as the kernel under test saw them, on the cpu device.
  std::vector<te_buffer *> arguments;
  for (size_t i = 0; i < numInputs; ++i) {
    te_arg_info info;
    check(te_kernel_arg(kernel, int(i), &info), "--check: kernel argument");
    std::vector<uint8_t> bytes(te_buffer_size_bytes(buffers[i]));
    check(te_buffer_read(buffers[i], bytes.data(), bytes.size()),
          "--check: cannot read input " + std::to_string(i));
    te_buffer *copy = nullptr;
    check(te_buffer_create(device, info.dtype, info.rank, info.dims, &copy),
          "--check: cannot allocate input " + std::to_string(i));
    check(te_buffer_write(copy, bytes.data(), bytes.size()),
          "--check: cannot fill input " + std::to_string(i));
    arguments.push_back(copy);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    te_buffer *buffer = nullptr;
    check(te_buffer_create(device, outputs[i].dtype,
                           int(outputs[i].shape.size()),
                           outputs[i].shape.data(), &buffer),
          "--check: cannot allocate reference output " + std::to_string(i));
    arguments.push_back(buffer);
  }
  check(te_kernel_launch(kernel, arguments.data(), int(arguments.size())),
        "--check: launch of the reference @" + entry + " failed");
  check(te_device_synchronize(device), "synchronize");

  // f32 outputs of a bf16 or f16 program are judged at that precision.
  std::vector<DType> types;
  for (size_t i = 0; i < numInputs; ++i) {
    te_arg_info info;
    check(te_kernel_arg(kernel, int(i), &info), "--check: kernel argument");
    types.push_back(toSupportDType(info.dtype));
  }
  for (const Argument &output : outputs)
    types.push_back(toSupportDType(output.dtype));
  DType computedIn = support::narrowestFloat(types.data(), types.size());

  int status = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    te_buffer *actualBuffer = buffers[numInputs + i];
    te_buffer *referenceBuffer = arguments[numInputs + i];
    std::vector<uint8_t> actual(te_buffer_size_bytes(actualBuffer));
    std::vector<uint8_t> reference(actual.size());
    check(te_buffer_read(actualBuffer, actual.data(), actual.size()),
          "cannot read output " + std::to_string(i));
    check(te_buffer_read(referenceBuffer, reference.data(), reference.size()),
          "--check: cannot read reference output " + std::to_string(i));
    support::Comparison result = support::compareOutputs(
        actual.data(), reference.data(), size_t(outputs[i].numElements()),
        toSupportDType(outputs[i].dtype), computedIn, worldSize);
    std::printf("check out%zu: max abs err %.3g, max rel err %.3g "
                "(tolerance %s): %s\n",
                i, result.maxAbsError, result.maxRelError,
                result.tolerance.describe().c_str(),
                result.ok() ? "ok" : "FAILED");
    if (!result.ok())
      status = kCheckFailed;
  }
  for (te_buffer *buffer : arguments)
    te_buffer_release(buffer);
  te_module_release(module);
  te_device_release(device);
  return status;
}

/// --explain: the table of which backend lowers each op. Returns the exit
/// status when that is all that was asked (--explain alone).
std::optional<int> explainProgram(const Options &options,
                                  const std::string &compilerLibrary,
                                  const std::string &program) {
  cache::KernelProvider provider(compilerLibrary, [](const std::string &) {});
  auto rows = provider.explain(program, options.file, options.backend);
  if (!rows)
    fail(compilerMessage(rows.message()));
  std::fputs(support::formatExplainTable(*rows).c_str(), stdout);
  if (!options.explainOnly)
    return std::nullopt;
  // Nothing to run: the table is the answer, and the status says whether
  // every op has a lowering (a "none" row would fail the compile).
  bool lowerable = std::all_of(rows->begin(), rows->end(),
                               [](const support::ExplainRow &row) {
                                 return row[2].rfind("none", 0) != 0;
                               });
  return lowerable ? 0 : kUsageError;
}

/// --emit: a compile up to the requested stage, past the kernel cache;
/// nothing runs, so no device is opened.
int emitStage(const Options &options, const std::string &compilerLibrary,
              const std::string &program) {
  cache::KernelProvider provider(
      compilerLibrary, [](const std::string &warning) {
        std::fprintf(stderr, "%s\n", warning.c_str());
      });
  support::Expected<std::vector<cache::CompileStage>> stages = provider.emit(
      program, options.file, options.backend, options.emit, options.emitOutput);
  if (!stages)
    fail(compilerMessage(stages.message()));
  if (options.verbose) {
    for (const cache::CompileStage &stage : *stages)
      std::fprintf(stderr, "compile stage %s: %.3f ms\n", stage.name.c_str(),
                   stage.milliseconds);
    std::fprintf(stderr, "cache: not used by --emit\n");
  }
  return 0;
}

/// The entry to run: --entry, or the module's only one.
std::string chooseEntry(const Options &options, te_module *module) {
  if (!options.entry.empty())
    return options.entry;
  if (te_module_num_kernels(module) != 1) {
    std::string names;
    for (int i = 0; i < te_module_num_kernels(module); ++i)
      names += std::string(i ? ", " : "") + te_module_kernel_name(module, i);
    fail(options.file + " has several entry functions (" + names +
         "); choose one with --entry");
  }
  return te_module_kernel_name(module, 0);
}

/// The buffers of the kernel's inputs (read from --input files, or
/// random, written to --output-dir then) and outputs, in argument order.
std::vector<te_buffer *> createArguments(const Options &options,
                                         te_device *device,
                                         const std::vector<Argument> &inputs,
                                         const std::vector<Argument> &outputs) {
  std::vector<te_buffer *> buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // The buffer first: the runtime checks the size (overflow, memory)
    // before anything is generated or read.
    te_buffer *buffer = nullptr;
    check(te_buffer_create(device, inputs[i].dtype, int(inputs[i].shape.size()),
                           inputs[i].shape.data(), &buffer),
          "cannot allocate input " + std::to_string(i));
    buffers.push_back(buffer);
    if (!options.randomInputs) {
      readInput(options.inputs[i], inputs[i], int(i), buffer);
      continue;
    }
    NpyArray array = makeRandomInput(inputs[i], options.seed, i);
    // Generated inputs are written next to the outputs, to rerun or
    // inspect them.
    if (!options.outputDir.empty())
      if (support::Status written = support::writeNpy(
              options.outputDir + "/in" + std::to_string(i) + ".npy", array);
          !written.ok())
        fail(written.message());
    check(te_buffer_write(buffer, array.data.data(), array.data.size()),
          "cannot fill input " + std::to_string(i));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    te_buffer *buffer = nullptr;
    check(te_buffer_create(device, outputs[i].dtype,
                           int(outputs[i].shape.size()),
                           outputs[i].shape.data(), &buffer),
          "cannot allocate output " + std::to_string(i));
    buffers.push_back(buffer);
  }
  return buffers;
}

/// --bench N: N more launches, timed.
void benchmark(int runs, const std::function<void()> &launch,
               const std::vector<te_buffer *> &buffers) {
  size_t bytesMoved = 0;
  for (te_buffer *buffer : buffers)
    bytesMoved += te_buffer_size_bytes(buffer);
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    launch();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  double best = *std::min_element(seconds.begin(), seconds.end());
  double mid = median(seconds);
  std::printf("bench: %d runs  min %.3f ms  median %.3f ms  %.2f GB/s "
              "(inputs + outputs, at the median)\n",
              runs, best * 1e3, mid * 1e3, bytesMoved / mid / 1e9);
}

/// A summary line per output, and with --output-dir each output's .npy.
void reportOutputs(const Options &options, const std::vector<Argument> &outputs,
                   const std::vector<te_buffer *> &buffers,
                   size_t firstOutput) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    te_buffer *buffer = buffers[firstOutput + i];
    // A result in host memory is summarized where it is: a copy of a large
    // one may not fit.
    const auto *host =
        static_cast<const uint8_t *>(te_buffer_host_pointer(buffer));
    std::vector<uint8_t> bytes;
    if (!host || !options.outputDir.empty()) {
      bytes.resize(te_buffer_size_bytes(buffer));
      check(te_buffer_read(buffer, bytes.data(), bytes.size()),
            "cannot read output " + std::to_string(i));
    }
    std::printf("out%zu: %s  %s\n", i,
                describe(outputs[i].dtype, outputs[i].shape).c_str(),
                summarize(host ? host : bytes.data(), outputs[i]).c_str());
    if (options.outputDir.empty())
      continue;
    std::string path = options.outputDir + "/out" + std::to_string(i) + ".npy";
    support::Status written = support::writeNpy(
        path, toOutputArray(bytes, outputs[i], options.outputsF32));
    if (!written.ok())
      fail(written.message());
  }
}

/// The device of --backend (after the runtime plugins that may provide it).
te_device *openDevice(Options &options, const std::string &compilerLibrary) {
  loadRuntimePlugins(options, compilerLibrary);
  if (options.threads > 0)
    check(te_set_num_threads(options.threads), "--threads");
  te_device *device = nullptr;
  if (te_device_open(options.backend.c_str(), 0, &device) != TE_OK)
    fail("cannot open the " + options.backend +
         " device: " + te_last_error_message() +
         (options.backend == "cpu" || options.backend == "cuda"
              ? std::string()
              : "; a plugin's device comes from its runtime plugin "
                "(--runtime-plugin or TE_RUNTIME_PLUGIN)"));
  return device;
}

} // namespace

/// te-run's work; main turns what it throws into an error.
static int run(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  std::string program = readProgram(options.file);

  std::string compilerLibrary = findCompilerLibrary();
  if (options.explain)
    if (std::optional<int> status =
            explainProgram(options, compilerLibrary, program))
      return *status;
  if (!options.emit.empty())
    return emitStage(options, compilerLibrary, program);

  te_device *device = openDevice(options, compilerLibrary);
  te_jit *jit = nullptr;
  if (te_jit_create(compilerLibrary.c_str(), &jit) != TE_OK)
    fail(te_jit_last_error_message());
  te_module *module = nullptr;
  te_cache_outcome outcome;
  double compileMs = 0;
  if (te_jit_load(jit, device, program.data(), program.size(),
                  options.file.c_str(), &module, &outcome, &compileMs) != TE_OK)
    fail(compilerMessage(te_jit_last_error_message()));
  if (options.verbose)
    printCompileReport(te_jit_last_compile_report(), "");
  static const char *outcomes[] = {"hit (memory)", "hit (disk)", "miss"};
  std::fprintf(stderr, "compile: %.1f ms\ncache: %s\n", compileMs,
               outcomes[outcome]);

  std::string entry = chooseEntry(options, module);
  te_kernel *kernel = nullptr;
  if (te_module_get_kernel(module, entry.c_str(), &kernel) != TE_OK)
    fail(std::string("unknown entry: ") + te_last_error_message());

  // A program with collectives runs as one rank of a job (mpirun -np N
  // te-run ...): `{rank}` in paths names this rank's files, and each rank
  // draws its own random inputs.
  int rank = 0, worldSize = 1;
  if (te_kernel_num_collectives(kernel) > 0)
    check(te_device_world(device, &rank, &worldSize),
          "cannot join the job's collectives");
  auto perRank = [&](std::string path) {
    for (size_t at = path.find("{rank}"); at != std::string::npos;
         at = path.find("{rank}", at))
      path.replace(at, 6, std::to_string(rank));
    return path;
  };
  options.outputDir = perRank(options.outputDir);
  for (std::string &input : options.inputs)
    input = perRank(input);
  if (worldSize > 1)
    options.seed += static_cast<uint64_t>(rank);

  std::vector<Argument> inputs, outputs;
  for (int i = 0; i < te_kernel_num_args(kernel); ++i) {
    te_arg_info info;
    check(te_kernel_arg(kernel, i, &info), "kernel argument");
    Argument arg{info.dtype,
                 std::vector<int64_t>(info.dims, info.dims + info.rank),
                 te_kernel_arg_role(kernel, i)};
    (info.is_output ? outputs : inputs).push_back(arg);
  }

  if (!options.inputs.empty() && options.inputs.size() != inputs.size())
    fail("@" + entry + " takes " + std::to_string(inputs.size()) +
         " inputs, got " + std::to_string(options.inputs.size()) +
         " --input files");
  if (options.inputs.empty() && !options.randomInputs && !inputs.empty())
    fail("@" + entry + " takes " + std::to_string(inputs.size()) +
         " inputs; pass --input FILE.npy for each, or --random-inputs");

  if (!options.outputDir.empty() && mkdir(options.outputDir.c_str(), 0755) &&
      errno != EEXIST)
    fail("cannot create " + options.outputDir + ": " + std::strerror(errno));
  std::vector<te_buffer *> buffers =
      createArguments(options, device, inputs, outputs);

  auto launch = [&] {
    check(te_kernel_launch(kernel, buffers.data(), int(buffers.size())),
          "launch of @" + entry + " failed");
    check(te_device_synchronize(device), "synchronize");
  };
  launch();
  if (options.bench > 0)
    benchmark(options.bench, launch, buffers);

  if (worldSize > 1)
    std::printf("rank %d of %d: ", rank, worldSize);
  std::printf("@%s: %zu inputs, %zu outputs\n", entry.c_str(), inputs.size(),
              outputs.size());
  reportOutputs(options, outputs, buffers, inputs.size());

  int status = 0;
  if (options.check)
    status = checkAgainstReference(compilerLibrary, program, options, entry,
                                   buffers, inputs.size(), outputs, worldSize);

  for (te_buffer *buffer : buffers)
    te_buffer_release(buffer);
  te_module_release(module);
  te_jit_release(jit);
  te_device_release(device);
  return status;
}

int main(int argc, char **argv) {
  // Memory for arrays (a generated input, a copy of a result, the reference
  // check's copies) may run out under a memory limit: an error, not an
  // abort.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    fail("out of memory: te-run cannot hold its inputs or results in this "
         "process's memory (see ulimit -v); use smaller shapes");
  } catch (const std::length_error &error) {
    fail(std::string("an array is too large to hold: ") + error.what());
  }
}
