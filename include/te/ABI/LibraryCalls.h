//===- LibraryCalls.h - The parameters of library calls, typed --*- C++ -*-===//
//
// A te op that a device runs as a library call (cuBLASLt's matmul, cuDNN's
// attention) is a `call <function> <parameters>` line of the kernel
// manifest (te/Runtime/Module.h): the compiler writes the parameters, the
// runtime reads them. Both sides go through the struct of the function
// here, with its one encoder and one decoder, so the text (comma-separated
// key=value pairs) is never built or taken apart by hand. The decoder
// checks everything it reads: a manifest is untrusted input.
//
// Plain C++: no MLIR, LLVM or runtime types (te/ABI's rule). Element types
// are named as in ElementTypes.def.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_LIBRARYCALLS_H
#define TE_ABI_LIBRARYCALLS_H

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace te::abi {

//===----------------------------------------------------------------------===//
// The wire format
//===----------------------------------------------------------------------===//

/// Writes a parameter list: key=value pairs in the order added.
class ParameterWriter {
public:
  ParameterWriter &add(const char *key, const std::string &value) {
    text += (text.empty() ? "" : ",") + std::string(key) + "=" + value;
    return *this;
  }
  ParameterWriter &add(const char *key, int64_t value) {
    return add(key, std::to_string(value));
  }
  const std::string &str() const { return text; }

private:
  std::string text;
};

/// `text`'s comma-separated key=value pairs into `pairs`; false (with
/// `error` naming the pair and `expected`, what the call takes) on a
/// malformed or repeated pair, or a key not among `keys`, and on a key of
/// `keys` that is missing.
inline bool splitParameters(const std::string &text,
                            const std::vector<std::string> &keys,
                            const std::string &expected,
                            std::map<std::string, std::string> &pairs,
                            std::string &error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string pair = text.substr(start, end - start);
    start = end + 1;
    size_t equals = pair.find('=');
    std::string key = pair.substr(0, equals);
    bool known = std::find(keys.begin(), keys.end(), key) != keys.end();
    if (equals == std::string::npos || equals + 1 == pair.size() || !known ||
        !pairs.emplace(key, pair.substr(equals + 1)).second) {
      error = "invalid parameter '" + pair + "'; expected " + expected;
      return false;
    }
  }
  for (const std::string &key : keys)
    if (!pairs.count(key)) {
      error = "parameter '" + key + "' is missing";
      return false;
    }
  return true;
}

/// The index of `pairs[key]` among `choices`, or -1 with `error` ("invalid
/// KEY 'value'; expected a, b or c").
inline int parseChoice(std::map<std::string, std::string> &pairs,
                       const std::string &key,
                       const std::vector<std::string> &choices,
                       std::string &error) {
  const std::string &value = pairs[key];
  for (size_t i = 0; i < choices.size(); ++i)
    if (value == choices[i])
      return static_cast<int>(i);
  error = "invalid " + key + " '" + value + "'; expected ";
  for (size_t i = 0; i < choices.size(); ++i)
    error += (i == 0                    ? ""
              : i + 1 == choices.size() ? " or "
                                        : ", ") +
             choices[i];
  return -1;
}

/// `text` as a decimal integer in [low, high]; false otherwise.
inline bool parseInteger(const std::string &text, int64_t low, int64_t high,
                         int64_t &value) {
  char *rest = nullptr;
  long long parsed = std::strtoll(text.c_str(), &rest, 10);
  if (text.empty() || *rest || parsed < low || parsed > high)
    return false;
  value = parsed;
  return true;
}

/// An f32 as the eight hex digits of its bits: exact, whatever the value.
inline std::string encodeF32Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", bits);
  return text;
}

/// The f32 whose bits `text` gives in hex (1 to 8 digits); false otherwise.
inline bool decodeF32Bits(const std::string &text, float &value) {
  if (text.empty() || text.size() > 8 ||
      !std::all_of(text.begin(), text.end(),
                   [](char c) { return std::isxdigit(c); }))
    return false;
  uint32_t bits =
      static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 16));
  std::memcpy(&value, &bits, sizeof(bits));
  return true;
}

/// The largest size a library call takes: 2^31.
constexpr int64_t kMaxCallSize = int64_t(1) << 31;

