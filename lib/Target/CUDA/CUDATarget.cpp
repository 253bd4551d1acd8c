//===- CUDATarget.cpp - The built-in cuda target --------------------------===//
//
// The pipeline is built from pass constructors, like the cpu target's, so
// that it works in any process that links te-mlir. The serializer turns
// each entry's host function (allocations and gpu.launch_func, nothing
// else) into manifest steps and the kernels into one fatbin.
//
//===----------------------------------------------------------------------===//

#include "te/Target/CUDA/CUDATarget.h"
#include "te/ABI/Environment.h"
#include "te/ABI/LibraryCalls.h"
#include "te/Target/CompileRecorder.h"
#include "te/Target/GPUHostPlan.h"
#include "te/Target/TargetRegistry.h"

#include "te/Conversion/TEToGPU/TEToGPU.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

using namespace mlir;
using namespace mlir::te;

//===----------------------------------------------------------------------===//
// Archs and the toolkit
//===----------------------------------------------------------------------===//

const std::vector<std::string> &mlir::te::getSupportedCUDAArchs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89",
                                                 "sm_90", "sm_90a"};
  return archs;
}

/// The arch to compile for a GPU the runtime reports as `reported`
/// (te_device_target_arch: "sm_90"): its own where there is code for it,
/// the closest older one within its major version (whose cubins it runs),
/// the PTX-portable sm_90 beyond Hopper; nullopt for what is no sm_ arch;
/// an error for a GPU older than sm_80.
static FailureOr<std::optional<std::string>>
selectArchForGPU(StringRef reported, std::string *error) {
  StringRef arch = reported;
  unsigned version = 0;
  if (!arch.consume_front("sm_") ||
      arch.take_while(llvm::isDigit).getAsInteger(10, version))
    return std::optional<std::string>();
  unsigned major = version / 10, minor = version % 10;
  if (major >= 10)
    return std::optional<std::string>("sm_90");
  if (major == 9)
    return std::optional<std::string>("sm_90a");
  if (major == 8)
    return std::optional<std::string>(minor >= 9   ? "sm_89"
                                      : minor >= 6 ? "sm_86"
                                                   : "sm_80");
  if (error)
    *error = "the GPU of the cuda device is " + reported.str() +
             "; the cuda target generates code for sm_80 and newer (set "
             "TE_CUDA_ARCH to compile for another GPU)";
  return failure();
}

FailureOr<std::string> mlir::te::getCUDAArch(std::string *error,
                                             bool *isDefault) {
  if (isDefault)
    *isDefault = false;
  TargetRegistry &registry = TargetRegistry::get();
  std::string requested = registry.getArchOverride("cuda");
  StringRef origin = "arch=";
  if (requested.empty()) {
    requested = ::te::abi::getSetting("TE_CUDA_ARCH");
    origin = "TE_CUDA_ARCH=";
  }
  if (requested.empty()) {
    FailureOr<std::optional<std::string>> selected =
        selectArchForGPU(registry.getDeviceArch("cuda"), error);
    if (failed(selected))
      return failure();
    if (isDefault)
      *isDefault = !selected->has_value();
    return selected->value_or("sm_80");
  }
  for (const std::string &arch : getSupportedCUDAArchs())
    if (arch == requested)
      return arch;
  if (error)
    *error = origin.str() + requested +
             " is not an arch the cuda target generates code for; use one "
             "of " +
             llvm::join(getSupportedCUDAArchs(), ", ");
  return failure();
}

/// `arch` for a reason in --explain: with a hint where it is only the
/// default (nothing asked for an arch and no GPU was reported), so that a
/// compiler engineer without a GPU sees how to look at another.
static std::string describeArch(StringRef arch) {
  bool isDefault = false;
  if (failed(getCUDAArch(nullptr, &isDefault)) || !isDefault)
    return arch.str();
  return arch.str() + " (the default without a GPU; TE_CUDA_ARCH=sm_90a, " +
         "or te-lower-target's arch=, compiles for another)";
}

std::string mlir::te::getCUDAToolkitPath() {
  for (const char *variable : {"TE_CUDA_PATH", "CUDA_HOME"})
    if (std::string path = ::te::abi::getSetting(variable); !path.empty())
      return path;
  return "/usr/local/cuda";
}

/// `ptxas --version`'s last line, which names the toolkit release: code
/// from another ptxas is another kernel cache entry. "none" without one.
static std::string getPtxasVersion(StringRef toolkit) {
  static std::mutex mutex;
  static llvm::StringMap<std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = versions.try_emplace(toolkit, "none");
  if (!inserted)
    return it->second;
  std::string ptxas = (toolkit + "/bin/ptxas").str();
  SmallString<128> output;
  if (!llvm::sys::fs::can_execute(ptxas) ||
      llvm::sys::fs::createTemporaryFile("te-ptxas-version", "txt", output))
    return it->second;
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(output),
                                          StringRef(output)};
  int status = llvm::sys::ExecuteAndWait(ptxas, {ptxas, "--version"},
                                         std::nullopt, redirects, 30);
  auto text = llvm::MemoryBuffer::getFile(output);
  llvm::sys::fs::remove(output);
  if (status == 0 && text) {
    SmallVector<StringRef> lines;
    (*text)->getBuffer().trim().split(lines, '\n');
    if (!lines.empty())
      it->second = lines.back().trim().str();
  }
  return it->second;
}

//===----------------------------------------------------------------------===//
// The pipeline
//===----------------------------------------------------------------------===//

/// The PTX version of the generated code: 8.1, the first with which LLVM
/// selects the FP8 conversion instructions of sm_89 and newer (older
/// versions abort instruction selection), and which CUDA 12.1+ drivers
/// compile.
static constexpr const char *kPTXFeatures = "+ptx81";

