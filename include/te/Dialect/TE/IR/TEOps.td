//===- TEOps.td - Operations of the te dialect -------------*- tablegen -*-===//
//
// Attention, FP8, GEMM, normalization and collective operations of
// Transformer Engine. Each op documents its exact semantics; the verifiers
// in TEOps.cpp enforce every invariant those semantics rely on.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEOPS_TD
#define TE_DIALECT_TE_IR_TEOPS_TD

include "te/Dialect/TE/IR/TEAttrs.td"
include "te/Dialect/TE/IR/TEInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def TE_HighPrecisionFloat : AnyTypeOf<[F32, F16, BF16]>;
def TE_FP8Float : AnyTypeOf<[F8E4M3FN, F8E5M2]>;
def TE_HighPrecisionTensor : RankedTensorOf<[F32, F16, BF16]>;
def TE_FP8Tensor : RankedTensorOf<[F8E4M3FN, F8E5M2]>;
def TE_F32Tensor : RankedTensorOf<[F32]>;
def TE_I32Vector : 1DTensorOf<[I32]>;
def TE_RngState : TensorRankOf<[I64], [1]>;
def TE_BoolTensor : RankedTensorOf<[I1]>;
def TE_BiasTensor : RankedTensorOf<[F32, F16, BF16]>;
def TE_AnyFP8Format : TypeAttrOf<TE_FP8Float>;

// Runs the op's `verifyBeforeTypeInference()` ahead of InferTypeOpInterface's
// check, so a bad configuration gets its precise diagnostic instead of
// "failed to infer returned types". List it before InferTypeOpAdaptor.
def TE_VerifyBeforeTypeInference : NativeOpTrait<"VerifyBeforeTypeInference",
    [], [{
    ::llvm::LogicalResult verifyBeforeTypeInference();
  }]> {
  let cppNamespace = "::mlir::te";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// Attributes shared by the forward and backward attention ops.
defvar AttentionConfigAttrs = (ins
  TE_QKVLayoutAttr:$layout,
  DefaultValuedAttr<TE_MaskKindAttr, "::mlir::te::MaskKind::no_mask">:$mask_kind,
  OptionalAttr<DenseI64ArrayAttr>:$window,
  OptionalAttr<BoolAttr>:$bottom_right_diagonal,
  OptionalAttr<F32Attr>:$scale,
  DefaultValuedAttr<TE_BiasKindAttr, "::mlir::te::BiasKind::no_bias">:$bias_kind,
  DefaultValuedAttr<TE_SoftmaxKindAttr, "::mlir::te::SoftmaxKind::vanilla">:$softmax_kind,
  DefaultValuedAttr<F32Attr, "0.0f">:$dropout
);

// Operands that only some configurations take (see the verifier).
defvar AttentionOptionalOperands = (ins
  Optional<TE_I32Vector>:$cu_seqlens_q,
  Optional<TE_I32Vector>:$cu_seqlens_kv,
  Optional<TE_I32Vector>:$seq_offsets_q,
  Optional<TE_I32Vector>:$seq_offsets_kv,
  Optional<TE_I32Vector>:$seqlens_q,
  Optional<TE_I32Vector>:$seqlens_kv,
  Optional<TE_BoolTensor>:$mask,
  Optional<TE_BiasTensor>:$bias,
  Optional<TE_F32Tensor>:$alibi_slopes,
  Optional<TE_RngState>:$rng_state,
  Optional<TE_F32Tensor>:$softmax_offset
);

defvar AttentionConfigFormat = [{
  `layout` `` $layout
  (`mask` `` $mask_kind^)?
  (`window` $window^)?
  (`bottom_right_diagonal` $bottom_right_diagonal^)?
  (`scale` $scale^)?
  (`bias` `` $bias_kind^)?
  (`softmax` `` $softmax_kind^)?
  (`dropout` $dropout^)?
  (`cu_seqlens` `(` $cu_seqlens_q^ `,` $cu_seqlens_kv `)`)?
  (`seq_offsets` `(` $seq_offsets_q^ `,` $seq_offsets_kv `)`)?
  (`seqlens` `(` $seqlens_q^ `,` $seqlens_kv `)`)?
  (`mask_tensor` `(` $mask^ `)`)?
  (`bias_tensor` `(` $bias^ `)`)?
  (`alibi_slopes` `(` $alibi_slopes^ `)`)?
  (`rng_state` `(` $rng_state^ `)`)?
  (`softmax_offset` `(` $softmax_offset^ `)`)?
}];

defvar AttentionSemantics = [{
    Semantics, per batch entry `b` and query head `h` (key/value head
    `h / (H_q / H_kv)`, which covers MHA, GQA and MQA):

    ```
    P = scale * Q K^T           (+ bias before the scale for `pre_scale`)
    P = P + bias                (`post_scale`)
    P = P - slope[h] * |i + diag - j|   (`alibi`)
    P[i, j] = -inf where the mask or the window excludes key j for query i
    S = softmax_kind(P)         (row-wise)
    D = dropout(S)              (keep with probability 1 - p, scaled by 1/(1-p))
    O = D V
    ```

    len_q and len_kv are a sequence's actual lengths (from `seqlens` for the
    padding masks, from `cu_seqlens` for `thd`), otherwise s_q and s_kv.
    `diag` places the diagonal that sliding windows and ALiBi are measured
    from: len_kv - len_q when the diagonal is aligned bottom-right, 0 when it
    is aligned top-left (see `bottom_right_diagonal`). A query row that sees
    no key (padding rows past len_q, tokens of `thd` that belong to no
    sequence, rows a window or mask empties) has O = 0, and its LSE is the
    log of the softmax's extra denominator term: -inf for `vanilla`, 0 for
    `off_by_one`, alpha_h for `learnable`.

    * `layout`: `bshd` ([b, s, h, d]), `sbhd` ([s, b, h, d]), `bhsd`
      ([b, h, s, d]) or `thd` ([t, h, d]: the sequences of the batch packed
      one after another). `thd` needs `cu_seqlens(%cu_q, %cu_kv)`, int32
      [b + 1] prefix sums of the sequence lengths, and optionally
      `seq_offsets(%off_q, %off_kv)`, int32 [b + 1] start offsets of each
      sequence when there is padding between sequences (tokens
      `[a, PAD, b, b, c]` have cu_seqlens `[0, 1, 3, 4]` and offsets
      `[0, 2, 4, 5]`). `thd` needs a padding mask kind. Index operands must
      describe sequences inside the tensors: cu_seqlens start at 0 and never
      decrease, each sequence [offset, offset + length) lies within the t
      tokens, and seqlens lie in [0, s]; a kernel given other values fails
      with an error naming the operand instead of reading out of bounds.
    * `mask`: `no_mask`; `padding` (keys at or beyond the sequence's kv length
      and queries beyond its q length are excluded; non-`thd` layouts take the
      per-sequence lengths as `seqlens(%len_q, %len_kv)`, int32 [b]); `causal`
      (query i sees keys j <= i, top-left aligned); `causal_bottom_right`
      (j <= i + len_kv - len_q); `padding_causal` and
      `padding_causal_bottom_right` (both, with the diagonal measured on the
      actual lengths); `arbitrary` (an i1 `mask_tensor` broadcastable to
      [b, h_q, s_q, s_kv]; `true` excludes the key).
    * `window [left, right]`: query i sees keys
      j in [i + diag - left, i + diag + right]; -1 means unbounded on that
      side, as in TE's fused backends (TE's unfused PyTorch path substitutes
      s_kv for an unbounded left bound and s_q for an unbounded right one,
      which differs only with top-left alignment and s_q != s_kv). As in Transformer Engine (check_set_window_size), causal masks
      take `right` in {-1, 0} (both mean "no future keys") and the other
      masks take [-1, -1] (no window) or two bounds >= 0.
    * `bottom_right_diagonal true|false`: where sliding windows and ALiBi
      align their diagonal, resolved as Transformer Engine resolves it:
      `causal` and `padding_causal` align top-left and the two
      `*_bottom_right` masks bottom-right (a contradicting value is an
      error); `no_mask`, `padding` and `arbitrary` follow the attribute, and
      align bottom-right when it is absent (with the actual per-sequence
      lengths for `padding`).
    * `scale`: the softmax scale; default 1 / sqrt(d_qk).
    * `bias`: `no_bias`, `pre_scale` / `post_scale` with a `bias_tensor` of
      shape [1 or b, 1 or h_q, s_q, s_kv] (not with `thd`), or `alibi` with
      `alibi_slopes` of shape [h_q] or [b, h_q] (f32).
    * `softmax`: `vanilla`; `off_by_one` (exp(x_i) / (1 + sum_j exp(x_j)));
      `learnable` (exp(x_i) / (exp(alpha_h) + sum_j exp(x_j)) with
      `softmax_offset` alpha of shape [1, h_q, 1, 1], f32).
    * `dropout p` in [0, 1): a non-zero probability needs `rng_state`, an
      i64 tensor [2] holding (seed, offset). Element (batch n, query head h,
      query row r, key token t) is kept when u >= p, where, in 64-bit
      unsigned arithmetic, counter = ((n * H_q + h) * R + r) * T + t (R, T:
      the row and key-token counts of q and k: s_q and s_kv, or t_q and t_kv
      for `thd`, where n = 0 and r, t are token indices),
      x = seed + 0x9E3779B97F4A7C15 * (offset + counter + 1),
      z = splitmix64's finalizer of x (z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
      z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31), and
      u = (z >> 40) * 2^-24. Kept weights are scaled by 1 / (1 - p); the
      softmax statistics (LSE) are those before dropout. This hash is
      te-mlir's own: TE's kernels draw from Philox with the same (seed,
      offset), so the kept sets agree with TE's in distribution, not bit
      for bit, and every te-mlir backend must reproduce this definition.
}];

