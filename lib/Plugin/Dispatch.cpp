//===- Dispatch.cpp - Assigning te ops to lowering providers --------------===//
//
// A plugin's lowering of one op runs as a transaction: the op is cloned
// alone into a function of a scratch module, the provider rewrites that
// module, and only a result that verifies, still has the op's signature and
// no longer contains the op is spliced back in place of the original. A
// failing provider therefore never leaves the real module half rewritten.
//
//===----------------------------------------------------------------------===//

#include "te/Plugin/Dispatch.h"
#include "te/Plugin/Passes.h"

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/Transforms/Passes.h"
#include "te/Support/ExplainTable.h"
#include "te/Target/TargetRegistry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <exception>

namespace mlir::te {
#define GEN_PASS_DEF_TEDISPATCH
#define GEN_PASS_DEF_TEEXPLAINDISPATCH
#include "te/Plugin/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::plugin;

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

LogicalResult DispatchPolicy::parse(StringRef policy, StringRef deny,
                                    DispatchPolicy &out, std::string *error) {
  auto fail = [&](std::string message) {
    if (error)
      *error = std::move(message);
    return failure();
  };
  out = DispatchPolicy();
  // What the op and plugin names of both settings must be, in one place.
  auto checkOp = [&](StringRef variable, StringRef op,
                     StringRef entry) -> LogicalResult {
    if (isTEOpName(("te." + op).str()))
      return success();
    return fail(variable.str() + ": '" + op.str() + "' in '" + entry.str() +
                "' is not a te op; name ops without 'te.', e.g. attention "
                "or quantize");
  };
  auto checkPlugin = [&](StringRef variable, StringRef name,
                         StringRef entry) -> LogicalResult {
    if (isValidPluginName(name))
      return success();
    return fail(variable.str() + ": '" + name.str() + "' in '" + entry.str() +
                "' is not a plugin name (1 to 63 characters from "
                "[A-Za-z0-9_.-])");
  };

  SmallVector<StringRef> rules;
  policy.split(rules, ';', -1, false);
  for (StringRef rule : rules) {
    rule = rule.trim();
    if (rule.empty())
      continue;
    auto [op, list] = rule.split('=');
    op = op.trim();
    op.consume_front("te.");
    if (op.empty() || !rule.contains('='))
      return fail("NVTE_PLUGIN_POLICY: '" + rule.str() +
                  "' is not of the form op=plugin,...,native (e.g. "
                  "attention=vendor_a,native)");
    if (failed(checkOp("NVTE_PLUGIN_POLICY", op, rule)))
      return failure();
    if (out.order.count(op))
      return fail("NVTE_PLUGIN_POLICY: op '" + op.str() +
                  "' has two rules; give one list per op");
    SmallVector<StringRef> names;
    list.split(names, ',', -1, false);
    std::vector<std::string> &order = out.order[op];
    for (StringRef name : names) {
      name = name.trim();
      if (name.empty())
        continue;
      if (!order.empty() && order.back() == "native")
        return fail("NVTE_PLUGIN_POLICY: '" + name.str() + "' in '" +
                    rule.str() +
                    "' follows 'native', which ends the list; put the "
                    "plugins to ask before native");
      if (name != "native" &&
          failed(checkPlugin("NVTE_PLUGIN_POLICY", name, rule)))
        return failure();
      order.push_back(name.str());
    }
    if (order.empty())
      return fail("NVTE_PLUGIN_POLICY: op '" + op.str() +
                  "' lists no provider; write " + op.str() +
                  "=native to "
                  "use the native lowering only");
  }
  SmallVector<StringRef> entries;
  deny.split(entries, ',', -1, false);
  for (StringRef entry : entries) {
    entry = entry.trim();
    if (entry.empty())
      continue;
    auto [plugin, op] = entry.split(':');
    plugin = plugin.trim();
    op = op.trim();
    op.consume_front("te.");
    if (plugin.empty() || (entry.contains(':') && op.empty()))
      return fail("NVTE_PLUGIN_DENY: '" + entry.str() +
                  "' is not a plugin name or plugin:op");
    if (failed(checkPlugin("NVTE_PLUGIN_DENY", plugin, entry)))
      return failure();
    if (entry.contains(':')) {
      if (failed(checkOp("NVTE_PLUGIN_DENY", op, entry)))
        return failure();
      out.deniedOps.push_back({plugin.str(), op.str()});
    } else {
      out.deniedPlugins.push_back(plugin.str());
    }
  }
  return success();
}

LogicalResult DispatchPolicy::fromEnvironment(StringRef policyOverride,
                                              StringRef denyOverride,
                                              DispatchPolicy &out,
                                              std::string *error) {
  const char *policy = std::getenv("NVTE_PLUGIN_POLICY");
  const char *deny = std::getenv("NVTE_PLUGIN_DENY");
  return parse(!policyOverride.empty() ? policyOverride
                                       : StringRef(policy ? policy : ""),
               !denyOverride.empty() ? denyOverride
                                     : StringRef(deny ? deny : ""),
               out, error);
}

bool DispatchPolicy::isDenied(StringRef plugin, StringRef opKey) const {
  return llvm::is_contained(deniedPlugins, plugin) ||
         llvm::any_of(deniedOps, [&](const auto &pair) {
           return pair.first == plugin && pair.second == opKey;
         });
}

//===----------------------------------------------------------------------===//
// Lowering transactions
//===----------------------------------------------------------------------===//

namespace {

/// What the dispatch leaves ops to on a target without a native lowering:
/// nothing, said in the target's name.
class NoNativeLowering : public NativeLowering {
public:
  explicit NoNativeLowering(std::string targetName)
      : targetName(std::move(targetName)) {}
  std::optional<std::string>
  getUnsupportedReason(Operation *op) const override {
    return "target " + targetName +
           " has no native lowering: " + op->getName().getStringRef().str() +
           " needs a plugin provider that lowers it for this target";
  }
  LogicalResult lower(Operation *op) const override {
    return op->emitError(*getUnsupportedReason(op));
  }

private:
  std::string targetName;
};

constexpr StringLiteral kScratchName = "te_plugin_scratch";

/// Lowers `op` with `ref`'s provider in a scratch module and splices the
/// result in place of `op`. On failure `op` is untouched and *error says
/// why.
LogicalResult lowerWithProvider(Operation *op, const ProviderRef &ref,
                                const TargetInfo &target,
                                const NativeLowering &native,
                                std::string *error) {
  MLIRContext *context = op->getContext();
  Location loc = op->getLoc();
  OpBuilder builder(context);
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(scratch->getBody());
  // The process group a collective names comes along, so that the op
  // verifies in the scratch module and the provider can read the group; it
  // stays the real module's.
  llvm::SmallPtrSet<Operation *, 2> borrowed;
  for (NamedAttribute attribute : op->getAttrs())
    if (auto symbol = dyn_cast<FlatSymbolRefAttr>(attribute.getValue()))
      if (auto group =
              SymbolTable::lookupNearestSymbolFrom<ProcessGroupOp>(op, symbol))
        if (!SymbolTable::lookupSymbolIn(*scratch, symbol.getAttr()))
          borrowed.insert(builder.clone(*group));
  FunctionType type =
      builder.getFunctionType(op->getOperandTypes(), op->getResultTypes());
  auto function = func::FuncOp::create(builder, loc, kScratchName, type);
  Block *entry = function.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  IRMapping mapping;
  mapping.map(op->getOperands(), entry->getArguments());
  Operation *clone = builder.clone(*op, mapping);
  func::ReturnOp::create(builder, loc, clone->getResults());

  // Diagnostics of the provider and of the verifier become the error text.
  std::string diagnostics;
  LogicalResult lowered = failure();
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      if (!diagnostics.empty())
        diagnostics += "; ";
      diagnostics += diag.str();
      return success();
    });
    try {
      lowered = ref.provider->lower(clone, native, target);
    } catch (const std::exception &e) {
      *error = std::string("lower() threw: ") + e.what();
      return failure();
    } catch (...) {
      *error = "lower() threw";
      return failure();
    }
    if (failed(lowered)) {
      *error = "lower() failed" +
               (diagnostics.empty() ? std::string() : ": " + diagnostics);
      return failure();
    }
    if (failed(verify(*scratch))) {
      *error = "its lowering does not verify: " + diagnostics;
      return failure();
    }
  }

  function = dyn_cast_or_null<func::FuncOp>(
      SymbolTable::lookupSymbolIn(*scratch, kScratchName));
  if (!function || function.getFunctionType() != type ||
      !llvm::hasSingleElement(function.getBody()))
    return *error = "its lowering changed the scratch function's signature "
                    "or control flow",
           failure();
  Operation *leftover = nullptr;
  function.walk([&](Operation *inner) {
    if (inner->getName() == op->getName())
      leftover = inner;
  });
  if (leftover)
    return *error = "its lowering left a " +
                    op->getName().getStringRef().str() + " op behind",
           failure();

  // Other symbols the lowering created move to the real module; a clash
  // with an existing symbol of another definition is an error.
  auto parent = op->getParentOfType<ModuleOp>();
  SmallVector<Operation *> symbols;
  for (Operation &other : scratch->getBody()->getOperations()) {
    if (&other == function.getOperation() || borrowed.contains(&other))
      continue;
    auto symbol = dyn_cast<SymbolOpInterface>(other);
    if (!symbol) {
      *error = "its lowering added a top-level '" +
               other.getName().getStringRef().str() +
               "' op that is not a "
               "symbol";
      return failure();
    }
    Operation *existing =
        SymbolTable::lookupSymbolIn(parent, symbol.getNameAttr());
    if (existing) {
      auto a = dyn_cast<func::FuncOp>(existing);
      auto b = dyn_cast<func::FuncOp>(other);
      if (a && b && a.isDeclaration() && b.isDeclaration() &&
          a.getFunctionType() == b.getFunctionType())
        continue;
      *error = "its lowering defines symbol @" + symbol.getName().str() +
               ", which the module already defines differently";
      return failure();
    }
    symbols.push_back(&other);
  }
  for (Operation *symbol : symbols)
    symbol->moveBefore(parent.getBody(), parent.getBody()->end());
  if (auto libraries =
          (*scratch)->getAttrOfType<ArrayAttr>(kLinkLibrariesAttrName))
    for (auto library : libraries.getAsRange<StringAttr>())
      addLinkLibrary(parent, library.getValue());

  // Splice: arguments become the op's operands, the returned values its
  // results.
  for (auto [argument, operand] :
       llvm::zip(entry->getArguments(), op->getOperands()))
    argument.replaceAllUsesWith(operand);
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  op->getBlock()->getOperations().splice(Block::iterator(op),
                                         body.getOperations(), body.begin(),
                                         Block::iterator(ret));
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// What a dispatch may create: the dialects of the loaded plugins, those of
/// the targets' native lowerings (which providers may wrap), and the
/// scratch modules' functions.
static void addDispatchDialects(DialectRegistry &registry) {
  (void)PluginManager::get().loadFromEnvironment();
  PluginManager::get().registerDialects(registry);
  TargetRegistry::get().getDependentDialects(registry);
  registry.insert<func::FuncDialect>();
}