namespace {
/// PTX's mma.sync.m16n8k16 (bf16 or f16 into f32), fragments loaded with
/// ldmatrix (sm_75+).
class MmaSyncUnit final : public WarpMMA16x8x16 {
public:
  std::string getName() const override { return "mma.sync.m16n8k16"; }

  SmallVector<Value> multiplyAccumulate(OpBuilder &b, Location loc,
                                        ArrayRef<Value> a,
                                        ArrayRef<Value> bValues,
                                        ArrayRef<Value> c) const override {
    // Registers of two consecutive elements (MLIR 22's nvgpu.mma.sync
    // cannot deduce bf16 operand types, so nvvm.mma.sync directly).
    Type element = a.front().getType();
    NVVM::MMATypes type =
        element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    auto pack = [&](ArrayRef<Value> elements) {
      SmallVector<Value> registers;
      auto pair = VectorType::get({2}, element);
      for (size_t i = 0; i < elements.size(); i += 2) {
        Value vector = vector::FromElementsOp::create(
            b, loc, pair, ValueRange{elements[i], elements[i + 1]});
        // NVVM's mma.sync takes f16 pairs as vectors, bf16 pairs as i32.
        registers.push_back(
            element.isF16()
                ? vector
                : LLVM::BitcastOp::create(b, loc, b.getI32Type(), vector));
      }
      return registers;
    };
    Type f32 = b.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    auto mma = NVVM::MmaOp::create(
        b, loc, resultType, pack(a), pack(bValues), c, {16, 8, 16},
        std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
    return d;
  }

protected:
  bool hasLoadMatrix() const override { return true; }

  SmallVector<Value> loadMatrixX2(OpBuilder &b, Location loc, Value tile,
                                  Value index, bool transpose) const override {
    Type element = cast<MemRefType>(tile.getType()).getElementType();
    Value loaded = nvgpu::LdMatrixOp::create(
        b, loc, VectorType::get({2, 2}, element), tile, ValueRange{index},
        transpose, /*numTiles=*/2);
    SmallVector<Value> elements;
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t e = 0; e < 2; ++e)
        elements.push_back(
            vector::ExtractOp::create(b, loc, loaded, ArrayRef<int64_t>{j, e}));
    return elements;
  }
};

class CUDAGPUTargetInfo : public GPUTargetInfo {
public:
  explicit CUDAGPUTargetInfo(std::string arch) : arch(std::move(arch)) {}
  // `units` points into the object.
  CUDAGPUTargetInfo(const CUDAGPUTargetInfo &) = delete;
  CUDAGPUTargetInfo &operator=(const CUDAGPUTargetInfo &) = delete;
  unsigned getWarpSize() const override { return 32; }
  std::string getDescription() const override { return "cuda " + arch; }
  std::string getRegisteredSpec() const override { return "cuda:" + arch; }

  /// sm_89 and newer convert f32 to FP8 in hardware (cvt.rn.satfinite):
  /// round to nearest even, finite values and infinities beyond the
  /// format saturating to its largest finite value, as te's codec does.
  /// Only a NaN's sign could differ, so NaN is made the codec's canonical
  /// 0x7F explicitly. Older archs use the codec's integer routine.
  Value emitF32ToFP8(OpBuilder &b, Location loc, Value x,
                     FloatType fp8Type) const override {
    if (!hasFP8Conversion())
      return GPUTargetInfo::emitF32ToFP8(b, loc, x, fp8Type);
    Value zero =
        arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
    // The value converted from the second operand is the low byte.
    Value packed = NVVM::ConvertF32x2ToF8x2Op::create(
        b, loc, b.getI16Type(), zero, x, NVVM::FPRoundingMode::RN,
        NVVM::SaturationMode::SATFINITE, /*relu=*/false, fp8Type);
    Value code = arith::TruncIOp::create(b, loc, b.getI8Type(), packed);
    Value isNaN =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    code = arith::SelectOp::create(
        b, loc, isNaN,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), 0x7F), code);
    return arith::BitcastOp::create(b, loc, fp8Type, code);
  }

  bool hasFP8Conversion() const {
    return arch == "sm_89" || StringRef(arch).starts_with("sm_90");
  }

  /// mma.sync.m16n8k16 with ldmatrix: every supported arch (sm_80+).
  ArrayRef<const MatrixUnit *> getMatrixUnits() const override { return units; }

  /// cp.async (sm_80+): 16 bytes global -> shared, past L1 (.cg), zero
  /// filled when the source size is 0.
  void emitAsyncCopy(OpBuilder &b, Location loc, Value dst, Value dstIndex,
                     Value src, Value srcIndex, int64_t elements,
                     Value valid) const override {
    Type element = cast<MemRefType>(src.getType()).getElementType();
    bool whole = elements * element.getIntOrFloatBitWidth() == 128;
    Value sourceElements = arith::SelectOp::create(
        b, loc, valid, arith::ConstantIndexOp::create(b, loc, elements),
        arith::ConstantIndexOp::create(b, loc, 0));
    nvgpu::DeviceAsyncCopyOp::create(b, loc, dst, ValueRange{dstIndex}, src,
                                     ValueRange{srcIndex},
                                     b.getIndexAttr(elements), sourceElements,
                                     whole ? b.getUnitAttr() : UnitAttr());
  }
  void emitAsyncCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  void emitAsyncWait(OpBuilder &b, Location loc, int pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
  }

  std::optional<std::string> getConfigurationError() const override {
    std::string error;
    if (failed(getCUDAArch(&error)))
      return error;
    return std::nullopt;
  }

private:
  std::string arch;
  MmaSyncUnit mmaSync;
  const MatrixUnit *units[1] = {&mmaSync};
};
} // namespace

//===----------------------------------------------------------------------===//
// NVIDIA's libraries: te.scaled_matmul on cuBLASLt
//===----------------------------------------------------------------------===//

