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

#include "te/ABI/Limits.h"

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
/// `keys` that is missing and has no value in `defaults`.
inline bool
splitParameters(const std::string &text, const std::vector<std::string> &keys,
                const std::string &expected,
                std::map<std::string, std::string> &pairs, std::string &error,
                const std::map<std::string, std::string> &defaults = {}) {
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
  for (const auto &[key, value] : defaults)
    pairs.emplace(key, value);
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

/// te.scaled_matmul on cuBLASLt (the runtime's cuBLASLt call,
/// lib/Runtime/CUBLASLt.h), in te's row-major terms:
/// D[m, n] = epilogue(alpha op(A) op(B) [+ C]), with op(A) [m, k] and op(B)
/// [k, n] as `layout` stores them. A and B are both FP8 (per_tensor:
/// alpha = a_scale_inv * b_scale_inv, device scalars) or both of one of
/// f32, f16 and bf16 (alpha = 1, products in f32 either way).
///
/// `layout` is cuBLAS's transposes as TE names them, cuBLAS's A being te's
/// B and its B te's A (row-major D is column-major D^T = op(B)^T op(A)^T):
/// the first letter is T when te's B is stored [n, k] (transpose_b), N
/// when [k, n]; the second T when te's A is stored [k, m] (transpose_a), N
/// when [m, k]. TE's forward GEMM is "TN".
///
/// The epilogues are cuBLASLt's, on te's results (docs/TEDialect.md):
/// bias ([n], added to each row), gelu (tanh GELU), gelu_aux (also storing
/// the values before the GELU, [m, n] of D's type), dgelu (D = P times
/// gelu' of an [m, n] input of D's type), dgelu_bgrad (also D's column
/// sums, [n]), bgradb (the row sums of op(A), [m]). `bias` is the type of
/// the bias vector, the bias gradient included.
///
/// Operands, in order: a, b, [a_scale_inv, b_scale_inv: FP8], [bias: the
/// bias epilogues], [gelu input: dgelu*], [c: accumulate], d, [pre-GELU
/// values: gelu_aux*], [bias gradient: dgelu_bgrad, bgradb].
struct MatmulCall {
  static constexpr const char *kFunction = "cublaslt.matmul";
  enum class Epilogue {
    None,
    Bias,
    Gelu,
    GeluBias,
    GeluAux,
    GeluAuxBias,
    DGelu,
    DGeluBGrad,
    BGradB
  };

  int64_t m = 0, n = 0, k = 0;
  /// Both f8E4M3FN or f8E5M2, or the same one of f32, f16 and bf16.
  std::string a, b;
  /// f32, f16 or bf16; with 16-bit operands their type or f32, with f32
  /// operands f32.
  std::string d;
  /// f32, f16 or bf16 (D's type with high-precision operands); "" for an
  /// epilogue without a bias vector.
  std::string bias;
  Epilogue epilogue = Epilogue::None;
  /// TN, NN, NT or TT (above).
  std::string layout = "TN";
  /// D = ... + C (beta = 1), C of D's type and shape.
  bool accumulate = false;

  static const std::vector<std::string> &getEpilogueNames() {
    static const std::vector<std::string> names = {
        "none",          "bias",  "gelu",        "gelu_bias", "gelu_aux",
        "gelu_aux_bias", "dgelu", "dgelu_bgrad", "bgradb"};
    return names;
  }

  std::string encode() const {
    return ParameterWriter()
        .add("m", m)
        .add("n", n)
        .add("k", k)
        .add("a", a)
        .add("b", b)
        .add("d", d)
        .add("bias", bias.empty() ? "none" : bias)
        .add("epilogue", getEpilogueNames()[static_cast<int>(epilogue)])
        .add("layout", layout)
        .add("accumulate", accumulate ? "1" : "0")
        .str();
  }

  static bool isFP8(const std::string &type) {
    return type == "f8E4M3FN" || type == "f8E5M2";
  }
  static bool isWide(const std::string &type) {
    return type == "f32" || type == "f16" || type == "bf16";
  }

  /// `text` into `call`; false with `error` saying which parameter is wrong
  /// and what is expected. `layout` and `accumulate` may be missing (TN, 0:
  /// what the call took before it had them).
  static bool decode(const std::string &text, MatmulCall &call,
                     std::string &error) {
    call = MatmulCall();
    static const char *const keys[] = {
        "m", "n",    "k",        "a",      "b",
        "d", "bias", "epilogue", "layout", "accumulate"};
    std::map<std::string, std::string> pairs;
    if (!splitParameters(text, {std::begin(keys), std::end(keys)},
                         "each of m, n, k, a, b, d, bias, epilogue, layout "
                         "and accumulate once, as key=value",
                         pairs, error, {{"layout", "TN"}, {"accumulate", "0"}}))
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
      bool operand = i < 5;
      if (operand ? !isFP8(value) && !isWide(value) : !isWide(value)) {
        error = std::string("invalid type ") + keys[i] + "=" + value +
                (operand ? "; expected f8E4M3FN, f8E5M2, f32, f16 or bf16"
                         : "; expected f32, f16 or bf16");
        return false;
      }
      *types[i - 3] = value;
    }
    bool fp8 = isFP8(call.a);
    if (fp8 != isFP8(call.b) || (!fp8 && call.a != call.b)) {
      error = "invalid types a=" + call.a + ", b=" + call.b +
              "; expected both FP8 or both the same of f32, f16 and bf16";
      return false;
    }
    if (!fp8 && call.d != call.a && call.d != "f32") {
      error = "invalid type d=" + call.d + " with " + call.a +
              " operands; expected " + call.a +
              (call.a == "f32" ? "" : " or f32");
      return false;
    }
    int epilogue = parseChoice(pairs, "epilogue", getEpilogueNames(), error);
    if (epilogue < 0)
      return false;
    call.epilogue = static_cast<Epilogue>(epilogue);
    int layout = parseChoice(pairs, "layout", {"TN", "NN", "NT", "TT"}, error);
    if (layout < 0)
      return false;
    call.layout = pairs["layout"];
    int accumulate = parseChoice(pairs, "accumulate", {"0", "1"}, error);
    if (accumulate < 0)
      return false;
    call.accumulate = accumulate == 1;
    if (call.hasBiasVector() == call.bias.empty()) {
      error = "the epilogue and the bias disagree: a bias type goes with the "
              "bias, gelu_bias, gelu_aux_bias, dgelu_bgrad and bgradb "
              "epilogues, and only with them";
      return false;
    }
    if (!fp8 && !call.bias.empty() && call.bias != call.d) {
      error = "invalid bias=" + call.bias + " with " + call.a +
              " operands; expected D's type " + call.d;
      return false;
    }
    if (fp8 && call.epilogue != Epilogue::None &&
        call.epilogue != Epilogue::Bias && call.epilogue != Epilogue::Gelu &&
        call.epilogue != Epilogue::GeluBias) {
      error = "invalid epilogue '" + pairs["epilogue"] +
              "' with FP8 operands; expected none, bias, gelu or gelu_bias";
      return false;
    }
    if (call.hasAux() && call.n % 8 != 0) {
      error = "the " + pairs["epilogue"] +
              " epilogue's GELU matrix needs n a multiple of 8, got n=" +
              std::to_string(call.n);
      return false;
    }
    return true;
  }

  bool hasFP8Operands() const { return isFP8(a); }
  /// Whether the epilogue reads a bias (an input).
  bool hasBiasInput() const {
    return epilogue == Epilogue::Bias || epilogue == Epilogue::GeluBias ||
           epilogue == Epilogue::GeluAuxBias;
  }
  /// Whether the epilogue writes a bias gradient (an output).
  bool hasBiasGrad() const {
    return epilogue == Epilogue::DGeluBGrad || epilogue == Epilogue::BGradB;
  }
  bool hasBiasVector() const { return hasBiasInput() || hasBiasGrad(); }
  /// Whether the epilogue reads the GELU's input (dgelu*).
  bool hasAuxInput() const {
    return epilogue == Epilogue::DGelu || epilogue == Epilogue::DGeluBGrad;
  }
  /// Whether the epilogue writes the values before the GELU (gelu_aux*).
  bool hasAuxOutput() const {
    return epilogue == Epilogue::GeluAux || epilogue == Epilogue::GeluAuxBias;
  }
  bool hasAux() const { return hasAuxInput() || hasAuxOutput(); }
  /// The bias gradient's length: n (column sums) or m (bgradb's row sums).
  int64_t getBiasLength() const { return epilogue == Epilogue::BGradB ? m : n; }
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

//===----------------------------------------------------------------------===//
// collective.*
//===----------------------------------------------------------------------===//

/// A te collective over a process group (te/Runtime/Collective.h): the
/// function `collective.<op>`, the group (its name, its size and the world
/// ranks of its members, or consecutive blocks), and for the data
/// collectives the input's element type and shape and the op's own
/// parameters. group_rank moves no data: it writes the caller's position
/// in the group. Operands: the input, then the output (group_rank: the
/// output alone).
struct CollectiveCall {
  static constexpr const char *kPrefix = "collective.";
  enum class Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Permute,
    GroupRank
  };
  enum class Reduce { Sum, Max, Min, Avg };

  Op op = Op::AllReduce;
  std::string group;
  int64_t size = 0;
  /// World ranks, a multiple of `size` of them (groups of `size`
  /// consecutive entries); empty: consecutive blocks of the world.
  std::vector<int64_t> ranks;
  /// The input's element type (ElementTypes.def's name) and shape (empty:
  /// a scalar). Not for group_rank.
  std::string dtype;
  std::vector<int64_t> shape;
  /// all_reduce, reduce_scatter.
  Reduce reduce = Reduce::Sum;
  /// all_gather's and reduce_scatter's dimension; all_to_all's split and
  /// concat dimensions.
  int64_t dim = 0, concatDim = 0;
  /// permute: each rank sends to rank + shift (mod size), or along the
  /// (source, target) pairs, flattened.
  bool shifted = true;
  int64_t shift = 0;
  std::vector<int64_t> pairs;

  static const std::vector<std::string> &getOpNames() {
    static const std::vector<std::string> names = {
        "all_reduce", "all_gather", "reduce_scatter",
        "all_to_all", "permute",    "group_rank"};
    return names;
  }
  /// The manifest's function name, e.g. "collective.all_reduce".
  std::string getFunction() const {
    return kPrefix + getOpNames()[static_cast<int>(op)];
  }

  std::string encode() const {
    auto list = [](const std::vector<int64_t> &values, const char *separator) {
      std::string text;
      for (size_t i = 0; i < values.size(); ++i)
        text += (i ? separator : "") + std::to_string(values[i]);
      return text;
    };
    static const char *const reductions[] = {"sum", "max", "min", "avg"};
    ParameterWriter writer;
    writer.add("group", group)
        .add("size", size)
        .add("ranks", ranks.empty() ? "blocks" : list(ranks, "_"));
    if (op == Op::GroupRank)
      return writer.str();
    writer.add("dtype", dtype)
        .add("shape", shape.empty() ? "scalar" : list(shape, "x"));
    switch (op) {
    case Op::AllReduce:
      writer.add("reduce", reductions[static_cast<int>(reduce)]);
      break;
    case Op::AllGather:
      writer.add("dim", dim);
      break;
    case Op::ReduceScatter:
      writer.add("dim", dim)
          .add("reduce", reductions[static_cast<int>(reduce)]);
      break;
    case Op::AllToAll:
      writer.add("split_dim", dim).add("concat_dim", concatDim);
      break;
    case Op::Permute:
      writer.add("route", shifted ? "shift_" + std::to_string(shift)
                                  : "pairs_" + list(pairs, "_"));
      break;
    case Op::GroupRank:
      break;
    }
    return writer.str();
  }

  /// `function` and its parameters `text` into `call`; false with `error`
  /// saying what is wrong. Shapes of more than `maxRank` dimensions are
  /// refused (the runtime's limit).
  static bool decode(const std::string &function, const std::string &text,
                     int maxRank, CollectiveCall &call, std::string &error) {
    call = CollectiveCall();
    const std::vector<std::string> &names = getOpNames();
    std::string name = function.rfind(kPrefix, 0) == 0
                           ? function.substr(std::string(kPrefix).size())
                           : std::string();
    auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      std::string known;
      for (const std::string &candidate : names)
        known += (known.empty() ? "" : ", ") + std::string(kPrefix) + candidate;
      error =
          "unknown collective '" + function + "'; the runtime knows " + known;
      return false;
    }
    call.op = static_cast<Op>(found - names.begin());
    static const std::vector<std::vector<std::string>> extras = {
        {"reduce"}, {"dim"}, {"dim", "reduce"}, {"split_dim", "concat_dim"},
        {"route"},  {}};
    std::vector<std::string> keys = {"group", "size", "ranks"};
    if (call.op != Op::GroupRank) {
      keys.insert(keys.end(), {"dtype", "shape"});
      const std::vector<std::string> &own = extras[static_cast<int>(call.op)];
      keys.insert(keys.end(), own.begin(), own.end());
    }
    std::string expected;
    for (const std::string &key : keys)
      expected += (expected.empty() ? "" : ",") + key + "=...";
    std::map<std::string, std::string> pairs;
    if (!splitParameters(text, keys, expected, pairs, error))
      return false;

    call.group = pairs["group"];
    if (!parseInteger(pairs["size"], 1, TE_MAX_WORLD_SIZE, call.size)) {
      error = "invalid size '" + pairs["size"] +
              "'; expected a positive integer of at most " +
              std::to_string(TE_MAX_WORLD_SIZE);
      return false;
    }
    if (pairs["ranks"] != "blocks" &&
        (!parseList(pairs["ranks"], '_', 0, TE_MAX_WORLD_SIZE - 1,
                    call.ranks) ||
         call.ranks.size() % call.size != 0)) {
      error = "invalid ranks '" + pairs["ranks"] +
              "'; expected 'blocks' or world ranks a_b_..., a multiple of "
              "size=" +
              pairs["size"] + " of them";
      return false;
    }
    if (call.op == Op::GroupRank)
      return true;

    call.dtype = pairs["dtype"];
    if (!isKernelElementType(call.dtype)) {
      error = "invalid dtype '" + call.dtype + "'";
      return false;
    }
    const std::string &shape = pairs["shape"];
    if (shape != "scalar" &&
        (!parseList(shape, 'x', 1, INT64_MAX / 2, call.shape) ||
         call.shape.size() > static_cast<size_t>(maxRank))) {
      error = "invalid shape '" + shape +
              "'; expected 'scalar' or positive sizes such as 4x8";
      return false;
    }
    return decodeOwnParameters(call, pairs, error);
  }

