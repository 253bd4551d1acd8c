// TE's fused QKV RoPE: the cuda target has no kernel for it yet and says
// so (te.rope itself is a generated kernel).
func.func @qkv(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) -> (tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>) {
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32]
      : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>
      -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return %q, %k, %v : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
}
