//===- Target.cpp - The target interface and the kernel entry points -----===//

#include "te/Target/Target.h"
#include "te/ABI/Environment.h"
#include "te/ABI/HostTiles.h"

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::plugin;

//===----------------------------------------------------------------------===//
// TargetInfo, NativeLowering, TargetBackend
//===----------------------------------------------------------------------===//

bool TargetInfo::hasFeature(llvm::StringRef feature) const {
  llvm::SmallVector<llvm::StringRef> enabled;
  llvm::StringRef(features).split(enabled, ',', -1, false);
  for (llvm::StringRef entry : enabled)
    if (entry.consume_front("+") && entry == feature)
      return true;
  return false;
}

namespace {
/// The LLVM features of processor `cpu` on `triple`, or nullopt if LLVM
/// does not know that processor there.
std::optional<std::string> featuresOfProcessor(const std::string &triple,
                                               const std::string &cpu) {
  llvm::InitializeNativeTarget();
  llvm::Triple parsed(triple);
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(parsed, error);
  if (!target)
    return std::nullopt;
  // Asked of the generic processor first: LLVM warns on stderr when a
  // subtarget is created for a processor it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      target->createMCSubtargetInfo(parsed, "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return std::nullopt;
  std::unique_ptr<llvm::MCSubtargetInfo> processor(
      target->createMCSubtargetInfo(parsed, cpu, ""));
  llvm::SubtargetFeatures features;
  for (const llvm::SubtargetFeatureKV &feature :
       processor->getAllProcessorFeatures())
    features.AddFeature(feature.Key,
                        processor->getFeatureBits().test(feature.Value));
  return features.getString();
}
} // namespace

namespace {
/// TE_CPU_AMX's values.
enum class HostTileMode { Auto, Off, Emulate };

std::optional<HostTileMode> getHostTileMode() {
  std::string mode = ::te::abi::getSetting("TE_CPU_AMX");
  if (mode.empty() || mode == "auto")
    return HostTileMode::Auto;
  if (mode == "off")
    return HostTileMode::Off;
  if (mode == "emulate")
    return HostTileMode::Emulate;
  return std::nullopt;
}

/// `features` with every AMX feature enabled (`on`) or disabled.
std::string setTileFeatures(llvm::StringRef features, bool on) {
  llvm::SubtargetFeatures result;
  llvm::SmallVector<llvm::StringRef> entries;
  features.split(entries, ',', -1, false);
  bool tile = false, bf16 = false;
  for (llvm::StringRef entry : entries) {
    llvm::StringRef name = entry.drop_front();
    if (!name.starts_with("amx-")) {
      result.AddFeature(entry);
      continue;
    }
    tile |= name == "amx-tile";
    bf16 |= name == "amx-bf16";
    result.AddFeature(name, on);
  }
  // The two the tile GEMM uses, when an emulation asks for them.
  if (on && !tile)
    result.AddFeature("amx-tile");
  if (on && !bf16)
    result.AddFeature("amx-bf16");
  return result.getString();
}

/// The host target and, when it lost its tile features, why.
struct HostTargetState {
  TargetInfo info;
  std::optional<std::string> tileRefusal;
};

const HostTargetState &getHostTargetState() {
  static const HostTargetState state = [] {
    HostTargetState state;
    std::string triple = llvm::sys::getProcessTriple();
    std::string requested = ::te::abi::getSetting("TE_CPU_ARCH");
    if (!requested.empty()) {
      state.info =
          TargetInfo{"cpu", triple, requested,
                     featuresOfProcessor(triple, requested).value_or("")};
    } else {
      llvm::SubtargetFeatures features;
      for (const llvm::StringMapEntry<bool> &feature :
           llvm::sys::getHostCPUFeatures())
        features.AddFeature(feature.first(), feature.second);
      state.info = TargetInfo{"cpu", triple, llvm::sys::getHostCPUName().str(),
                              features.getString()};
    }
    // (An invalid TE_CPU_AMX is getHostTargetError's; it compiles nothing.)
    HostTileMode mode = getHostTileMode().value_or(HostTileMode::Auto);
    if (mode == HostTileMode::Emulate) {
      state.info.features = setTileFeatures(state.info.features, true);
      return state;
    }
    if (!state.info.hasFeature("amx-tile"))
      return state;
    if (mode == HostTileMode::Off)
      state.tileRefusal = "TE_CPU_AMX=off";
    else if (requested.empty())
      // Compiling for this host: its kernels use the tiles only if this
      // process may (the runtime's cpu device asks the same).
      state.tileRefusal = ::te::abi::requestHostTilePermission();
    if (state.tileRefusal)
      state.info.features = setTileFeatures(state.info.features, false);
    return state;
  }();
  return state;
}
} // namespace