//===----------------------------------------------------------------------===//
// cublaslt.matmul
//===----------------------------------------------------------------------===//

/// D[m, n] = epilogue(A B^T * a_scale_inv * b_scale_inv + bias), FP8 A
/// [m, k] and B [n, k] (te.scaled_matmul with transpose_b; the runtime's
/// cuBLASLt call, lib/Runtime/CUBLASLt.h). Operands: a, b, a_scale_inv,
/// b_scale_inv, [bias], d.
struct MatmulCall {
  static constexpr const char *kFunction = "cublaslt.matmul";
  enum class Epilogue { None, Bias, Gelu, GeluBias };

  int64_t m = 0, n = 0, k = 0;
  /// f8E4M3FN or f8E5M2.
  std::string a, b;
  /// f32, f16 or bf16.
  std::string d;
  /// f32, f16 or bf16; "" without a bias.
  std::string bias;
  /// Bias and GeluBias exactly when there is a bias.
  Epilogue epilogue = Epilogue::None;

  std::string encode() const {
    static const char *const epilogues[] = {"none", "bias", "gelu",
                                            "gelu_bias"};
    return ParameterWriter()
        .add("m", m)
        .add("n", n)
        .add("k", k)
        .add("a", a)
        .add("b", b)
        .add("d", d)
        .add("bias", bias.empty() ? "none" : bias)
        .add("epilogue", epilogues[static_cast<int>(epilogue)])
        .str();
  }

  /// `text` into `call`; false with `error` saying which parameter is wrong
  /// and what is expected.
  static bool decode(const std::string &text, MatmulCall &call,
                     std::string &error) {
    call = MatmulCall();
    static const char *const keys[] = {"m", "n", "k",    "a",
                                       "b", "d", "bias", "epilogue"};
    std::map<std::string, std::string> pairs;
    if (!splitParameters(text, {std::begin(keys), std::end(keys)},
                         "each of m, n, k, a, b, d, bias and epilogue once, "
                         "as key=value",
                         pairs, error))
      return false;
    int64_t *sizes[] = {&call.m, &call.n, &call.k};
    for (int i = 0; i < 3; ++i)
      if (!parseInteger(pairs[keys[i]], 1, kMaxCallSize, *sizes[i])) {
        error = std::string("invalid size ") + keys[i] + "=" + pairs[keys[i]] +
                "; expected an integer from 1 to 2^31";
        return false;
      }
    std::string *types[] = {&call.a, &call.b, &call.d, &call.bias};
    for (int i = 3; i < 7; ++i) {
      const std::string &value = pairs[keys[i]];
      if (i == 6 && value == "none")
        continue;
      bool fp8 = value == "f8E4M3FN" || value == "f8E5M2";
      bool wide = value == "f32" || value == "f16" || value == "bf16";
      if (i < 5 ? !fp8 : !wide) {
        error = std::string("invalid type ") + keys[i] + "=" + value +
                (i < 5 ? "; expected f8E4M3FN or f8E5M2"
                       : "; expected f32, f16 or bf16");
        return false;
      }
      *types[i - 3] = value;
    }
    int epilogue = parseChoice(pairs, "epilogue",
                               {"none", "bias", "gelu", "gelu_bias"}, error);
    if (epilogue < 0)
      return false;
    call.epilogue = static_cast<Epilogue>(epilogue);
    if (call.hasBiasEpilogue() == call.bias.empty()) {
      error = "the epilogue and the bias disagree: a bias goes with the bias "
              "and gelu_bias epilogues, and only with them";
      return false;
    }
    return true;
  }

  bool hasBiasEpilogue() const {
    return epilogue == Epilogue::Bias || epilogue == Epilogue::GeluBias;
  }
};

//===----------------------------------------------------------------------===//
// cudnn.sdpa_forward and cudnn.sdpa_backward
//===----------------------------------------------------------------------===//

