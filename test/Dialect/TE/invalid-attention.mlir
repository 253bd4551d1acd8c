// Negative tests for te.attention and te.attention_backward: every verifier rule, type constraint and parse error.
// RUN: te-opt %s -split-input-file -verify-diagnostics

// A result type that differs from the inferred one is reported by
// InferTypeOpInterface, followed by "failed to infer returned types".

//===----------------------------------------------------------------------===//
// te.attention: operand types (ODS)
//===----------------------------------------------------------------------===//

// 'q' must have an f32, f16 or bf16 element type.
func.func @q_integer(%q: tensor<2x8x4x16xi32>, %k: tensor<2x8x2x16xf16>,
                     %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<2x8x4x16xi32>'}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xi32>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// 'k' may not be FP8.
func.func @k_fp8(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf8E4M3FN>,
                 %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf8E4M3FN>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// 'q', 'k' and 'v' must be ranked (the ODS constraint fires before the
// verifier's own "must be ranked tensors" check).
func.func @v_unranked(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<*xf16>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<*xf16>'}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<*xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// cu_seqlens must be 1-D i32 tensors.
func.func @cu_seqlens_i64(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                          %v: tensor<32x2x16xf16>, %cu: tensor<3xi64>) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer values, but got 'tensor<3xi64>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi64>, tensor<3xi64>) -> tensor<32x4x16xf16>
  return
}

// -----

// seqlens must be 1-D (a 0-D tensor is rejected).
func.func @seqlens_0d(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>, %len: tensor<i32>) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer values, but got 'tensor<i32>'}}
  %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%len, %len)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<i32>, tensor<i32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// mask_tensor must have an i1 element type.
func.func @mask_f32(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                    %v: tensor<2x8x2x16xf16>, %m: tensor<2x4x8x8xf32>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2x4x8x8xf32>'}}
  %o = te.attention %q, %k, %v layout bshd mask arbitrary mask_tensor(%m)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x4x8x8xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// alibi_slopes must be f32.
func.func @alibi_f16(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                     %v: tensor<2x8x2x16xf16>, %s: tensor<4xf16>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %o = te.attention %q, %k, %v layout bshd bias alibi alibi_slopes(%s)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<4xf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// rng_state must hold i64 values.
func.func @rng_state_i32(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                         %v: tensor<2x8x2x16xf16>, %rng: tensor<2xi32>) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 64-bit signless integer values, but got 'tensor<2xi32>'}}
  %o = te.attention %q, %k, %v layout bshd dropout 0.1 rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// rng_state must be 1-D (a 0-D tensor is rejected).
func.func @rng_state_0d(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                        %v: tensor<2x8x2x16xf16>, %rng: tensor<i64>) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 64-bit signless integer values, but got 'tensor<i64>'}}
  %o = te.attention %q, %k, %v layout bshd dropout 0.1 rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<i64>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// softmax_offset must be f32.
