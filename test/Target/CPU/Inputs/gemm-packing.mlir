// Few panels (one panel of B), many K blocks: the packing loop of B runs
// on one thread.
func.func @bf16_k_contiguous(%a: tensor<2048x2048xbf16>, %b: tensor<64x2048xbf16>) -> tensor<2048x64xbf16> {
  %d = te.scaled_matmul %a, %b transpose_b : tensor<2048x2048xbf16>, tensor<64x2048xbf16> -> tensor<2048x64xbf16>
  return %d : tensor<2048x64xbf16>
}
func.func @fp8_k_first(%a: tensor<512x40xf8E5M2>, %b: tensor<512x24xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<40x24xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_a : tensor<512x40xf8E5M2>, tensor<512x24xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<40x24xf32>
  return %d : tensor<40x24xf32>
}
