// TE's fused QKV RoPE on the cuda target: GQA (q = 2 k), the partial
// rotary fraction, start positions, interleaved pairs with context
// parallelism, and the backward.
func.func @qkv(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) -> (tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>) {
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32]
      : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>
      -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return %q, %k, %v : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
}

func.func @start_positions(%x: tensor<2x16x2x256xf16>, %qf: tensor<64x1x1x32xf32>, %kf: tensor<48x1x1x32xf32>, %sp: tensor<2xi32>) -> (tensor<2x16x4x64xf16>, tensor<2x16x2x64xf16>, tensor<2x16x2x64xf16>) {
  %q, %k, %v = te.qkv_rope %x, %qf, %kf start_positions(%sp) format bshd split [128, 64, 64]
      : tensor<2x16x2x256xf16>, tensor<64x1x1x32xf32>, tensor<48x1x1x32xf32>, tensor<2xi32>
      -> tensor<2x16x4x64xf16>, tensor<2x16x2x64xf16>, tensor<2x16x2x64xf16>
  return %q, %k, %v : tensor<2x16x4x64xf16>, tensor<2x16x2x64xf16>, tensor<2x16x2x64xf16>
}

func.func @interleaved_cp(%x: tensor<8x1x2x96xf32>, %f: tensor<32x1x1x32xf32>) -> (tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>) {
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [32, 32, 32] interleaved cp_size 2 cp_rank 1
      : tensor<8x1x2x96xf32>, tensor<32x1x1x32xf32>, tensor<32x1x1x32xf32>
      -> tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>
  return %q, %k, %v : tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>, tensor<8x1x2x32xf32>
}

func.func @backward(%dq: tensor<16x2x8x32xbf16>, %dk: tensor<16x2x4x32xbf16>, %dv: tensor<16x2x4x32xbf16>, %f: tensor<64x1x1x32xf32>) -> tensor<16x2x4x128xbf16> {
  %g = te.qkv_rope_backward %dq, %dk, %dv, %f, %f format sbhd split [64, 32, 32]
      : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>
      -> tensor<16x2x4x128xbf16>
  return %g : tensor<16x2x4x128xbf16>
}
