//===- HostFeatures.cpp - The processor features a kernel library needs ---===//

#include "te/ABI/HostFeatures.h"

#include "te/ABI/HostTiles.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace {

/// Where CPUID reports a feature, and which XCR0 state it needs the OS to
/// save.
enum class Leaf { Basic, Extended0, Extended1 };
enum class Register { EAX, EBX, ECX, EDX };
enum class State { None, AVX, AVX512, Tiles };

struct Feature {
  std::string_view name;
  Leaf leaf;
  Register reg;
  unsigned bit;
  State state;
};

// Intel's SDM, CPUID leaves 1 and 7 (sub-leaves 0 and 1).
constexpr Feature kFeatures[] = {
    {"avx", Leaf::Basic, Register::ECX, 28, State::AVX},
    {"fma", Leaf::Basic, Register::ECX, 12, State::AVX},
    {"f16c", Leaf::Basic, Register::ECX, 29, State::AVX},
    {"bmi", Leaf::Extended0, Register::EBX, 3, State::None},
    {"avx2", Leaf::Extended0, Register::EBX, 5, State::AVX},
    {"bmi2", Leaf::Extended0, Register::EBX, 8, State::None},
    {"avx512f", Leaf::Extended0, Register::EBX, 16, State::AVX512},
    {"avx512dq", Leaf::Extended0, Register::EBX, 17, State::AVX512},
    {"avx512ifma", Leaf::Extended0, Register::EBX, 21, State::AVX512},
    {"avx512cd", Leaf::Extended0, Register::EBX, 28, State::AVX512},
    {"avx512bw", Leaf::Extended0, Register::EBX, 30, State::AVX512},
    {"avx512vl", Leaf::Extended0, Register::EBX, 31, State::AVX512},
    {"avx512vbmi", Leaf::Extended0, Register::ECX, 1, State::AVX512},
    {"avx512vbmi2", Leaf::Extended0, Register::ECX, 6, State::AVX512},
    {"avx512vnni", Leaf::Extended0, Register::ECX, 11, State::AVX512},
    {"avx512bitalg", Leaf::Extended0, Register::ECX, 12, State::AVX512},
    {"avx512vpopcntdq", Leaf::Extended0, Register::ECX, 14, State::AVX512},
    {"amx-bf16", Leaf::Extended0, Register::EDX, 22, State::Tiles},
    {"avx512fp16", Leaf::Extended0, Register::EDX, 23, State::AVX512},
    {"amx-tile", Leaf::Extended0, Register::EDX, 24, State::Tiles},
    {"amx-int8", Leaf::Extended0, Register::EDX, 25, State::Tiles},
    {"avxvnni", Leaf::Extended1, Register::EAX, 4, State::AVX},
    {"avx512bf16", Leaf::Extended1, Register::EAX, 5, State::AVX512},
    {"amx-fp16", Leaf::Extended1, Register::EAX, 21, State::Tiles},
};

const Feature *lookUp(std::string_view name) {
  for (const Feature &feature : kFeatures)
    if (feature.name == name)
      return &feature;
  return nullptr;
}

#if defined(__x86_64__)
/// The CPUID words and XCR0 of this processor, read once.
struct Processor {
  // [leaf][register]
  uint32_t words[3][4] = {};
  uint64_t xcr0 = 0;

  Processor() {
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d))
      set(Leaf::Basic, a, b, c, d);
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      set(Leaf::Extended0, a, b, c, d);
      // Sub-leaf 0's EAX is the highest sub-leaf.
      if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
        set(Leaf::Extended1, a, b, c, d);
    }
    constexpr unsigned kOSXSave = 1u << 27;
    if (words[0][static_cast<int>(Register::ECX)] & kOSXSave) {
      uint32_t low, high;
      __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
      xcr0 = (static_cast<uint64_t>(high) << 32) | low;
    }
  }

  void set(Leaf leaf, unsigned a, unsigned b, unsigned c, unsigned d) {
    uint32_t *row = words[static_cast<int>(leaf)];
    row[0] = a;
    row[1] = b;
    row[2] = c;
    row[3] = d;
  }

  bool has(const Feature &feature) const {
    uint32_t word =
        words[static_cast<int>(feature.leaf)][static_cast<int>(feature.reg)];
    return (word >> feature.bit) & 1;
  }

  /// Whether the OS saves the registers of `state` (XCR0's components:
  /// SSE and AVX; opmask, ZMM_Hi256 and Hi16_ZMM; tile config and data).
  bool saves(State state) const {
    auto all = [&](uint64_t mask) { return (xcr0 & mask) == mask; };
    switch (state) {
    case State::None:
      return true;
    case State::AVX:
      return all(0x6);
    case State::AVX512:
      return all(0xe6);
    case State::Tiles:
      return all(0x60000);
    }
    return false;
  }
};

const Processor &getProcessor() {
  static const Processor processor;
  return processor;
}
#endif

} // namespace

const std::vector<std::string_view> &te::abi::getCheckableCPUFeatures() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> names;
    for (const Feature &feature : kFeatures)
      names.push_back(feature.name);
    return names;
  }();
  return names;
}

bool te::abi::isCheckableCPUFeature(std::string_view feature) {
  return lookUp(feature) != nullptr;
}

bool te::abi::isCPUFeatureUsable(std::string_view name) {
#if defined(__x86_64__)
  const Feature *feature = lookUp(name);
  if (!feature)
    return false;
  const Processor &processor = getProcessor();
  if (!processor.has(*feature) || !processor.saves(feature->state))
    return false;
  // Tile state is the process's only once it has asked for it.
  return feature->state != State::Tiles || !requestHostTilePermission();
#else
  (void)name;
  return false;
#endif
}

std::vector<std::string>
te::abi::findUnusableCPUFeatures(std::string_view list) {
  std::vector<std::string> unusable;
  while (!list.empty()) {
    size_t comma = std::min(list.find(','), list.size());
    std::string_view name = list.substr(0, comma);
    list.remove_prefix(std::min(comma + 1, list.size()));
    if (!name.empty() && !isCPUFeatureUsable(name))
      unusable.emplace_back(name);
  }
  return unusable;
}
