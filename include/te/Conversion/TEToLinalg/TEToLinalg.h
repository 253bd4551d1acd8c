//===- TEToLinalg.h - Lowering te ops to linalg on tensors ------*- C++ -*-===//
#ifndef TE_CONVERSION_TETOLINALG_TETOLINALG_H
#define TE_CONVERSION_TETOLINALG_TETOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::te {

#define GEN_PASS_DECL_APPROXIMATEMATHFORCPU
#define GEN_PASS_DECL_CPUHOSTSTEPS
#define GEN_PASS_DECL_CPUOPENMPTHREADS
#define GEN_PASS_DECL_CPUPARALLELLOOPS
#define GEN_PASS_DECL_CONVERTTETOLINALG
#define GEN_PASS_DECL_TEDECOMPOSEREFERENCE
#include "te/Conversion/Passes.h.inc"

/// Adds the patterns that lower te ops to linalg/tensor/arith/math on tensors.
/// Plugins may add them to their own pattern sets to reuse the native
/// lowering of the ops they do not replace.
void populateTEToLinalgConversionPatterns(RewritePatternSet &patterns);

/// The same with convert-te-to-linalg's options (the target's dot unit);
/// fails, with an error at `anchor`, for options that name nothing known.
LogicalResult
populateTEToLinalgConversionPatterns(RewritePatternSet &patterns,
                                     const ConvertTEToLinalgOptions &options,
                                     Operation *anchor);

/// Lowers every te op in or under `ops` (except te.process_group) with the
/// native host patterns, as convert-te-to-linalg does with `options`.
LogicalResult
applyTEToLinalgConversion(ArrayRef<Operation *> ops,
                          const ConvertTEToLinalgOptions &options = {});

/// Why the host lowering cannot take the te op `op` (in its configuration)
/// yet, or nullopt when it can. This is what convert-te-to-linalg reports
/// and what `te-run --explain` shows.
std::optional<std::string> getCPUUnsupportedReason(Operation *op);

/// The micro-kernels the host GEMM considers for `op` (te.scaled_matmul or
/// te.grouped_matmul) under `options`, in order of preference, each with
/// why it cannot take the op (nullopt for the one that does): what
/// `te-run --explain` shows for the GEMMs. Empty for other ops. Without a
/// tile unit in `options`, the tiles' reason is `noTileUnit` where the
/// caller knows why the target has none (the OS refused them, say).
std::vector<std::pair<std::string, std::optional<std::string>>>
getHostGemmKernelChoices(Operation *op, const ConvertTEToLinalgOptions &options,
                         std::optional<std::string> noTileUnit = std::nullopt);

/// Adds the patterns of te-decompose-reference: te.attention and
/// te.attention_backward as dense linalg math on the materialized
/// [b, h_q, s_q, s_kv] score tensor, independent of the production lowering,
/// for differential checks.
void populateTEReferenceDecompositionPatterns(RewritePatternSet &patterns);

/// Why te-decompose-reference has no reference for `op` (attention with
/// dynamic shapes), or nullopt when it has one or `op` needs none (ops whose
/// host lowering is bit-exact).
std::optional<std::string> getReferenceDecompositionGap(Operation *op);

/// The module attribute in which te-cpu-host-steps records each cut entry
/// point's plan: a dictionary from the entry's name to its manifest lines
/// (an array of strings).
constexpr const char *kHostStepsAttrName = "te.host_steps";

} // namespace mlir::te

#endif // TE_CONVERSION_TETOLINALG_TETOLINALG_H
