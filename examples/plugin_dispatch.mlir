// One module, two backends: with NVTE_PLUGIN=te-plugin-onednn the oneDNN
// plugin takes the causal attention and the scaled_matmul to bf16, and
// declines the sliding-window attention and the FP8-output GEMM, which the
// native CPU lowering takes:
//   NVTE_PLUGIN=te-plugin-onednn te-run examples/plugin_dispatch.mlir \
//       --random-inputs --explain --check
func.func @block(%q: tensor<2x64x4x32xbf16>, %k: tensor<2x64x2x32xbf16>, %v: tensor<2x64x2x32xbf16>,
                 %a: tensor<64x128xf8E4M3FN>, %b: tensor<32x128xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<32xbf16>)
    -> (tensor<2x64x4x32xbf16>, tensor<2x64x4x32xbf16>, tensor<64x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<f32>) {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<2x64x4x32xbf16>, tensor<2x64x2x32xbf16>, tensor<2x64x2x32xbf16>) -> tensor<2x64x4x32xbf16>
  %w = te.attention %q, %k, %v layout bshd mask causal window [8, 0]
      : (tensor<2x64x4x32xbf16>, tensor<2x64x2x32xbf16>, tensor<2x64x2x32xbf16>) -> tensor<2x64x4x32xbf16>
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b gelu
      : tensor<64x128xf8E4M3FN>, tensor<32x128xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16> -> tensor<64x32xbf16>
  %one = arith.constant dense<1.0> : tensor<f32>
  %d8, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%one) transpose_b
      : tensor<64x128xf8E4M3FN>, tensor<32x128xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32> -> tensor<64x32xf8E4M3FN>, tensor<f32>
  return %o, %w, %d, %d8, %amax : tensor<2x64x4x32xbf16>, tensor<2x64x4x32xbf16>, tensor<64x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<f32>
}
