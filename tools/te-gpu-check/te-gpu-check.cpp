//===- te-gpu-check.cpp - Checks and timings of the cuda device -----------===//
//
// te-gpu-check [--json FILE] [--megabytes N] [--kernels DIR [--only NAME]]
//              [--repeats N] [--rounds N] [--device D]
//
// What scripts/gpu-check.sh runs where a GPU is lent: opens te-mlir's cuda
// device and checks that data survives host -> device -> device -> host
// copies bit for bit, then times device-to-device copies (the bandwidth
// quantize kernels are measured against) and host <-> device copies with
// the device's events. With --kernels, every program compiled ahead of
// time into DIR (NAME.fatbin for the cuda device, NAME.so for the cpu,
// by scripts/gpu-check.sh --prepare) runs on both devices on the same
// generated inputs: each output must be within its type's tolerance of the
// CPU's (te-run --check's), and an entry whose outputs are bit-identical
// (the FP8 kernels promise it) must stay so when NaNs, infinities and
// out-of-range values are put into its float inputs; the other entries'
// results with those values are reported, not judged (reductions such as
// attention's propagate NaN differently on the two devices). Each GPU
// launch is timed: the median over --rounds rounds (5 by default on cuda) of
// the mean of --repeats launches (10 by default), after warm-up launches.
// --only NAME checks DIR/NAME alone (scripts/gpu-check.sh runs each program
// in its own process, so a kernel that faults or hangs costs only its
// program's figures). Writes the figures as JSON. Without a usable driver
// it prints one "SKIPPED: <why>" line, writes {"status": "skipped", ...}
// and exits 0; a failed check exits 1. --device runs all of it on another
// device (cpu: the CPU checked against itself, which tests the checks
// themselves where there is no GPU; its kernel files are NAME.so).
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/Runtime.h"
#include "te/Support/Compare.h"
#include "te/Support/FloatConversion.h"
#include "te/Support/RandomInputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// `value` in `format`, or null where JSON has no number for it (NaN and
/// the infinities).
std::string jsonNumber(double value, const char *format) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

struct Report {
  std::string path;
  std::vector<std::pair<std::string, std::string>> fields;
  /// Adds `key`, or replaces its value if it is there.
  void add(const std::string &key, const std::string &json) {
    for (auto &field : fields)
      if (field.first == key) {
        field.second = json;
        return;
      }
    fields.push_back({key, json});
  }
  /// A number, or null where there is none (a rate over no time).
  void add(const std::string &key, double value) {
    char text[64];
    if (!(value >= 0) || value > 1e300)
      std::snprintf(text, sizeof(text), "null");
    else
      std::snprintf(text, sizeof(text), "%.3f", value);
    add(key, std::string(text));
  }
  void write() const {
    std::string text = "{";
    for (size_t i = 0; i < fields.size(); ++i)
      text += (i ? ",\n " : "\n ") + jsonString(fields[i].first) + ": " +
              fields[i].second;
    text += "\n}\n";
    std::fputs(text.c_str(), stdout);
    if (path.empty())
      return;
    if (FILE *file = std::fopen(path.c_str(), "w")) {
      std::fputs(text.c_str(), file);
      std::fclose(file);
    } else {
      std::fprintf(stderr, "te-gpu-check: cannot write %s\n", path.c_str());
    }
  }
};

[[noreturn]] void fail(Report &report, const std::string &what) {
  std::string message = what + ": " + te_last_error_message();
  std::fprintf(stderr, "te-gpu-check: error: %s\n", message.c_str());
  report.add("status", jsonString("failed"));
  report.add("error", jsonString(message));
  report.write();
  std::exit(1);
}

/// How many rounds of timed launches each figure is the median of
/// (--rounds; 5 on the cuda device, 1 on others, where launches are slow
/// and the timings only exercise the code).
int timingRounds = 1;