defvar AttentionClassDeclaration = [{
    /// The softmax scale, with TE's default of 1/sqrt(d_qk) when unset;
    /// nullopt when it is unset and d_qk is dynamic.
    std::optional<double> getEffectiveScale();
    /// The window bounds (left, right); -1 is unbounded. Absent means (-1, -1).
    std::pair<int64_t, int64_t> getWindowBounds();
    /// Whether windows and ALiBi align to the bottom-right diagonal, resolved
    /// from the mask kind and `bottom_right_diagonal` as TE resolves it.
    bool isBottomRightDiagonal() {
      return resolveBottomRightDiagonal(getMaskKind(), getBottomRightDiagonal());
    }
}];

def TE_AttentionOp : TE_Op<"attention", [Pure, AttrSizedOperandSegments,
    TE_VerifyBeforeTypeInference, InferTypeOpAdaptor,
    TE_AttentionOpInterface]> {
  let summary = "fused multi-head attention, forward";
  let description = !strconcat([{
    Computes scaled dot-product attention of `q` against `k` and `v` the way
    Transformer Engine's fused attention does. The result `o` has the layout
    and element type of `q`, with the head dimension of `v` (d_qk may differ
    from d_v). With `return_lse` a second result holds the f32 log-sum-exp of
    each softmax row (of the scaled, biased and masked scores): [b, h_q, s_q, 1],
    or [t_q, h_q, 1] for `thd`; this is what `te.attention_backward` takes.

  }], AttentionSemantics, [{

    Example (causal GQA, bf16, with LSE):

    ```mlir
    %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
        : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>,
           tensor<2x128x4x64xbf16>)
        -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
    ```
  }]);

  let arguments = !con(
    (ins TE_HighPrecisionTensor:$q, TE_HighPrecisionTensor:$k,
         TE_HighPrecisionTensor:$v),
    AttentionOptionalOperands,
    AttentionConfigAttrs,
    (ins UnitAttr:$return_lse));
  let results = (outs TE_HighPrecisionTensor:$o, Optional<TE_F32Tensor>:$lse);

  let assemblyFormat = !strconcat("$q `,` $k `,` $v ", AttentionConfigFormat,
      " attr-dict `:` functional-type(operands, results)");
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = AttentionClassDeclaration # [{
    bool isBackward() { return false; }
  }];
}

def TE_AttentionBackwardOp : TE_Op<"attention_backward", [Pure,
    AttrSizedOperandSegments, TE_VerifyBeforeTypeInference,
    InferTypeOpAdaptor, TE_AttentionOpInterface]> {
  let summary = "fused multi-head attention, backward";
  let description = !strconcat([{
    Gradients of `te.attention` with the same configuration. Takes the
    forward inputs, the forward output `o`, its gradient `d_o` (same type as
    `o`) and the log-sum-exp `lse` returned by the forward op (dropout masks
    are regenerated from `rng_state`). Returns `dq`, `dk`, `dv` with the
    types of `q`, `k`, `v`, followed by the gradients of the optional
    parameters in this order: `dbias` (type of `bias_tensor`, for
    `pre_scale` / `post_scale` bias) and `d_softmax_offset` (type of
    `softmax_offset`, for the `learnable` softmax).

  }], AttentionSemantics, [{

    Example:

    ```mlir
    %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse
        layout bshd mask causal
        : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>,
           tensor<2x128x4x64xbf16>, tensor<2x128x16x64xbf16>,
           tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
        -> (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>,
            tensor<2x128x4x64xbf16>)
    ```
  }]);

  let arguments = !con(
    (ins TE_HighPrecisionTensor:$q, TE_HighPrecisionTensor:$k,
         TE_HighPrecisionTensor:$v, TE_HighPrecisionTensor:$o,
         TE_HighPrecisionTensor:$d_o, TE_F32Tensor:$lse),
    AttentionOptionalOperands,
    AttentionConfigAttrs);
  let results = (outs TE_HighPrecisionTensor:$dq, TE_HighPrecisionTensor:$dk,
                      TE_HighPrecisionTensor:$dv,
                      Variadic<RankedTensorOf<[F32, F16, BF16]>>:$param_grads);

  let assemblyFormat = !strconcat(
      "$q `,` $k `,` $v `,` $o `,` $d_o `,` $lse ", AttentionConfigFormat,
      " attr-dict `:` functional-type(operands, results)");
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = AttentionClassDeclaration # [{
    bool isBackward() { return true; }
    /// Gradient of `bias_tensor`, or null when the op has no bias tensor.
    ::mlir::Value getDBias();
    /// Gradient of `softmax_offset`, or null unless the softmax is learnable.
    ::mlir::Value getDSoftmaxOffset();
  }];
}

//===----------------------------------------------------------------------===//
// FP8 scaling and quantization
//===----------------------------------------------------------------------===//

