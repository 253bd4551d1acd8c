//===- Manifest.cpp - Kernel manifests, written and read ------------------===//

#include "te/ABI/Manifest.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>

using namespace te::abi;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

namespace {

struct ElementTypeInfo {
  const char *name;
  size_t bytes;
};

// Indexed by ElementType: the kernel types of ElementTypes.def, in order.
constexpr ElementTypeInfo kElementTypes[] = {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) {NAME, BYTES},
#include "te/ABI/ElementTypes.def"
};
constexpr int kNumElementTypes =
    sizeof(kElementTypes) / sizeof(kElementTypes[0]);

bool isValid(ElementType type) {
  return static_cast<int>(type) >= 0 &&
         static_cast<int>(type) < kNumElementTypes;
}

/// Whether the argument's bytes can be counted in a size_t.
bool fitsInAddressSpace(const ManifestArgument &arg) {
  size_t total = getElementTypeBytes(arg.elementType);
  for (int i = 0; i < arg.rank; ++i)
    if (static_cast<uint64_t>(arg.dims[i]) > SIZE_MAX ||
        __builtin_mul_overflow(total, static_cast<size_t>(arg.dims[i]), &total))
      return false;
  return true;
}

/// "2x128x16x64", or "scalar" for rank 0.
std::string formatDims(const ManifestArgument &arg) {
  if (arg.rank == 0)
    return "scalar";
  std::string text;
  for (int i = 0; i < arg.rank; ++i)
    text += (i ? "x" : "") + std::to_string(arg.dims[i]);
  return text;
}

/// "bf16 2x128x16x64", as in the manifest.
std::string formatTensorType(const ManifestArgument &arg) {
  const char *name = getElementTypeName(arg.elementType);
  return std::string(name ? name : "<invalid element type>") + " " +
         formatDims(arg);
}

} // namespace

const char *te::abi::getElementTypeName(ElementType type) {
  return isValid(type) ? kElementTypes[static_cast<int>(type)].name : nullptr;
}

size_t te::abi::getElementTypeBytes(ElementType type) {
  return isValid(type) ? kElementTypes[static_cast<int>(type)].bytes : 0;
}

const char *te::abi::listElementTypes() {
  static const std::string list = [] {
    std::string names;
    for (const ElementTypeInfo &info : kElementTypes)
      names += std::string(names.empty() ? "" : ", ") + info.name;
    return names;
  }();
  return list.c_str();
}