namespace {

/// The te_dtype_name spelling of an element type.
std::string dtypeName(Type type) {
  return getKernelElementTypeName(type).value_or("");
}

/// Why a library call cannot take `op`'s operands and results: the calls
/// take static shapes only (their configuration is fixed at compile time).
std::optional<std::string> getDynamicShapeReason(Operation *op) {
  for (Type type :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        !tensor || !tensor.hasStaticShape())
      return std::string("library calls take static shapes only");
  return std::nullopt;
}

/// TE_CUDA_GEMM: "cublaslt" (the default: cuBLASLt where it supports the
/// configuration) or "codegen".
std::string getGemmPolicy() {
  std::string policy = ::te::abi::getSetting("TE_CUDA_GEMM");
  return policy.empty() ? "cublaslt" : policy;
}

/// The element type of `value`'s tensor.
Type elementOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// Why cuBLASLt cannot take `op`'s FP8 operands on `arch`, or nullopt.
std::optional<std::string> getCuBLASLtFP8Reason(ScaledMatmulOp op,
                                                StringRef arch) {
  for (ScalingMode mode : {op.getAScalingMode(), op.getBScalingMode()})
    if (mode != ScalingMode::per_tensor)
      return "cuBLASLt's MXFP8 and block-scaled GEMMs read their scales "
             "swizzled (TE swizzles them first); te-mlir's cuBLASLt call "
             "takes per_tensor FP8 GEMMs only, not yet " +
             stringifyScalingMode(mode).str() + " scaling";
  if (op.getGeluInput() || op.getPreGelu() || op.getBiasGrad())
    return std::string("te-mlir's cuBLASLt call takes FP8 GEMMs with the "
                       "bias, GELU and accumulate epilogues (TE runs its "
                       "dGELU, pre-GELU and bias-gradient epilogues on "
                       "high-precision operands)");
  if (arch != "sm_89" && !arch.starts_with("sm_90"))
    return "cuBLASLt's FP8 GEMMs need sm_89 or newer, not " +
           describeArch(arch);
  if (op.getTransposeA() || !op.getTransposeB())
    return std::string("cuBLASLt's FP8 GEMMs on sm_89 and sm_90 take one "
                       "layout, TE's TN (transpose_b without transpose_a)");
  Type a = op.getA().getType().getElementType();
  Type b = op.getB().getType().getElementType();
  if (isa<Float8E5M2Type>(a) && isa<Float8E5M2Type>(b))
    return std::string("cuBLASLt has no E5M2 x E5M2 GEMM");
  Type d = op.getD().getType().getElementType();
  if (!d.isF32() && !d.isF16() && !d.isBF16())
    return std::string("FP8 outputs (with their amax) stay with code "
                       "generation, bit-exact with the CPU");
  if (Value bias = op.getBias()) {
    Type wanted = d.isF16() ? Type(Float16Type::get(op.getContext()))
                            : Type(BFloat16Type::get(op.getContext()));
    if (elementOf(bias) != wanted)
      return "cuBLASLt's FP8 GEMMs take a " + dtypeName(wanted) +
             " bias with a " + dtypeName(d) + " output, not " +
             dtypeName(elementOf(bias));
  }
  int64_t k = op.getB().getType().getDimSize(1);
  int64_t n = op.getD().getType().getDimSize(1);
  int64_t dBytes = (d.getIntOrFloatBitWidth() + 7) / 8;
  if (k % 16 != 0 || (n * dBytes) % 16 != 0)
    return "cuBLASLt's FP8 GEMMs need 16-byte aligned rows: K (" +
           std::to_string(k) + ") a multiple of 16 and N (" +
           std::to_string(n) + ") of " + std::to_string(16 / dBytes);
  return std::nullopt;
}

/// Why cuBLASLt cannot take `op`'s f32, f16 or bf16 operands, or nullopt
/// (every arch the cuda target has runs them).
std::optional<std::string> getCuBLASLtWideReason(ScaledMatmulOp op) {
  Type a = op.getA().getType().getElementType();
  Type d = op.getD().getType().getElementType();
  if (d != a && !d.isF32())
    return "cuBLASLt's " + dtypeName(a) + " GEMMs write " + dtypeName(a) +
           (a.isF32() ? "" : " or f32") + " outputs, not " + dtypeName(d);
  // TE's rule too: with high-precision operands the bias and the GELU
  // matrix have D's type (cublas_gemm sets their types for FP8 only).
  std::pair<Value, StringRef> vectors[] = {
      {op.getBias(), "bias"},
      {op.getGeluInput(), "dgelu input"},
      {op.getPreGeluResult(), "pre_gelu output"},
      {op.getBiasGradResult(), "bias_grad output"}};
  for (auto [value, name] : vectors)
    if (value && elementOf(value) != d)
      return "cuBLASLt takes the " + name.str() + " in D's type (" +
             dtypeName(d) + ") with " + dtypeName(a) + " operands, not " +
             dtypeName(elementOf(value));
  if (op.getBias() && op.getGeluInput())
    return std::string("cuBLASLt has no epilogue that adds a bias before "
                       "the dGELU");
  int64_t n = op.getD().getType().getDimSize(1);
  if ((op.getGeluInput() || op.getPreGelu()) && n % 8 != 0)
    return "cuBLASLt's GELU matrix needs N (" + std::to_string(n) +
           ") a multiple of 8";
  return std::nullopt;
}

/// Why cuBLASLt cannot take `op` on `arch` (or the policy declines it),
/// or nullopt.
std::optional<std::string> getCuBLASLtUnsupportedReason(ScaledMatmulOp op,
                                                        StringRef arch) {
  std::string policy = getGemmPolicy();
  if (policy == "codegen")
    return std::string("TE_CUDA_GEMM=codegen chooses code generation");
  if (policy != "cublaslt")
    return "TE_CUDA_GEMM='" + policy + "' is neither cublaslt nor codegen";
  if (std::optional<std::string> reason = getDynamicShapeReason(op))
    return reason;
  // An empty product (K = 0: the wgrad of an empty micro-batch) is C or
  // zeros through the epilogue; the call's sizes start at 1.
  auto [m, n, k] = op.getProblemSize();
  for (int64_t size : {m, n, k})
    if (size < 1 || size > ::te::abi::kMaxCallSize)
      return "cuBLASLt's call takes sizes from 1 to 2^31, not M, N, K = " +
             std::to_string(m) + ", " + std::to_string(n) + ", " +
             std::to_string(k);
  return op.hasFP8Operands() ? getCuBLASLtFP8Reason(op, arch)
                             : getCuBLASLtWideReason(op);
}

/// The cublaslt.matmul parameters of `op` (te/ABI/LibraryCalls.h).
std::string getMatmulParameters(ScaledMatmulOp op) {
  using Epilogue = ::te::abi::MatmulCall::Epilogue;
  RankedTensorType d = op.getD().getType();
  ::te::abi::MatmulCall call;
  call.m = d.getDimSize(0);
  call.n = d.getDimSize(1);
  call.k = op.getTransposeB() ? op.getB().getType().getDimSize(1)
                              : op.getB().getType().getDimSize(0);
  call.a = dtypeName(op.getA().getType().getElementType());
  call.b = dtypeName(op.getB().getType().getElementType());
  call.d = dtypeName(d.getElementType());
  bool bias = op.getBias() != nullptr;
  if (op.getGeluInput())
    call.epilogue = op.getBiasGrad() ? Epilogue::DGeluBGrad : Epilogue::DGelu;
  else if (op.getGelu() && op.getPreGelu())
    call.epilogue = bias ? Epilogue::GeluAuxBias : Epilogue::GeluAux;
  else if (op.getGelu())
    call.epilogue = bias ? Epilogue::GeluBias : Epilogue::Gelu;
  else if (op.getBiasGrad())
    call.epilogue = Epilogue::BGradB;
  else
    call.epilogue = bias ? Epilogue::Bias : Epilogue::None;
  if (bias)
    call.bias = dtypeName(elementOf(op.getBias()));
  else if (Value grad = op.getBiasGradResult())
    call.bias = dtypeName(elementOf(grad));
  call.layout = std::string(op.getTransposeB() ? "T" : "N") +
                (op.getTransposeA() ? "T" : "N");
  call.accumulate = op.getC() != nullptr;
  return call.encode();
}

/// Replaces `op` by a call of cuBLASLt's matmul on buffers, the way the
/// kernel lowerings take their operands: inputs read-only, the outputs
/// (D, then the pre-GELU values or the bias gradient) fresh allocations the
/// call writes.
LogicalResult lowerToCuBLASLt(ScaledMatmulOp op) {
  return lowerToLibraryCall(op,
                            {op.getA(), op.getB(), op.getAScaleInv(),
                             op.getBScaleInv(), op.getBias(), op.getGeluInput(),
                             op.getC()},
                            "cublaslt.matmul", getMatmulParameters(op));
}

//===----------------------------------------------------------------------===//
// NVIDIA's libraries: te.attention's forward on cuDNN
//===----------------------------------------------------------------------===//

/// Whether `variable` is set to "0" (TE's way of disabling a backend).
bool isDisabled(const char *variable) {
  return ::te::abi::getSetting(variable) == "0";
}

/// TE_CUDA_ATTENTION: "codegen" (the default) or "cudnn", the strategy
/// preferred where both can take an attention.
std::string getAttentionPolicy() {
  std::string policy = ::te::abi::getSetting("TE_CUDA_ATTENTION");
  return policy.empty() ? "codegen" : policy;
}

/// te's (left, right) window of `op`, causal masks included: right = 0.
std::pair<int64_t, int64_t> getBounds(AttentionOpInterface op) {
  auto [left, right] = op.getWindowBounds();
  if (isCausalMask(op.getMaskKind()))
    right = right < 0 ? 0 : std::min<int64_t>(right, 0);
  return {left, right};
}

/// Whether `op`'s keys are bounded around a diagonal (causal or a window):
/// only then does the diagonal's alignment matter.
bool isBounded(AttentionOpInterface op) {
  auto [left, right] = getBounds(op);
  return left >= 0 || right >= 0;
}

/// Why the cudnn.sdpa_forward call cannot take `op` on `arch`, or nullopt.
/// What it takes is what lib/Runtime/CUDNN.cpp builds: the dense layouts,
/// no mask or the causal ones, windows, GQA/MQA, vanilla softmax without
/// bias or dropout, bf16/f16 with d_qk = d_v a multiple of 8.
std::optional<std::string>
getCuDNNAttentionUnsupportedReason(AttentionOpInterface op, StringRef arch) {
  if (isDisabled("NVTE_FUSED_ATTN"))
    return std::string("NVTE_FUSED_ATTN=0 disables cuDNN attention");
  std::string policy = getAttentionPolicy();
  if (policy != "codegen" && policy != "cudnn")
    return "TE_CUDA_ATTENTION='" + policy + "' is neither codegen nor cudnn";
  if (std::optional<std::string> reason = getDynamicShapeReason(op))
    return reason;
  if (op.getLayout() == QKVLayout::thd)
    return std::string("the thd layout is not yet through the cuDNN call");
  MaskKind mask = op.getMaskKind();
  if (mask != MaskKind::no_mask && mask != MaskKind::causal &&
      mask != MaskKind::causal_bottom_right)
    return "mask " + stringifyMaskKind(mask).str() +
           " is not yet through the cuDNN call";
  if (op.getBiasKind() != BiasKind::no_bias)
    return "bias " + stringifyBiasKind(op.getBiasKind()).str() +
           " is not yet through the cuDNN call";
  if (op.getSoftmaxKind() != SoftmaxKind::vanilla)
    return "softmax " + stringifySoftmaxKind(op.getSoftmaxKind()).str() +
           " is not yet through the cuDNN call";
  if (op.getDropout().convertToDouble() != 0.0)
    return std::string(
        "cuDNN's dropout draws from Philox, not te's documented hash");
  RankedTensorType q = op.getQ().getType(), v = op.getV().getType();
  if (!q.getElementType().isBF16() && !q.getElementType().isF16())
    return std::string("cuDNN attention takes bf16 or f16");
  int64_t d = q.getShape().back();
  int64_t maxD = arch.starts_with("sm_90") ? 256 : 128;
  if (d != v.getShape().back() || d % 8 != 0 || d > maxD)
    return "cuDNN attention takes d_qk = d_v, a multiple of 8 up to " +
           std::to_string(maxD) + " on " + arch.str();
  if (!op.getEffectiveScale())
    return std::string("the softmax scale is unknown");
  HeadTensorDims qDims = getHeadTensorDims(op.getLayout(), q.getShape());
  HeadTensorDims kDims =
      getHeadTensorDims(op.getLayout(), op.getK().getType().getShape());
  if (isBounded(op) && op.isBottomRightDiagonal() && qDims.seq > kDims.seq)
    return "cuDNN measures the bottom-right diagonal only for s_q <= s_kv "
           "(here " +
           std::to_string(qDims.seq) + " > " + std::to_string(kDims.seq) + ")";
  return std::nullopt;
}

/// Why the generated flash-attention kernels may not take `op` by policy.
std::optional<std::string> getFlashAttentionPolicyReason() {
  if (isDisabled("NVTE_FLASH_ATTN"))
    return std::string("NVTE_FLASH_ATTN=0 disables the generated "
                       "flash-attention kernels");
  return std::nullopt;
}

/// The cudnn.sdpa_forward or cudnn.sdpa_backward parameters of `op`
/// (lib/Runtime/CUDNN.h).
std::string getSdpaParameters(AttentionOpInterface op) {
  // The backward reads the forward's LSE.
  bool stats = op.isBackward() || cast<AttentionOp>(op).getLse();
  QKVLayout layout = op.getLayout();
  HeadTensorDims q = getHeadTensorDims(layout, op.getQ().getType().getShape());
  HeadTensorDims k = getHeadTensorDims(layout, op.getK().getType().getShape());
  ::te::abi::SdpaCall call;
  call.b = q.batch;
  call.hq = q.heads;
  call.hkv = k.heads;
  call.sq = q.seq;
  call.skv = k.seq;
  call.d = q.headDim;
  call.dtype = dtypeName(op.getQ().getType().getElementType());
  call.layout = stringifyQKVLayout(layout).str();
  call.scale = static_cast<float>(*op.getEffectiveScale());
  // Without bounds the alignment means nothing: top-left, which cuDNN
  // takes for every s_q and s_kv.
  call.bottomRight = isBounded(op) && op.isBottomRightDiagonal();
  std::tie(call.left, call.right) = getBounds(op);
  call.stats = stats;
  return call.encode();
}

/// Replaces `op` by the cudnn.sdpa_forward (or, for the backward,
/// cudnn.sdpa_backward) call on buffers.
LogicalResult lowerToCuDNN(AttentionOpInterface op) {
  SmallVector<Value> inputs = {op.getQ(), op.getK(), op.getV()};
  bool backward = op.isBackward();
  if (auto backwardOp = dyn_cast<AttentionBackwardOp>(op.getOperation()))
    inputs.append({backwardOp.getO(), backwardOp.getDO(), backwardOp.getLse()});
  return lowerToLibraryCall(
      op, inputs, backward ? "cudnn.sdpa_backward" : "cudnn.sdpa_forward",
      getSdpaParameters(op));
}

//===----------------------------------------------------------------------===//
// The strategy of each op
//===----------------------------------------------------------------------===//

/// The ways the cuda target can lower an op.
enum class Strategy { CodeGeneration, CuBLASLt, CuDNN };

StringRef getStrategyName(Strategy strategy) {
  switch (strategy) {
  case Strategy::CodeGeneration:
    return "code generation";
  case Strategy::CuBLASLt:
    return "cuBLASLt";
  case Strategy::CuDNN:
    return "cuDNN";
  }
  llvm_unreachable("unknown strategy");
}

/// How the cuda target lowers one op on one arch: the one place the
/// strategy is decided, for the lowering, its library pass, --explain and
/// the dispatch alike.
struct StrategyChoice {
  /// Every strategy considered, in order of preference (the policy
  /// variables set it), each with why it cannot take the op or nullopt.
  SmallVector<std::pair<Strategy, std::optional<std::string>>> considered;
  /// The first strategy that can take the op; nullopt when none can.
  std::optional<Strategy> chosen;
  /// Why no strategy can take the op ("" when one can).
  std::string reason;

