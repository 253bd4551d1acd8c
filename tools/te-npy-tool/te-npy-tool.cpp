//===- te-npy-tool.cpp - Inspect and convert te-run's .npy files ----------===//
//
// numpy has no bf16 or FP8 types, so te-run takes and writes those as raw
// bits (uint16, uint8). This tool makes such inputs from f32/f64 arrays with
// exactly te-run's rounding, turns raw-bit outputs back into f32 values, and
// says what a file holds. It is TESupport's .npy reader, converter and writer
// behind a command line, which is also how lit checks them against numpy
// (test/Support/npy-numpy-interop.test).
//
//===----------------------------------------------------------------------===//

#include "te/Support/ConvertArray.h"
#include "te/Support/FloatConversion.h"
#include "te/Support/Npy.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

using namespace te::support;

static int fail(const std::string &message) {
  std::fprintf(stderr, "te-npy-tool: %s\n", message.c_str());
  return 1;
}

static Expected<DType> dtypeArgument(const char *name) {
  if (std::optional<DType> dtype = parseDType(name))
    return *dtype;
  return Status::error("unknown dtype '" + std::string(name) +
                       "'; expected one of " + std::string(dtypeNameList()));
}

static int info(const std::string &path) {
  // The header says it all: a file of any size is described at once.
  Expected<NpyArray> array = readNpyHeader(path);
  if (!array)
    return fail(array.message());
  std::string shape = "(";
  for (size_t i = 0; i < array->shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(array->shape[i]);
  shape += array->shape.size() == 1 ? ",)" : ")";
  std::printf("%s %s\n", std::string(dtypeName(array->dtype)).c_str(),
              shape.c_str());
  return 0;
}

static int convert(const std::string &in, const char *dtypeName,
                   const std::string &out) {
  Expected<DType> target = dtypeArgument(dtypeName);
  if (!target)
    return fail(target.message());
  Expected<NpyArray> array = readNpy(in);
  if (!array)
    return fail(array.message());
  Expected<NpyArray> converted = convertArray(*array, *target, in);
  if (!converted)
    return fail(converted.message());
  if (Status status = writeNpy(out, *converted); !status)
    return fail(status.message());
  return 0;
}

static int widen(const std::string &in, const char *dtypeName,
                 const std::string &out) {
  Expected<DType> source = dtypeArgument(dtypeName);
  if (!source)
    return fail(source.message());
  if (!isFloat(*source) || dtypeSize(*source) > 2)
    return fail("widen takes bf16, f16 or an fp8 type, not " +
                std::string(dtypeName));
  Expected<NpyArray> bits = readNpy(in);
  if (!bits)
    return fail(bits.message());
  DType rawType = dtypeSize(*source) == 2 ? DType::U16 : DType::U8;
  if (bits->dtype != rawType)
    return fail(in + ": expected raw bits as " +
                std::string(te::support::dtypeName(rawType)) + ", got " +
                std::string(te::support::dtypeName(bits->dtype)));

  NpyArray result;
  result.dtype = DType::F32;
  result.shape = bits->shape;
  size_t width = dtypeSize(*source);
  size_t count = bits->data.size() / width;
  result.data.resize(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    uint32_t pattern = 0;
    std::memcpy(&pattern, bits->data.data() + i * width, width);
    float value = floatBitsToF32(pattern, *source);
    std::memcpy(result.data.data() + i * sizeof(float), &value, sizeof(value));
  }
  if (Status status = writeNpy(out, result); !status)
    return fail(status.message());
  return 0;
}

static void printHelp() {
  std::printf(
      "usage: te-npy-tool info FILE.npy\n"
      "       te-npy-tool convert IN.npy DTYPE OUT.npy\n"
      "       te-npy-tool widen IN.npy DTYPE OUT.npy\n"
      "\n"
      "Inspects and converts the .npy files te-run reads (--input) and\n"
      "writes (--output-dir). numpy has no bf16 or FP8 types, so those\n"
      "arrays are stored as their raw bits: uint16 for bf16, uint8 for FP8.\n"
      "\n"
      "  info     prints the file's element type and shape, e.g.\n"
      "           \"f32 (256, 512)\" (raw bits show as ui16 or ui8)\n"
      "  convert  rounds an f32 or f64 array to DTYPE to nearest even (FP8\n"
      "           saturating), exactly as te-run rounds its inputs; bf16 and\n"
      "           FP8 results are written as raw bits, f16 as numpy's float16\n"
      "  widen    reads raw bits of DTYPE (bf16, f16 or an FP8 type, as\n"
      "           uint16 or uint8, the way te-run writes such results) and\n"
      "           writes their exact values as f32\n"
      "\n"
      "DTYPE is one of %s.\n"
      "Exit status: 0 on success, 1 on any error (with a message on stderr).\n",
      std::string(dtypeNameList()).c_str());
}

static int run(int argc, char **argv) {
  std::string command = argc > 1 ? argv[1] : "";
  if ((command == "--help" || command == "-h" || command == "help") &&
      argc == 2) {
    printHelp();
    return 0;
  }
  if (command == "info" && argc == 3)
    return info(argv[2]);
  if (command == "convert" && argc == 5)
    return convert(argv[2], argv[3], argv[4]);
  if (command == "widen" && argc == 5)
    return widen(argv[2], argv[3], argv[4]);
  return fail("usage: te-npy-tool info <in.npy> | convert <in.npy> <dtype> "
              "<out.npy> | widen <in.npy> <dtype> <out.npy> (see --help)");
}

int main(int argc, char **argv) {
  // An array too large for this process's memory is an error like any
  // other, not an abort.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail("out of memory: the arrays do not fit in this process's "
                "memory (see ulimit -v); use smaller arrays");
  } catch (const std::length_error &error) {
    return fail(std::string("an array is too large to hold: ") + error.what());
  }
}
