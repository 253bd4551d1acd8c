// te.scaled_matmul configurations te-mlir's cuBLASLt call takes beyond TE's
// TN FP8 forward (library-calls.test): high-precision operands in each
// layout, accumulation, and TE's GELU, dGELU and bias-gradient epilogues.
func.func @bf16_nn_accumulate(%a: tensor<96x64xbf16>, %b: tensor<64x40xbf16>, %c: tensor<96x40xbf16>) -> tensor<96x40xbf16> {
  %d = te.scaled_matmul %a, %b accumulate(%c) : tensor<96x64xbf16>, tensor<64x40xbf16>, tensor<96x40xbf16> -> tensor<96x40xbf16>
  return %d : tensor<96x40xbf16>
}
func.func @f16_dgelu_bgrad(%a: tensor<96x64xf16>, %b: tensor<40x64xf16>, %pre: tensor<96x40xf16>) -> (tensor<96x40xf16>, tensor<40xf16>) {
  %d, %db = te.scaled_matmul %a, %b dgelu(%pre) transpose_b bias_grad : tensor<96x64xf16>, tensor<40x64xf16>, tensor<96x40xf16> -> tensor<96x40xf16>, tensor<40xf16>
  return %d, %db : tensor<96x40xf16>, tensor<40xf16>
}
func.func @f32_tt_gelu_aux_bias(%a: tensor<64x96xf32>, %b: tensor<40x64xf32>, %bias: tensor<40xf32>) -> (tensor<96x40xf32>, tensor<96x40xf32>) {
  %d, %p = te.scaled_matmul %a, %b bias(%bias) transpose_a transpose_b gelu pre_gelu : tensor<64x96xf32>, tensor<40x64xf32>, tensor<40xf32> -> tensor<96x40xf32>, tensor<96x40xf32>
  return %d, %p : tensor<96x40xf32>, tensor<96x40xf32>
}
func.func @bf16_wgrad_bgradb(%dy: tensor<64x40xbf16>, %x: tensor<64x24xbf16>, %main: tensor<40x24xf32>) -> (tensor<40x24xf32>, tensor<40xf32>) {
  %d, %db = te.scaled_matmul %dy, %x accumulate(%main) transpose_a bias_grad : tensor<64x40xbf16>, tensor<64x24xbf16>, tensor<40x24xf32> -> tensor<40x24xf32>, tensor<40xf32>
  return %d, %db : tensor<40x24xf32>, tensor<40xf32>
}
func.func @fp8_accumulate(%a: tensor<96x64xf8E4M3FN>, %b: tensor<40x64xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %c: tensor<96x40xf32>) -> tensor<96x40xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) accumulate(%c) transpose_b : tensor<96x64xf8E4M3FN>, tensor<40x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<96x40xf32> -> tensor<96x40xf32>
  return %d : tensor<96x40xf32>
}