/// Attention through cuDNN's SDPA graphs (lib/Runtime/CUDNN.h): q [b, hq,
/// sq, d], k and v [b, hkv, skv, d] in `layout`, a vanilla softmax of
/// scale q . k over keys [diagonal - left, diagonal + right] (-1:
/// unbounded), the diagonal aligned top-left or bottom-right. The forward's
/// operands: q, k, v, o, [lse when stats]; the backward's: q, k, v, o, dO,
/// lse, dq, dk, dv.
struct SdpaCall {
  static constexpr const char *kForward = "cudnn.sdpa_forward";
  static constexpr const char *kBackward = "cudnn.sdpa_backward";

  int64_t b = 0, hq = 0, hkv = 0, sq = 0, skv = 0, d = 0;
  /// bf16 or f16.
  std::string dtype;
  /// bshd, sbhd or bhsd.
  std::string layout;
  float scale = 0;
  bool bottomRight = false;
  int64_t left = -1, right = -1;
  /// The forward writes the LSE (the backward always reads it).
  bool stats = false;

  std::string encode() const {
    return ParameterWriter()
        .add("b", b)
        .add("hq", hq)
        .add("hkv", hkv)
        .add("sq", sq)
        .add("skv", skv)
        .add("d", d)
        .add("dtype", dtype)
        .add("layout", layout)
        .add("scale", encodeF32Bits(scale))
        .add("align", bottomRight ? "bottom_right" : "top_left")
        .add("left", left)
        .add("right", right)
        .add("stats", stats ? "1" : "0")
        .str();
  }

  /// `text` into `call`; false with `error` saying which parameter is wrong
  /// and what is expected.
  static bool decode(const std::string &text, SdpaCall &call,
                     std::string &error) {
    call = SdpaCall();
    static const char *const keys[] = {
        "b",      "hq",    "hkv",   "sq",   "skv",   "d",    "dtype",
        "layout", "scale", "align", "left", "right", "stats"};
    std::map<std::string, std::string> pairs;
    if (!splitParameters(text, {std::begin(keys), std::end(keys)},
                         "each of b, hq, hkv, sq, skv, d, dtype, layout, "
                         "scale, align, left, right and stats once, as "
                         "key=value",
                         pairs, error))
      return false;
    int64_t *sizes[] = {&call.b,  &call.hq,  &call.hkv,
                        &call.sq, &call.skv, &call.d};
    for (int i = 0; i < 6; ++i)
      if (!parseInteger(pairs[keys[i]], 1, kMaxCallSize, *sizes[i])) {
        error = std::string("invalid size ") + keys[i] + "=" + pairs[keys[i]] +
                "; expected an integer from 1 to 2^31";
        return false;
      }
    if (call.hq % call.hkv != 0) {
      error = "hq must be a multiple of hkv";
      return false;
    }
    // Keeps every byte count below 2^64.
    for (int64_t heads : {call.hq, call.hkv}) {
      unsigned __int128 elements = (unsigned __int128)call.b * heads *
                                   std::max(call.sq, call.skv) * call.d;
      if (elements > (unsigned __int128)1 << 40) {
        error = "the tensors have more than 2^40 elements";
        return false;
      }
    }
    call.dtype = pairs["dtype"];
    if (call.dtype != "bf16" && call.dtype != "f16") {
      error = "invalid dtype '" + call.dtype + "'; expected bf16 or f16";
      return false;
    }
    if (parseChoice(pairs, "layout", {"bshd", "sbhd", "bhsd"}, error) < 0)
      return false;
    call.layout = pairs["layout"];
    if (!decodeF32Bits(pairs["scale"], call.scale)) {
      error = "invalid scale '" + pairs["scale"] +
              "'; expected the f32's bits in hex";
      return false;
    }
    int align =
        parseChoice(pairs, "align", {"top_left", "bottom_right"}, error);
    if (align < 0)
      return false;
    call.bottomRight = align == 1;
    if (!parseInteger(pairs["left"], -1, int64_t(1) << 30, call.left) ||
        !parseInteger(pairs["right"], -1, int64_t(1) << 30, call.right)) {
      error = "invalid window bound; left and right are -1 (unbounded) or a "
              "key count";
      return false;
    }
    int stats = parseChoice(pairs, "stats", {"0", "1"}, error);
    if (stats < 0)
      return false;
    call.stats = stats == 1;
    return true;
  }
};

} // namespace te::abi

#endif // TE_ABI_LIBRARYCALLS_H
