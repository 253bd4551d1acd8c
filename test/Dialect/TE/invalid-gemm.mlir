// RUN: te-opt %s -split-input-file -verify-diagnostics
// Negative tests for te.scaled_matmul's precisions, scaling modes and
// epilogues (TE's rules; see docs/TEDialect.md).

// e5m2 by e5m2 has no TE GEMM.
func.func @case0(%a: tensor<16x32xf8E5M2>, %b: tensor<32x8xf8E5M2>, %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{TE's GEMM takes no e5m2 by e5m2 product; make one operand f8E4M3FN}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xf8E5M2>, tensor<32x8xf8E5M2>, tensor<f32>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// FP8 operands need their scales.
func.func @case1(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>) {
  // expected-error @+1 {{FP8 operands need scales(%a_scale_inv, %b_scale_inv)}}
  %d = te.scaled_matmul %a, %b
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>
      -> tensor<16x8xbf16>
  return
}

// -----

// High-precision operands take no scales.
func.func @case2(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{scales(...) and scaling modes are only valid with FP8 operands, got 'bf16'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<f32>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// High-precision operands share one element type.
func.func @case3(%a: tensor<16x32xbf16>, %b: tensor<32x8xf16>) {
  // expected-error @+1 {{high-precision 'a' and 'b' must have one element type, got 'bf16' and 'f16'}}
  %d = te.scaled_matmul %a, %b
      : tensor<16x32xbf16>, tensor<32x8xf16>
      -> tensor<16x8xf32>
  return
}

// -----

// MXFP8 pairs only with MXFP8.
func.func @case4(%a: tensor<16x64xf8E4M3FN>, %b: tensor<64x8xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<f32>) {
  // expected-error @+1 {{'a' and 'b' must use one scaling mode (only Float8BlockScaling mixes block_1x128 with block_128x128), got mxfp8_1x32 and per_tensor}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, per_tensor
      : tensor<16x64xf8E4M3FN>, tensor<64x8xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// 2D by 2D block scaling is not TE's.
func.func @case5(%a: tensor<16x64xf8E4M3FN>, %b: tensor<8x64xf8E4M3FN>, %sa: tensor<1x1xf32>, %sb: tensor<1x1xf32>) {
  // expected-error @+1 {{TE's GEMM takes 1D by 1D, 1D by 2D or 2D by 1D block scaling, not block_128x128 by block_128x128}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_128x128, block_128x128 transpose_b
      : tensor<16x64xf8E4M3FN>, tensor<8x64xf8E4M3FN>, tensor<1x1xf32>, tensor<1x1xf32>
      -> tensor<16x8xbf16>
  return
}

// -----

// MXFP8 scales run along K: b stored [K, N] has [K / 32, N] scales.
func.func @case6(%a: tensor<16x64xf8E4M3FN>, %b: tensor<64x8xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<64x1xf8E8M0FNU>) {
  // expected-error @+1 {{'b_scale_inv' of a mxfp8_1x32 operand stored as 'tensor<64x8xf8E4M3FN>' must be 'tensor<2x8xf8E8M0FNU>', got 'tensor<64x1xf8E8M0FNU>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32
      : tensor<16x64xf8E4M3FN>, tensor<64x8xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<64x1xf8E8M0FNU>
      -> tensor<16x8xbf16>
  return
}

// -----

// MXFP8 needs K in whole blocks of 32.
func.func @case7(%a: tensor<16x48xf8E4M3FN>, %b: tensor<8x48xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<8x2xf8E8M0FNU>) {
  // expected-error @+1 {{mxfp8_1x32 scales blocks of 32 along K, so K must be a multiple of 32, got 48}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 transpose_b
      : tensor<16x48xf8E4M3FN>, tensor<8x48xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<8x2xf8E8M0FNU>
      -> tensor<16x8xbf16>
  return
}

// -----

// Block scales are f32.
func.func @case8(%a: tensor<16x200xf8E4M3FN>, %b: tensor<8x200xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<1x2xf32>) {
  // expected-error @+1 {{'a_scale_inv' of a block_1x128 operand stored as 'tensor<16x200xf8E4M3FN>' must be 'tensor<16x2xf32>', got 'tensor<16x2xf8E8M0FNU>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_1x128, block_128x128 transpose_b
      : tensor<16x200xf8E4M3FN>, tensor<8x200xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<1x2xf32>
      -> tensor<16x8xbf16>
  return
}

// -----

// TE's bias tensor is the forward's input or the backward's output.
func.func @case9(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %bias: tensor<8xbf16>) {
  // expected-error @+1 {{'bias' (the forward epilogue's input) and 'bias_grad' (the backward's output) exclude each other, as TE's bias tensor is one or the other}}
  %d, %db = te.scaled_matmul %a, %b bias(%bias) bias_grad
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<8xbf16>
      -> tensor<16x8xbf16>, tensor<16xbf16>
  return
}

// -----

// GELU and its derivative are different epilogues.
func.func @case10(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %pre: tensor<16x8xbf16>) {
  // expected-error @+1 {{'gelu' (forward) and 'dgelu' (backward) exclude each other}}
  %d = te.scaled_matmul %a, %b dgelu(%pre) gelu
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<16x8xbf16>
      -> tensor<16x8xbf16>
  return
}

// -----

// pre_gelu needs a GELU.
func.func @case11(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) {
  // expected-error @+1 {{'pre_gelu' returns the values before the GELU, so it needs 'gelu'}}
  %d, %pre = te.scaled_matmul %a, %b pre_gelu
      : tensor<16x32xbf16>, tensor<32x8xbf16>
      -> tensor<16x8xbf16>, tensor<16x8xbf16>
  return
}

// -----

// The bias gradient is a backward epilogue.
func.func @case12(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) {
  // expected-error @+1 {{'bias_grad' is a backward epilogue; with 'gelu' use 'dgelu(%pre_gelu)' instead}}
  %d, %db = te.scaled_matmul %a, %b gelu bias_grad
      : tensor<16x32xbf16>, tensor<32x8xbf16>
      -> tensor<16x8xbf16>, tensor<16xbf16>
  return
}

// -----

// dgelu's input has D's shape.
func.func @case13(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %pre: tensor<8x16xbf16>) {
  // expected-error @+1 {{'dgelu' must have shape [16, 8], got 'tensor<8x16xbf16>'}}
  %d = te.scaled_matmul %a, %b dgelu(%pre)
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<8x16xbf16>
      -> tensor<16x8xbf16>
  return
}

// -----

// accumulate adds into a tensor of D's type.
func.func @case14(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %c: tensor<16x8xbf16>) {
  // expected-error @+1 {{'accumulate' must have D's element type 'f32', got 'tensor<16x8xbf16>'}}
  %d = te.scaled_matmul %a, %b accumulate(%c)
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<16x8xbf16>
      -> tensor<16x8xf32>
  return
}

// -----

// Block scaling has TE's bias and dgelu epilogues only.
func.func @case15(%a: tensor<16x128xf8E4M3FN>, %b: tensor<8x128xf8E4M3FN>, %sa: tensor<16x1xf32>, %sb: tensor<8x1xf32>) {
  // expected-error @+1 {{with block scaling TE's GEMM (cuBLASLt) offers only the bias and dgelu epilogues}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_1x128, block_1x128 transpose_b gelu
      : tensor<16x128xf8E4M3FN>, tensor<8x128xf8E4M3FN>, tensor<16x1xf32>, tensor<8x1xf32>
      -> tensor<16x8xbf16>
  return
}

// -----

// An FP8 output needs per_tensor operands.
func.func @case16(%a: tensor<16x64xf8E4M3FN>, %b: tensor<8x64xf8E4M3FN>, %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<8x2xf8E8M0FNU>, %so: tensor<f32>) {
  // expected-error @+1 {{an FP8 output needs per_tensor FP8 operands (TE fuses the output cast only for delayed scaling); compute D in high precision and te.quantize it}}
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 out_scale(%so) transpose_b
      : tensor<16x64xf8E4M3FN>, tensor<8x64xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<8x2xf8E8M0FNU>, tensor<f32>
      -> tensor<16x8xf8E4M3FN>, tensor<f32>
  return
}

// -----

// An FP8 output cannot be accumulated into.
func.func @case17(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %c: tensor<16x8xbf16>, %so: tensor<f32>) {
  // expected-error @+1 {{'accumulate' needs a high-precision output: TE cannot add into an FP8 D}}
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) accumulate(%c) out_scale(%so)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<16x8xbf16>, tensor<f32>
      -> tensor<16x8xf8E4M3FN>, tensor<f32>
  return
}

// -----

// BGRADB's bias gradient is the row sums of op(A): [M].
func.func @case18(%a: tensor<32x16xbf16>, %b: tensor<32x8xbf16>) {
  // expected-error @+1 {{result 'bias_grad' must have shape [16], got 'tensor<8xbf16>'}}
  %d, %db = te.scaled_matmul %a, %b transpose_a bias_grad
      : tensor<32x16xbf16>, tensor<32x8xbf16>
      -> tensor<16x8xf32>, tensor<8xbf16>
  return
}

// -----

// DGELU_BGRAD's bias gradient is the column sums of D: [N].
func.func @case19(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %pre: tensor<16x8xbf16>) {
  // expected-error @+1 {{result 'bias_grad' must have shape [8], got 'tensor<16xbf16>'}}
  %d, %db = te.scaled_matmul %a, %b dgelu(%pre) bias_grad
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<16x8xbf16>
      -> tensor<16x8xbf16>, tensor<16xbf16>
  return
}

// -----

// pre_gelu has D's shape.
func.func @case20(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) {
  // expected-error @+1 {{result 'pre_gelu' must have shape [16, 8], got 'tensor<8x16xbf16>'}}
  %d, %pre = te.scaled_matmul %a, %b gelu pre_gelu
      : tensor<16x32xbf16>, tensor<32x8xbf16>
      -> tensor<16x8xbf16>, tensor<8x16xbf16>
  return
}