  /// Whether a library was considered (only then does --explain list the
  /// strategies).
  bool hasAlternatives() const { return considered.size() > 1; }
};

/// Chooses how the cuda target lowers `op` on `arch`.
StrategyChoice chooseStrategy(Operation *op, StringRef arch) {
  StrategyChoice choice;
  CUDAGPUTargetInfo target(arch.str());
  std::optional<std::string> codegen = getGPUUnsupportedReason(op, target);
  if (auto matmul = dyn_cast<ScaledMatmulOp>(op)) {
    choice.considered = {
        {Strategy::CuBLASLt, getCuBLASLtUnsupportedReason(matmul, arch)},
        {Strategy::CodeGeneration, codegen}};
  } else if (isa<AttentionOp, AttentionBackwardOp>(op)) {
    std::optional<std::string> flash = getFlashAttentionPolicyReason();
    std::optional<std::string> cudnn =
        isa<AttentionOp>(op)
            ? getCuDNNAttentionUnsupportedReason(cast<AttentionOp>(op), arch)
            : getCuDNNAttentionUnsupportedReason(cast<AttentionBackwardOp>(op),
                                                 arch);
    choice.considered = {{Strategy::CodeGeneration, flash ? flash : codegen},
                         {Strategy::CuDNN, cudnn}};
    if (getAttentionPolicy() == "cudnn")
      std::swap(choice.considered[0], choice.considered[1]);
    // An attention neither takes names both reasons, the preferred first
    // (as TE's get_attention_backend reports every backend it ruled out).
    const auto &[first, firstReason] = choice.considered[0];
    const auto &[second, secondReason] = choice.considered[1];
    if (firstReason && secondReason)
      choice.reason = *firstReason + ", and " + getStrategyName(second).str() +
                      " cannot take it: " + *secondReason;
  } else {
    choice.considered = {{Strategy::CodeGeneration, codegen}};
  }
  for (const auto &[strategy, unsupported] : choice.considered)
    if (!unsupported) {
      choice.chosen = strategy;
      choice.reason.clear();
      return choice;
    }
  if (choice.reason.empty())
    choice.reason = *codegen;
  return choice;
}

/// Lowers `op` by the strategy `choice` chose for it.
LogicalResult lowerByStrategy(Operation *op, const StrategyChoice &choice,
                              StringRef arch) {
  if (!choice.chosen)
    return op->emitError(choice.reason);
  switch (*choice.chosen) {
  case Strategy::CuBLASLt:
    return lowerToCuBLASLt(cast<ScaledMatmulOp>(op));
  case Strategy::CuDNN:
    return lowerToCuDNN(cast<AttentionOpInterface>(op));
  case Strategy::CodeGeneration:
    return lowerTEOpToGPU(op, CUDAGPUTargetInfo(arch.str()));
  }
  llvm_unreachable("unknown strategy");
}

/// The library strategies, before the kernels' lowering: each op for which
/// chooseStrategy picks a library on `arch` becomes its call; an op that
/// has a library strategy but no strategy at all is an error here, with
/// every reason.
struct LowerToCUDALibrariesPass
    : PassWrapper<LowerToCUDALibrariesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToCUDALibrariesPass)

  LowerToCUDALibrariesPass() = default;
  LowerToCUDALibrariesPass(const LowerToCUDALibrariesPass &other)
      : PassWrapper(other) {}
  explicit LowerToCUDALibrariesPass(std::string archName) {
    arch = std::move(archName);
  }
  StringRef getArgument() const override {
    return "te-lower-to-cuda-libraries";
  }
  StringRef getName() const override { return "TELowerToCUDALibraries"; }
  StringRef getDescription() const override {
    return "Lower te ops that NVIDIA's libraries take to library calls";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<bufferization::BufferizationDialect, func::FuncDialect,
                    memref::MemRefDialect>();
  }
  void runOnOperation() override {
    if (arch.empty()) {
      std::string error;
      FailureOr<std::string> chosen = getCUDAArch(&error);
      if (failed(chosen)) {
        mlir::emitError(getOperation().getLoc(), error);
        return signalPassFailure();
      }
      arch = *chosen;
    }
    SmallVector<std::pair<Operation *, StrategyChoice>> libraryOps;
    getOperation().walk([&](Operation *op) {
      if (!isa<ScaledMatmulOp, AttentionOpInterface>(op))
        return;
      StrategyChoice choice = chooseStrategy(op, arch);
      if (choice.chosen != Strategy::CodeGeneration)
        libraryOps.emplace_back(op, std::move(choice));
    });
    for (auto &[op, choice] : libraryOps)
      if (failed(lowerByStrategy(op, choice, arch)))
        return signalPassFailure();
  }

  Option<std::string> arch{
      *this, "arch",
      llvm::cl::desc("The arch to choose for (default: getCUDAArch's: "
                     "TE_CUDA_ARCH, else sm_80)"),
      llvm::cl::init("")};
};