def TE_AmaxOp : TE_Op<"amax", [Pure, InferTypeOpAdaptor]> {
  let summary = "maximum absolute value of a tensor";
  let description = [{
    Returns max |x| over the elements of `input` as an f32 scalar tensor,
    the way Transformer Engine reduces it (fmaxf from 0): NaN elements are
    skipped, so the result is the max over the non-NaN magnitudes (0 when
    every element is NaN); the amax of an empty tensor is 0, and infinities
    give +inf. The same rule holds for every amax the dialect computes:
    `te.quantize`'s amax result, its MXFP8 and block scales, the FP8 output
    amax of `te.scaled_matmul`, and the history reduction of
    `te.update_delayed_scaling`.

    ```mlir
    %a = te.amax %x : tensor<1024x1024xbf16> -> tensor<f32>
    ```
  }];
  let arguments = (ins TE_HighPrecisionTensor:$input);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def TE_ComputeScaleOp : TE_Op<"compute_scale", [Pure, InferTypeOpAdaptor]> {
  let summary = "current-scaling factor from an amax";
  let description = [{
    Float8CurrentScaling's scale computation, element-wise over `amax`
    (a per-tensor scalar or a tensor of block amaxes):

    ```
    a     = max(amax, epsilon)
    scale = fp8_max(fp8_type) / a          (round-to-nearest f32 division)
    scale = 1      if a is 0, inf or NaN
    scale = FLT_MAX if the division overflows to inf
    scale = 2^floor(log2(scale))   with `pow2_scales` (mantissa cleared)
    ```

    `fp8_type` names the target format (f8E4M3FN: max 448; f8E5M2: max
    57344). `epsilon` must be finite and >= 0.

    ```mlir
    %s = te.compute_scale %amax fp8_type f8E4M3FN epsilon 1.0e-12 pow2_scales
        : tensor<f32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TE_F32Tensor:$amax, TE_AnyFP8Format:$fp8_type,
                       DefaultValuedAttr<F32Attr, "0.0f">:$epsilon,
                       UnitAttr:$pow2_scales);
  let results = (outs TE_F32Tensor:$scale);
  let assemblyFormat = [{
    $amax `fp8_type` $fp8_type (`epsilon` $epsilon^)? (`pow2_scales` $pow2_scales^)?
    attr-dict `:` type($amax) `->` type($scale)
  }];
  let hasVerifier = 1;
}

def TE_UpdateDelayedScalingOp : TE_Op<"update_delayed_scaling",
    [Pure, TE_VerifyBeforeTypeInference, InferTypeOpAdaptor]> {
  let summary = "one DelayedScaling update: roll the amax history, new scale";
  let description = [{
    `amax_history` has shape [L, S...] (L = amax_history_len), `amax` and
    `scale` have shape [S...] (one entry per tensor managed by the recipe).
    For each entry:

    ```
    history'[0] = amax, history'[i] = history[i - 1] for 0 < i < L
    a       = max(0, max_i history'[i])  (amax_algo max, the default;
                                          NaN entries skipped, as fmaxf does)
            | amax                (amax_algo most_recent)
    s       = (fp8_max(fp8_type) * 2^-margin) / a  (round-to-nearest f32)
    scale'  = scale      if a is 0, inf or NaN (keep the previous scale)
            | FLT_MAX    if s is +inf
            | s          otherwise
    ```

    This is TE's delayed_scaling.cu (its `scaled_max / amax`), which is not
    always bit-identical to (fp8_max / a) / 2^margin near the f32 range
    limits. Results are the new history and the new scale; `scale_inv` is
    1 / scale and is produced by `te.quantize`. `margin` must be >= 0.

    ```mlir
    %h2, %s2 = te.update_delayed_scaling %hist, %amax, %scale
        fp8_type f8E4M3FN amax_algo max margin 0
        : tensor<1024x3xf32>, tensor<3xf32>, tensor<3xf32>
        -> tensor<1024x3xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins TE_F32Tensor:$amax_history, TE_F32Tensor:$amax,
                       TE_F32Tensor:$scale, TE_AnyFP8Format:$fp8_type,
                       DefaultValuedAttr<TE_AmaxComputeAlgoAttr,
                           "::mlir::te::AmaxComputeAlgo::max">:$amax_algo,
                       DefaultValuedAttr<I32Attr, "0">:$margin);
  let results = (outs TE_F32Tensor:$new_amax_history, TE_F32Tensor:$new_scale);
  let assemblyFormat = [{
    $amax_history `,` $amax `,` $scale `fp8_type` $fp8_type
    (`amax_algo` `` $amax_algo^)? (`margin` $margin^)?
    attr-dict `:` type($amax_history) `,` type($amax) `,` type($scale)
    `->` type($new_amax_history) `,` type($new_scale)
  }];
}

def TE_QuantizeOp : TE_Op<"quantize", [Pure]> {
  let summary = "FP8 quantization (cast, cast_transpose, MXFP8 and block scaling)";
  let description = [{
    Casts `input` to the FP8 element type of its data result(s) with
    round-to-nearest-even and saturation to the format's largest finite value
    (NaN stays NaN), in one of TE's scaling modes:

    * `per_tensor` (delayed and current scaling): takes `scale` (an f32
      scalar tensor); data = cast(input * scale); results
      `[data], [data_t], scale_inv, amax` where `scale_inv` = 1 / scale and
      `amax` = max |input| (see `te.amax`). `data_t` is the transposed copy of
      a 2-D input (TE's cast_transpose).
    * `mxfp8_1x32`: one f8E8M0FNU scale per 32 consecutive elements, chosen
      so that the block's amax (over its non-NaN elements, see `te.amax`)
      / fp8_max rounds up to a power of two. Row-wise
      blocks run along the last dimension (scale_inv shape: last dim / 32);
      column-wise blocks along the second-to-last (that dim / 32). The
      column-wise copy keeps the input's layout. Results `[data, scale_inv],
      [data_col, scale_inv_col]`.
    * `block_1x128` / `block_128x128` (Float8BlockScaling, 2-D inputs): f32
      scales per 1x128 or 128x128 block (partial blocks at the edges
      included), scale = fp8_max / max(block amax, epsilon) with the block
      amax over its non-NaN elements, rounded down to
      a power of two unless `pow2_scales false`. The column-wise copy is
      stored transposed, with the same block shape over the transposed
      matrix. Results `[data, scale_inv], [data_t, scale_inv_t]`.

    `usage` picks the copies: `rowwise` (the default), `columnwise` or
    `both`; results appear in the order above, skipping absent ones.

    ```mlir
    %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
        : tensor<256x512xbf16>, tensor<f32>
        -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
    %d, %s = te.quantize %x mode mxfp8_1x32
        : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>
    ```
  }];
  let arguments = (ins TE_HighPrecisionTensor:$input,
                       Optional<0DTensorOf<[F32]>>:$scale,
                       TE_ScalingModeAttr:$mode,
                       DefaultValuedAttr<TE_QuantizeUsageAttr,
                           "::mlir::te::QuantizeUsage::rowwise">:$usage,
                       DefaultValuedOptionalAttr<BoolAttr, "true">:$pow2_scales,
                       DefaultValuedAttr<F32Attr, "0.0f">:$epsilon);
  let results = (outs Variadic<RankedTensorOf<[F8E4M3FN, F8E5M2, F32,
                                               F8E8M0FNU]>>:$results);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `)`)? `mode` `` $mode (`usage` `` $usage^)?
    (`pow2_scales` $pow2_scales^)? (`epsilon` $epsilon^)?
    attr-dict `:` type(operands) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool hasRowwise() { return getUsage() != QuantizeUsage::columnwise; }
    bool hasColumnwise() { return getUsage() != QuantizeUsage::rowwise; }
    /// Row-wise FP8 data, or null.
    ::mlir::Value getData();
    /// Column-wise (transposed for per_tensor and block modes) data, or null.
    ::mlir::Value getColumnwiseData();
    /// Scale inverse of the row-wise data (the only one for per_tensor).
    ::mlir::Value getScaleInv();
    /// Scale inverse of the column-wise data (per_tensor: the shared one).
    ::mlir::Value getColumnwiseScaleInv();
    /// The amax result of per_tensor quantization, or null.
    ::mlir::Value getAmax();
    /// The number of results a configuration has.
    static unsigned getNumExpectedResults(ScalingMode mode, QuantizeUsage usage);
  }];
}

def TE_DequantizeOp : TE_Op<"dequantize", [Pure]> {
  let summary = "FP8 dequantization for every scaling mode";
  let description = [{
    Inverse of `te.quantize` up to rounding: result = data * scale_inv with
    `scale_inv` in the shape `te.quantize` produced for `mode` (a scalar for
    `per_tensor`, f8E8M0FNU per 1x32 block for `mxfp8_1x32`, f32 per block
    for `block_1x128` / `block_128x128`; transposed copies are dequantized
    as the 2-D matrices they are). For `mxfp8_1x32`, `columnwise` says the
    scales run along the second-to-last dimension. The result has the
    data's shape and an f32, f16 or bf16 element type (computed in f32,
    then rounded to nearest even).

    ```mlir
    %x = te.dequantize %d, %si mode per_tensor
        : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xbf16>
    ```
  }];
  let arguments = (ins TE_FP8Tensor:$data,
                       RankedTensorOf<[F32, F8E8M0FNU]>:$scale_inv,
                       TE_ScalingModeAttr:$mode, UnitAttr:$columnwise);
  let results = (outs TE_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $data `,` $scale_inv `mode` `` $mode (`columnwise` $columnwise^)?
    attr-dict `:` type($data) `,` type($scale_inv) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TE_GemmOperand : RankedTensorOf<[F32, F16, BF16, F8E4M3FN, F8E5M2]>;

def TE_ScaledMatmulOp : TE_Op<"scaled_matmul", [Pure,
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "TE's GEMM: every precision and scaling mode, with epilogues";
  let description = [{
    TE's GEMM (`nvte_cublas_gemm` and `cublas_gemm` in TE's
    common/gemm/cublaslt_gemm.cu), stated in row-major terms:

    `P = alpha * (op(A) x op(B)) [+ C]`, with op(A) = A^T under
    `transpose_a` (A stored [K, M], else [M, K]) and op(B) = B^T under
    `transpose_b` (B stored [N, K], else [K, N]); products are accumulated
    in f32 (TE's split accumulator; te never uses cuBLAS's reduced-precision
    FP8 "fast accumulation"). f32 operands are multiplied in f32: TE's
    cublas_gemm runs pure f32 GEMMs in TF32 (CUBLAS_COMPUTE_32F_FAST_TF32,
    operands rounded to 10 mantissa bits), a speed choice te does not
    make, so te's result is at least as accurate as TE's.

    Operands are either both high precision (f32, f16 or bf16, the same
    type; no scales) or both FP8 (e4m3 or e5m2, not both e5m2) with
    `scales(%a_scale_inv, %b_scale_inv)` in one scaling mode per operand
    (`scaling <a mode>, <b mode>`, `per_tensor` when omitted). TE allows the
    two modes to differ only for Float8BlockScaling, and not 2D by 2D:

    * `per_tensor`: f32 scalars; alpha = a_scale_inv * b_scale_inv.
    * `mxfp8_1x32` (both operands): one f8E8M0FNU scale per 32 elements
      along K: the scale tensor has the stored operand's shape with K
      divided by 32 (K a multiple of 32). Each product is scaled by its
      two blocks' scales; alpha = 1.
    * `block_1x128` / `block_128x128` (1D by 1D, 1D by 2D or 2D by 1D): f32
      scales per 1x128 block along K (the stored shape with K divided by
      128, rounding up) or per 128x128 block of the stored operand (both
      dims divided by 128, rounding up). Each 128-wide K block's partial
      product is summed in f32, multiplied by its two scales and added to
      the f32 result (TE's reference and cuBLAS's VEC128_32F /
      BLK128x128_32F); alpha = 1.

    These are the layouts `te.quantize` produces (its column-wise MXFP8
    copy scales along the second-to-last dimension, so it is the operand
    of a GEMM that contracts over that dimension).

    `accumulate(%c)` adds C (D's type and shape) to the product (TE's
    `accumulate`, beta = 1: wgrad into main_grad); the epilogue then acts
    on P, as cuBLASLt's does. The epilogues are TE's choice from (bias,
    pre_gelu_out, grad):

    * forward: `bias(%bias)` ([N], f32, f16 or bf16) adds the bias to each
      row; `gelu` applies the tanh GELU after it (TE's GELU_AUX_BIAS), and
      `pre_gelu` also returns the values before the GELU.
    * backward: `dgelu(%pre_gelu)` ([M, N], f32, f16 or bf16) gives
      D = P * gelu'(pre_gelu) (TE's DGELU); `bias_grad` also returns the
      bias gradient: with `dgelu`, the column sums of D ([N], DGELU_BGRAD),
      else the row sums of op(A) ([M], BGRADB: the sum of dY over tokens in
      the wgrad GEMM).

    With block scaling, TE (cuBLASLt) offers only the bias and dgelu
    epilogues. The output is f32, f16, bf16, or an FP8 type with per_tensor
    FP8 operands (TE fuses the cast only for delayed scaling): an FP8 output
    takes `out_scale` (D_fp8 = cast(D * out_scale), saturating, RNE) and
    returns the f32 amax of D before scaling. Results, in order: D, then
    amax (FP8 output), pre_gelu (`pre_gelu`), bias_grad (`bias_grad`);
    side results are computed in f32 and rounded to their types.

    ```mlir
    %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b
        : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>
        -> tensor<128x64xbf16>
    %y = te.scaled_matmul %x, %w scales(%sx, %sw) scaling mxfp8_1x32, mxfp8_1x32 transpose_b
        : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>,
          tensor<128x8xf8E8M0FNU>, tensor<64x8xf8E8M0FNU> -> tensor<128x64xbf16>
    %h, %pre = te.scaled_matmul %x, %w bias(%b1) transpose_b gelu pre_gelu
        : tensor<128x256xbf16>, tensor<64x256xbf16>, tensor<64xbf16>
        -> tensor<128x64xbf16>, tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins TE_GemmOperand:$a, TE_GemmOperand:$b,
                       Optional<RankedTensorOf<[F32, F8E8M0FNU]>>:$a_scale_inv,
                       Optional<RankedTensorOf<[F32, F8E8M0FNU]>>:$b_scale_inv,
                       Optional<TensorRankOf<[F32, F16, BF16], [1]>>:$bias,
                       Optional<TensorRankOf<[F32, F16, BF16], [2]>>:$gelu_input,
                       Optional<TensorRankOf<[F32, F16, BF16], [2]>>:$c,
                       Optional<0DTensorOf<[F32]>>:$out_scale,
                       OptionalAttr<TE_ScalingModeAttr>:$a_scaling,
                       OptionalAttr<TE_ScalingModeAttr>:$b_scaling,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$gelu, UnitAttr:$pre_gelu,
                       UnitAttr:$bias_grad);
  let results = (outs RankedTensorOf<[F32, F16, BF16, F8E4M3FN, F8E5M2]>:$d,
                      Variadic<RankedTensorOf<[F32, F16, BF16]>>:$side_results);
  let assemblyFormat = [{
    $a `,` $b (`scales` `(` $a_scale_inv^ `,` $b_scale_inv `)`)?
    (`scaling` `` $a_scaling^ `,` `` $b_scaling)?
    (`bias` `(` $bias^ `)`)? (`dgelu` `(` $gelu_input^ `)`)?
    (`accumulate` `(` $c^ `)`)? (`out_scale` `(` $out_scale^ `)`)?
    (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`gelu` $gelu^)? (`pre_gelu` $pre_gelu^)? (`bias_grad` $bias_grad^)?
    attr-dict `:` type(operands) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scaling mode of an FP8 operand (`per_tensor` when the op names
    /// none); meaningless for high-precision operands.
    ScalingMode getAScalingMode() {
      return getAScaling().value_or(ScalingMode::per_tensor);
    }
    ScalingMode getBScalingMode() {
      return getBScaling().value_or(ScalingMode::per_tensor);
    }
    /// Whether the operands are FP8 (else f32, f16 or bf16).
    bool hasFP8Operands();
    /// Whether D is FP8 (then an amax result follows it).
    bool hasFP8Output();
    /// The amax of an FP8 output, or null.
    ::mlir::Value getAmax();
    /// The values before the GELU (`pre_gelu`), or null.
    ::mlir::Value getPreGeluResult();
    /// The bias gradient (`bias_grad`), or null.
    ::mlir::Value getBiasGradResult();
    /// [M, N, K] of the product; dynamic sizes are ShapedType::kDynamic.
    std::array<int64_t, 3> getProblemSize();
    /// The first part of the op's configuration beyond a per_tensor FP8
    /// GEMM with the bias and GELU epilogues ("bf16 operands",
    /// "mxfp8_1x32 scaling", "accumulate", "dgelu", "pre_gelu",
    /// "bias_grad"), or nullopt: what a lowering that covers only that
    /// form names when it declines the op.
    std::optional<std::string> getFeatureBeyondPerTensorFP8();
  }];
}

def TE_GroupedMatmulOp : TE_Op<"grouped_matmul", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "TE's grouped GEMM: one GEMM per group of rows (MoE experts)";
  let description = [{
    TE's grouped GEMM as GroupedLinear runs it forward and for the input
    gradient (`general_grouped_gemm` in TE's pytorch/cpp_extensions/gemm.py,
    `nvte_multi_tensor_gemm` in common/gemm/cublaslt_gemm.cu): the rows of
    A ([T, K], tokens sorted by expert) fall into G consecutive groups of
    `splits` rows (`m_splits`, i64 [G], read at run time, so one program
    serves every routing), and group g's rows of D ([T, N]) are

    `D_g = alpha_g * (A_g x op(B[g])) [+ C_g] [+ bias[g]]`

    with B the G stacked weights: [G, N, K] under `transpose_b` (op(B[g]) =
    B[g]^T, the forward's layout), else [G, K, N] (the input gradient's).
    Each GEMM follows te.scaled_matmul's rules on precisions and scaling
    modes, with the scales of each group's operands:

    * high precision: f32, f16 or bf16, one type, no scales.
    * `per_tensor` FP8: f32 [G] scale inverses for A's groups and for B's
      (TE quantizes each group with its own quantizer); alpha_g =
      a_scale_inv[g] * b_scale_inv[g].
    * `mxfp8_1x32`: A's scales [T, K/32] (row-wise scales split with the
      rows), B's [G] + the per-group shape of te.scaled_matmul (the stored
      [N, K] or [K, N] with K divided by 32).
    * `block_1x128` for A ([T, ceil(K/128)]); `block_1x128` or
      `block_128x128` for B, [G] + te.scaled_matmul's per-group shape.
      A is never 128x128: its blocks would straddle groups (TE scales
      activations 1x128).

    `bias(%bias)` ([G, N]) adds group g's bias to its rows;
    `accumulate(%c)` adds C (D's type and shape) before it. D is f32, f16
    or bf16. The splits must be non-negative and sum to T (TE splits the
    input with torch.split); te-insert-checks reports data that does not.
    An empty group contributes no rows.

    ```mlir
    %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
        : tensor<256x128xbf16>, tensor<4x64x128xbf16>, tensor<4xi64>,
          tensor<4x64xbf16> -> tensor<256x64xbf16>
    ```
  }];
  let arguments = (ins TE_GemmOperand:$a, TE_GemmOperand:$b,
                       TensorRankOf<[I64], [1]>:$splits,
                       Optional<RankedTensorOf<[F32, F8E8M0FNU]>>:$a_scale_inv,
                       Optional<RankedTensorOf<[F32, F8E8M0FNU]>>:$b_scale_inv,
                       Optional<TensorRankOf<[F32, F16, BF16], [2]>>:$bias,
                       Optional<TensorRankOf<[F32, F16, BF16], [2]>>:$c,
                       OptionalAttr<TE_ScalingModeAttr>:$a_scaling,
                       OptionalAttr<TE_ScalingModeAttr>:$b_scaling,
                       UnitAttr:$transpose_b);
  let results = (outs TensorRankOf<[F32, F16, BF16], [2]>:$d);
  let assemblyFormat = [{
    $a `,` $b `splits` `(` $splits `)`
    (`scales` `(` $a_scale_inv^ `,` $b_scale_inv `)`)?
    (`scaling` `` $a_scaling^ `,` `` $b_scaling)?
    (`bias` `(` $bias^ `)`)? (`accumulate` `(` $c^ `)`)?
    (`transpose_b` $transpose_b^)?
    attr-dict `:` type(operands) `->` type($d)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ScalingMode getAScalingMode() {
      return getAScaling().value_or(ScalingMode::per_tensor);
    }
    ScalingMode getBScalingMode() {
      return getBScaling().value_or(ScalingMode::per_tensor);
    }
    /// A is always stored [T, K] (the rows split into groups).
    bool getTransposeA() { return false; }
    /// Whether the operands are FP8 (else f32, f16 or bf16).
    bool hasFP8Operands();
    /// The number of groups G.
    int64_t getNumGroups() { return getB().getType().getDimSize(0); }
  }];
}

//===----------------------------------------------------------------------===//
// Kernel checks
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

defvar NormSemantics = [{
    Both kinds normalize each row of `input`: the last dimension, H, over
    the rows of all leading dimensions, N of them (TE's C API takes [N, H];
    its PyTorch modules flatten the leading dimensions the same way). TE
    computes in f32 (transformer_engine/common/normalization/common.cpp:
    the compute type is kFloat32), from the elements converted to f32:

    * `layernorm` (nvte_layernorm_fwd, ln_fwd_kernels.cuh):
      mu = sum(x) / H; var = sum((x - mu)^2) / H (two passes, biased);
      rsigma = 1 / sqrt(var + epsilon); y = rsigma * (x - mu);
      z = g * y + beta.
    * `rmsnorm` (nvte_rmsnorm_fwd, rmsnorm_fwd_kernels.cuh):
      rsigma = 1 / sqrt(sum(x^2) / H + epsilon); y = rsigma * x; z = g * y.

    g is `gamma` converted to f32, plus 1 with `zero_centered_gamma`
    (added in f32: TE's kernels do `g += 1` after the conversion). TE's
    kernels take rsigma from the GPU's approximate rsqrtf and, for rows of
    registered widths, combine per-warp sums (Chan's update; RMSNorm
    rebuilds E[x^2] as var + mean^2), so their last bits differ from these
    formulas by the rounding of f32; te's lowerings compute the formulas
    as written, in f32.
}];

def TE_NormOp : TE_Op<"norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "LayerNorm or RMSNorm over the last dimension, forward";
  let description = !strconcat([{
    TE's normalization forward (nvte_layernorm_fwd, nvte_rmsnorm_fwd; the
    PyTorch modules LayerNorm and RMSNorm, and the norms of LayerNormLinear,
    LayerNormMLP and TransformerLayer).

  }], NormSemantics, [{

    Results, in order (each present or absent as below):

    * z: the input's shape, rounded once from f32 to its element type
      (round to nearest even). Present unless the output is quantized
      without it.
    * With `quantize <mode>` (and `usage`, `pow2_scales`, `amax_epsilon`
      as `te.quantize` takes its `usage`, `pow2_scales` and `epsilon`):
      the quantized output, in `te.quantize`'s results and order for that
      mode and usage, of
      - `per_tensor` without z (`scale(%s)` given; TE's fully fused
        kernel for delayed scaling, ln_fwd_kernels.cuh): the f32 value
        itself, data = cast(z_f32 * scale), amax = max |z_f32|, with no
        rounding to the input's type in between;
      - every other case: the rounded z, the input's element type (or
        z's type when z is a result). This is TE's UNFUSED path
        (pytorch/csrc/extensions/normalization.cpp): the norm writes the
        high-precision output, then the quantizer casts it (MXFP8,
        Float8BlockScaling, and delayed scaling when the high-precision
        output is also returned, as LayerNormLinear's
        return_layernorm_output does).
    * With `amax` (no `quantize`): max |z_f32| as an f32 scalar (NaN
      skipped, as `te.amax`). This is TE's FUSED_NORM_AMAX_FP8 path for
      Float8CurrentScaling: the norm writes z and the amax of its f32
      value, then `te.compute_scale` and `te.quantize` of z finish the
      cast. The amax of the unrounded value can differ from `te.amax` of z
      in its last bit.
    * For `layernorm`, mu; then rsigma: f32 with the shape of `input`
      without its last dimension. These are what `te.norm_backward` takes.

    `beta` (optional, `layernorm` only; absent it is 0) and `gamma` have
    shape [H]. `scale(%s)` is taken exactly by `quantize per_tensor`.

    Element types, as TE registers its kernels (ln_fwd_cuda_kernel.cu,
    rmsnorm_fwd_cuda_kernel.cu): `gamma` and `beta` have the input's; z has
    it too, or, for an f32 input, bf16 or f16. `epsilon` is finite and
    >= 0 (TE's modules default to 1e-5).

    ```mlir
    %z, %mu, %rsigma = te.norm %x, %gamma, %beta kind layernorm epsilon 1.0e-05
        : tensor<2x128x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
        -> tensor<2x128x1024xbf16>, tensor<2x128xf32>, tensor<2x128xf32>
    %z2, %rs2 = te.norm %x, %gamma kind rmsnorm epsilon 1.0e-06 zero_centered_gamma
        : tensor<2x128x1024xbf16>, tensor<1024xbf16>
        -> tensor<2x128x1024xbf16>, tensor<2x128xf32>
    %d, %si, %amax, %rs3 = te.norm %x, %gamma scale(%s) kind rmsnorm
        epsilon 1.0e-05 quantize per_tensor
        : tensor<2x128x1024xbf16>, tensor<1024xbf16>, tensor<f32>
        -> tensor<2x128x1024xf8E4M3FN>, tensor<f32>, tensor<f32>,
           tensor<2x128xf32>
    ```
  }]);
  let arguments = (ins TE_HighPrecisionTensor:$input,
                       TE_HighPrecisionTensor:$gamma,
                       Optional<TE_HighPrecisionTensor>:$beta,
                       Optional<0DTensorOf<[F32]>>:$scale,
                       TE_NormKindAttr:$kind,
                       F32Attr:$epsilon,
                       UnitAttr:$zero_centered_gamma,
                       OptionalAttr<TE_ScalingModeAttr>:$quantize,
                       DefaultValuedAttr<TE_QuantizeUsageAttr,
                           "::mlir::te::QuantizeUsage::rowwise">:$usage,
                       DefaultValuedOptionalAttr<BoolAttr, "true">:$pow2_scales,
                       DefaultValuedAttr<F32Attr, "0.0f">:$amax_epsilon,
                       UnitAttr:$amax_output);
  let results = (outs Variadic<RankedTensorOf<[F32, F16, BF16, F8E4M3FN,
                                               F8E5M2, F8E8M0FNU]>>:$results);
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? (`scale` `(` $scale^ `)`)?
    `kind` `` $kind `epsilon` $epsilon
    (`zero_centered_gamma` $zero_centered_gamma^)?
    (`quantize` `` $quantize^)? (`usage` `` $usage^)?
    (`pow2_scales` $pow2_scales^)? (`amax_epsilon` $amax_epsilon^)?
    (`amax` $amax_output^)?
    attr-dict `:` type(operands) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isLayerNorm() { return getKind() == NormKind::layernorm; }
    /// The number of statistics results (mu and rsigma, or rsigma).
    unsigned getNumStatistics() { return isLayerNorm() ? 2 : 1; }
    /// The layout of the results: [z], [quantized...], [amax], [mu], rsigma.
    QuantizedOutputLayout getLayout() {
      return QuantizedOutputLayout::of(getQuantize(), getUsage(),
                                       getAmaxOutput(), getNumResults(),
                                       getNumStatistics());
    }
    /// The normalized result z, or null.
    ::mlir::Value getOutput() { return getLayout().getOutput(getResults()); }
    /// The quantized output's results, in te.quantize's order.
    ::mlir::ResultRange getQuantized() {
      return getLayout().getQuantized(getResults());
    }
    /// The amax of z's f32 value (`amax`), or null.
    ::mlir::Value getZAmax() { return getLayout().getAmax(getResults()); }
    /// The row means (layernorm), or null.
    ::mlir::Value getMean() {
      return isLayerNorm() ? getResults()[getNumResults() - 2] : nullptr;
    }
    /// The rows' 1 / sqrt(variance + epsilon) (rmsnorm: of the mean square).
    ::mlir::Value getRsigma() { return getResults().back(); }
  }];
}