std::optional<ElementType> te::abi::lookUpElementType(std::string_view name) {
  for (int i = 0; i < kNumElementTypes; ++i)
    if (name == kElementTypes[i].name)
      return static_cast<ElementType>(i);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The structs
//===----------------------------------------------------------------------===//

bool ManifestArgument::operator==(const ManifestArgument &other) const {
  return isOutput == other.isOutput && elementType == other.elementType &&
         rank == other.rank && std::equal(dims, dims + rank, other.dims) &&
         role == other.role;
}

bool LaunchGeometry::operator==(const LaunchGeometry &other) const {
  return std::equal(grid, grid + 3, other.grid) &&
         std::equal(block, block + 3, other.block) &&
         sharedMemoryBytes == other.sharedMemoryBytes;
}

ManifestStep ManifestStep::kernel(std::string symbol, LaunchGeometry geometry,
                                  std::vector<ManifestOperand> operands) {
  ManifestStep step;
  step.symbol = std::move(symbol);
  step.geometry = geometry;
  step.operands = std::move(operands);
  return step;
}

ManifestStep ManifestStep::call(std::string function, std::string parameters,
                                std::vector<ManifestOperand> operands) {
  ManifestStep step;
  step.function = std::move(function);
  step.parameters = std::move(parameters);
  step.operands = std::move(operands);
  return step;
}

bool ManifestStep::operator==(const ManifestStep &other) const {
  return symbol == other.symbol && function == other.function &&
         parameters == other.parameters &&
         (isCall() || geometry == other.geometry) && operands == other.operands;
}

ManifestOperand StepPlan::addTemporary(size_t bytes) {
  declaredAfterSteps.resize(temporaries.size());
  declaredAfterSteps.push_back(steps.size());
  temporaries.push_back(bytes);
  return ManifestOperand::temporary(static_cast<int>(temporaries.size() - 1));
}

bool StepPlan::operator==(const StepPlan &other) const {
  if (temporaries != other.temporaries || !(steps == other.steps))
    return false;
  for (size_t i = 0; i < temporaries.size(); ++i)
    if (getDeclaredAfterSteps(i) != other.getDeclaredAfterSteps(i))
      return false;
  return true;
}

bool ManifestEntry::operator==(const ManifestEntry &other) const {
  return name == other.name && symbol == other.symbol &&
         arguments == other.arguments && hasStatus == other.hasStatus &&
         checks == other.checks && launch == other.launch && plan == other.plan;
}

//===----------------------------------------------------------------------===//
// The writer
//===----------------------------------------------------------------------===//

int te::abi::getManifestVersion(const Manifest &manifest) {
  int version = 1;
  for (const ManifestEntry &entry : manifest.entries) {
    bool roles = std::any_of(
        entry.arguments.begin(), entry.arguments.end(),
        [](const ManifestArgument &arg) { return !arg.role.empty(); });
    if (roles || entry.hasStatus)
      version = std::max(version, 2);
    if (entry.launch)
      version = std::max(version, 3);
    if (!entry.plan.empty())
      version = std::max(version, 4);
    for (const ManifestStep &step : entry.plan.steps)
      if (step.isCall())
        version = std::max(version, 5);
  }
  return version;
}

namespace {

std::string formatGeometry(const LaunchGeometry &geometry) {
  auto dims = [](const unsigned sizes[3]) {
    return std::to_string(sizes[0]) + "x" + std::to_string(sizes[1]) + "x" +
           std::to_string(sizes[2]);
  };
  return dims(geometry.grid) + " " + dims(geometry.block) + " " +
         std::to_string(geometry.sharedMemoryBytes);
}

std::string formatOperand(const ManifestOperand &operand) {
  switch (operand.kind) {
  case ManifestOperand::Kind::Argument:
    return "a" + std::to_string(operand.index);
  case ManifestOperand::Kind::Temporary:
    return "t" + std::to_string(operand.index);
  case ManifestOperand::Kind::Status:
    return "s";
  }
  return "?";
}

void writeEntry(const ManifestEntry &entry, std::string &text) {
  text += "entry " + entry.name + " " + entry.symbol + "\n";
  for (const ManifestArgument &arg : entry.arguments) {
    text += (arg.isOutput ? "out " : "in ") + formatTensorType(arg);
    if (!arg.role.empty())
      text += " " + arg.role;
    text += "\n";
  }
  if (entry.hasStatus)
    text += "status i64 4\n";
  for (const std::string &message : entry.checks)
    text += "check " + message + "\n";
  if (entry.launch)
    text += "launch " + formatGeometry(*entry.launch) + "\n";
  for (const std::string &line : writeStepPlan(entry.plan))
    text += line + "\n";
  text += "end\n";
}

} // namespace

std::vector<std::string> te::abi::writeStepPlan(const StepPlan &plan) {
  std::vector<std::string> lines;
  // Temporaries are numbered in the order of their lines: each is written
  // at its place or, when an earlier one's place is later, after that one
  // (such a plan does not read back equal, and writeManifest refuses it).
  size_t temporary = 0;
  auto declareUpTo = [&](size_t stepsBefore) {
    for (; temporary < plan.temporaries.size() &&
           plan.getDeclaredAfterSteps(temporary) <= stepsBefore;
         ++temporary)
      lines.push_back("temp " + std::to_string(plan.temporaries[temporary]));
  };
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    declareUpTo(index);
    const ManifestStep &step = plan.steps[index];
    std::string line =
        step.isCall()
            ? "call " + step.function + " " + step.parameters
            : "step " + step.symbol + " " + formatGeometry(step.geometry);
    for (const ManifestOperand &operand : step.operands)
      line += " " + formatOperand(operand);
    lines.push_back(std::move(line));
  }
  declareUpTo(SIZE_MAX);
  return lines;
}