std::optional<std::string> mlir::te::plugin::getHostTargetError() {
  // Read once per process, as getHostTarget reads TE_CPU_ARCH.
  static const std::optional<std::string> error =
      []() -> std::optional<std::string> {
    if (!getHostTileMode())
      return "TE_CPU_AMX=" + ::te::abi::getSetting("TE_CPU_AMX") +
             " is not a setting it takes; use auto (or unset it), off or "
             "emulate";
    std::string requested = ::te::abi::getSetting("TE_CPU_ARCH");
    if (requested.empty() ||
        featuresOfProcessor(llvm::sys::getProcessTriple(), requested))
      return std::nullopt;
    return "TE_CPU_ARCH=" + requested + " is not a processor LLVM knows for " +
           llvm::sys::getProcessTriple() +
           "; use one such as x86-64-v3, znver4 or sapphirerapids (`llc "
           "-mcpu=help` lists them), or unset it to compile for this host";
  }();
  return error;
}

const TargetInfo &mlir::te::plugin::getHostTarget() {
  return getHostTargetState().info;
}

bool mlir::te::plugin::isEmulatingHostTiles() {
  return getHostTileMode() == HostTileMode::Emulate &&
         getHostTarget().hasFeature("amx-tile");
}

std::optional<std::string> mlir::te::plugin::getHostTileRefusal() {
  return getHostTargetState().tileRefusal;
}

NativeLowering::~NativeLowering() = default;

std::vector<LoweringStrategy> NativeLowering::getStrategies(Operation *) const {
  return {};
}
TargetBackend::~TargetBackend() = default;

const NativeLowering *TargetBackend::getNativeLowering() const {
  return nullptr;
}

std::string TargetBackend::getPipelineIdentity() const { return name; }

void TargetBackend::getDependentDialects(DialectRegistry &) const {}

bool TargetBackend::buildReferencePipeline(OpPassManager &) const {
  return false;
}

std::vector<std::string> TargetBackend::getArtifactNames() const { return {}; }

void mlir::te::buildLoweringPipeline(
    OpPassManager &pm, const TargetBackend &target,
    function_ref<void(OpPassManager &)> addOpLowering) {
  pm.addPass(createTEInsertChecks());
  pm.addPass(createTEFoldEmpty());
  if (addOpLowering)
    addOpLowering(pm);
  pm.addPass(createTEMaterializeChecks());
  target.buildPipeline(pm);
}

LogicalResult TargetBackend::emitArtifact(ModuleOp lowered,
                                          ArrayRef<KernelEntry>, StringRef,
                                          StringRef artifact, StringRef,
                                          unsigned) const {
  return lowered.emitError("target ")
         << name << " cannot stop at '" << artifact
         << "': its serializer has no intermediate files";
}

//===----------------------------------------------------------------------===//
// Kernel entry points
//===----------------------------------------------------------------------===//

std::optional<std::string> mlir::te::getKernelElementTypeName(Type type) {
  // Builtin types print as MLIR spells them, which is what the table holds.
  std::string printed;
  llvm::raw_string_ostream(printed) << type;
  for (llvm::StringRef name : {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) NAME,
#include "te/ABI/ElementTypes.def"
       })
    if (printed == name)
      return printed;
  return std::nullopt;
}