/// Loads the dialects of addDispatchDialects into `context`. A pass declares
/// them up front; dispatches outside a pass (te_compiler_explain) need this
/// before the first plugin lowering.
static void loadDispatchDialects(MLIRContext *context) {
  DialectRegistry registry;
  addDispatchDialects(registry);
  context->appendDialectRegistry(registry);
  for (StringRef name : registry.getDialectNames())
    if (!context->getLoadedDialect(name))
      context->getOrLoadDialect(name);
}

std::vector<std::string> DispatchRecord::notes() const {
  std::vector<std::string> notes;
  for (const auto &[provider, reason] : declined)
    notes.push_back(provider + ": " + reason);
  // The native strategies not taken: those that cannot take the op say
  // why, those that could were passed over for the first that can.
  const LoweringStrategy *chosen = nullptr;
  for (const LoweringStrategy &strategy : strategies) {
    if (strategy.unsupported)
      notes.push_back(strategy.name + ": " + *strategy.unsupported);
    else if (chosen)
      notes.push_back(strategy.name + ": also possible; " + chosen->name +
                      " is preferred");
    else
      chosen = &strategy;
  }
  if (!fallback.empty())
    notes.push_back("fallback: " + fallback);
  return notes;
}

std::string DispatchRecord::describeBackend(StringRef targetName) const {
  if (provider != "native")
    return "plugin " + provider;
  if (!nativeUnsupported.empty())
    return "none: " + nativeUnsupported;
  for (const LoweringStrategy &strategy : strategies)
    if (!strategy.unsupported)
      return targetName.str() + " (native, " + strategy.name + ")";
  return targetName.str() + " (native)";
}