/// Milliseconds per call of `body`: the median over timingRounds rounds of
/// the time between two events recorded around `repeats` calls on the
/// default stream, after warm-up calls (three when there are several
/// rounds: one round of launches on an idle GPU runs at its idle clocks).
template <typename Body>
float timed(Report &report, te_device *device, int repeats, Body &&body) {
  te_event *start = nullptr, *end = nullptr;
  if (te_event_create(device, &start) || te_event_create(device, &end))
    fail(report, "te_event_create");
  for (int i = 0; i < (timingRounds > 1 ? 3 : 1); ++i)
    body();
  std::vector<float> perCall;
  for (int round = 0; round < timingRounds; ++round) {
    if (te_event_record(start, nullptr))
      fail(report, "te_event_record");
    for (int i = 0; i < repeats; ++i)
      body();
    if (te_event_record(end, nullptr) || te_event_synchronize(end))
      fail(report, "te_event_record");
    float milliseconds = 0;
    if (te_event_elapsed_ms(start, end, &milliseconds))
      fail(report, "te_event_elapsed_ms");
    perCall.push_back(milliseconds / repeats);
  }
  te_event_release(start);
  te_event_release(end);
  std::sort(perCall.begin(), perCall.end());
  return perCall[perCall.size() / 2];
}

using ModulePtr = std::unique_ptr<te_module, decltype(&te_module_release)>;
using BufferPtr = std::unique_ptr<te_buffer, decltype(&te_buffer_release)>;

struct Argument {
  te_dtype dtype;
  std::vector<int64_t> dims;
  bool isOutput;
  std::string role;
};

std::vector<Argument> describeArguments(te_kernel *kernel) {
  std::vector<Argument> args;
  for (int i = 0; i < te_kernel_num_args(kernel); ++i) {
    te_arg_info info;
    te_kernel_arg(kernel, i, &info);
    args.push_back({info.dtype,
                    std::vector<int64_t>(info.dims, info.dims + info.rank),
                    info.is_output != 0, te_kernel_arg_role(kernel, i)});
  }
  return args;
}

/// Creates one device's buffers of `args`, the inputs holding `inputs`.
bool createBuffers(te_device *device, const std::vector<Argument> &args,
                   const std::vector<te::support::NpyArray> &inputs,
                   std::vector<BufferPtr> &buffers) {
  size_t input = 0;
  for (const Argument &arg : args) {
    te_buffer *buffer = nullptr;
    if (te_buffer_create(device, arg.dtype, static_cast<int>(arg.dims.size()),
                         arg.dims.data(), &buffer))
      return false;
    buffers.emplace_back(buffer, te_buffer_release);
    if (!arg.isOutput) {
      const std::vector<uint8_t> &data = inputs[input++].data;
      if (te_buffer_write(buffer, data.data(), data.size()))
        return false;
    }
  }
  return true;
}

std::vector<te_buffer *> raw(const std::vector<BufferPtr> &buffers) {
  std::vector<te_buffer *> pointers;
  for (const BufferPtr &buffer : buffers)
    pointers.push_back(buffer.get());
  return pointers;
}

/// How a device's outputs compare with the CPU's.
struct OutputComparison {
  size_t mismatched = 0, compared = 0, outside = 0;
  double maxAbsError = 0;
  /// "out<k>[i]: gpu X, cpu Y" for the first element outside the tolerance.
  std::string firstOutside;
};