/// Gives a module without kernels (its entries are library calls only,
/// such as collectives) an empty gpu.module, the binary that carries the
/// manifest.
struct ManifestModulePass
    : PassWrapper<ManifestModulePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ManifestModulePass)

  StringRef getArgument() const override { return "te-cuda-manifest-module"; }
  StringRef getName() const override { return "TECUDAManifestModule"; }
  StringRef getDescription() const override {
    return "Add an empty gpu.module to carry the manifest of a module "
           "without kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module.getOps<gpu::GPUModuleOp>().empty())
      return;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    gpu::GPUModuleOp::create(b, module.getLoc(), "te_manifest");
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
  }
};

} // namespace

void mlir::te::buildCUDATargetPipeline(OpPassManager &pm, StringRef arch) {
  auto info = std::make_shared<CUDAGPUTargetInfo>(arch.str());
  pm.addPass(std::make_unique<LowerToCUDALibrariesPass>(arch.str()));
  pm.addPass(createConvertTEToGPUPass(info));
  // Entry points write their results into the caller's buffers; the other
  // allocations are the temporaries of the manifest's steps, and copies
  // into outputs are kernels too.
  addKernelBufferization(pm);
  pm.addPass(createHostCopiesToGPUPass(info));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(std::make_unique<ManifestModulePass>());

  GpuNVVMAttachTargetOptions attach;
  attach.chip = arch.str();
  attach.features = kPTXFeatures;
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertVectorToSCFPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  // Static shapes: kernel arguments are bare pointers, what the runtime's
  // cuda device passes.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  // Line info from the te ops' locations (each kernel's instructions carry
  // the location of the op it lowers): .file and .loc directives in the
  // PTX, as nvcc's -lineinfo writes them. Directives only: debug info
  // proper would mark the PTX `debug`, which ptxas compiles unoptimized.
  LLVM::DIScopeForLLVMFuncOpPassOptions lineInfo;
  lineInfo.emissionKind = LLVM::DIEmissionKind::DebugDirectivesOnly;
  pm.addPass(LLVM::createDIScopeForLLVMFuncOpPass(lineInfo));
}