FailureOr<std::vector<DispatchRecord>>
mlir::te::plugin::dispatchModule(ModuleOp module, const TargetInfo &target,
                                 const NativeLowering *targetNative,
                                 const DispatchPolicy &policy,
                                 bool nativeHasStrategies) {
  PluginManager &manager = PluginManager::get();
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<TEDialect>(op->getDialect()) && !isa<ProcessGroupOp, CheckOp>(op))
      ops.push_back(op);
  });

  // Policy entries that name no available plugin are reported once.
  for (const auto &rule : policy.order)
    for (const std::string &name : rule.second)
      if (name != "native" && !manager.lookup(name))
        manager.warn("NVTE_PLUGIN_POLICY: rule for '" + rule.first().str() +
                     "' names '" + name +
                     "', which is not an available plugin; it is skipped");

  std::vector<DispatchRecord> records;
  bool failedStrict = false, dialectsLoaded = false;
  NoNativeLowering none(target.backend);
  const NativeLowering &native = targetNative ? *targetNative : none;
  for (Operation *op : ops) {
    DispatchRecord record;
    record.opName = op->getName().getStringRef().str();
    record.location = formatSourceLocation(op->getLoc());
    record.provider = "native";
    StringRef opKey = op->getName().getStringRef();
    opKey.consume_front("te.");

    // The candidates, in order.
    std::vector<ProviderRef> candidates;
    std::vector<ProviderRef> all = manager.getProviders(record.opName);
    auto rule = policy.order.find(opKey);
    if (rule == policy.order.end()) {
      candidates = all;
    } else {
      for (const std::string &name : rule->second) {
        if (name == "native")
          break;
        for (const ProviderRef &ref : all)
          if (ref.plugin->name == name)
            candidates.push_back(ref);
      }
      for (const ProviderRef &ref : all)
        if (!llvm::any_of(candidates, [&](const ProviderRef &c) {
              return c.provider == ref.provider;
            }))
          record.declined.push_back(
              {ref.qualifiedName(), "not asked: NVTE_PLUGIN_POLICY for " +
                                        opKey.str() + " is " +
                                        llvm::join(rule->second, ",")});
    }

    for (const ProviderRef &ref : candidates) {
      if (std::string failure = manager.describeFailure(*ref.plugin);
          !failure.empty()) {
        record.declined.push_back({ref.qualifiedName(), failure});
        continue;
      }
      if (policy.isDenied(ref.plugin->name, opKey)) {
        record.declined.push_back(
            {ref.qualifiedName(), "denied by NVTE_PLUGIN_DENY"});
        continue;
      }
      Decision decision = Decision::decline("check() threw");
      try {
        decision = ref.provider->check(op, target);
      } catch (const std::exception &e) {
        decision = Decision::decline(std::string("check() threw: ") + e.what());
      } catch (...) {
      }
      if (!decision.isAccepted()) {
        record.declined.push_back(
            {ref.qualifiedName(), decision.getReason().empty()
                                      ? std::string("declined")
                                      : decision.getReason()});
        continue;
      }
      std::string error;
      std::string name = ref.qualifiedName();
      if (failed(manager.activate(*ref.plugin, &error))) {
        record.declined.push_back({name, "accepted, but " + error});
        if (manager.isStrict()) {
          op->emitError() << error;
          failedStrict = true;
        }
        continue;
      }
      if (!dialectsLoaded) {
        loadDispatchDialects(module.getContext());
        dialectsLoaded = true;
      }
      if (succeeded(lowerWithProvider(op, ref, target, native, &error))) {
        record.provider = name;
      } else {
        record.fallback = name + " accepted, but " + error;
        std::string message = "plugin " + ref.plugin->describe() + ": " + name +
                              " could not lower " + record.opName + " at " +
                              record.location + ": " + error;
        if (manager.isStrict()) {
          op->emitError() << message
                          << " (NVTE_PLUGIN_STRICT=1 forbids the fallback "
                             "to the native lowering)";
          failedStrict = true;
        } else {
          manager.warn(message + "; using the native lowering");
        }
      }
      break;
    }
    if (record.provider == "native") {
      if (std::optional<std::string> reason = native.getUnsupportedReason(op))
        record.nativeUnsupported = *reason;
      if (nativeHasStrategies && targetNative)
        record.strategies = targetNative->getStrategies(op);
    }
    records.push_back(std::move(record));
  }
  if (failedStrict)
    return failure();
  return records;
}