func.func @softmax_offset_bf16(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                               %v: tensor<2x8x2x16xf16>, %a: tensor<1x4x1x1xbf16>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<1x4x1x1xbf16>'}}
  %o = te.attention %q, %k, %v layout bshd softmax learnable softmax_offset(%a)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x1x1xbf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// The lse result must be an f32 tensor.
func.func @lse_f16(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                   %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<2x4x8x1xf16>'}}
  %o, %lse = te.attention %q, %k, %v layout bshd {return_lse}
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x4x8x1xf16>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: shapes of q, k and v
//===----------------------------------------------------------------------===//

// Layout bshd needs rank-4 q, k and v.
func.func @bshd_rank3(%q: tensor<8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{'q' must have rank 4 for layout bshd [b, s, h, d], got 'tensor<8x4x16xf16>'}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<8x4x16xf16>
  return
}

// -----

// Layout thd needs rank-3 q, k and v.
func.func @thd_rank4(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                     %v: tensor<1x32x2x16xf16>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{'v' must have rank 3 for layout thd [t, h, d], got 'tensor<1x32x2x16xf16>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<1x32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>) -> tensor<32x4x16xf16>
  return
}

// -----

// 'q', 'k' and 'v' must share one element type.
func.func @mixed_element_types(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xbf16>,
                               %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{'q', 'k' and 'v' must have one element type, got 'f16', 'bf16' and 'f16'}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// 'k' and 'v' must agree on batch, sequence and heads (here: sequence).
func.func @kv_seq_mismatch(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                           %v: tensor<2x9x2x16xf16>) {
  // expected-error @+1 {{'k' ('tensor<2x8x2x16xf16>') and 'v' ('tensor<2x9x2x16xf16>') must have the same batch, sequence and head sizes}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x9x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// 'q' and 'k' must have the same batch size (sbhd puts batch second).
func.func @qk_batch_mismatch(%q: tensor<8x3x4x16xf16>, %k: tensor<8x2x2x16xf16>,
                             %v: tensor<8x2x2x16xf16>) {
  // expected-error @+1 {{'q' and 'k' must have the same batch size, got 3 and 2}}
  %o = te.attention %q, %k, %v layout sbhd
      : (tensor<8x3x4x16xf16>, tensor<8x2x2x16xf16>, tensor<8x2x2x16xf16>)
      -> tensor<8x3x4x16xf16>
  return
}

// -----

// 'q' and 'k' must have the same head dimension d_qk.
func.func @qk_head_dim_mismatch(%q: tensor<2x4x8x32xf16>, %k: tensor<2x2x8x16xf16>,
                                %v: tensor<2x2x8x16xf16>) {
  // expected-error @+1 {{'q' and 'k' must have the same head dimension d_qk, got 32 and 16}}
  %o = te.attention %q, %k, %v layout bhsd
      : (tensor<2x4x8x32xf16>, tensor<2x2x8x16xf16>, tensor<2x2x8x16xf16>)
      -> tensor<2x4x8x16xf16>
  return
}

// -----

// The query heads must be a multiple of the key/value heads.
func.func @heads_not_multiple(%q: tensor<2x8x3x16xf16>, %k: tensor<2x8x2x16xf16>,
                              %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{the number of query heads (3) must be a multiple of the number of key/value heads (2)}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x3x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x3x16xf16>
  return
}

// -----

// Zero key/value heads are rejected (no division by zero).
func.func @zero_kv_heads(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x0x16xf16>,
                         %v: tensor<2x8x0x16xf16>) {
  // expected-error @+1 {{the number of query heads (4) must be a multiple of the number of key/value heads (0)}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x0x16xf16>, tensor<2x8x0x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: packed sequences (layout thd)
//===----------------------------------------------------------------------===//

// Layout thd needs cu_seqlens.
func.func @thd_without_cu_seqlens(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                                  %v: tensor<32x2x16xf16>) {
  // expected-error @+1 {{layout thd needs cu_seqlens(%cu_seqlens_q, %cu_seqlens_kv), int32 [batch + 1] each}}
  %o = te.attention %q, %k, %v layout thd mask padding
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>)
      -> tensor<32x4x16xf16>
  return
}

// -----

// cu_seqlens_kv must have as many elements as cu_seqlens_q.
func.func @cu_seqlens_kv_length(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                                %v: tensor<32x2x16xf16>, %cu_q: tensor<3xi32>,
                                %cu_kv: tensor<4xi32>) {
  // expected-error @+1 {{'cu_seqlens_kv' must have 3 elements (batch + 1, as 'cu_seqlens_q'), got 'tensor<4xi32>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu_q, %cu_kv)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<4xi32>) -> tensor<32x4x16xf16>
  return
}

// -----

// cu_seqlens_q must describe at least one sequence (batch + 1 >= 2).
func.func @cu_seqlens_too_short(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                                %v: tensor<32x2x16xf16>, %cu: tensor<1xi32>) {
  // expected-error @+1 {{'cu_seqlens_q' must have batch + 1 >= 2 elements, got 'tensor<1xi32>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<1xi32>, tensor<1xi32>) -> tensor<32x4x16xf16>
  return
}

// -----

// seq_offsets needs both tensors; only the generic form can give one.
func.func @seq_offsets_only_q(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                              %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>,
                              %off: tensor<3xi32>) {
  // expected-error @+1 {{seq_offsets needs both %seq_offsets_q and %seq_offsets_kv}}
  %o = "te.attention"(%q, %k, %v, %cu, %cu, %off)
      <{layout = #te<layout thd>, mask_kind = #te<mask padding>,
        operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>}>
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<32x4x16xf16>
  return
}

// -----

// seq_offsets_q must have batch + 1 elements.
func.func @seq_offsets_q_length(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                                %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>,
                                %off_q: tensor<4xi32>, %off_kv: tensor<3xi32>) {
  // expected-error @+1 {{'seq_offsets_q' must have 3 elements (batch + 1, as 'cu_seqlens_q'), got 'tensor<4xi32>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      seq_offsets(%off_q, %off_kv)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>, tensor<4xi32>, tensor<3xi32>)
      -> tensor<32x4x16xf16>
  return
}

// -----

// seq_offsets_kv must have batch + 1 elements.
func.func @seq_offsets_kv_length(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                                 %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>,
                                 %off_q: tensor<3xi32>, %off_kv: tensor<2xi32>) {
  // expected-error @+1 {{'seq_offsets_kv' must have 3 elements (batch + 1, as 'cu_seqlens_q'), got 'tensor<2xi32>'}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      seq_offsets(%off_q, %off_kv)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<2xi32>)
      -> tensor<32x4x16xf16>
  return
}

// -----

// Layout thd needs a padding mask kind.
func.func @thd_causal(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                      %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{layout thd needs a padding mask kind (padding, padding_causal or padding_causal_bottom_right), got causal}}
  %o = te.attention %q, %k, %v layout thd mask causal cu_seqlens(%cu, %cu)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>) -> tensor<32x4x16xf16>
  return
}

// -----

// Layout thd takes its lengths from cu_seqlens, not seqlens.
func.func @thd_with_seqlens(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                            %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>,
                            %len: tensor<2xi32>) {
  // expected-error @+1 {{layout thd takes sequence lengths from cu_seqlens; remove seqlens(...)}}
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu, %cu)
      seqlens(%len, %len)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>, tensor<2xi32>, tensor<2xi32>)
      -> tensor<32x4x16xf16>
  return
}

// -----

// cu_seqlens is only valid with layout thd.
func.func @cu_seqlens_with_bshd(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                %v: tensor<2x8x2x16xf16>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{cu_seqlens(...) is only valid with layout thd, got bshd}}
  %o = te.attention %q, %k, %v layout bshd mask padding cu_seqlens(%cu, %cu)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// seq_offsets is only valid with layout thd.
func.func @seq_offsets_with_sbhd(%q: tensor<8x2x4x16xf16>, %k: tensor<8x2x2x16xf16>,
                                 %v: tensor<8x2x2x16xf16>, %off: tensor<3xi32>) {
  // expected-error @+1 {{seq_offsets(...) is only valid with layout thd, got sbhd}}
  %o = te.attention %q, %k, %v layout sbhd seq_offsets(%off, %off)
      : (tensor<8x2x4x16xf16>, tensor<8x2x2x16xf16>, tensor<8x2x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>) -> tensor<8x2x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: masks
//===----------------------------------------------------------------------===//

// A padding mask on a non-thd layout needs seqlens.
func.func @padding_without_seqlens(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                   %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{mask padding_causal needs seqlens(%seqlens_q, %seqlens_kv), int32 [batch] each, for layout bshd}}
  %o = te.attention %q, %k, %v layout bshd mask padding_causal
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// seqlens_q must have one element per batch entry.
func.func @seqlens_q_length(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                            %v: tensor<2x8x2x16xf16>, %len_q: tensor<3xi32>,
                            %len_kv: tensor<2xi32>) {
  // expected-error @+1 {{'seqlens_q' must have 2 elements (one per batch entry), got 'tensor<3xi32>'}}
  %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%len_q, %len_kv)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<3xi32>, tensor<2xi32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// seqlens_kv must have one element per batch entry.
func.func @seqlens_kv_length(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                             %v: tensor<2x8x2x16xf16>, %len_q: tensor<2xi32>,
                             %len_kv: tensor<1xi32>) {
  // expected-error @+1 {{'seqlens_kv' must have 2 elements (one per batch entry), got 'tensor<1xi32>'}}
  %o = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right
      seqlens(%len_q, %len_kv)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi32>, tensor<1xi32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// seqlens is only valid with a padding mask kind.
func.func @seqlens_with_causal(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                               %v: tensor<2x8x2x16xf16>, %len: tensor<2xi32>) {
  // expected-error @+1 {{seqlens(...) is only valid with a padding mask kind, got mask causal}}
  %o = te.attention %q, %k, %v layout bshd mask causal seqlens(%len, %len)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi32>, tensor<2xi32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// mask_tensor is only valid with mask arbitrary.
func.func @mask_tensor_with_causal(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                   %v: tensor<2x8x2x16xf16>, %m: tensor<2x4x8x8xi1>) {
  // expected-error @+1 {{mask_tensor(...) is only valid with mask arbitrary, got mask causal}}
  %o = te.attention %q, %k, %v layout bshd mask causal mask_tensor(%m)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x4x8x8xi1>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// mask_tensor must have rank 4.
func.func @mask_tensor_rank3(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                             %v: tensor<2x8x2x16xf16>, %m: tensor<4x8x8xi1>) {
  // expected-error @+1 {{'mask' must have rank 4, broadcastable to [b, h_q, s_q, s_kv], got 'tensor<4x8x8xi1>'}}
  %o = te.attention %q, %k, %v layout bshd mask arbitrary mask_tensor(%m)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<4x8x8xi1>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// mask_tensor must broadcast to [b, h_q, s_q, s_kv].
func.func @mask_tensor_not_broadcastable(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                         %v: tensor<2x8x2x16xf16>, %m: tensor<1x1x8x9xi1>) {
  // expected-error @+1 {{'mask' 'tensor<1x1x8x9xi1>' is not broadcastable to [b, h_q, s_q, s_kv] = [2, 4, 8, 8]: each dimension must be 1 or match}}
  %o = te.attention %q, %k, %v layout bshd mask arbitrary mask_tensor(%m)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x1x8x9xi1>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// mask arbitrary needs a mask_tensor.
func.func @arbitrary_without_mask_tensor(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                         %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{mask arbitrary needs mask_tensor(%mask), an i1 tensor broadcastable to [b, h_q, s_q, s_kv]}}
  %o = te.attention %q, %k, %v layout bshd mask arbitrary
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// Unknown mask keyword: a parse error, not a silent default.
func.func @unknown_mask(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                        %v: tensor<2x8x2x16xf16>) {
  // expected-error @+2 {{expected ::mlir::te::MaskKind to be one of: no_mask, padding, causal, causal_bottom_right, padding_causal, padding_causal_bottom_right, arbitrary}}
  // expected-error @+2 {{failed to parse TE_MaskKindAttr parameter 'value' which is to be a `::mlir::te::MaskKind`}}
  %o = te.attention %q, %k, %v layout bshd mask sideways
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: window, scale
//===----------------------------------------------------------------------===//

// 'window' must hold exactly [left, right].
func.func @window_three_values(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                               %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{'window' must be [left, right], got 3 values}}
  %o = te.attention %q, %k, %v layout bshd window [4, 0, 1]
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// Window bounds must be >= -1.
func.func @window_below_minus_one(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                  %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{window bounds must be >= -1 (-1 is unbounded), got [-2, 0]}}
  %o = te.attention %q, %k, %v layout bshd window [-2, 0]
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// A causal mask admits no keys after the diagonal: right bound -1 or 0.
func.func @causal_window_right(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                               %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{mask causal_bottom_right admits no keys after the diagonal: window right bound must be -1 or 0, got 1}}
  %o = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [4, 1]
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// Without a causal mask a window is [-1, -1] or bounded on both sides (TE's
// check_set_window_size).
func.func @one_sided_window(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                            %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{mask no_mask takes window [-1, -1] (no window) or [left >= 0, right >= 0], got [-1, 0]: a one-sided window needs a causal mask kind, as in Transformer Engine}}
  %o = te.attention %q, %k, %v layout bshd window [-1, 0]
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// bottom_right_diagonal may not contradict a causal mask's own alignment.
func.func @diagonal_contradicts_causal(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                       %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{mask causal aligns the diagonal top-left, but bottom_right_diagonal is true; remove the attribute or choose the mask causal_bottom_right / padding_causal_bottom_right}}
  %o = te.attention %q, %k, %v layout bshd mask causal window [4, 0] bottom_right_diagonal true
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

func.func @diagonal_contradicts_bottom_right(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                             %v: tensor<2x8x2x16xf16>, %lq: tensor<2xi32>,
                                             %lkv: tensor<2xi32>) {
  // expected-error @+1 {{mask padding_causal_bottom_right aligns the diagonal bottom-right, but bottom_right_diagonal is false; remove the attribute or choose the mask causal / padding_causal}}
  %o = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right bottom_right_diagonal false seqlens(%lq, %lkv)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>, tensor<2xi32>, tensor<2xi32>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// The softmax scale must be non-zero.
func.func @scale_zero(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{softmax scale must be finite and non-zero, got 0}}
  %o = te.attention %q, %k, %v layout bshd scale 0.0
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// The softmax scale must be finite (0x7F800000 is +inf).
func.func @scale_inf(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                     %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{softmax scale must be finite and non-zero, got +Inf}}
  %o = te.attention %q, %k, %v layout bshd scale 0x7F800000
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: bias
//===----------------------------------------------------------------------===//

// bias no_bias (the default) takes no bias_tensor.
func.func @no_bias_with_bias_tensor(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                    %v: tensor<2x8x2x16xf16>, %b: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{bias no_bias takes no bias_tensor or alibi_slopes}}
  %o = te.attention %q, %k, %v layout bshd bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x8x8xf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// bias no_bias takes no alibi_slopes either.
func.func @no_bias_with_alibi_slopes(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                     %v: tensor<2x8x2x16xf16>, %s: tensor<4xf32>) {
  // expected-error @+1 {{bias no_bias takes no bias_tensor or alibi_slopes}}
  %o = te.attention %q, %k, %v layout bshd bias no_bias alibi_slopes(%s)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<4xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// bias pre_scale / post_scale takes a bias_tensor, not alibi_slopes.
func.func @post_scale_with_alibi_slopes(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                        %v: tensor<2x8x2x16xf16>, %s: tensor<4xf32>) {
  // expected-error @+1 {{bias post_scale takes bias_tensor(...), not alibi_slopes(...)}}
  %o = te.attention %q, %k, %v layout bshd bias post_scale alibi_slopes(%s)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<4xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// bias pre_scale needs a bias_tensor.
func.func @pre_scale_without_bias_tensor(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                         %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{bias pre_scale needs bias_tensor(%bias) of shape [1 or b, 1 or h_q, s_q, s_kv]}}
  %o = te.attention %q, %k, %v layout bshd bias pre_scale
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// A bias tensor is not defined for layout thd.
func.func @post_scale_with_thd(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                               %v: tensor<32x2x16xf16>, %cu: tensor<3xi32>,
                               %b: tensor<1x4x16x16xf16>) {
  // expected-error @+1 {{bias post_scale is not defined for layout thd (sequences have no common [s_q, s_kv] shape); use alibi or another layout}}
  %o = te.attention %q, %k, %v layout thd mask padding bias post_scale
      cu_seqlens(%cu, %cu) bias_tensor(%b)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<3xi32>, tensor<3xi32>, tensor<1x4x16x16xf16>) -> tensor<32x4x16xf16>
  return
}

// -----

// The bias must have the element type of 'q' or f32.
func.func @bias_element_type(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                             %v: tensor<2x8x2x16xf16>, %b: tensor<1x4x8x8xbf16>) {
  // expected-error @+1 {{'bias' must have the element type of 'q' or f32, got 'bf16'}}
  %o = te.attention %q, %k, %v layout bshd bias post_scale bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x8x8xbf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// The bias must have shape [1 or b, 1 or h_q, s_q, s_kv] (s_kv is wrong).
func.func @bias_shape(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>, %b: tensor<2x4x8x9xf32>) {
  // expected-error @+1 {{'bias' must have shape [1 or 2, 1 or 4, 8, 8], got 'tensor<2x4x8x9xf32>'}}
  %o = te.attention %q, %k, %v layout bshd bias pre_scale bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x4x8x9xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// The bias must have rank 4.
func.func @bias_rank2(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>, %b: tensor<8x8xf16>) {
  // expected-error @+1 {{'bias' must have shape [1 or 2, 1 or 4, 8, 8], got 'tensor<8x8xf16>'}}
  %o = te.attention %q, %k, %v layout bshd bias post_scale bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<8x8xf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// bias alibi takes alibi_slopes, not a bias_tensor.
func.func @alibi_with_bias_tensor(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                  %v: tensor<2x8x2x16xf16>, %b: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{bias alibi takes alibi_slopes(...), not bias_tensor(...)}}
  %o = te.attention %q, %k, %v layout bshd bias alibi bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x8x8xf16>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// bias alibi needs alibi_slopes.
func.func @alibi_without_slopes(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{bias alibi needs alibi_slopes(%slopes), f32 [h_q] or [b, h_q]}}
  %o = te.attention %q, %k, %v layout bshd bias alibi
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// alibi_slopes must have shape [h_q] or [b, h_q].
func.func @alibi_slopes_shape(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                              %v: tensor<2x8x2x16xf16>, %s: tensor<2x2xf32>) {
  // expected-error @+1 {{'alibi_slopes' must have shape [4] or [2, 4], got 'tensor<2x2xf32>'}}
  %o = te.attention %q, %k, %v layout bshd bias alibi alibi_slopes(%s)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x2xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: dropout
//===----------------------------------------------------------------------===//

// The dropout probability must be < 1.
func.func @dropout_one(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                       %v: tensor<2x8x2x16xf16>, %rng: tensor<2xi64>) {
  // expected-error @+1 {{dropout probability must be in [0, 1), got 1}}
  %o = te.attention %q, %k, %v layout bshd dropout 1.0 rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi64>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// The dropout probability must be >= 0.
func.func @dropout_negative(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                            %v: tensor<2x8x2x16xf16>, %rng: tensor<2xi64>) {
  // expected-error @+1 {{dropout probability must be in [0, 1), got -0.5}}
  %o = te.attention %q, %k, %v layout bshd dropout -0.5 rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi64>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// rng_state is only valid with a non-zero dropout.
func.func @rng_state_without_dropout(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                     %v: tensor<2x8x2x16xf16>, %rng: tensor<2xi64>) {
  // expected-error @+1 {{rng_state(...) is only valid with a non-zero dropout}}
  %o = te.attention %q, %k, %v layout bshd rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2xi64>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// rng_state must hold exactly (seed, offset).
func.func @rng_state_length(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                            %v: tensor<2x8x2x16xf16>, %rng: tensor<3xi64>) {
  // expected-error @+1 {{'rng_state' must be tensor<2xi64> (seed, offset), got 'tensor<3xi64>'}}
  %o = te.attention %q, %k, %v layout bshd dropout 0.1 rng_state(%rng)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<3xi64>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// A non-zero dropout needs rng_state.
func.func @dropout_without_rng_state(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                     %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{dropout 0.25 needs rng_state(%seed_offset), tensor<2xi64>}}
  %o = te.attention %q, %k, %v layout bshd dropout 0.25
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: softmax
//===----------------------------------------------------------------------===//

// softmax learnable needs softmax_offset.
func.func @learnable_without_offset(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                    %v: tensor<2x8x2x16xf16>) {
  // expected-error @+1 {{softmax learnable needs softmax_offset(%alpha), f32 [1, h_q, 1, 1]}}
  %o = te.attention %q, %k, %v layout bshd softmax learnable
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// softmax_offset must have shape [1, h_q, 1, 1].
func.func @softmax_offset_shape(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                %v: tensor<2x8x2x16xf16>, %a: tensor<1x4x1x2xf32>) {
  // expected-error @+1 {{'softmax_offset' must have shape [1, 4, 1, 1], got 'tensor<1x4x1x2xf32>'}}
  %o = te.attention %q, %k, %v layout bshd softmax learnable softmax_offset(%a)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x1x2xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

// softmax_offset is only valid with softmax learnable.
func.func @offset_with_off_by_one(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                  %v: tensor<2x8x2x16xf16>, %a: tensor<1x4x1x1xf32>) {
  // expected-error @+1 {{softmax_offset(...) is only valid with softmax learnable, got softmax off_by_one}}
  %o = te.attention %q, %k, %v layout bshd softmax off_by_one softmax_offset(%a)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<1x4x1x1xf32>) -> tensor<2x8x4x16xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention: result types
//===----------------------------------------------------------------------===//

// The output takes the head dimension of 'v', not of 'q'.
func.func @output_head_dim(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                           %v: tensor<2x8x2x32xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x4x32xf16>' are incompatible with return type(s) of operation 'tensor<2x8x4x16xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x32xf16>)
      -> tensor<2x8x4x16xf16>
  return
}

// -----

// The lse result is [b, h_q, s_q, 1].
func.func @lse_shape(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                     %v: tensor<2x8x2x16xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x4x16xf16>', 'tensor<2x4x8x1xf32>' are incompatible with return type(s) of operation 'tensor<2x8x4x16xf16>', 'tensor<2x8x4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = te.attention %q, %k, %v layout bshd {return_lse}
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x4x1xf32>)
  return
}

// -----

// Without return_lse the op has a single result.
func.func @lse_without_return_lse(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                  %v: tensor<2x8x2x16xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x4x16xf16>' are incompatible with return type(s) of operation 'tensor<2x8x4x16xf16>', 'tensor<2x4x8x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.attention_backward
//===----------------------------------------------------------------------===//

// 'lse' must be an f32 tensor.
func.func @bwd_lse_f16(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                       %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                       %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf16>) {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit float values, but got 'tensor<2x4x8x1xf16>'}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// 'd_o' must have an f32, f16 or bf16 element type.
func.func @bwd_do_fp8(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                      %do: tensor<2x8x4x16xf8E5M2>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+1 {{operand #4 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<2x8x4x16xf8E5M2>'}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf8E5M2>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// 'o' must have the forward output type.
func.func @bwd_o_type(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                      %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf32>,
                      %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+1 {{'o' must have the forward output type 'tensor<2x8x4x16xf16>', got 'tensor<2x8x4x16xf32>'}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf32>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// 'd_o' must have the forward output type (d_v = 32 here).
func.func @bwd_do_type(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                       %v: tensor<2x8x2x32xf16>, %o: tensor<2x8x4x32xf16>,
                       %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+1 {{'d_o' must have the forward output type 'tensor<2x8x4x32xf16>', got 'tensor<2x8x4x16xf16>'}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x32xf16>,
         tensor<2x8x4x32xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x32xf16>)
  return
}

// -----

// 'lse' must have the forward statistics type ([t, h_q, 1] for thd).
func.func @bwd_lse_type(%q: tensor<32x4x16xf16>, %k: tensor<32x2x16xf16>,
                        %v: tensor<32x2x16xf16>, %o: tensor<32x4x16xf16>,
                        %do: tensor<32x4x16xf16>, %lse: tensor<2x4x32x1xf32>,
                        %cu: tensor<3xi32>) {
  // expected-error @+1 {{'lse' must have the forward statistics type 'tensor<32x4x1xf32>', got 'tensor<2x4x32x1xf32>'}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout thd
      mask padding cu_seqlens(%cu, %cu)
      : (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>,
         tensor<32x4x16xf16>, tensor<32x4x16xf16>, tensor<2x4x32x1xf32>,
         tensor<3xi32>, tensor<3xi32>)
      -> (tensor<32x4x16xf16>, tensor<32x2x16xf16>, tensor<32x2x16xf16>)
  return
}

// -----

// The shared configuration rules apply to the backward op too.
func.func @bwd_dropout_without_rng_state(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                         %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                                         %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+1 {{dropout 0.5 needs rng_state(%seed_offset), tensor<2xi64>}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      dropout 0.5
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// Shared rule: the query heads must be a multiple of the key/value heads.
func.func @bwd_heads_not_multiple(%q: tensor<2x8x3x16xf16>, %k: tensor<2x8x2x16xf16>,
                                  %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x3x16xf16>,
                                  %do: tensor<2x8x3x16xf16>, %lse: tensor<2x3x8x1xf32>) {
  // expected-error @+1 {{the number of query heads (3) must be a multiple of the number of key/value heads (2)}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x3x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x3x16xf16>, tensor<2x8x3x16xf16>, tensor<2x3x8x1xf32>)
      -> (tensor<2x8x3x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// Shared rule: a causal mask needs a window right bound of -1 or 0.
func.func @bwd_causal_window_right(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                                   %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                                   %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+1 {{mask causal admits no keys after the diagonal: window right bound must be -1 or 0, got 2}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      mask causal window [8, 2]
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// Shared rule: the bias shape is checked against the problem sizes.
func.func @bwd_bias_shape(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                          %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                          %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>,
                          %b: tensor<1x2x8x8xf16>) {
  // expected-error @+1 {{'bias' must have shape [1 or 2, 1 or 4, 8, 8], got 'tensor<1x2x8x8xf16>'}}
  %dq, %dk, %dv, %db = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      bias post_scale bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>,
         tensor<1x2x8x8xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
          tensor<1x2x8x8xf16>)
  return
}

// -----

// A post_scale bias needs its gradient dbias as a fourth result.
func.func @bwd_missing_dbias(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                             %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                             %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>,
                             %b: tensor<1x4x8x8xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x4x16xf16>', 'tensor<2x8x2x16xf16>', 'tensor<2x8x2x16xf16>', 'tensor<1x4x8x8xf16>' are incompatible with return type(s) of operation 'tensor<2x8x4x16xf16>', 'tensor<2x8x2x16xf16>', 'tensor<2x8x2x16xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      bias post_scale bias_tensor(%b)
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>,
         tensor<1x4x8x8xf16>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// The gradients have the types of q, k and v.
func.func @bwd_dk_type(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                       %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                       %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x4x16xf16>', 'tensor<2x8x2x16xf16>', 'tensor<2x8x2x16xf16>' are incompatible with return type(s) of operation 'tensor<2x8x4x16xf16>', 'tensor<2x8x2x16xf32>', 'tensor<2x8x2x16xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf16>)
  return
}

// -----

// Unknown layout keyword: a parse error.
func.func @bwd_unknown_layout(%q: tensor<2x8x4x16xf16>, %k: tensor<2x8x2x16xf16>,
                              %v: tensor<2x8x2x16xf16>, %o: tensor<2x8x4x16xf16>,
                              %do: tensor<2x8x4x16xf16>, %lse: tensor<2x4x8x1xf32>) {
  // expected-error @+2 {{expected ::mlir::te::QKVLayout to be one of: bshd, sbhd, bhsd, thd}}
  // expected-error @+2 {{failed to parse TE_QKVLayoutAttr parameter 'value' which is to be a `::mlir::te::QKVLayout`}}
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout hsbd
      : (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>,
         tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x4x8x1xf32>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x2x16xf16>, tensor<2x8x2x16xf16>)
  return
}

// -----

// Unknown sizes print as `?` in diagnostics.
func.func @bias_shape_dynamic_batch(%q: tensor<?x8x4x16xf32>, %k: tensor<?x8x4x16xf32>, %bias: tensor<1x4x8x9xf32>) {
  // expected-error @+1 {{'bias' must have shape [1 or ?, 1 or 4, 8, 8], got 'tensor<1x4x8x9xf32>'}}
  %o = te.attention %q, %k, %k layout bshd bias post_scale bias_tensor(%bias)
      : (tensor<?x8x4x16xf32>, tensor<?x8x4x16xf32>, tensor<?x8x4x16xf32>, tensor<1x4x8x9xf32>) -> tensor<?x8x4x16xf32>
  return
}

// -----

// Empty batches and sequences are valid (te-fold-empty), heads without
// features are not.
func.func @head_dim_zero(%q: tensor<2x8x4x0xf32>, %k: tensor<2x8x4x0xf32>,
                         %v: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{the head dimensions d_qk (0) and d_v (16) must be at least 1}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x0xf32>, tensor<2x8x4x0xf32>, tensor<2x8x4x16xf32>)
      -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @value_head_dim_zero(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>,
                               %v: tensor<2x8x4x0xf32>) {
  // expected-error @+1 {{the head dimensions d_qk (16) and d_v (0) must be at least 1}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x0xf32>)
      -> tensor<2x8x4x0xf32>
  return
}

// -----

func.func @head_dim_huge(%q: tensor<1x8x4x4294967296xf32>,
                         %k: tensor<1x8x4x4294967296xf32>,
                         %v: tensor<1x8x4x16xf32>) {
  // expected-error @+1 {{the head dimensions d_qk (4294967296) and d_v (16) must be at most 1024}}
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<1x8x4x4294967296xf32>, tensor<1x8x4x4294967296xf32>,
         tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32>
  return
}
