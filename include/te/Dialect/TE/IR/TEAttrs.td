//===- TEAttrs.td - Attributes of the te dialect -----------*- tablegen -*-===//
//
// Every configuration choice of a te op is an enum of the dialect, never a
// free-form string, so a typo is a parse error rather than a silent default.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEATTRS_TD
#define TE_DIALECT_TE_IR_TEATTRS_TD

include "te/Dialect/TE/IR/TEDialect.td"
include "mlir/IR/EnumAttr.td"

class TE_I32Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::te";
}

// Printed as a bare keyword inside op assembly (`mask causal`) and as
// `#te<mask causal>` in the generic form. The printer puts a space before
// the value (the generic form needs it after the mnemonic), so op formats
// write `` between their keyword and the attribute: one space, not two.
class TE_EnumAttr<EnumAttrInfo enumInfo, string mnemonic>
    : EnumAttr<TE_Dialect, enumInfo, mnemonic> {
  let assemblyFormat = "$value";
}

def TE_QKVLayout : TE_I32Enum<"QKVLayout", "memory layout of Q, K and V", [
  I32EnumAttrCase<"bshd", 0>,
  I32EnumAttrCase<"sbhd", 1>,
  I32EnumAttrCase<"bhsd", 2>,
  I32EnumAttrCase<"thd", 3>
]>;
def TE_QKVLayoutAttr : TE_EnumAttr<TE_QKVLayout, "layout">;

def TE_MaskKind : TE_I32Enum<"MaskKind", "attention mask kind", [
  I32EnumAttrCase<"no_mask", 0>,
  I32EnumAttrCase<"padding", 1>,
  I32EnumAttrCase<"causal", 2>,
  I32EnumAttrCase<"causal_bottom_right", 3>,
  I32EnumAttrCase<"padding_causal", 4>,
  I32EnumAttrCase<"padding_causal_bottom_right", 5>,
  I32EnumAttrCase<"arbitrary", 6>
]>;
def TE_MaskKindAttr : TE_EnumAttr<TE_MaskKind, "mask">;

def TE_BiasKind : TE_I32Enum<"BiasKind", "attention bias kind", [
  I32EnumAttrCase<"no_bias", 0>,
  I32EnumAttrCase<"pre_scale", 1>,
  I32EnumAttrCase<"post_scale", 2>,
  I32EnumAttrCase<"alibi", 3>
]>;
def TE_BiasKindAttr : TE_EnumAttr<TE_BiasKind, "bias">;

def TE_SoftmaxKind : TE_I32Enum<"SoftmaxKind", "softmax normalisation kind", [
  I32EnumAttrCase<"vanilla", 0>,
  I32EnumAttrCase<"off_by_one", 1>,
  I32EnumAttrCase<"learnable", 2>
]>;
def TE_SoftmaxKindAttr : TE_EnumAttr<TE_SoftmaxKind, "softmax">;

def TE_ScalingMode : TE_I32Enum<"ScalingMode", "FP8 scaling granularity", [
  I32EnumAttrCase<"per_tensor", 0>,
  I32EnumAttrCase<"mxfp8_1x32", 1>,
  I32EnumAttrCase<"block_1x128", 2>,
  I32EnumAttrCase<"block_128x128", 3>
]>;
def TE_ScalingModeAttr : TE_EnumAttr<TE_ScalingMode, "scaling">;

def TE_QuantizeUsage : TE_I32Enum<"QuantizeUsage",
    "which quantized copies te.quantize produces", [
  I32EnumAttrCase<"rowwise", 0>,
  I32EnumAttrCase<"columnwise", 1>,
  I32EnumAttrCase<"both", 2>
]>;
def TE_QuantizeUsageAttr : TE_EnumAttr<TE_QuantizeUsage, "usage">;

def TE_AmaxComputeAlgo : TE_I32Enum<"AmaxComputeAlgo",
    "how delayed scaling reduces the amax history", [
  I32EnumAttrCase<"max", 0>,
  I32EnumAttrCase<"most_recent", 1>
]>;
def TE_AmaxComputeAlgoAttr : TE_EnumAttr<TE_AmaxComputeAlgo, "amax_algo">;

def TE_NormKind : TE_I32Enum<"NormKind", "normalization over the last dimension", [
  I32EnumAttrCase<"layernorm", 0>,
  I32EnumAttrCase<"rmsnorm", 1>
]>;
def TE_NormKindAttr : TE_EnumAttr<TE_NormKind, "norm">;

def TE_ActivationKind : TE_I32Enum<"ActivationKind",
    "activation function (TE's activation.h)", [
  I32EnumAttrCase<"gelu", 0>,
  I32EnumAttrCase<"qgelu", 1>,
  I32EnumAttrCase<"relu", 2>,
  I32EnumAttrCase<"srelu", 3>,
  I32EnumAttrCase<"silu", 4>,
  I32EnumAttrCase<"geglu", 5>,
  I32EnumAttrCase<"qgeglu", 6>,
  I32EnumAttrCase<"reglu", 7>,
  I32EnumAttrCase<"sreglu", 8>,
  I32EnumAttrCase<"swiglu", 9>,
  I32EnumAttrCase<"clamped_swiglu", 10>,
  I32EnumAttrCase<"glu", 11>
]>;
def TE_ActivationKindAttr : TE_EnumAttr<TE_ActivationKind, "activation">;

def TE_ReduceKind : TE_I32Enum<"ReduceKind", "collective reduction", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"max", 1>,
  I32EnumAttrCase<"min", 2>,
  I32EnumAttrCase<"avg", 3>
]>;
def TE_ReduceKindAttr : TE_EnumAttr<TE_ReduceKind, "reduce">;

#endif // TE_DIALECT_TE_IR_TEATTRS_TD