void mlir::te::plugin::printDispatchTable(llvm::raw_ostream &os,
                                          ArrayRef<DispatchRecord> records,
                                          StringRef targetName) {
  std::vector<::te::support::ExplainRow> rows;
  for (const DispatchRecord &record : records)
    rows.push_back({record.opName, record.location,
                    record.describeBackend(targetName),
                    llvm::join(record.notes(), "; ")});
  os << ::te::support::formatExplainTable(rows);
}

//===----------------------------------------------------------------------===//
// Passes
//===----------------------------------------------------------------------===//

namespace {

/// prepareDispatch, with the error emitted on `module`.
FailureOr<DispatchSetup> prepare(ModuleOp module, StringRef policyOption,
                                 StringRef denyOption, StringRef device) {
  std::string error;
  FailureOr<DispatchSetup> setup =
      prepareDispatch(device, policyOption, denyOption, &error);
  if (failed(setup))
    mlir::emitError(module.getLoc(), error);
  return setup;
}

struct TEDispatchPass : mlir::te::impl::TEDispatchBase<TEDispatchPass> {
  using TEDispatchBase::TEDispatchBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    addDispatchDialects(registry);
  }

  void runOnOperation() override {
    FailureOr<DispatchSetup> setup =
        prepare(getOperation(), policy, deny, device);
    if (failed(setup) ||
        failed(dispatchModule(getOperation(), setup->target, setup->native,
                              setup->policy, setup->nativeHasStrategies)))
      return signalPassFailure();
    // Without a native lowering nothing after the dispatch lowers what the
    // providers left.
    if (setup->native)
      return;
    NoNativeLowering none(setup->targetName);
    WalkResult walk = getOperation().walk([&](Operation *op) {
      if (!isa<TEDialect>(op->getDialect()) || isa<ProcessGroupOp, CheckOp>(op))
        return WalkResult::advance();
      op->emitError(*none.getUnsupportedReason(op));
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

struct TEExplainDispatchPass
    : mlir::te::impl::TEExplainDispatchBase<TEExplainDispatchPass> {
  using TEExplainDispatchBase::TEExplainDispatchBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    addDispatchDialects(registry);
  }

  void runOnOperation() override {
    FailureOr<DispatchSetup> setup =
        prepare(getOperation(), policy, deny, device);
    if (failed(setup))
      return signalPassFailure();
    OwningOpRef<ModuleOp> copy = getOperation().clone();
    FailureOr<std::vector<DispatchRecord>> records =
        dispatchModule(*copy, setup->target, setup->native, setup->policy,
                       setup->nativeHasStrategies);
    if (failed(records))
      return signalPassFailure();
    printDispatchTable(llvm::outs(), *records, setup->targetName);
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};

/// Reports, when it runs, why te-lower-target has no pipeline to run (no
/// device named, a device without a target, a target's plugin that failed
/// to start): at the module, as a failing pass would.
struct LowerTargetErrorPass
    : PassWrapper<LowerTargetErrorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerTargetErrorPass)

  explicit LowerTargetErrorPass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const override { return "te-lower-target-error"; }
  void runOnOperation() override {
    mlir::emitError(getOperation().getLoc(), message);
    signalPassFailure();
  }

  std::string message;
};

/// te-lower-target's options.
struct LowerTargetOptions : PassPipelineOptions<LowerTargetOptions> {
  Option<std::string> device{*this, "device",
                             llvm::cl::desc("The runtime device to lower for"),
                             llvm::cl::init("cpu")};
  Option<std::string> arch{
      *this, "arch",
      llvm::cl::desc("The arch to compile for, e.g. sm_90a for device=cuda "
                     "(default: TE_CUDA_ARCH, else sm_80)"),
      llvm::cl::init("")};
};

} // namespace

FailureOr<DispatchSetup>
mlir::te::plugin::prepareDispatch(StringRef device, StringRef policyOverride,
                                  StringRef denyOverride, std::string *error) {
  PluginManager &manager = PluginManager::get();
  DispatchSetup setup;
  if (failed(manager.loadFromEnvironment(error)) ||
      failed(DispatchPolicy::fromEnvironment(policyOverride, denyOverride,
                                             setup.policy, error)))
    return failure();
  FailureOr<TargetRef> target =
      manager.startTarget(device.empty() ? StringRef("cpu") : device, error);
  if (failed(target))
    return failure();
  setup.target = target->target->getTargetInfo();
  setup.targetName = target->target->getName();
  setup.native = target->getNativeLowering();
  // getStrategies came with plugin ABI 1.3.
  setup.nativeHasStrategies = target->abiMinor >= 3;
  return setup;
}

void mlir::te::plugin::buildTargetPipeline(OpPassManager &pm,
                                           const TargetRef &target) {
  TEDispatchOptions options;
  options.device = target.target->getDeviceName();
  buildLoweringPipeline(pm, *target.target, [&](OpPassManager &nested) {
    nested.addPass(createTEDispatch(options));
  });
}

void mlir::te::plugin::buildLowerToCPUPipeline(OpPassManager &pm) {
  if (TargetRef cpu = TargetRegistry::get().find("cpu"))
    return buildTargetPipeline(pm, cpu);
  // A process without the cpu target: the pipeline says so when it runs,
  // naming the devices that have targets.
  buildLowerTargetPipeline(pm, "cpu", "");
}

void mlir::te::plugin::buildLowerTargetPipeline(OpPassManager &pm,
                                                StringRef device,
                                                StringRef arch) {
  std::string error = "te-lower-target needs a device, e.g. device=cpu";
  if (!device.empty()) {
    // As in a compile, a plugin target's plugin starts before its pipeline
    // is built.
    FailureOr<TargetRef> target =
        PluginManager::get().startTarget(device, &error);
    if (succeeded(target)) {
      if (!arch.empty())
        TargetRegistry::get().setArchOverride(device, arch);
      return buildTargetPipeline(pm, *target);
    }
  }
  pm.addPass(std::make_unique<LowerTargetErrorPass>(error));
}

void mlir::te::plugin::registerLoweringPipelines() {
  PassPipelineRegistration<>(
      "te-lower-cpu",
      "Lower te ops to the LLVM dialect for the host CPU: te-dispatch (plugin "
      "lowerings first), then te -> linalg -> bufferized loops -> llvm",
      buildLowerToCPUPipeline);
  PassPipelineRegistration<LowerTargetOptions>(
      "te-lower-target",
      "Lower te for a runtime device: the dispatch, then its target's "
      "pipeline (device=cpu is te-lower-cpu; arch=sm_90a for device=cuda)",
      [](OpPassManager &pm, const LowerTargetOptions &options) {
        buildLowerTargetPipeline(pm, options.device, options.arch);
      });
}