OutputComparison compareOutputBuffers(Report &report,
                                      const std::vector<Argument> &args,
                                      const std::vector<BufferPtr> &onGpu,
                                      const std::vector<BufferPtr> &onCpu) {
  OutputComparison result;
  // f32 outputs of a bf16 or f16 program are judged at that precision, as
  // te-run --check judges them.
  std::vector<te::support::DType> types;
  for (const Argument &arg : args)
    types.push_back(*te::support::parseDType(te_dtype_name(arg.dtype)));
  te::support::DType computedIn =
      te::support::narrowestFloat(types.data(), types.size());
  size_t output = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isOutput)
      continue;
    size_t bytes = te_buffer_size_bytes(onGpu[i].get());
    std::vector<uint8_t> fromGpu(bytes), fromCpu(bytes);
    if (te_buffer_read(onGpu[i].get(), fromGpu.data(), bytes) ||
        te_buffer_read(onCpu[i].get(), fromCpu.data(), bytes))
      fail(report, "reading outputs");
    for (size_t b = 0; b < bytes; ++b)
      result.mismatched += fromGpu[b] != fromCpu[b];
    result.compared += bytes;
    te::support::Comparison comparison = te::support::compareOutputs(
        fromGpu.data(), fromCpu.data(), bytes / te_dtype_size(args[i].dtype),
        types[i], computedIn);
    if (comparison.mismatches && result.firstOutside.empty()) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "output %zu element %zu: gpu %g, cpu %g", output,
                    comparison.firstMismatch, comparison.firstActual,
                    comparison.firstReference);
      result.firstOutside = text;
    }
    ++output;
    result.outside += comparison.mismatches;
    result.maxAbsError = std::max(result.maxAbsError, comparison.maxAbsError);
  }
  return result;
}

/// Puts the values FP8 conversion treats specially into every 61st element
/// of a float input without a role (inputs with roles, such as scales,
/// keep their valid values): both NaNs, both infinities, both zeros, f32
/// subnormals, the E4M3 and E5M2 maxima and values past them, and values
/// beyond every FP8 range.
void injectSpecialValues(te::support::NpyArray &array,
                         const std::string &role) {
  using te::support::DType;
  if (!role.empty() ||
      (array.dtype != DType::F32 && array.dtype != DType::BF16 &&
       array.dtype != DType::F16))
    return;
  static const double kValues[] = {
      NAN,   -NAN,   INFINITY, -INFINITY, 0.0,    -0.0,    1e-40,   -1e-40,
      448.0, -448.0, 449.0,    464.0,     -465.0, 57344.0, 61440.0, -1e30};
  constexpr size_t kCount = sizeof(kValues) / sizeof(kValues[0]);
  size_t size = te::support::dtypeSize(array.dtype);
  for (size_t i = 0; i * size < array.data.size(); i += 61) {
    double value = kValues[(i / 61) % kCount];
    uint32_t bits;
    if (std::isnan(value)) {
      // A NaN with its sign, which conversions must not keep.
      bool negative = std::signbit(value);
      bits = array.dtype == DType::F32 ? (negative ? 0xFFC00000u : 0x7FC00000u)
             : array.dtype == DType::BF16 ? (negative ? 0xFFC0u : 0x7FC0u)
                                          : (negative ? 0xFE00u : 0x7E00u);
    } else if (array.dtype == DType::F32) {
      float narrow = static_cast<float>(value);
      std::memcpy(&bits, &narrow, sizeof(bits));
    } else {
      bits = te::support::roundToFloatBits(value, array.dtype);
    }
    std::memcpy(&array.data[i * size], &bits, size);
  }
}