def TE_NormBackwardOp : TE_Op<"norm_backward", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "LayerNorm or RMSNorm over the last dimension, backward";
  let description = !strconcat([{
    The gradients of `te.norm` (nvte_layernorm_bwd, nvte_rmsnorm_bwd and
    nvte_rmsnorm_bwd_add; ln_bwd_kernels.cuh, rmsnorm_bwd_kernels.cuh) from
    `dz`, the gradient of z, the forward's `input` and its saved statistics
    (`mean(%mu)` for `layernorm`, `rsigma`), and `gamma`. The forward:

  }], NormSemantics, [{

    In f32, with xhat = rsigma * (x - mu) (`rmsnorm`: rsigma * x) and
    dy = g * dz, per row:

    * `layernorm`: dx = rsigma * (dy - (mean(dy * xhat) * xhat + mean(dy)));
    * `rmsnorm`: dx = rsigma * (dy - mean(dy * xhat) * xhat), plus `add`
      when it is given (nvte_rmsnorm_bwd_add: a residual branch's
      gradient, added in f32 before the one rounding);

    and over the rows, summed in f32 and rounded once: dgamma = sum(dz *
    xhat) (dz, not dy: `zero_centered_gamma` changes dx only) and, for
    `layernorm`, dbeta = sum(dz). Results: dx (the input's shape and
    element type), dgamma, and for `layernorm` dbeta ([H], gamma's element
    type).

    Element types, as TE registers its kernels (ln_bwd_semi_cuda_kernel.cu,
    rmsnorm_bwd_semi_cuda_kernel.cu): `dz`, `gamma` and `add` share one
    type; `input` has it too, or is f32 (gamma bf16 or f16 with an f32
    input). `mu` and `rsigma` are f32 with the shape of `input` without its
    last dimension.

    ```mlir
    %dx, %dgamma, %dbeta = te.norm_backward %dz, %x, %rsigma, %gamma mean(%mu)
        kind layernorm
        : tensor<256x1024xbf16>, tensor<256x1024xbf16>, tensor<256xf32>,
          tensor<1024xbf16>, tensor<256xf32>
        -> tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
    ```
  }]);
  let arguments = (ins TE_HighPrecisionTensor:$dz,
                       TE_HighPrecisionTensor:$input,
                       TE_F32Tensor:$rsigma,
                       TE_HighPrecisionTensor:$gamma,
                       Optional<TE_F32Tensor>:$mu,
                       Optional<TE_HighPrecisionTensor>:$add,
                       TE_NormKindAttr:$kind,
                       UnitAttr:$zero_centered_gamma);
  let results = (outs Variadic<TE_HighPrecisionTensor>:$results);
  let assemblyFormat = [{
    $dz `,` $input `,` $rsigma `,` $gamma (`mean` `(` $mu^ `)`)?
    (`add` `(` $add^ `)`)? `kind` `` $kind
    (`zero_centered_gamma` $zero_centered_gamma^)?
    attr-dict `:` type(operands) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isLayerNorm() { return getKind() == NormKind::layernorm; }
    ::mlir::Value getDx() { return getResults()[0]; }
    ::mlir::Value getDgamma() { return getResults()[1]; }
    /// The gradient of beta (layernorm), or null.
    ::mlir::Value getDbeta() {
      return isLayerNorm() ? getResults()[2] : nullptr;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

defvar ActivationSemantics = [{
    The functions, in f32 on the input's values, as TE's util/math.h states
    them (sigmoid(v) = 1 / (1 + exp(-v))):

    | kind | act(v) | dact(v) |
    |---|---|---|
    | `gelu` | v (0.5 + 0.5 tanh(v (0.79788456 + 0.03567741 v^2))) | 0.5 v (1 - t^2)(0.79788456 + 0.1070322243 v^2) + 0.5 (1 + t), t = tanh(0.79788456 v (1 + 0.044715 v^2)) |
    | `qgelu` | v sigmoid(1.702 v) | 1.702 v s (1 - s) + s, s = sigmoid(1.702 v) |
    | `relu` | fmaxf(v, 0) | 1 if v > 0, else 0 |
    | `srelu` | v^2 if v > 0, else 0 | fmaxf(2 v, 0) |
    | `silu` | v sigmoid(v) | v s (1 - s) + s, s = sigmoid(v) |

    fmaxf returns the number when one operand is NaN: relu(NaN) = 0, as
    in TE. The gated kinds split the input's last dimension [2H] in two
    halves, a = [0, H) and g = [H, 2H) (TE's gated_act_fn), and give
    act(a) * g with act: `geglu` gelu, `qgeglu` qgelu, `reglu` relu,
    `sreglu` srelu, `swiglu` silu, `glu` sigmoid (nvte_glu: sigmoid(a) * g,
    its derivative s (1 - s), TE's dsigmoid). `clamped_swiglu` (GPT-OSS; TE's
    nvte_clamped_swiglu_v2) takes `limit` (> 0), `alpha` (default 1.702)
    and `linear_offset` (default 1): act(a) = c sigmoid(alpha c) with
    c = min(a, limit), and the gate is clamp(g, -limit, limit) +
    linear_offset.

    The lowerings may compute tanh through exp (0.5 (1 + tanh(y)) =
    sigmoid(2 y)); TE's kernels call the GPU's tanhf, expf and __expf, so
    last bits differ between implementations by the rounding of f32.
}];

defvar QuantizedOutputSemantics = [{
    `quantize <mode>` (with `usage`, `pow2_scales`, `amax_epsilon` and
    `scale(%s)` as `te.quantize` takes its `usage`, `pow2_scales`,
    `epsilon` and `scale`) adds the output quantized in that mode, in
    `te.quantize`'s results and order; the high-precision output is then
    optional. As TE's fused kernels do: `per_tensor` without the
    high-precision output (delayed scaling) casts the f32 values, data =
    cast(v * scale), amax = max |v|; every other case casts the output
    rounded to its type (the input's type when it is not a result; TE's
    MXFP8 kernels round so, and its PyTorch extensions quantize the
    high-precision output for block scaling). `amax` (no `quantize`) adds
    max |v| over the f32 values (NaN skipped, as `te.amax`): TE's path for
    Float8CurrentScaling, which then computes the scale from it and casts
    the high-precision output.
}];

def TE_ActivationOp : TE_Op<"activation", [Pure]> {
  let summary = "an activation function, forward, with an optional FP8 output";
  let description = !strconcat([{
    TE's activations (nvte_gelu, nvte_qgelu, nvte_relu, nvte_srelu,
    nvte_silu, nvte_geglu, nvte_qgeglu, nvte_reglu, nvte_sreglu,
    nvte_swiglu, nvte_glu, nvte_clamped_swiglu_v2; LayerNormMLP's
    activation).

  }], ActivationSemantics, [{

    Results, in order: the output y (the input's shape, with the last
    dimension halved for gated kinds; f32, f16 or bf16, rounded once),
    then the quantized output and the amax below.

  }], QuantizedOutputSemantics, [{

    ```mlir
    %y = te.activation %x kind gelu : tensor<256x4096xbf16> -> tensor<256x4096xbf16>
    %h = te.activation %x kind swiglu : tensor<256x8192xbf16> -> tensor<256x4096xbf16>
    %d, %si, %amax = te.activation %x scale(%s) kind geglu quantize per_tensor
        : tensor<256x8192xbf16>, tensor<f32>
        -> tensor<256x4096xf8E4M3FN>, tensor<f32>, tensor<f32>
    ```
  }]);
  let arguments = (ins TE_HighPrecisionTensor:$input,
                       Optional<0DTensorOf<[F32]>>:$scale,
                       TE_ActivationKindAttr:$kind,
                       OptionalAttr<F32Attr>:$limit,
                       DefaultValuedAttr<F32Attr, "1.702f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$linear_offset,
                       OptionalAttr<TE_ScalingModeAttr>:$quantize,
                       DefaultValuedAttr<TE_QuantizeUsageAttr,
                           "::mlir::te::QuantizeUsage::rowwise">:$usage,
                       DefaultValuedOptionalAttr<BoolAttr, "true">:$pow2_scales,
                       DefaultValuedAttr<F32Attr, "0.0f">:$amax_epsilon,
                       UnitAttr:$amax_output);
  let results = (outs Variadic<RankedTensorOf<[F32, F16, BF16, F8E4M3FN,
                                               F8E5M2, F8E8M0FNU]>>:$results);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `)`)? `kind` `` $kind
    (`limit` $limit^)? (`alpha` $alpha^)? (`linear_offset` $linear_offset^)?
    (`quantize` `` $quantize^)? (`usage` `` $usage^)?
    (`pow2_scales` $pow2_scales^)? (`amax_epsilon` $amax_epsilon^)?
    (`amax` $amax_output^)?
    attr-dict `:` type(operands) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the kind is gated (its input's last dimension is 2H).
    bool isGated();
    /// The shape of the output: the input's, the last dimension halved for
    /// gated kinds.
    ::llvm::SmallVector<int64_t> getOutputShape();
    /// The layout of the results: [y], [quantized...], [amax].
    QuantizedOutputLayout getLayout() {
      return QuantizedOutputLayout::of(getQuantize(), getUsage(),
                                       getAmaxOutput(), getNumResults(), 0);
    }
    /// The high-precision output, or null.
    ::mlir::Value getOutput() { return getLayout().getOutput(getResults()); }
  }];
}

def TE_ActivationBackwardOp : TE_Op<"activation_backward", [Pure]> {
  let summary = "an activation's gradient, fused with dbias and an FP8 cast";
  let description = !strconcat([{
    The gradient of `te.activation` from `grad` (the gradient of its
    output) and its `input` (TE's nvte_dgelu and the other nvte_d*, the
    gated nvte_dgeglu, ..., nvte_clamped_dswiglu; with `dbias`, TE's
    nvte_quantize_dbias_dgelu family and cast_transpose_dbias_dgelu). The
    forward:

  }], ActivationSemantics, [{

    In f32: for the plain kinds, dx = grad * dact(x). For the gated kinds
    (grad [..., H], input and dx [..., 2H]), dx's first half is
    dact(a) * grad * gate and its second half act(a) * grad, where gate
    is g (`clamped_swiglu`: clamp(g, -limit, limit) + linear_offset, and
    the second half is 0 where |g| > limit, the clamp's derivative, as is
    the first where a > limit).

    Results, in order: dx (the input's shape; f32, f16 or bf16, rounded
    once), the quantized dx and the amax below, and with `dbias` (plain
    kinds only, as TE offers it) the column sums of dx's f32 values over
    every leading dimension, [last dim] of grad's element type, rounded
    once.

  }], QuantizedOutputSemantics, [{

    ```mlir
    %dx, %db = te.activation_backward %g, %x kind gelu dbias
        : tensor<256x4096xbf16>, tensor<256x4096xbf16>
        -> tensor<256x4096xbf16>, tensor<4096xbf16>
    %d, %dt, %si, %amax, %db2 = te.activation_backward %g, %x scale(%s)
        kind gelu dbias quantize per_tensor usage both
        : tensor<256x4096xbf16>, tensor<256x4096xbf16>, tensor<f32>
        -> tensor<256x4096xf8E5M2>, tensor<4096x256xf8E5M2>, tensor<f32>,
           tensor<f32>, tensor<4096xbf16>
    ```
  }]);
  let arguments = (ins TE_HighPrecisionTensor:$grad,
                       TE_HighPrecisionTensor:$input,
                       Optional<0DTensorOf<[F32]>>:$scale,
                       TE_ActivationKindAttr:$kind,
                       OptionalAttr<F32Attr>:$limit,
                       DefaultValuedAttr<F32Attr, "1.702f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$linear_offset,
                       UnitAttr:$dbias,
                       OptionalAttr<TE_ScalingModeAttr>:$quantize,
                       DefaultValuedAttr<TE_QuantizeUsageAttr,
                           "::mlir::te::QuantizeUsage::rowwise">:$usage,
                       DefaultValuedOptionalAttr<BoolAttr, "true">:$pow2_scales,
                       DefaultValuedAttr<F32Attr, "0.0f">:$amax_epsilon,
                       UnitAttr:$amax_output);
  let results = (outs Variadic<RankedTensorOf<[F32, F16, BF16, F8E4M3FN,
                                               F8E5M2, F8E8M0FNU]>>:$results);
  let assemblyFormat = [{
    $grad `,` $input (`scale` `(` $scale^ `)`)? `kind` `` $kind
    (`limit` $limit^)? (`alpha` $alpha^)? (`linear_offset` $linear_offset^)?
    (`dbias` $dbias^)?
    (`quantize` `` $quantize^)? (`usage` `` $usage^)?
    (`pow2_scales` $pow2_scales^)? (`amax_epsilon` $amax_epsilon^)?
    (`amax` $amax_output^)?
    attr-dict `:` type(operands) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isGated();
    /// The layout of the results: [dx], [quantized...], [amax], [dbias].
    QuantizedOutputLayout getLayout() {
      return QuantizedOutputLayout::of(getQuantize(), getUsage(),
                                       getAmaxOutput(), getNumResults(),
                                       getDbias() ? 1 : 0);
    }
    /// The high-precision dx, or null.
    ::mlir::Value getDx() { return getLayout().getOutput(getResults()); }
    /// The bias gradient, or null.
    ::mlir::Value getDbiasResult() {
      return getDbias() ? getResults().back() : nullptr;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

defvar RopeSemantics = [{
    TE's fused RoPE (fused_rope.cu; the PyTorch apply_rotary_pos_emb with
    fused=True). `input` is [s, b, h, d] (`format sbhd`), [b, s, h, d]
    (`bshd`) or [t, h, d] (`thd`: the sequences packed along t, sequence i
    holding tokens [cu_seqlens[i] / cp_size, cu_seqlens[i + 1] / cp_size)).
    `freqs` is f32 [s2, 1, 1, d2] (TE's RotaryPositionEmbedding output):
    the first d2 <= d channels rotate (the rotary fraction), d2 even; the
    rest pass through unchanged.

    A token at index i of its sequence (s_id) takes the angles of row p of
    freqs: p = i + start_positions[seq] (0 without `start_positions`;
    [b] entries, one per sequence), and with `cp_size` > 1 (context
    parallelism, TE's dual-chunk order; the sequence's local length n is
    even) p += cp_rank * n / 2 for the first half of the sequence and
    p += n * cp_size - (cp_rank + 1) * n / 2 - n / 2 for the second. For
    channel j < d2, with c = cos(freqs[p][j]), s = sin(freqs[p][j]) in f32:

    ```
    y[j] = x[j] * c + r[j] * s
    r[j] = -x[j + d2/2]  (j < d2/2)   | x[j - d2/2]  (j >= d2/2)
         = -x[j + 1]     (j even)     | x[j - 1]     (j odd)     (interleaved)
    ```

    rounded once to the input's type. The backward applies the transposed
    rotation to the gradient: dx[j] = g[j] * c[j] + g[k] * s[k] * sign,
    where (k, sign) is (j + d2/2, +1) for j < d2/2 and (j - d2/2, -1)
    otherwise ((j + 1, +1) for even j, (j - 1, -1) for odd, interleaved).

    Every p must lie in [0, s2): for sbhd and bshd without start positions
    the verifier checks s * cp_size <= s2; start positions and cu_seqlens
    are checked at run time (te-insert-checks). thd tokens past the last
    sequence are copied unchanged (TE leaves them unwritten).
}];

class TE_RopeOpBase<string mnemonic, string summaryText>
    : TE_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let summary = summaryText;
  let arguments = (ins TE_HighPrecisionTensor:$input,
                       TE_F32Tensor:$freqs,
                       Optional<TE_I32Vector>:$cu_seqlens,
                       Optional<TE_I32Vector>:$start_positions,
                       TE_QKVLayoutAttr:$format,
                       UnitAttr:$interleaved,
                       DefaultValuedAttr<I32Attr, "1">:$cp_size,
                       DefaultValuedAttr<I32Attr, "0">:$cp_rank);
  let results = (outs TE_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $input `,` $freqs (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    (`start_positions` `(` $start_positions^ `)`)? `format` `` $format
    (`interleaved` $interleaved^)? (`cp_size` $cp_size^)?
    (`cp_rank` $cp_rank^)?
    attr-dict `:` type(operands) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isThd() { return getFormat() == QKVLayout::thd; }
    /// The dimension of `input` that holds the sequence's tokens (s or t).
    unsigned getSequenceDim() {
      return getFormat() == QKVLayout::bshd ? 1 : 0;
    }
    /// The number of sequences: b, or the entries of cu_seqlens minus one.
    int64_t getNumSequences();
    /// d2, the number of channels that rotate.
    int64_t getRotaryDim() {
      return ::llvm::cast<::mlir::RankedTensorType>(getFreqs().getType())
          .getShape().back();
    }
  }];
}

def TE_RopeOp : TE_RopeOpBase<"rope",
    "rotary position embedding, forward (TE's fused RoPE)"> {
  let description = !strconcat([{
    Rotates the first d2 channels of every head of `input` by the angles
    of its token's position.

  }], RopeSemantics, [{

    ```mlir
    %q2 = te.rope %q, %freqs format sbhd
        : tensor<1024x2x16x64xbf16>, tensor<4096x1x1x64xf32>
        -> tensor<1024x2x16x64xbf16>
    %k2 = te.rope %k, %freqs cu_seqlens(%cu) format thd interleaved
        : tensor<300x8x128xbf16>, tensor<4096x1x1x64xf32>, tensor<5xi32>
        -> tensor<300x8x128xbf16>
    ```
  }]);
}

def TE_RopeBackwardOp : TE_RopeOpBase<"rope_backward",
    "rotary position embedding, backward (TE's fused RoPE)"> {
  let description = !strconcat([{
    The gradient of `te.rope`: `input` is the gradient of its result; the
    result, the gradient of its input. The operands and attributes are the
    forward's.

  }], RopeSemantics, [{

    ```mlir
    %dq = te.rope_backward %dq2, %freqs format bshd
        : tensor<2x1024x16x64xbf16>, tensor<4096x1x1x64xf32>
        -> tensor<2x1024x16x64xbf16>
    ```
  }]);
}

defvar QkvRopeSemantics = [{
    TE's fused QKV RoPE (fused_qkv_rope_forward_kernel and
    fused_qkv_rope_backward_kernel in fused_rope.cu; the PyTorch
    apply_fused_qkv_rotary_pos_emb). `qkv` is [s, b, h, q + k + v]
    (`format sbhd`) or [b, s, h, q + k + v] (`bshd`), each row split by
    `split` = [q, k, v] (TE's qkv_split_arg_list): the first q channels
    are queries, the next k keys, the last v values. The head dimension
    d is v; q and k are multiples of d, and q of k (GQA: q / k query
    heads per key head). Every d channels of the query part rotate as a
    head of `te.rope` with `q_freqs`, every d of the key part with
    `k_freqs` (both f32 [s2, 1, 1, d2], the same d2, which TE takes from
    q_freqs); the value part is copied. Positions, start positions and
    context parallelism are te.rope's for sbhd and bshd (start positions
    and cp_size > 1 exclude each other, as TE asserts); thd is not TE's.
    The results are TE's q_out [.., h q / k, k], k_out [.., h, k] and
    v_out [.., h, v]. (TE's PyTorch fused_qkv_rope_backward sizes the
    gradient's heads as (h q / k + 2 h) k / (q + k + v), which is h only
    when k = v; te.qkv_rope_backward is the gradient for every split.)
}];

defvar QkvRopeClassDeclaration = [{
    /// The dimension of the fused tensor that holds the sequence's tokens
    /// (s).
    unsigned getSequenceDim() {
      return getFormat() == QKVLayout::sbhd ? 0 : 1;
    }
}];

defvar QkvRopeAttrs = (ins TE_QKVLayoutAttr:$format,
                          DenseI64ArrayAttr:$split,
                          UnitAttr:$interleaved,
                          DefaultValuedAttr<I32Attr, "1">:$cp_size,
                          DefaultValuedAttr<I32Attr, "0">:$cp_rank);

def TE_QkvRopeOp : TE_Op<"qkv_rope", [Pure]> {
  let summary = "RoPE of a fused QKV tensor, split into q, k and v "
                "(TE's fused QKV RoPE)";
  let description = !strconcat(QkvRopeSemantics, [{

    ```mlir
    %q, %k, %v = te.qkv_rope %qkv, %qf, %kf format sbhd split [256, 64, 64]
        : tensor<1024x2x4x384xbf16>, tensor<4096x1x1x64xf32>,
          tensor<4096x1x1x64xf32>
        -> tensor<1024x2x16x64xbf16>, tensor<1024x2x4x64xbf16>,
           tensor<1024x2x4x64xbf16>
    ```
  }]);
  let arguments = !con((ins TE_HighPrecisionTensor:$qkv,
                            TE_F32Tensor:$q_freqs,
                            TE_F32Tensor:$k_freqs,
                            Optional<TE_I32Vector>:$start_positions),
                       QkvRopeAttrs);
  let results = (outs TE_HighPrecisionTensor:$q, TE_HighPrecisionTensor:$k,
                      TE_HighPrecisionTensor:$v);
  let assemblyFormat = [{
    $qkv `,` $q_freqs `,` $k_freqs
    (`start_positions` `(` $start_positions^ `)`)? `format` `` $format
    `split` $split (`interleaved` $interleaved^)? (`cp_size` $cp_size^)?
    (`cp_rank` $cp_rank^)?
    attr-dict `:` type(operands) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat(QkvRopeClassDeclaration, [{
    /// The positions both freqs hold: the lesser s2 (dynamic if either
    /// is).
    int64_t getPositionRows();
  }]);
}

def TE_QkvRopeBackwardOp : TE_Op<"qkv_rope_backward", [Pure]> {
  let summary = "the fused QKV tensor's gradient of te.qkv_rope";
  let description = !strconcat([{
    The gradient of `te.qkv_rope`: `dq`, `dk` and `dv` are the gradients
    of its results, the result the gradient of `qkv` (the query and key
    parts rotated back by te.rope_backward, the value part copied). As
    TE's fused_qkv_rope_backward_kernel, it takes no start positions: a
    token's angles are those of its index (with context parallelism, its
    place in the whole sequence).

  }], QkvRopeSemantics, [{

    ```mlir
    %dqkv = te.qkv_rope_backward %dq, %dk, %dv, %qf, %kf format sbhd
        split [256, 64, 64]
        : tensor<1024x2x16x64xbf16>, tensor<1024x2x4x64xbf16>,
          tensor<1024x2x4x64xbf16>, tensor<4096x1x1x64xf32>,
          tensor<4096x1x1x64xf32> -> tensor<1024x2x4x384xbf16>
    ```
  }]);
  let arguments = !con((ins TE_HighPrecisionTensor:$dq,
                            TE_HighPrecisionTensor:$dk,
                            TE_HighPrecisionTensor:$dv,
                            TE_F32Tensor:$q_freqs,
                            TE_F32Tensor:$k_freqs),
                       QkvRopeAttrs);
  let results = (outs TE_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $dq `,` $dk `,` $dv `,` $q_freqs `,` $k_freqs `format` `` $format
    `split` $split (`interleaved` $interleaved^)? (`cp_size` $cp_size^)?
    (`cp_rank` $cp_rank^)?
    attr-dict `:` type(operands) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = QkvRopeClassDeclaration;
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

def TE_CrossEntropyOp : TE_Op<"cross_entropy", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "cross-entropy loss over logits, with its gradient";
  let description = [{
    TE's fused cross-entropy (pytorch/triton/cross_entropy.py and
    common/triton/cross_entropy.py, parallel_cross_entropy), which computes
    the loss and the gradient of the logits in one forward pass. `logits`
    is [..., V] (f32, f16 or bf16; TE's [B, SQ, V]), `target` the class of
    every row (i32 or i64, the logits' shape without V). Per row, in f32,
    with m = max_i x_i, d = sum_i exp(x_i - m), eps = label_smoothing / V
    and N the number of rows whose target is not `ignore_index` (at least
    1; online_softmax_kernel counts TE's n_non_ignore so; earlier releases
    divided by every row):

    ```
    loss = -(x_y - m - log d)
    loss = (1 - label_smoothing) loss + (sum_i (-eps x_i)
           + label_smoothing (m + log d))          (label_smoothing > 0)
    g_i  = (exp(x_i - m) / d - eps) / N            (`reduce_loss`; else
                                                    without the / N)
    g_y  = g_y + (-(1 - label_smoothing) / N)      (N as an f32)
    ```

    all in f32, as cross_entropy_kernel keeps its gradient (grad_input is
    f32; earlier releases rounded g to the logits' type before adjusting
    g_y): `grad` is f32, or the
    logits' type rounded once (what TE's autograd hands back for a loss
    gradient of 1). A row whose target is `ignore_index` (default -100)
    has loss 0 and gradient 0. Results: the loss, f32 with the target's
    shape, or with `reduce_loss` the f32 scalar sum(loss) / N; and the
    gradient g, which `te.cross_entropy_backward` scales by the loss's
    gradient. Targets outside [0, V) other than ignore_index stop the
    launch (te-insert-checks). `label_smoothing` is in [0, 1).

    With `group`, the vocabulary is split over the ranks of a
    `te.process_group` (TE's parallel_cross_entropy with a
    dist_process_group of that many ranks, Megatron's vocab-parallel
    embedding): `logits` holds rank r's V columns, classes [r V, (r + 1) V)
    of the group's V * size, and `target` holds classes of the whole
    vocabulary (the same on every rank). As TE's online_softmax_kernel and
    cross_entropy_kernel compute it, each rank finds its m and d over its
    columns and x_y (-inf when y is another rank's class); the ranks gather
    them (te.all_gather) and combine them in rank order, from rank 0:
    `d = d exp(m - max(m, m')) + d' exp(m' - max(m, m'))`, `m = max(m, m')`,
    `x_y = max(x_y, x_y')`. With these m, d and x_y the formulas above hold
    with eps = label_smoothing / (V size); g is each rank's own columns,
    and only the rank holding y adjusts g_y. N counts the rank's own rows
    (the same on every rank). TE sums -eps x_i over the rank's own columns
    only, so with label_smoothing > 0 each rank's loss holds its own share
    of the smoothing term (the ranks' losses differ; the gradient is the
    whole vocabulary's). Targets outside [0, V size) stop the launch. A
    group of one rank is the op without a group. Without a group the op is
    pure; with one it communicates, like the collectives, so it is never
    erased, merged or moved.

    ```mlir
    %loss, %g = te.cross_entropy %logits, %target label_smoothing 1.0e-01
        reduce_loss
        : tensor<2x512x32000xbf16>, tensor<2x512xi64>
        -> tensor<f32>, tensor<2x512x32000xf32>

    te.process_group @tp size 4
    // Each rank: 8000 of the 32000 classes.
    %l, %gr = te.cross_entropy %shard, %target group @tp
        : tensor<1024x8000xbf16>, tensor<1024xi64>
        -> tensor<1024xf32>, tensor<1024x8000xf32>
    ```
  }];
  let arguments = (ins TE_HighPrecisionTensor:$logits,
                       RankedTensorOf<[I32, I64]>:$target,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       UnitAttr:$reduce_loss,
                       OptionalAttr<FlatSymbolRefAttr>:$group);
  let results = (outs TE_F32Tensor:$loss, TE_HighPrecisionTensor:$grad);
  let assemblyFormat = [{
    $logits `,` $target (`label_smoothing` $label_smoothing^)?
    (`ignore_index` $ignore_index^)? (`reduce_loss` $reduce_loss^)?
    (`group` $group^)? attr-dict `:` type($logits) `,` type($target) `->` type($loss) `,`
    type($grad)
  }];
  let extraClassDeclaration = [{
    /// The number of ranks the vocabulary is split over: the group's size,
    /// or 1 without a group (valid after verification).
    int64_t getVocabShards();
  }];
  let hasVerifier = 1;
}

def TE_CrossEntropyBackwardOp : TE_Op<"cross_entropy_backward", [Pure]> {
  let summary = "the logits' gradient of te.cross_entropy";
  let description = [{
    TE's cross_entropy_backward: the forward's gradient `grad` times
    `dloss`, the gradient of its loss (f32, the loss's shape: a scalar
    with `reduce_loss`, else one per row), computed in f32 and rounded
    once to the result's type: grad's, or, for an f32 grad, the logits'
    f16 or bf16 (TE multiplies its f32 gradient in place, and autograd
    casts it to the logits' type).

    ```mlir
    %dlogits = te.cross_entropy_backward %g, %dloss
        : tensor<2x512x32000xf32>, tensor<f32> -> tensor<2x512x32000xbf16>
    ```
  }];
  let arguments = (ins TE_HighPrecisionTensor:$grad, TE_F32Tensor:$dloss);
  let results = (outs TE_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $grad `,` $dloss attr-dict `:` type($grad) `,` type($dloss) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TE_CheckOp : TE_Op<"check"> {
  let summary = "a run-time check that fails the kernel launch with a message";
  let description = [{
    When `failed` is true at run time, the kernel's launch fails (te-run
    prints the message and exits 2; the C API's `te_kernel_launch` returns
    `TE_ERROR_KERNEL_FAILED`; Python raises) with `message`, in which `{0}`,
    `{1}` and `{2}` stand for the `values` (at most three i64) and `{loc}`
    for the check's location in the source of the program that is running
    (kernels compiled once serve every program with the same meaning, so
    the location is filled in when the program is loaded). Only the first
    failing check of a launch is reported. The kernel itself keeps
    running safely: a check reports bad data, it does not guard memory
    accesses, which every lowering keeps in bounds whatever the data.

    te-mlir inserts checks for the index operands of te ops before the
    dispatch (`te-insert-checks`); a plugin's lowering may add its own, for
    example for the status its library call returns. `te-materialize-checks`
    turns the checks of each kernel function into one extra result, the
    status the runtime reads after the launch, and the messages into the
    kernel's manifest. The message names the op, its source location and
    the operand, so that a user knows what to fix.

    ```mlir
    te.check %bad, %entry, %value
        message "te.attention at {loc}: entry {0} of seqlens_kv is {1}, outside [0, 13] (s_kv)"
    ```
  }];
  let arguments = (ins I1:$failed, Variadic<I64>:$values, StrAttr:$message);
  let assemblyFormat = [{
    $failed (`,` $values^)? `message` $message attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def TE_ProcessGroupOp : TE_Op<"process_group", [Symbol]> {
  let summary = "a named group of ranks that collectives run over";
  let description = [{
    Declares a process group (a tensor-, data-, sequence- or
    context-parallel group) of `size` ranks. Collectives name it by symbol;
    their verifiers check shapes against its size.

    The group is one group per `size` ranks of the job's world: without
    `ranks`, consecutive blocks (ranks 0 .. size-1, then size .. 2 size-1,
    ...; the world's size must be a multiple of `size`), as TE lays out
    tensor-parallel groups. With `ranks`, the listed world ranks, group
    after group: every rank of the world exactly once, so the world has as
    many ranks as the list (data-parallel groups across tensor-parallel
    ones are strided this way). Within a group, ranks are numbered in the
    group's order. A group, and a world, has at most 2^20 ranks (the
    runtime's TE_MAX_WORLD_SIZE): `size` and the length of `ranks` are
    at most 1048576.

    ```mlir
    te.process_group @tp size 2
    te.process_group @dp size 2 ranks [0, 2, 1, 3]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let assemblyFormat = "$sym_name `size` $size (`ranks` $ranks^)? attr-dict";
  let hasVerifier = 1;
}

class TE_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TE_Op<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code collectiveClassDeclaration = [{
    /// The process group this collective runs over (valid after verification).
    ProcessGroupOp getProcessGroup();
  }];
  let extraClassDeclaration = collectiveClassDeclaration;
  let extraClassDefinition = [{
    ProcessGroupOp $cppClass::getProcessGroup() {
      return ::mlir::SymbolTable::lookupNearestSymbolFrom<ProcessGroupOp>(
          *this, getGroupAttr());
    }
  }];
  // Collectives are not Pure: every rank must take part even when the result
  // is unused, so they may not be erased, hoisted or merged.
}

def TE_AllReduceOp : TE_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "element-wise reduction over a process group";
  let description = [{
    Every rank receives the element-wise `sum`, `max`, `min` or `avg` (sum
    divided by the group size; floating-point only) of the group's inputs.
    Folds to its input on a group of size 1.

    ```mlir
    %r = te.all_reduce %amax group @dp reduce max : tensor<f32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group,
                       DefaultValuedAttr<TE_ReduceKindAttr,
                           "::mlir::te::ReduceKind::sum">:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group` $group (`reduce` `` $kind^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TE_AllGatherOp : TE_CollectiveOp<"all_gather"> {
  let summary = "concatenate the group's inputs along a dimension";
  let description = [{
    Every rank receives the inputs of all ranks concatenated in rank order
    along `dim`; that dimension of the result is group size times the
    input's. Any element type (FP8 payloads included). Folds to its input on
    a group of size 1.

    ```mlir
    %g = te.all_gather %x group @tp dim 0 : tensor<128x64xbf16> -> tensor<1024x64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group` $group `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TE_ReduceScatterOp : TE_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce over the group, then scatter along a dimension";
  let description = [{
    The element-wise reduction (`sum`, `max`, `min`, `avg`) of the group's
    inputs is split into group-size equal chunks along `dim`; rank r receives
    chunk r. The input's `dim` must be divisible by the group size. Folds to
    its input on a group of size 1.

    ```mlir
    %s = te.reduce_scatter %x group @tp dim 0 : tensor<1024x64xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       DefaultValuedAttr<TE_ReduceKindAttr,
                           "::mlir::te::ReduceKind::sum">:$kind);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group` $group `dim` $dim (`reduce` `` $kind^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TE_AllToAllOp : TE_CollectiveOp<"all_to_all"> {
  let summary = "split along one dimension, exchange, concatenate along another";
  let description = [{
    Each rank splits its input into group-size chunks along `split_dim` and
    sends chunk j to rank j; the received chunks are concatenated in rank
    order along `concat_dim` (Ulysses-style context parallelism scatters
    heads and gathers sequence this way). `split_dim` must be divisible by
    the group size. Folds to its input on a group of size 1.

    ```mlir
    %y = te.all_to_all %x group @cp split_dim 2 concat_dim 1
        : tensor<2x512x16x64xbf16> -> tensor<2x2048x4x64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group` $group `split_dim` $split_dim `concat_dim` $concat_dim
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TE_PermuteOp : TE_CollectiveOp<"permute", [SameOperandsAndResultType]> {
  let summary = "point-to-point exchange within a group (ring send/recv)";
  let description = [{
    Sends each rank's input to another rank of the group and returns what
    this rank received. Either `shift k`: rank r sends to (r + k) mod size
    and receives from (r - k) mod size (the K/V ring of context
    parallelism), or `pairs [src0, dst0, src1, dst1, ...]`: explicit
    (source, target) rank pairs, each rank at most once as a source and
    once as a target; a rank that is no pair's target receives zeros. A
    shift by a multiple of the group size folds to the input.

    ```mlir
    %kv_next = te.permute %kv group @cp shift 1 : tensor<2x512x4x64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group,
                       OptionalAttr<I64Attr>:$shift,
                       OptionalAttr<DenseI64ArrayAttr>:$pairs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group` $group (`shift` $shift^)? (`pairs` $pairs^)? attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TE_GroupRankOp : TE_Op<"group_rank", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this rank's position within its process group";
  let description = [{
    The calling rank's number within its group of `group` (0 .. size - 1,
    in the group's order), as TE's `get_rank(cp_group)`. Programs whose
    work depends on the rank branch on it: context parallelism's causal
    ring, for one, computes a different block of the attention matrix on
    each rank at each step.

    ```mlir
    %r = te.group_rank group @cp : tensor<i32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$group);
  let results = (outs 0DTensorOf<[I32]>:$result);
  let assemblyFormat = "`group` $group attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    /// The process group (valid after verification).
    ProcessGroupOp getProcessGroup();
  }];
  let extraClassDefinition = [{
    ProcessGroupOp $cppClass::getProcessGroup() {
      return ::mlir::SymbolTable::lookupNearestSymbolFrom<ProcessGroupOp>(
          *this, getGroupAttr());
    }
  }];
}

#endif // TE_DIALECT_TE_IR_TEOPS_TD
