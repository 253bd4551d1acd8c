// RUN: te-opt %s -split-input-file -verify-diagnostics
// Negative tests for te.grouped_matmul (TE's grouped GEMM; see
// docs/TEDialect.md).

func.func @rank(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>, %m: tensor<2xi64>) {
  // expected-error @+1 {{'a' must be 2-D (the tokens of every group, [T, K]) and 'b' 3-D (one matrix per group)}}
  %d = te.grouped_matmul %a, %b splits(%m)
      : tensor<16x32xbf16>, tensor<32x8xbf16>, tensor<2xi64> -> tensor<16x8xbf16>
  return
}

// -----

func.func @contraction(%a: tensor<16x32xbf16>, %b: tensor<2x8x16xbf16>, %m: tensor<2xi64>) {
  // expected-error @+1 {{contraction sizes differ: 'a' is 16x32 and each op(b[g]) is 16x8}}
  %d = te.grouped_matmul %a, %b splits(%m) transpose_b
      : tensor<16x32xbf16>, tensor<2x8x16xbf16>, tensor<2xi64> -> tensor<16x8xbf16>
  return
}

// -----

func.func @splits(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xbf16>, %m: tensor<3xi64>) {
  // expected-error @+1 {{'splits' must have one entry per group of 'b' (2), got 'tensor<3xi64>'}}
  %d = te.grouped_matmul %a, %b splits(%m)
      : tensor<16x32xbf16>, tensor<2x32x8xbf16>, tensor<3xi64> -> tensor<16x8xbf16>
  return
}

// -----

func.func @result(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xbf16>, %m: tensor<2xi64>) {
  // expected-error @+1 {{result 'd' must have shape [16, 8], got 'tensor<16x9xbf16>'}}
  %d = te.grouped_matmul %a, %b splits(%m)
      : tensor<16x32xbf16>, tensor<2x32x8xbf16>, tensor<2xi64> -> tensor<16x9xbf16>
  return
}

// -----

func.func @mixed(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xf8E4M3FN>, %m: tensor<2xi64>) {
  // expected-error @+1 {{'a' and 'b' must both be FP8 or both f32, f16 or bf16}}
  %d = te.grouped_matmul %a, %b splits(%m)
      : tensor<16x32xbf16>, tensor<2x32x8xf8E4M3FN>, tensor<2xi64> -> tensor<16x8xbf16>
  return
}

// -----

// Per_tensor scales are per group.
func.func @per_tensor_scales(%a: tensor<16x32xf8E4M3FN>, %b: tensor<2x32x8xf8E4M3FN>, %m: tensor<2xi64>,
                             %sa: tensor<f32>, %sb: tensor<2xf32>) {
  // expected-error @+1 {{'a_scale_inv' of a per_tensor operand stored as 'tensor<16x32xf8E4M3FN>' must be 'tensor<2xf32>', got 'tensor<f32>'}}
  %d = te.grouped_matmul %a, %b splits(%m) scales(%sa, %sb)
      : tensor<16x32xf8E4M3FN>, tensor<2x32x8xf8E4M3FN>, tensor<2xi64>, tensor<f32>, tensor<2xf32>
      -> tensor<16x8xbf16>
  return
}

// -----

func.func @mxfp8_b_scales(%a: tensor<16x64xf8E4M3FN>, %b: tensor<2x8x64xf8E4M3FN>, %m: tensor<2xi64>,
                          %sa: tensor<16x2xf8E8M0FNU>, %sb: tensor<8x2xf8E8M0FNU>) {
  // expected-error @+1 {{'b_scale_inv' of a mxfp8_1x32 operand stored as 'tensor<8x64xf8E4M3FN>' must be 'tensor<2x8x2xf8E8M0FNU>', got 'tensor<8x2xf8E8M0FNU>'}}
  %d = te.grouped_matmul %a, %b splits(%m) scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 transpose_b
      : tensor<16x64xf8E4M3FN>, tensor<2x8x64xf8E4M3FN>, tensor<2xi64>, tensor<16x2xf8E8M0FNU>,
        tensor<8x2xf8E8M0FNU> -> tensor<16x8xbf16>
  return
}

// -----

func.func @a_2d_blocks(%a: tensor<16x256xf8E4M3FN>, %b: tensor<2x8x256xf8E4M3FN>, %m: tensor<2xi64>,
                       %sa: tensor<1x2xf32>, %sb: tensor<2x8x2xf32>) {
  // expected-error @+1 {{'a' of a grouped GEMM cannot be block_128x128: its 128-row blocks would straddle groups}}
  %d = te.grouped_matmul %a, %b splits(%m) scales(%sa, %sb) scaling block_128x128, block_1x128 transpose_b
      : tensor<16x256xf8E4M3FN>, tensor<2x8x256xf8E4M3FN>, tensor<2xi64>, tensor<1x2xf32>,
        tensor<2x8x2xf32> -> tensor<16x8xbf16>
  return
}

// -----

func.func @e5m2_pair(%a: tensor<16x32xf8E5M2>, %b: tensor<2x32x8xf8E5M2>, %m: tensor<2xi64>,
                     %sa: tensor<2xf32>, %sb: tensor<2xf32>) {
  // expected-error @+1 {{TE's GEMM takes no e5m2 by e5m2 product}}
  %d = te.grouped_matmul %a, %b splits(%m) scales(%sa, %sb)
      : tensor<16x32xf8E5M2>, tensor<2x32x8xf8E5M2>, tensor<2xi64>, tensor<2xf32>, tensor<2xf32>
      -> tensor<16x8xbf16>
  return
}

// -----

func.func @bias(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xbf16>, %m: tensor<2xi64>, %bias: tensor<1x8xbf16>) {
  // expected-error @+1 {{'bias' must have shape [2, 8] (one bias per group), got 'tensor<1x8xbf16>'}}
  %d = te.grouped_matmul %a, %b splits(%m) bias(%bias)
      : tensor<16x32xbf16>, tensor<2x32x8xbf16>, tensor<2xi64>, tensor<1x8xbf16> -> tensor<16x8xbf16>
  return
}

// -----

func.func @accumulate(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xbf16>, %m: tensor<2xi64>, %c: tensor<16x8xf32>) {
  // expected-error @+1 {{'accumulate' must have D's type 'tensor<16x8xbf16>', got 'tensor<16x8xf32>'}}
  %d = te.grouped_matmul %a, %b splits(%m) accumulate(%c)
      : tensor<16x32xbf16>, tensor<2x32x8xbf16>, tensor<2xi64>, tensor<16x8xf32> -> tensor<16x8xbf16>
  return
}

// -----

func.func @fp8_out(%a: tensor<16x32xbf16>, %b: tensor<2x32x8xbf16>, %m: tensor<2xi64>) {
  // expected-error @+1 {{result #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %d = te.grouped_matmul %a, %b splits(%m)
      : tensor<16x32xbf16>, tensor<2x32x8xbf16>, tensor<2xi64> -> tensor<16x8xf8E4M3FN>
  return
}