/// Runs every entry of DIR/NAME<suffix> on the GPU and of DIR/NAME.so on
/// the CPU on the same inputs, compares the outputs byte for byte and times
/// the GPU launches. Returns a JSON array; clears `allExact` when an output
/// differs in a bit and `allPassed` when an entry fails (see the file
/// comment).
std::string checkKernels(Report &report, te_device *gpu, const std::string &dir,
                         const std::string &only, int repeats,
                         const std::string &suffix, bool &allExact,
                         bool &allPassed) {
  te_device *cpu = nullptr;
  if (te_device_open("cpu", 0, &cpu))
    fail(report, "te_device_open(cpu)");
  std::vector<std::string> names;
  if (DIR *listing = opendir(dir.c_str())) {
    while (dirent *entry = readdir(listing)) {
      std::string file = entry->d_name;
      size_t length = suffix.size();
      if (file.size() > length &&
          file.compare(file.size() - length, length, suffix) == 0 &&
          (only.empty() || file == only + suffix))
        names.push_back(file.substr(0, file.size() - length));
    }
    closedir(listing);
  } else {
    std::fprintf(stderr, "te-gpu-check: cannot list %s\n", dir.c_str());
    report.add("status", jsonString("failed"));
    report.add("error", jsonString("--kernels: cannot list " + dir));
    report.write();
    std::exit(1);
  }
  if (!only.empty() && names.empty())
    fail(report, "--only: no " + dir + "/" + only + suffix);
  std::sort(names.begin(), names.end());
  std::string results = "[";
  for (const std::string &name : names) {
    te_module *gpuModule = nullptr, *cpuModule = nullptr;
    if (te_module_load(gpu, (dir + "/" + name + suffix).c_str(), &gpuModule))
      fail(report, "loading " + name + suffix);
    ModulePtr gpuOwner(gpuModule, te_module_release);
    if (te_module_load(cpu, (dir + "/" + name + ".so").c_str(), &cpuModule))
      fail(report, "loading " + name + ".so");
    ModulePtr cpuOwner(cpuModule, te_module_release);
    for (int k = 0; k < te_module_num_kernels(gpuModule); ++k) {
      std::string entry = te_module_kernel_name(gpuModule, k);
      te_kernel *gpuKernel = nullptr, *cpuKernel = nullptr;
      if (te_module_get_kernel(gpuModule, entry.c_str(), &gpuKernel) ||
          te_module_get_kernel(cpuModule, entry.c_str(), &cpuKernel))
        fail(report, name + ": entry " + entry);
      std::vector<Argument> args = describeArguments(gpuKernel);
      std::vector<te::support::NpyArray> inputs;
      size_t bytesMoved = 0;
      for (const Argument &arg : args) {
        size_t elements = 1;
        for (int64_t dim : arg.dims)
          elements *= static_cast<size_t>(dim);
        bytesMoved += elements * te_dtype_size(arg.dtype);
        if (arg.isOutput)
          continue;
        std::optional<te::support::DType> dtype =
            te::support::parseDType(te_dtype_name(arg.dtype));
        auto generated = te::support::generateInput(*dtype, arg.dims, arg.role,
                                                    /*seed=*/1, inputs.size());
        if (!generated)
          fail(report,
               name + ": inputs of " + entry + ": " + generated.message());
        inputs.push_back(std::move(*generated));
      }
      std::vector<BufferPtr> onGpu, onCpu;
      if (!createBuffers(gpu, args, inputs, onGpu) ||
          !createBuffers(cpu, args, inputs, onCpu))
        fail(report, name + ": buffers of " + entry);
      std::vector<te_buffer *> gpuArgs = raw(onGpu), cpuArgs = raw(onCpu);
      int nargs = static_cast<int>(args.size());
      if (te_kernel_launch(cpuKernel, cpuArgs.data(), nargs) ||
          te_device_synchronize(cpu))
        fail(report, name + ": " + entry + " on the cpu");
      float milliseconds = timed(report, gpu, repeats, [&] {
        if (te_kernel_launch(gpuKernel, gpuArgs.data(), nargs))
          fail(report, name + ": " + entry + " on the gpu");
      });
      // Bit-exactness is what the FP8 kernels promise; every output must
      // at least be within its type's tolerance of the CPU's (GEMMs sum in
      // another order), as te-run --check judges.
      OutputComparison normal =
          compareOutputBuffers(report, args, onGpu, onCpu);
      // Again with the values FP8 casts treat specially in the float
      // inputs (NaN, infinities, saturation, subnormals), untimed.
      std::vector<te_buffer *> inputsGpu, inputsCpu;
      size_t input = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].isOutput)
          continue;
        injectSpecialValues(inputs[input], args[i].role);
        const std::vector<uint8_t> &data = inputs[input++].data;
        if (te_buffer_write(onGpu[i].get(), data.data(), data.size()) ||
            te_buffer_write(onCpu[i].get(), data.data(), data.size()))
          fail(report, name + ": special inputs of " + entry);
      }
      if (te_kernel_launch(cpuKernel, cpuArgs.data(), nargs) ||
          te_device_synchronize(cpu) ||
          te_kernel_launch(gpuKernel, gpuArgs.data(), nargs) ||
          te_device_synchronize(gpu))
        fail(report, name + ": " + entry + " on special values");
      OutputComparison special =
          compareOutputBuffers(report, args, onGpu, onCpu);
      size_t mismatched = normal.mismatched + special.mismatched;
      size_t compared = normal.compared;
      allExact = allExact && mismatched == 0;
      bool passed = normal.outside == 0 &&
                    (normal.mismatched != 0 || special.mismatched == 0);
      allPassed = allPassed && passed;
      std::printf(
          "%s.%s: %s (%zu of %zu output bytes differ, %zu with special "
          "input values; %zu elements outside the tolerance, max abs error "
          "%g; with special input values %zu, max abs error %g), %.3f ms, "
          "%.1f GB/s\n",
          name.c_str(), entry.c_str(),
          !passed      ? "FAILED"
          : mismatched ? "within tolerance"
                       : "bit-exact",
          normal.mismatched, compared, special.mismatched, normal.outside,
          normal.maxAbsError, special.outside, special.maxAbsError,
          milliseconds, bytesMoved / (milliseconds * 1e6));
      for (const OutputComparison *run : {&normal, &special})
        if (!run->firstOutside.empty())
          std::printf("  first outside the tolerance%s: %s\n",
                      run == &special ? " (special input values)" : "",
                      run->firstOutside.c_str());
      auto orNull = [](const std::string &text) {
        return text.empty() ? std::string("null") : jsonString(text);
      };
      std::string row =
          "{\"program\": " + jsonString(name) +
          ", \"entry\": " + jsonString(entry) +
          ", \"passed\": " + (passed ? "true" : "false") +
          ", \"bit_exact\": " + (mismatched ? "false" : "true") +
          ", \"mismatched_bytes\": " + std::to_string(normal.mismatched) +
          ", \"output_bytes\": " + std::to_string(compared) +
          ", \"special_values_mismatched_bytes\": " +
          std::to_string(special.mismatched) +
          ", \"outside_tolerance\": " + std::to_string(normal.outside) +
          ", \"max_abs_error\": " + jsonNumber(normal.maxAbsError, "%g") +
          ", \"first_outside\": " + orNull(normal.firstOutside) +
          ", \"special_values_outside_tolerance\": " +
          std::to_string(special.outside) +
          ", \"special_values_max_abs_error\": " +
          jsonNumber(special.maxAbsError, "%g") +
          ", \"special_values_first_outside\": " +
          orNull(special.firstOutside) +
          ", \"gpu_ms\": " + jsonNumber(milliseconds, "%.4f") +
          ", \"gb_per_s\": " +
          jsonNumber(bytesMoved / (milliseconds * 1e6), "%.1f") + "}";
      results += std::string(results.size() > 1 ? ", " : "") + row;
    }
  }
  te_device_release(cpu);
  return results + "]";
}

} // namespace