namespace {

/// The element types the runtime's manifest parser knows, by MLIR spelling.
bool isKernelElementType(Type type) {
  return getKernelElementTypeName(type).has_value();
}

/// "f32, f64, ... or i64": the kernel types of te/ABI/ElementTypes.def.
std::string describeKernelElementTypes() {
  std::vector<std::string> names = {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) NAME,
#include "te/ABI/ElementTypes.def"
  };
  std::string last = names.back();
  names.pop_back();
  return llvm::join(names, ", ") + " or " + last;
}

/// Whether the elements of a static `type`, and their bytes, can be counted
/// in 64-bit signed integers (the buffer sizes and offsets of memref
/// descriptors and of the runtime). ShapedType::getNumElements wraps
/// around instead: 2^32 x 2^32 elements count as 0.
bool hasCountableSize(RankedTensorType type) {
  int64_t count = (type.getElementTypeBitWidth() + 7) / 8;
  for (int64_t size : type.getShape())
    if (llvm::MulOverflow(count, size, count))
      return false;
  return true;
}

/// Checks argument or result `index` of `func`, whose type is `type`;
/// a refusal is located at `loc` (the argument, or the function).
LogicalResult checkKernelType(func::FuncOp func, Type type, StringRef role,
                              unsigned index, Location loc) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && tensor.hasStaticShape() &&
      isKernelElementType(tensor.getElementType()) && !hasCountableSize(tensor))
    return mlir::emitError(loc, "kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type << ", whose size overflows: "
           << llvm::join(llvm::map_range(
                             tensor.getShape(),
                             [](int64_t size) { return std::to_string(size); }),
                         " x ")
           << " elements of " << (tensor.getElementTypeBitWidth() + 7) / 8
           << " bytes are more than a 64-bit size holds (2^63 - 1 bytes)";
  if (tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0)
    return mlir::emitError(loc, "kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type << " with no elements; kernels take and return tensors "
           << "with at least one element";
  if (!tensor || !tensor.hasStaticShape() ||
      !isKernelElementType(tensor.getElementType()))
    return mlir::emitError(loc, "kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type << "; kernels take and return statically shaped tensors of "
           << describeKernelElementTypes();
  return success();
}

} // namespace

FailureOr<SmallVector<KernelEntry>>
mlir::te::collectKernelEntries(ModuleOp module) {
  SmallVector<KernelEntry> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    KernelEntry entry{func.getSymName().str(), {}, {}};
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      if (failed(checkKernelType(func, type, "argument", i,
                                 func.getArgument(i).getLoc())))
        return failure();
      entry.inputs.push_back(cast<RankedTensorType>(type));
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      if (failed(checkKernelType(func, type, "result", i, func.getLoc())))
        return failure();
      entry.outputs.push_back(cast<RankedTensorType>(type));
    }
    entries.push_back(std::move(entry));
  }
  if (!entries.empty())
    return entries;
  // At the first function there is, which is private or has no body.
  auto functions = module.getOps<func::FuncOp>();
  if (functions.empty())
    return mlir::emitError(module.getLoc(),
                           "the module has no public function to compile "
                           "as a kernel entry point");
  func::FuncOp first = *functions.begin();
  return first.emitError("the module has no public function to compile as a "
                         "kernel entry point: @")
         << first.getSymName()
         << (first.isPrivate() ? " is private" : " has no body");
}

FailureOr<KernelChecks>
mlir::te::takeKernelChecks(ModuleOp lowered,
                           MutableArrayRef<KernelEntry> entries) {
  KernelChecks checks(entries.size());
  auto table = lowered->getAttrOfType<DictionaryAttr>(kKernelChecksAttrName);
  if (!table)
    return checks;
  lowered->removeAttr(kKernelChecksAttrName);
  RankedTensorType statusType = getKernelStatusType(lowered.getContext());
  for (NamedAttribute named : table) {
    auto it = llvm::find_if(entries, [&](const KernelEntry &entry) {
      return entry.name == named.getName().getValue();
    });
    auto messages = dyn_cast<ArrayAttr>(named.getValue());
    // At the function the checks were recorded for, where there is one.
    Location loc = lowered.getLoc();
    if (Operation *function = lowered.lookupSymbol(named.getName()))
      loc = function->getLoc();
    if (it == entries.end() || !messages)
      return mlir::emitError(loc, "run-time checks recorded for ")
             << named.getName() << ", which is not a kernel entry point";
    std::vector<std::string> &list = checks[it - entries.begin()];
    for (Attribute message : messages) {
      auto text = dyn_cast<StringAttr>(message);
      if (!text)
        return mlir::emitError(loc, "malformed ")
               << kKernelChecksAttrName << " attribute";
      // Manifest tokens are separated by exactly one space.
      SmallVector<StringRef> words;
      text.getValue().split(words, ' ', -1, /*KeepEmpty=*/false);
      list.push_back(llvm::join(words, " "));
    }
    it->outputs.push_back(statusType);
  }
  return checks;
}