//===----------------------------------------------------------------------===//
// The serializer
//===----------------------------------------------------------------------===//

namespace {

/// Compiles the merged kernels to `format` and returns the bytes. With a
/// dump directory (TE_DUMP_DIR), the stages past MLIR go there too: the
/// NVVM LLVM IR before and after LLVM's optimization (nvvm.ll,
/// nvvm-optimized.ll) and the PTX (ptx.ptx). `optimizedLLVM`, where given,
/// receives the optimized LLVM IR.
FailureOr<std::string> compileKernels(ModuleOp lowered, StringRef manifest,
                                      gpu::CompilationTarget format,
                                      std::string *optimizedLLVM = nullptr) {
  OwningOpRef<ModuleOp> module = lowered.clone();
  if (failed(mergeGPUKernelModules(*module, manifest, "cuda")))
    return failure();
  // The host functions are the manifest's now.
  for (auto function :
       llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    function.erase();
  std::string toolkit = getCUDAToolkitPath();
  if (!llvm::sys::fs::can_execute(toolkit + "/bin/ptxas"))
    return lowered.emitError("no ptxas at ")
           << toolkit
           << "/bin/ptxas: the cuda target needs the CUDA toolkit; set "
              "TE_CUDA_PATH to its directory";
  CompileRecorder *recorder = CompileRecorder::getCurrent();
  bool dumping = recorder && recorder->isDumping();
  auto dumpModule = [&](StringRef name, llvm::Module &llvmModule) {
    recorder->dump(name, "ll",
                   [&](raw_ostream &os) { llvmModule.print(os, nullptr); });
  };
  auto initial = [&](llvm::Module &llvmModule) {
    if (dumping)
      dumpModule("nvvm", llvmModule);
  };
  auto optimized = [&](llvm::Module &llvmModule) {
    if (dumping)
      dumpModule("nvvm-optimized", llvmModule);
    if (optimizedLLVM) {
      llvm::raw_string_ostream os(*optimizedLLVM);
      llvmModule.print(os, nullptr);
    }
  };
  auto isa = [&](StringRef ptx) {
    if (dumping)
      recorder->dump("ptx", "ptx", [&](raw_ostream &os) { os << ptx; });
  };
  gpu::TargetOptions options(toolkit, {}, "", "", format, {}, initial, {},
                             optimized, isa);
  if (failed(gpu::transformGpuModulesToBinaries(*module, nullptr, options)))
    return lowered.emitError("compiling the kernels for the cuda target "
                             "failed");
  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      return cast<gpu::ObjectAttr>(object).getObject().getValue().str();
  return lowered.emitError("the NVVM target produced no binary");
}

/// The SASS of `cubin`, disassembled by the toolkit's cuobjdump (else the
/// one on PATH).
FailureOr<std::string> disassemble(ModuleOp lowered, StringRef cubin) {
  std::string toolkit = getCUDAToolkitPath();
  std::string tool = toolkit + "/bin/cuobjdump";
  if (!llvm::sys::fs::can_execute(tool)) {
    llvm::ErrorOr<std::string> found =
        llvm::sys::findProgramByName("cuobjdump");
    if (!found)
      return lowered.emitError("no cuobjdump in ")
             << toolkit
             << "/bin or on PATH: --emit=sass disassembles the cubin with "
                "the CUDA toolkit's cuobjdump; install it (scripts/"
                "bootstrap.sh puts the nvidia-cuda-cuobjdump wheel's into "
                ".venv) and put its directory on PATH, or emit cubin and "
                "disassemble it yourself";
    tool = *found;
  }
  llvm::SmallString<128> input, output;
  if (llvm::sys::fs::createTemporaryFile("te-kernels", "cubin", input) ||
      llvm::sys::fs::createTemporaryFile("te-kernels", "sass", output))
    return lowered.emitError("cannot create temporary files for cuobjdump");
  llvm::FileRemover removeInput(input), removeOutput(output);
  if (failed(writeOutputFile(lowered.getLoc(), input, cubin)))
    return failure();
  std::optional<StringRef> redirects[] = {std::nullopt, output.str(),
                                          output.str()};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(
      tool, {tool, "-sass", input.str()}, std::nullopt, redirects,
      /*SecondsToWait=*/120, /*MemoryLimit=*/0, &error);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(output);
  if (status != 0 || !text)
    return lowered.emitError("cuobjdump -sass failed (")
           << tool << ", status " << status << (error.empty() ? "" : ": ")
           << error << ")" << (text ? ": " + (*text)->getBuffer().str() : "");
  return (*text)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

/// One op at a time, by chooseStrategy.
class CUDANativeLowering : public plugin::NativeLowering {
public:
  std::optional<std::string>
  getUnsupportedReason(Operation *op) const override {
    std::string error;
    FailureOr<std::string> arch = getCUDAArch(&error);
    if (failed(arch))
      return error;
    StrategyChoice choice = chooseStrategy(op, *arch);
    if (choice.chosen)
      return std::nullopt;
    return choice.reason;
  }
  LogicalResult lower(Operation *op) const override {
    std::string error;
    FailureOr<std::string> arch = getCUDAArch(&error);
    if (failed(arch))
      return op->emitError(error);
    return lowerByStrategy(op, chooseStrategy(op, *arch), *arch);
  }
  std::vector<plugin::LoweringStrategy>
  getStrategies(Operation *op) const override {
    FailureOr<std::string> arch = getCUDAArch();
    if (failed(arch))
      return {};
    StrategyChoice choice = chooseStrategy(op, *arch);
    if (!choice.hasAlternatives())
      return {};
    std::vector<plugin::LoweringStrategy> strategies;
    for (const auto &[strategy, unsupported] : choice.considered)
      strategies.push_back({getStrategyName(strategy).str(), unsupported});
    return strategies;
  }
};

class CUDATarget : public plugin::TargetBackend {
public:
  CUDATarget() : TargetBackend("cuda", "cuda") {}

  plugin::TargetInfo getTargetInfo() const override {
    plugin::TargetInfo info;
    info.backend = "cuda";
    info.triple = "nvptx64-nvidia-cuda";
    info.cpu = getCUDAArch().value_or("invalid");
    info.features = kPTXFeatures;
    return info;
  }

  void buildPipeline(OpPassManager &pm) const override {
    // An unsupported TE_CUDA_ARCH fails the pipeline's first pass with
    // the list of supported archs.
    buildCUDATargetPipeline(pm, getCUDAArch().value_or("sm_80"));
  }

  LogicalResult serialize(ModuleOp lowered, ArrayRef<KernelEntry> entries,
                          StringRef manifest, StringRef outputPath,
                          unsigned optLevel) const override {
    return emitArtifact(lowered, entries, manifest, "fatbin", outputPath,
                        optLevel);
  }

  const plugin::NativeLowering *getNativeLowering() const override {
    return &native;
  }

  /// The kernels depend on the te-mlir build (its build id covers the
  /// lowering), on the toolkit's ptxas, which is read at run time, and on
  /// the settings the strategy choice reads (te/ABI/Environment.h, which
  /// the source key covers too).
  std::string getPipelineIdentity() const override {
    return "te-lower-cuda abi=1 ptxas=" +
           getPtxasVersion(getCUDAToolkitPath()) + " gemm=" + getGemmPolicy() +
           " attention=" + getAttentionPolicy() +
           " fused=" + ::te::abi::getSetting("NVTE_FUSED_ATTN") +
           " flash=" + ::te::abi::getSetting("NVTE_FLASH_ATTN");
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<arith::ArithDialect, bufferization::BufferizationDialect,
                gpu::GPUDialect, LLVM::LLVMDialect, math::MathDialect,
                memref::MemRefDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect,
                scf::SCFDialect, vector::VectorDialect>();
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerBuiltinDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
  }

  std::vector<std::string> getArtifactNames() const override {
    return {"llvm", "ptx", "cubin", "sass", "fatbin", "manifest"};
  }

  LogicalResult emitArtifact(ModuleOp lowered, ArrayRef<KernelEntry> entries,
                             StringRef manifest, StringRef artifact,
                             StringRef outputPath,
                             unsigned optLevel) const override {
    FailureOr<std::string> planned =
        planGPUHostSteps(lowered, entries, manifest, "cuda");
    if (failed(planned))
      return failure();
    // The plan as text: entries, steps, launches and library calls, which
    // the fatbin carries as bytes only.
    if (artifact == "manifest")
      return writeOutputFile(lowered.getLoc(), outputPath, *planned);
    if (CompileRecorder *recorder = CompileRecorder::getCurrent())
      recorder->dump("manifest", "txt",
                     [&](raw_ostream &os) { os << *planned; });
    // The NVVM LLVM IR after LLVM's optimization, as the PTX is made from.
    if (artifact == "llvm") {
      std::string text;
      if (failed(compileKernels(lowered, *planned,
                                gpu::CompilationTarget::Assembly, &text)))
        return failure();
      return writeOutputFile(lowered.getLoc(), outputPath, text);
    }
    gpu::CompilationTarget format = artifact == "ptx"
                                        ? gpu::CompilationTarget::Assembly
                                    : artifact == "cubin" || artifact == "sass"
                                        ? gpu::CompilationTarget::Binary
                                        : gpu::CompilationTarget::Fatbin;
    FailureOr<std::string> bytes = compileKernels(lowered, *planned, format);
    if (failed(bytes))
      return failure();
    if (artifact == "sass") {
      FailureOr<std::string> sass = disassemble(lowered, *bytes);
      if (failed(sass))
        return failure();
      return writeOutputFile(lowered.getLoc(), outputPath, *sass);
    }
    return writeOutputFile(lowered.getLoc(), outputPath, *bytes);
  }

private:
  CUDANativeLowering native;
};

/// Registered when the library loads, before any plugin can claim the
/// name.
[[maybe_unused]] const bool cudaTargetRegistered = (registerCUDATarget(), true);

} // namespace

void mlir::te::registerCUDATarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    TargetRegistry::get().addBuiltin(std::make_unique<CUDATarget>());
    // convert-te-to-gpu{target=cuda:sm_90a}, as the pipeline prints it.
    registerGPUTargetInfo(
        "cuda",
        [](StringRef arch,
           std::string *error) -> std::shared_ptr<const GPUTargetInfo> {
          if (!arch.empty()) {
            if (llvm::is_contained(getSupportedCUDAArchs(), arch))
              return std::make_shared<CUDAGPUTargetInfo>(arch.str());
            *error = "cuda:" + arch.str() +
                     " is not an arch the cuda target generates code for; "
                     "use one of " +
                     llvm::join(getSupportedCUDAArchs(), ", ");
            return nullptr;
          }
          FailureOr<std::string> chosen = getCUDAArch(error);
          if (failed(chosen))
            return nullptr;
          return std::make_shared<CUDAGPUTargetInfo>(*chosen);
        });
  });
}

void mlir::te::registerCUDAPipelinePasses() {
  registerCUDATarget();
  PassRegistration<LowerToCUDALibrariesPass>();
  PassRegistration<ManifestModulePass>();
  registerHostCopiesToGPUPass();
}