/// `text` as a count in [1, max] into `value`; false after saying what
/// `option` expects.
bool parseCount(const std::string &option, const char *text, long max,
                long &value) {
  char *end = nullptr;
  value = std::strtol(text, &end, 10);
  if (*text && !*end && value >= 1 && value <= max)
    return true;
  std::fprintf(stderr, "te-gpu-check: %s expects 1 to %ld\n", option.c_str(),
               max);
  return false;
}

int main(int argc, char **argv) {
  Report report;
  long megabytes = 256, repeats = 10, rounds = 0;
  std::string kernels, only, deviceName = "cuda";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      report.path = argv[++i];
    } else if (arg == "--megabytes" && i + 1 < argc) {
      if (!parseCount(arg, argv[++i], 65536, megabytes))
        return 2;
    } else if (arg == "--kernels" && i + 1 < argc) {
      kernels = argv[++i];
    } else if (arg == "--rounds" && i + 1 < argc) {
      if (!parseCount(arg, argv[++i], 1000, rounds))
        return 2;
    } else if (arg == "--repeats" && i + 1 < argc) {
      if (!parseCount(arg, argv[++i], 100000, repeats))
        return 2;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--device" && i + 1 < argc) {
      deviceName = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: te-gpu-check [--json FILE] [--megabytes N] "
                   "[--kernels DIR [--only NAME]] [--repeats N] [--rounds N] "
                   "[--device D]\n");
      return 2;
    }
  }

  timingRounds = rounds                 ? static_cast<int>(rounds)
                 : deviceName == "cuda" ? 5
                                        : 1;
  te_device *device = nullptr;
  if (te_device_open(deviceName.c_str(), 0, &device) != TE_OK) {
    std::string why = te_last_error_message();
    std::printf("SKIPPED: %s\n", why.c_str());
    report.add("status", jsonString("skipped"));
    report.add("reason", jsonString(why));
    report.write();
    return 0;
  }

  // Bytes that differ at every position, so a misplaced copy shows.
  const int64_t count = megabytes * (int64_t(1) << 20) / 4;
  std::vector<uint32_t> data(count), back(count, 0);
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x5bd1e995u;
  const int64_t dims[] = {count};
  te_buffer *a = nullptr, *b = nullptr;
  if (te_buffer_create(device, TE_DTYPE_I32, 1, dims, &a) ||
      te_buffer_create(device, TE_DTYPE_I32, 1, dims, &b))
    fail(report, "te_buffer_create");
  const size_t bytes = count * 4;
  if (te_buffer_write(a, data.data(), bytes) || te_buffer_copy(b, a) ||
      te_buffer_read(b, back.data(), bytes))
    fail(report, "copy round trip");
  bool same = std::memcmp(data.data(), back.data(), bytes) == 0;
  report.add("status", jsonString(same ? "passed" : "failed"));
  report.add("device", jsonString(te_device_name(device)));
  report.add("buffer_megabytes", static_cast<double>(megabytes));
  report.add("copy_round_trip", jsonString(same ? "bit-exact" : "differs"));

  float d2d = timed(report, device, 20, [&] {
    if (te_buffer_copy(b, a))
      fail(report, "te_buffer_copy");
  });
  // A device copy reads and writes every byte.
  report.add("d2d_copy_ms", d2d);
  report.add("d2d_copy_gb_per_s", 2.0 * bytes / (d2d * 1e6));
  float h2d = timed(report, device, 5, [&] {
    if (te_buffer_write(a, data.data(), bytes))
      fail(report, "te_buffer_write");
  });
  report.add("h2d_gb_per_s", bytes / (h2d * 1e6));
  float d2h = timed(report, device, 5, [&] {
    if (te_buffer_read(b, back.data(), bytes))
      fail(report, "te_buffer_read");
  });
  report.add("d2h_gb_per_s", bytes / (d2h * 1e6));

  te_buffer_release(a);
  te_buffer_release(b);
  bool exact = true, passed = true;
  if (!kernels.empty()) {
    std::string suffix = deviceName == "cuda" ? ".fatbin" : ".so";
    report.add("kernels",
               checkKernels(report, device, kernels, only,
                            static_cast<int>(repeats), suffix, exact, passed));
    report.add("kernels_bit_exact", exact ? "true" : "false");
    report.add("kernels_passed", passed ? "true" : "false");
    if (!passed)
      report.add("status", jsonString("failed"));
  }
  te_device_release(device);
  report.write();
  return same && passed ? 0 : 1;
}