namespace {

/// Assigns the roles of the entry arguments the te ops of `function` read.
class RoleCollector {
public:
  RoleCollector(func::FuncOp function, std::vector<std::string> &roles)
      : function(function), roles(roles) {}

  /// The input index of `value` when it is an argument of the function.
  std::optional<unsigned> inputOf(Value value) {
    auto argument = dyn_cast_or_null<BlockArgument>(value);
    if (!argument || argument.getOwner() != &function.front())
      return std::nullopt;
    return argument.getArgNumber();
  }

  void assign(Value value, const std::string &role) {
    if (std::optional<unsigned> input = inputOf(value))
      if (roles[*input].empty())
        roles[*input] = role;
  }

  void attention(AttentionOpInterface op) {
    assign(op.getAlibiSlopes(), "alibi_slopes");
    assign(op.getRngState(), "rng_state");
    HeadTensorDims q =
        getHeadTensorDims(op.getLayout(), op.getQ().getType().getShape());
    HeadTensorDims k =
        getHeadTensorDims(op.getLayout(), op.getK().getType().getShape());
    if (op.getLayout() == QKVLayout::thd) {
      ragged(op.getCuSeqlensQ(), op.getSeqOffsetsQ(), q.seq);
      ragged(op.getCuSeqlensKv(), op.getSeqOffsetsKv(), k.seq);
    } else if (op.getSeqlensQ()) {
      assign(op.getSeqlensQ(), "seqlens:" + std::to_string(q.seq));
      assign(op.getSeqlensKv(), "seqlens:" + std::to_string(k.seq));
    }
  }

  /// RoPE's cu_seqlens (without context parallelism, whose chunks no role
  /// describes) and start positions that keep every position inside freqs.
  template <typename OpT> void rope(OpT op) {
    RankedTensorType input = op.getInput().getType();
    int64_t rows =
        cast<RankedTensorType>(op.getFreqs().getType()).getDimSize(0);
    int64_t tokens = input.getDimSize(op.getSequenceDim());
    if (!input.hasStaticShape() || ShapedType::isDynamic(rows) ||
        (op.isThd() && op.getCpSizeAttr().getInt() != 1))
      return;
    if (op.isThd())
      ragged(op.getCuSeqlens(), Value(), tokens);
    int64_t span = op.isThd() ? tokens : tokens * op.getCpSizeAttr().getInt();
    if (rows >= span)
      assign(op.getStartPositions(),
             "positions:" + std::to_string(rows - span));
  }

  /// te.qkv_rope's start positions: every token within both freqs.
  void qkvRope(QkvRopeOp op) {
    RankedTensorType qkv = op.getQkv().getType();
    int64_t rows = op.getPositionRows();
    if (!qkv.hasStaticShape() || ShapedType::isDynamic(rows))
      return;
    int64_t tokens = qkv.getDimSize(op.getSequenceDim());
    if (rows >= tokens)
      assign(op.getStartPositions(),
             "positions:" + std::to_string(rows - tokens));
  }

  /// cu_seqlens and seq_offsets of one side, generated together.
  void ragged(Value cuSeqlens, Value offsets, int64_t tokens) {
    std::optional<unsigned> cu = inputOf(cuSeqlens);
    std::optional<unsigned> off = offsets ? inputOf(offsets) : std::nullopt;
    if (!cu || ShapedType::isDynamic(tokens))
      return;
    std::string t = std::to_string(tokens);
    // A cu_seqlens argument both sides read must fit the shorter one.
    if (roles[*cu].empty() || roles[*cu].rfind("cu_seqlens:", 0) == 0) {
      int64_t previous = INT64_MAX;
      if (!roles[*cu].empty())
        previous = std::stoll(roles[*cu].substr(11));
      if (tokens < previous)
        roles[*cu] = "cu_seqlens:" + t + ":" +
                     (off ? std::to_string(*off) : std::string("-1"));
    }
    if (off && roles[*off].empty())
      roles[*off] = "seq_offsets:" + t + ":" + std::to_string(*cu);
  }

