//===- npy-tool.cpp - Test driver for TESupport's .npy and conversions ----===//
//
// Lets lit tests run the library on files numpy wrote and hand the results
// back to numpy for comparison:
//
//   te-npy-tool info <in.npy>                    prints "<dtype> <shape>"
//   te-npy-tool convert <in.npy> <dtype> <out.npy>
//       converts by te-run's input rule (convertArray); bf16 and fp8 results
//       are written as raw bits (uint16, uint8)
//   te-npy-tool widen <in.npy> <dtype> <out.npy>
//       reads raw bits of a narrow float type (uint16 or uint8) and writes
//       their exact f32 values
//
// Errors go to stderr, prefixed with the tool's name; the exit code is 1.
//
//===----------------------------------------------------------------------===//

#include "te/Support/ConvertArray.h"
#include "te/Support/FloatConversion.h"
#include "te/Support/Npy.h"

#include <cstdio>
#include <cstring>
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
  Expected<NpyArray> array = readNpy(path);
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

int main(int argc, char **argv) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "info" && argc == 3)
    return info(argv[2]);
  if (command == "convert" && argc == 5)
    return convert(argv[2], argv[3], argv[4]);
  if (command == "widen" && argc == 5)
    return widen(argv[2], argv[3], argv[4]);
  return fail("usage: te-npy-tool info <in.npy> | convert <in.npy> <dtype> "
              "<out.npy> | widen <in.npy> <dtype> <out.npy>");
}