private:
  /// "a<sep>b<sep>c" as integers in [low, high]; false on anything else.
  static bool parseList(const std::string &text, char separator, int64_t low,
                        int64_t high, std::vector<int64_t> &values) {
    values.clear();
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(separator, start);
      if (end == std::string::npos)
        end = text.size();
      int64_t value;
      if (!parseInteger(text.substr(start, end - start), low, high, value))
        return false;
      values.push_back(value);
      start = end + 1;
    }
    return true;
  }

  static bool isKernelElementType(const std::string &name) {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                        \
  if (name == NAME)                                                            \
    return true;
#include "te/ABI/ElementTypes.def"
    return false;
  }

  /// The parameters of the op beyond group, dtype and shape.
  static bool decodeOwnParameters(CollectiveCall &call,
                                  std::map<std::string, std::string> &pairs,
                                  std::string &error) {
    int64_t rank = static_cast<int64_t>(call.shape.size());
    auto parseDim = [&](const std::string &key, int64_t &dim) {
      if (parseInteger(pairs[key], 0, rank - 1, dim))
        return true;
      error = "invalid " + key + " '" + pairs[key] + "' for an input of rank " +
              std::to_string(rank);
      return false;
    };
    auto parseReduce = [&]() {
      int reduce =
          parseChoice(pairs, "reduce", {"sum", "max", "min", "avg"}, error);
      call.reduce = static_cast<Reduce>(reduce);
      return reduce >= 0;
    };
    auto divisible = [&](int64_t dim, const char *key) {
      if (call.shape[dim] % call.size == 0)
        return true;
      error = std::string(key) + " " + std::to_string(dim) + " has size " +
              std::to_string(call.shape[dim]) + ", which the group size " +
              pairs["size"] + " does not divide";
      return false;
    };
    switch (call.op) {
    case Op::AllReduce:
      if (!parseReduce())
        return false;
      break;
    case Op::AllGather:
      if (!parseDim("dim", call.dim))
        return false;
      break;
    case Op::ReduceScatter:
      if (!parseDim("dim", call.dim) || !divisible(call.dim, "dim") ||
          !parseReduce())
        return false;
      break;
    case Op::AllToAll:
      if (!parseDim("split_dim", call.dim) ||
          !parseDim("concat_dim", call.concatDim) ||
          !divisible(call.dim, "split_dim"))
        return false;
      break;
    case Op::Permute:
      if (!decodeRoute(call, pairs["route"], pairs["size"], error))
        return false;
      break;
    case Op::GroupRank:
      break;
    }
    if (call.op == Op::AllReduce || call.op == Op::ReduceScatter) {
      bool floating = call.dtype == "f32" || call.dtype == "f64" ||
                      call.dtype == "f16" || call.dtype == "bf16" ||
                      call.dtype == "f8E4M3FN" || call.dtype == "f8E5M2";
      if (call.reduce == Reduce::Avg && !floating) {
        error = "reduce avg needs a floating-point dtype, got " + call.dtype;
        return false;
      }
      if (call.dtype == "f8E8M0FNU") {
        error = "f8E8M0FNU values (scales) cannot be reduced; gather them";
        return false;
      }
    }
    return true;
  }

  /// permute's route: shift_<k>, or pairs_<source>_<target>_... with each
  /// rank at most once a source and once a target (a second send to one
  /// rank would never be received).
  static bool decodeRoute(CollectiveCall &call, const std::string &route,
                          const std::string &sizeText, std::string &error) {
    std::vector<int64_t> values;
    if (route.rfind("shift_", 0) == 0 &&
        parseList(route.substr(6), '_', INT64_MIN / 2, INT64_MAX / 2, values) &&
        values.size() == 1) {
      call.shifted = true;
      call.shift = values[0];
      return true;
    }
    if (route.rfind("pairs_", 0) == 0 &&
        parseList(route.substr(6), '_', 0, call.size - 1, values) &&
        values.size() % 2 == 0) {
      std::vector<int> sources(call.size, 0), targets(call.size, 0);
      for (size_t i = 0; i < values.size(); i += 2)
        if (sources[values[i]]++ || targets[values[i + 1]]++) {
          bool source = sources[values[i]] > 1;
          error = "route '" + route + "' names rank " +
                  std::to_string(source ? values[i] : values[i + 1]) +
                  " twice as a " + (source ? "source" : "target");
          return false;
        }
      call.shifted = false;
      call.pairs = values;
      return true;
    }
    error = "invalid route '" + route +
            "'; expected shift_<k> or pairs_<source>_<target>_... with ranks "
            "below size=" +
            sizeText;
    return false;
  }
};

} // namespace te::abi

#endif // TE_ABI_LIBRARYCALLS_H