  void collect() {
    function.walk([&](Operation *op) {
      if (auto attention = dyn_cast<AttentionOpInterface>(op))
        this->attention(attention);
      else if (auto quantize = dyn_cast<QuantizeOp>(op))
        assign(quantize.getScale(), "positive");
      else if (auto norm = dyn_cast<NormOp>(op))
        assign(norm.getScale(), "positive");
      else if (auto norm = dyn_cast<NormBackwardOp>(op))
        assign(norm.getRsigma(), "positive");
      else if (auto activation = dyn_cast<ActivationOp>(op))
        assign(activation.getScale(), "positive");
      else if (auto activation = dyn_cast<ActivationBackwardOp>(op))
        assign(activation.getScale(), "positive");
      else if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
        if (dequantize.getScaleInv().getType().getElementType().isF32())
          assign(dequantize.getScaleInv(), "positive");
      } else if (auto computeScale = dyn_cast<ComputeScaleOp>(op))
        assign(computeScale.getAmax(), "nonnegative");
      else if (auto update = dyn_cast<UpdateDelayedScalingOp>(op)) {
        assign(update.getAmaxHistory(), "nonnegative");
        assign(update.getAmax(), "nonnegative");
        assign(update.getScale(), "positive");
      } else if (auto crossEntropy = dyn_cast<CrossEntropyOp>(op)) {
        // Split over a group, targets are classes of every rank's columns.
        int64_t vocab = crossEntropy.getLogits().getType().getShape().back();
        if (!ShapedType::isDynamic(vocab))
          assign(crossEntropy.getTarget(),
                 "classes:" +
                     std::to_string(vocab * crossEntropy.getVocabShards()));
      } else if (auto rope = dyn_cast<RopeOp>(op)) {
        this->rope(rope);
      } else if (auto rope = dyn_cast<RopeBackwardOp>(op)) {
        this->rope(rope);
      } else if (auto qkvRope = dyn_cast<QkvRopeOp>(op)) {
        this->qkvRope(qkvRope);
      } else if (auto grouped = dyn_cast<GroupedMatmulOp>(op)) {
        int64_t tokens = grouped.getA().getType().getDimSize(0);
        if (!ShapedType::isDynamic(tokens))
          assign(grouped.getSplits(), "splits:" + std::to_string(tokens));
        for (Value scale : {grouped.getAScaleInv(), grouped.getBScaleInv()})
          if (scale &&
              cast<ShapedType>(scale.getType()).getElementType().isF32())
            assign(scale, "positive");
      } else if (auto matmul = dyn_cast<ScaledMatmulOp>(op)) {
        // f32 scales (per_tensor and block modes); MXFP8's E8M0 codes take
        // the generator of their type.
        for (Value scale : {matmul.getAScaleInv(), matmul.getBScaleInv(),
                            matmul.getOutScale()})
          if (scale &&
              cast<ShapedType>(scale.getType()).getElementType().isF32())
            assign(scale, "positive");
      }
    });
  }

private:
  func::FuncOp function;
  std::vector<std::string> &roles;
};

} // namespace

ArgumentRoles mlir::te::describeArgumentRoles(ModuleOp module,
                                              ArrayRef<KernelEntry> entries) {
  ArgumentRoles roles(entries.size());
  for (auto [index, entry] : llvm::enumerate(entries)) {
    roles[index].resize(entry.inputs.size());
    auto function = module.lookupSymbol<func::FuncOp>(entry.name);
    if (function && !function.isExternal())
      RoleCollector(function, roles[index]).collect();
  }
  return roles;
}

void mlir::te::addKernelBufferization(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createTEUniqueReturns());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
}