std::string te::abi::writeManifest(const Manifest &manifest,
                                   std::string &error) {
  for (const ManifestEntry &entry : manifest.entries)
    for (const ManifestArgument &arg : entry.arguments)
      if (!isValid(arg.elementType) || arg.rank < 0 ||
          arg.rank > kMaxManifestRank) {
        error = "entry '" + entry.name +
                "' has an argument of an invalid element type or rank";
        return "";
      }
  std::string text =
      "te-kernel-abi " + std::to_string(getManifestVersion(manifest)) + "\n";
  for (const ManifestEntry &entry : manifest.entries)
    writeEntry(entry, text);
  // The reader states the rules; what it does not read back as written
  // (a symbol it refuses, a message with a line break, an operand naming
  // nothing) must not reach a runtime.
  Manifest reread;
  std::string why;
  if (!readManifest(text.c_str(), reread, why)) {
    error = "the manifest does not read back: " + why;
    return "";
  }
  if (!(reread == manifest)) {
    error = "the manifest does not read back as written";
    return "";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// The reader
//===----------------------------------------------------------------------===//

namespace {

// Real manifests are a few kilobytes; the cap keeps a corrupt, unterminated
// string from being scanned through the whole address space.
constexpr size_t kMaxManifestBytes = 16u << 20;

/// Quotes a token for a message, shortened so garbage stays readable.
std::string quote(std::string_view token) {
  constexpr size_t kMaxShown = 64;
  if (token.size() <= kMaxShown)
    return "'" + std::string(token) + "'";
  return "'" + std::string(token.substr(0, kMaxShown)) + "...'";
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool isValidEntryName(std::string_view name) {
  for (char c : name)
    if (!isLetter(c) && !isDigit(c) && c != '_' && c != '.' && c != '-')
      return false;
  return !name.empty();
}

// Symbols are what a linker accepts; '.' and '$' occur in generated names.
bool isValidSymbol(std::string_view symbol) {
  if (symbol.empty() || isDigit(symbol[0]))
    return false;
  for (char c : symbol)
    if (!isLetter(c) && !isDigit(c) && c != '_' && c != '.' && c != '$')
      return false;
  return true;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

/// Parses "2x128x16x64" or "scalar"; on failure explains why in `why`.
bool parseDims(std::string_view text, ManifestArgument &arg, std::string &why) {
  if (text == "scalar") {
    arg.rank = 0;
    return true;
  }
  std::vector<std::string_view> pieces = split(text, 'x');
  if (pieces.size() > kMaxManifestRank) {
    why = "rank " + std::to_string(pieces.size()) + " exceeds the maximum of " +
          std::to_string(kMaxManifestRank);
    return false;
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string_view piece = pieces[i];
    if (piece == "?") {
      why = "dynamic dimensions ('?') are not supported; kernels need static "
            "shapes";
      return false;
    }
    bool allDigits = !piece.empty();
    for (char c : piece)
      allDigits = allDigits && isDigit(c);
    if (!allDigits) {
      why = "dimension " + std::to_string(i) + " is " + quote(piece) +
            "; expected a decimal number, dimensions joined by 'x', or "
            "'scalar'";
      return false;
    }
    if (piece.size() > 1 && piece[0] == '0') {
      why = "dimension " + std::to_string(i) + " " + quote(piece) +
            " has a leading zero";
      return false;
    }
    int64_t value = 0;
    for (char c : piece) {
      if (__builtin_mul_overflow(value, int64_t(10), &value) ||
          __builtin_add_overflow(value, int64_t(c - '0'), &value)) {
        why = "dimension " + std::to_string(i) + " " + quote(piece) +
              " does not fit in 64 bits";
        return false;
      }
    }
    arg.dims[i] = value;
  }
  arg.rank = static_cast<int>(pieces.size());
  return true;
}

class ManifestParser {
public:
  ManifestParser(std::vector<ManifestEntry> &entries, std::string &error)
      : entries(entries), error(error) {}

  bool parse(std::string_view text);
  /// Reads the plan lines of one entry into `scratch`.
  bool parsePlan(const std::vector<std::string> &lines, ManifestEntry &scratch);

private:
  bool fail(int line, const std::string &message) {
    error = "line " + std::to_string(line) + ": " + message;
    return false;
  }

  bool tokenize(int line, std::string_view content,
                std::vector<std::string_view> &tokens);
  bool parseVersion(int line, const std::vector<std::string_view> &tokens);
  bool parseLine(int line, const std::vector<std::string_view> &tokens);
  bool parseArg(int line, const std::vector<std::string_view> &tokens);
  bool parseStatus(int line, const std::vector<std::string_view> &tokens);
  bool parseLaunch(int line, const std::vector<std::string_view> &tokens);
  bool parseTemp(int line, const std::vector<std::string_view> &tokens);
  bool parseStep(int line, const std::vector<std::string_view> &tokens);
  bool parseCall(int line, const std::vector<std::string_view> &tokens);
  bool parseOperands(int line, const std::vector<std::string_view> &tokens,
                     size_t first, ManifestStep &step);
  bool closeEntry(int line);
  bool parseGeometryTokens(int line,
                           const std::vector<std::string_view> &tokens,
                           size_t first, unsigned grid[3], unsigned block[3],
                           size_t &sharedMemoryBytes);

  std::vector<ManifestEntry> &entries;
  std::string &error;
  /// The entry being parsed, or null between blocks.
  ManifestEntry *open = nullptr;
  bool openHasOutputs = false;
  std::map<std::string, int, std::less<>> entryLines;
  /// The manifest's version, from its first line.
  int version = 0;
  /// Whether only a step plan is read: its entry's arguments and status
  /// are not known.
  bool planOnly = false;
};

bool ManifestParser::parse(std::string_view text) {
  if (text.empty())
    return fail(1, "the manifest is empty; expected 'te-kernel-abi " +
                       std::to_string(kNewestManifestVersion) + "'");
  // The last line may or may not end with '\n'.
  if (text.back() == '\n')
    text.remove_suffix(1);
  std::vector<std::string_view> lines = split(text, '\n');

  for (size_t index = 0; index < lines.size(); ++index) {
    int line = static_cast<int>(index) + 1;
    std::vector<std::string_view> tokens;
    if (!tokenize(line, lines[index], tokens))
      return false;
    if (line == 1 ? !parseVersion(line, tokens) : !parseLine(line, tokens))
      return false;
  }

  int endLine = static_cast<int>(lines.size()) + 1;
  if (open)
    return fail(endLine, "end of manifest inside entry '" + open->name +
                             "' (opened on line " + std::to_string(open->line) +
                             "); close it with 'end'");
  if (entries.empty())
    return fail(endLine, "the manifest declares no kernels; expected at least "
                         "one 'entry <name> <symbol>' ... 'end' block");
  return true;
}

bool ManifestParser::parsePlan(const std::vector<std::string> &lines,
                               ManifestEntry &scratch) {
  version = kNewestManifestVersion;
  planOnly = true;
  open = &scratch;
  for (size_t index = 0; index < lines.size(); ++index) {
    int line = static_cast<int>(index) + 1;
    std::vector<std::string_view> tokens;
    if (!tokenize(line, lines[index], tokens))
      return false;
    if (tokens[0] != "temp" && tokens[0] != "step" && tokens[0] != "call")
      return fail(line, "unexpected directive " + quote(tokens[0]) +
                            "; a step plan has 'temp', 'step' and 'call' "
                            "lines only");
    if (!parseLine(line, tokens))
      return false;
  }
  return closeEntry(static_cast<int>(lines.size()) + 1);
}

bool ManifestParser::tokenize(int line, std::string_view content,
                              std::vector<std::string_view> &tokens) {
  if (content.empty())
    return fail(line, "empty line; manifests have no blank lines");
  for (size_t column = 0; column < content.size(); ++column) {
    unsigned char c = static_cast<unsigned char>(content[column]);
    if (c < 0x20 || c >= 0x7f) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x", c);
      return fail(line, std::string("unexpected byte ") + byte + " at column " +
                            std::to_string(column + 1) +
                            "; manifests are printable ASCII with '\\n' "
                            "line ends");
    }
  }
  tokens = split(content, ' ');
  for (std::string_view token : tokens)
    if (token.empty())
      return fail(line, "tokens must be separated by exactly one space, "
                        "without leading or trailing spaces");
  return true;
}

bool ManifestParser::parseVersion(int line,
                                  const std::vector<std::string_view> &tokens) {
  std::string expected = "te-kernel-abi <version>";
  if (tokens.size() != 2 || tokens[0] != "te-kernel-abi")
    return fail(line, "expected '" + expected +
                          "' as the first line; this is not a te-mlir kernel "
                          "manifest");
  for (int known = 1; known <= kNewestManifestVersion; ++known)
    if (tokens[1] == std::to_string(known))
      version = known;
  if (!version)
    return fail(line, "unsupported manifest version " + quote(tokens[1]) +
                          "; this runtime reads versions 1 to " +
                          std::to_string(kNewestManifestVersion) +
                          ", rebuild the kernels with a matching te-mlir");
  return true;
}

bool ManifestParser::parseLine(int line,
                               const std::vector<std::string_view> &tokens) {
  std::string_view directive = tokens[0];
  if (directive == "entry") {
    if (open)
      return fail(line, "'entry' inside entry '" + open->name +
                            "' (opened on line " + std::to_string(open->line) +
                            "); close it with 'end' first");
    if (tokens.size() != 3)
      return fail(line, "expected 'entry <name> <symbol>'");
    if (!isValidEntryName(tokens[1]))
      return fail(line, "invalid entry name " + quote(tokens[1]) +
                            "; use characters from [A-Za-z0-9_.-]");
    if (!isValidSymbol(tokens[2]))
      return fail(line, "invalid symbol " + quote(tokens[2]) +
                            "; expected a C identifier");
    auto [it, inserted] = entryLines.emplace(std::string(tokens[1]), line);
    if (!inserted)
      return fail(line, "duplicate entry " + quote(tokens[1]) +
                            " (first declared on line " +
                            std::to_string(it->second) + ")");
    ManifestEntry &entry = entries.emplace_back();
    entry.name = std::string(tokens[1]);
    entry.symbol = std::string(tokens[2]);
    entry.line = line;
    open = &entry;
    openHasOutputs = false;
    return true;
  }
  if (directive == "in" || directive == "out")
    return parseArg(line, tokens);
  if (version >= 2 && directive == "status")
    return parseStatus(line, tokens);
  if (version >= 2 && directive == "check") {
    if (!open || !open->hasStatus)
      return fail(line, "'check' outside an entry with a 'status' line");
    if (tokens.size() < 2)
      return fail(line, "expected 'check <message>'");
    std::string message(tokens[1]);
    for (size_t i = 2; i < tokens.size(); ++i)
      message += " " + std::string(tokens[i]);
    open->checks.push_back(std::move(message));
    return true;
  }
  if (version >= 3 && directive == "launch")
    return parseLaunch(line, tokens);
  if (version >= 4 && directive == "temp")
    return parseTemp(line, tokens);
  if (version >= 4 && directive == "step")
    return parseStep(line, tokens);
  if (version >= 5 && directive == "call")
    return parseCall(line, tokens);
  if (directive == "end") {
    if (!open)
      return fail(line, "'end' without an open 'entry'");
    if (tokens.size() != 1)
      return fail(line, "expected 'end' alone on its line");
    return closeEntry(line);
  }
  return fail(line, "unknown directive " + quote(directive) +
                        (version >= 5   ? "; expected 'entry', 'in', 'out', "
                                          "'status', 'check', 'launch', "
                                          "'temp', 'step', 'call' or 'end'"
                         : version >= 4 ? "; expected 'entry', 'in', 'out', "
                                          "'status', 'check', 'launch', "
                                          "'temp', 'step' or 'end'"
                         : version >= 3 ? "; expected 'entry', 'in', 'out', "
                                          "'status', 'check', 'launch' or "
                                          "'end'"
                         : version >= 2 ? "; expected 'entry', 'in', 'out', "
                                          "'status', 'check' or 'end'"
                                        : "; expected 'entry', 'in', 'out' or "
                                          "'end'"));
}

bool ManifestParser::closeEntry(int line) {
  if (open->hasStatus && open->checks.empty())
    return fail(line, "entry '" + open->name +
                          "' has a 'status' line but no 'check' lines");
  if (!open->plan.temporaries.empty() && open->plan.steps.empty())
    return fail(line, "entry '" + open->name +
                          "' has 'temp' lines but no 'step' or 'call' lines "
                          "to use them");
  // Operands may name arguments declared after the step; check them now.
  for (const ManifestStep &step : open->plan.steps) {
    for (const ManifestOperand &operand : step.operands) {
      using Kind = ManifestOperand::Kind;
      if (planOnly && operand.kind != Kind::Temporary)
        continue;
      if (operand.kind == Kind::Argument &&
          operand.index >= static_cast<int>(open->arguments.size()))
        return fail(step.line,
                    "operand a" + std::to_string(operand.index) +
                        " names argument " + std::to_string(operand.index) +
                        ", but entry '" + open->name + "' has " +
                        std::to_string(open->arguments.size()) + " arguments");
      if (operand.kind == Kind::Temporary &&
          operand.index >= static_cast<int>(open->plan.temporaries.size()))
        return fail(step.line,
                    "operand t" + std::to_string(operand.index) +
                        " names temporary " + std::to_string(operand.index) +
                        ", but entry '" + open->name + "' has " +
                        std::to_string(open->plan.temporaries.size()) +
                        " 'temp' lines");
      if (operand.kind == Kind::Status && !open->hasStatus)
        return fail(step.line, "operand 's' names the status buffer, but "
                               "entry '" +
                                   open->name + "' has no 'status' line");
    }
  }
  open = nullptr;
  return true;
}

bool ManifestParser::parseStatus(int line,
                                 const std::vector<std::string_view> &tokens) {
  if (!open)
    return fail(line, "'status' outside an entry block");
  if (tokens.size() != 3 || tokens[1] != "i64" || tokens[2] != "4")
    return fail(line, "expected 'status i64 4'");
  if (open->hasStatus)
    return fail(line, "second 'status' line in entry '" + open->name + "'");
  open->hasStatus = true;
  return true;
}

/// Parses a decimal count of at most `maxDigits` digits below `limit`.
static bool parseCount(std::string_view text, size_t maxDigits, uint64_t limit,
                       uint64_t &out) {
  if (text.empty() || text.size() > maxDigits ||
      (text.size() > 1 && text[0] == '0'))
    return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  if (value >= limit)
    return false;
  out = value;
  return true;
}

/// Parses "AxBxC" (one to three positive dimensions below 2^31) into
/// `out`, the missing ones 1.
static bool parseGeometry(std::string_view text, unsigned out[3]) {
  std::vector<std::string_view> parts = split(text, 'x');
  if (parts.empty() || parts.size() > 3)
    return false;
  for (int i = 0; i < 3; ++i) {
    out[i] = 1;
    uint64_t value = 0;
    if (i >= static_cast<int>(parts.size()))
      continue;
    if (!parseCount(parts[i], 10, uint64_t(1) << 31, value) || value == 0)
      return false;
    out[i] = static_cast<unsigned>(value);
  }
  return true;
}

/// Parses the `<grid> <block> <shared-bytes>` of a launch or step line
/// starting at tokens[first].
bool ManifestParser::parseGeometryTokens(
    int line, const std::vector<std::string_view> &tokens, size_t first,
    unsigned grid[3], unsigned block[3], size_t &sharedMemoryBytes) {
  if (!parseGeometry(tokens[first], grid))
    return fail(line, "invalid grid " + quote(tokens[first]) +
                          "; expected one to three dimensions like 128x4x1, "
                          "each from 1 to 2147483647");
  if (!parseGeometry(tokens[first + 1], block))
    return fail(line, "invalid block " + quote(tokens[first + 1]) +
                          "; expected one to three dimensions like 256x1x1, "
                          "each from 1 to 2147483647");
  uint64_t value = 0;
  if (!parseCount(tokens[first + 2], 10, uint64_t(1) << 31, value))
    return fail(line, "invalid shared memory size " + quote(tokens[first + 2]) +
                          "; expected a byte count below 2^31");
  sharedMemoryBytes = static_cast<size_t>(value);
  return true;
}

bool ManifestParser::parseLaunch(int line,
                                 const std::vector<std::string_view> &tokens) {
  if (!open)
    return fail(line, "'launch' outside an entry block");
  if (open->launch)
    return fail(line, "second 'launch' line in entry '" + open->name + "'");
  if (!open->plan.steps.empty())
    return fail(line, "'launch' in entry '" + open->name +
                          "', which has 'step' lines; an entry is one kernel "
                          "(launch) or several (steps), not both");
  if (tokens.size() != 4)
    return fail(line, "expected 'launch <grid> <block> <shared-bytes>', e.g. "
                      "'launch 128x1x1 256x1x1 0'");
  LaunchGeometry geometry;
  if (!parseGeometryTokens(line, tokens, 1, geometry.grid, geometry.block,
                           geometry.sharedMemoryBytes))
    return false;
  open->launch = geometry;
  return true;
}

bool ManifestParser::parseTemp(int line,
                               const std::vector<std::string_view> &tokens) {
  if (!open)
    return fail(line, "'temp' outside an entry block");
  uint64_t bytes = 0;
  // Temporaries are device memory for one launch; 2^40 bytes is far beyond
  // any device and keeps sums of sizes from overflowing.
  if (tokens.size() != 2 ||
      !parseCount(tokens[1], 13, uint64_t(1) << 40, bytes) || bytes == 0)
    return fail(line, "expected 'temp <bytes>' with a byte count from 1 to "
                      "2^40");
  open->plan.addTemporary(static_cast<size_t>(bytes));
  return true;
}

bool ManifestParser::parseStep(int line,
                               const std::vector<std::string_view> &tokens) {
  if (!open)
    return fail(line, "'step' outside an entry block");
  if (open->launch)
    return fail(line, "'step' in entry '" + open->name +
                          "', which has a 'launch' line; an entry is one "
                          "kernel (launch) or several (steps), not both");
  if (tokens.size() < 5)
    return fail(line, "expected 'step <symbol> <grid> <block> <shared-bytes> "
                      "<operand>...', e.g. 'step k0 64x1x1 256x1x1 0 a0 t0'");
  ManifestStep step;
  step.line = line;
  if (!isValidSymbol(tokens[1]))
    return fail(line, "invalid symbol " + quote(tokens[1]) +
                          "; expected a C identifier");
  step.symbol = std::string(tokens[1]);
  if (!parseGeometryTokens(line, tokens, 2, step.geometry.grid,
                           step.geometry.block,
                           step.geometry.sharedMemoryBytes))
    return false;
  if (!parseOperands(line, tokens, 5, step))
    return false;
  open->plan.steps.push_back(std::move(step));
  return true;
}

bool ManifestParser::parseCall(int line,
                               const std::vector<std::string_view> &tokens) {
  if (!open)
    return fail(line, "'call' outside an entry block");
  if (open->launch)
    return fail(line, "'call' in entry '" + open->name +
                          "', which has a 'launch' line; an entry is one "
                          "kernel (launch) or several steps, not both");
  if (tokens.size() < 3)
    return fail(line, "expected 'call <function> <parameters> <operand>...', "
                      "e.g. 'call cublaslt.matmul m=64,n=32 a0 a1 a2'");
  auto isFunctionChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_';
  };
  auto isParameterChar = [&](char c) {
    return isFunctionChar(c) || c == '=' || c == ',' || c == '-';
  };
  std::string_view function = tokens[1], parameters = tokens[2];
  if (function.empty() || function.size() > 63 ||
      !std::all_of(function.begin(), function.end(), isFunctionChar))
    return fail(line, "invalid library function " + quote(function) +
                          "; expected 1 to 63 letters, digits, '.' or '_'");
  if (parameters.size() > 4096 ||
      !std::all_of(parameters.begin(), parameters.end(), isParameterChar))
    return fail(line, "invalid parameters " + quote(parameters) +
                          "; expected key=value pairs separated by ','");
  ManifestStep step;
  step.line = line;
  step.function = std::string(function);
  step.parameters = std::string(parameters);
  if (!parseOperands(line, tokens, 3, step))
    return false;
  open->plan.steps.push_back(std::move(step));
  return true;
}

bool ManifestParser::parseOperands(int line,
                                   const std::vector<std::string_view> &tokens,
                                   size_t first, ManifestStep &step) {
  for (size_t i = first; i < tokens.size(); ++i) {
    std::string_view token = tokens[i];
    using Kind = ManifestOperand::Kind;
    if (token == "s") {
      step.operands.push_back({Kind::Status, 0});
      continue;
    }
    uint64_t index = 0;
    if (token.size() < 2 || (token[0] != 'a' && token[0] != 't') ||
        !parseCount(token.substr(1), 6, 1u << 20, index))
      return fail(line, "invalid operand " + quote(token) +
                            "; expected a<N> (argument N), t<N> (temporary "
                            "N) or s (the status buffer)");
    step.operands.push_back({token[0] == 'a' ? Kind::Argument : Kind::Temporary,
                             static_cast<int>(index)});
  }
  return true;
}

bool ManifestParser::parseArg(int line,
                              const std::vector<std::string_view> &tokens) {
  std::string directive(tokens[0]);
  if (!open)
    return fail(line, "'" + directive + "' outside an entry block");
  if (open->hasStatus)
    return fail(line, "'" + directive + "' after 'status' in entry '" +
                          open->name + "'; the status comes after the outputs");
  bool isOutput = directive == "out";
  bool hasRole = version >= 2 && !isOutput && tokens.size() == 4;
  if (tokens.size() != 3 && !hasRole)
    return fail(line, "expected '" + directive + " <dtype> <dims>" +
                          (version >= 2 && !isOutput ? " [<role>]'" : "'"));
  ManifestArgument arg;
  arg.isOutput = isOutput;
  if (hasRole) {
    arg.role = std::string(tokens[3]);
    for (char c : arg.role)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' &&
          c != ':' && c != '-')
        return fail(line, "invalid role " + quote(tokens[3]) +
                              "; use characters from [A-Za-z0-9_:-]");
  }
  if (!arg.isOutput && openHasOutputs)
    return fail(line, "'in' after 'out' in entry '" + open->name +
                          "'; list all inputs before the outputs");
  std::optional<ElementType> elementType = lookUpElementType(tokens[1]);
  if (!elementType)
    return fail(line, "unknown dtype " + quote(tokens[1]) +
                          "; expected one of " + listElementTypes());
  arg.elementType = *elementType;
  std::string why;
  if (!parseDims(tokens[2], arg, why))
    return fail(line, "invalid dims " + quote(tokens[2]) + ": " + why);
  if (!fitsInAddressSpace(arg))
    return fail(line, "a " + formatTensorType(arg) +
                          " tensor does not fit in the address space");
  openHasOutputs = openHasOutputs || arg.isOutput;
  open->arguments.push_back(arg);
  return true;
}

} // namespace

bool te::abi::readManifest(const char *text, Manifest &manifest,
                           std::string &error) {
  size_t length = strnlen(text, kMaxManifestBytes + 1);
  if (length > kMaxManifestBytes) {
    error = "the manifest is longer than " +
            std::to_string(kMaxManifestBytes >> 20) +
            " MiB or not NUL-terminated";
    return false;
  }
  manifest.entries.clear();
  return ManifestParser(manifest.entries, error)
      .parse(std::string_view(text, length));
}

bool te::abi::readStepPlan(const std::vector<std::string> &lines,
                           StepPlan &plan, std::string &error) {
  std::vector<ManifestEntry> unused;
  ManifestEntry scratch;
  scratch.name = "<plan>";
  if (!ManifestParser(unused, error).parsePlan(lines, scratch))
    return false;
  plan = std::move(scratch.plan);
  return true;
}
