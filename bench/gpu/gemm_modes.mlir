// te.scaled_matmul in every mode beyond TE's TN per_tensor FP8 forward (f32,
// bf16 and f16 operands, MXFP8, block scaling, accumulate, GELU with its
// pre-GELU output, dGELU with DGELU_BGRAD, BGRADB), checked by
// scripts/gpu-check.sh against the CPU within the output type's tolerance:
// by default cuBLASLt takes the high-precision ones (and FP8 accumulation),
// the generated kernel the rest; gpu-check also runs all of them through the
// generated kernel (TE_CUDA_GEMM=codegen).
func.func @bf16_nn_accumulate(%a: tensor<100x72xbf16>, %b: tensor<72x90xbf16>, %c: tensor<100x90xbf16>) -> tensor<100x90xbf16> {
  %d = te.scaled_matmul %a, %b accumulate(%c) : tensor<100x72xbf16>, tensor<72x90xbf16>, tensor<100x90xbf16> -> tensor<100x90xbf16>
  return %d : tensor<100x90xbf16>
}
func.func @f16_dgelu_bgrad(%a: tensor<100x72xf16>, %b: tensor<90x72xf16>, %pre: tensor<100x90xf16>) -> (tensor<100x90xf16>, tensor<90xf16>) {
  %d, %db = te.scaled_matmul %a, %b dgelu(%pre) transpose_b bias_grad : tensor<100x72xf16>, tensor<90x72xf16>, tensor<100x90xf16> -> tensor<100x90xf16>, tensor<90xf16>
  return %d, %db : tensor<100x90xf16>, tensor<90xf16>
}
func.func @bf16_gelu_pre(%a: tensor<100x72xbf16>, %b: tensor<90x72xbf16>, %bias: tensor<90xbf16>) -> (tensor<100x90xbf16>, tensor<100x90xf32>) {
  %d, %p = te.scaled_matmul %a, %b bias(%bias) transpose_b gelu pre_gelu : tensor<100x72xbf16>, tensor<90x72xbf16>, tensor<90xbf16> -> tensor<100x90xbf16>, tensor<100x90xf32>
  return %d, %p : tensor<100x90xbf16>, tensor<100x90xf32>
}
func.func @mxfp8(%a: tensor<100x96xf8E4M3FN>, %b: tensor<90x96xf8E5M2>, %sa: tensor<100x3xf8E8M0FNU>, %sb: tensor<90x3xf8E8M0FNU>) -> tensor<100x90xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 transpose_b : tensor<100x96xf8E4M3FN>, tensor<90x96xf8E5M2>, tensor<100x3xf8E8M0FNU>, tensor<90x3xf8E8M0FNU> -> tensor<100x90xf32>
  return %d : tensor<100x90xf32>
}
func.func @blocks(%a: tensor<150x300xf8E4M3FN>, %b: tensor<140x300xf8E4M3FN>, %sa: tensor<150x3xf32>, %sb: tensor<2x3xf32>) -> tensor<150x140xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_1x128, block_128x128 transpose_b : tensor<150x300xf8E4M3FN>, tensor<140x300xf8E4M3FN>, tensor<150x3xf32>, tensor<2x3xf32> -> tensor<150x140xf32>
  return %d : tensor<150x140xf32>
}
func.func @blocks_tn(%a: tensor<300x150xf8E4M3FN>, %b: tensor<300x140xf8E4M3FN>, %sa: tensor<3x2xf32>, %sb: tensor<3x140xf32>) -> tensor<150x140xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_128x128, block_1x128 transpose_a : tensor<300x150xf8E4M3FN>, tensor<300x140xf8E4M3FN>, tensor<3x2xf32>, tensor<3x140xf32> -> tensor<150x140xbf16>
  return %d : tensor<150x140xbf16>
}
func.func @wgrad_bgradb(%dy: tensor<64x40xf8E5M2>, %x: tensor<64x24xf8E4M3FN>, %sdy: tensor<f32>, %sx: tensor<f32>, %main: tensor<40x24xf32>) -> (tensor<40x24xf32>, tensor<40xf32>) {
  %d, %db = te.scaled_matmul %dy, %x scales(%sdy, %sx) accumulate(%main) transpose_a bias_grad : tensor<64x40xf8E5M2>, tensor<64x24xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<40x24xf32> -> tensor<40x24xf32>, tensor<40xf32>
  return %d, %db : tensor<40x24xf32>, tensor<40xf32>
}
func.func @mx_wgrad_bgradb(%dy: tensor<64x40xf8E5M2>, %x: tensor<64x24xf8E4M3FN>, %sdy: tensor<2x40xf8E8M0FNU>, %sx: tensor<2x24xf8E8M0FNU>) -> (tensor<40x24xbf16>, tensor<40xbf16>) {
  %d, %db = te.scaled_matmul %dy, %x scales(%sdy, %sx) scaling mxfp8_1x32, mxfp8_1x32 transpose_a bias_grad : tensor<64x40xf8E5M2>, tensor<64x24xf8E4M3FN>, tensor<2x40xf8E8M0FNU>, tensor<2x24xf8E8M0FNU> -> tensor<40x24xbf16>, tensor<40xbf16>
  return %d, %db : tensor<40x24xbf16>, tensor<40xbf16>
}
func.func @f32_tt_accumulate(%a: tensor<72x100xf32>, %b: tensor<90x72xf32>, %c: tensor<100x90xf32>) -> tensor<100x90xf32> {
  %d = te.scaled_matmul %a, %b accumulate(%c) transpose_a transpose_b : tensor<72x100xf32>, tensor<90x72xf32>, tensor<100x90xf32> -> tensor<100x90xf32>
  return %d : tensor<100x90xf32>
}
func.func @f32_gelu_pre(%a: tensor<100x72xf32>, %b: tensor<72x88xf32>, %bias: tensor<88xf32>) -> (tensor<100x88xf32>, tensor<100x88xf32>) {
  %d, %p = te.scaled_matmul %a, %b bias(%bias) gelu pre_gelu : tensor<100x72xf32>, tensor<72x88xf32>, tensor<88xf32> -> tensor<100x88xf32>, tensor<100x88xf32>
  return %d, %p : tensor<100x88xf32>, tensor<100x88xf32>
}
func.func @bf16_wgrad_bgradb(%dy: tensor<64x40xbf16>, %x: tensor<64x24xbf16>, %main: tensor<40x24xf32>) -> (tensor<40x24xf32>, tensor<40xf32>) {
  %d, %db = te.scaled_matmul %dy, %x accumulate(%main) transpose_a bias_grad : tensor<64x40xbf16>, tensor<64x24xbf16>, tensor<40x24xf32> -> tensor<40x24xf32>, tensor<40xf32>
  return %d, %db : tensor<40x24xf32>, tensor<40xf32>
}
func.func @bf16_dgelu(%a: tensor<100x72xbf16>, %b: tensor<88x72xbf16>, %pre: tensor<100x88xbf16>) -> tensor<100x88xbf16> {
  %d = te.scaled_matmul %a, %b dgelu(%pre) transpose_b : tensor<100x72xbf16>, tensor<88x72xbf16>, tensor<100x88xbf16> -> tensor<100x88xbf16>
  return %d : tensor<100x88xbf16>
}
func.func @fp8_accumulate(%a: tensor<96x64xf8E4M3FN>, %b: tensor<40x64xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %c: tensor<96x40xf32>) -> tensor<96x40xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) accumulate(%c) transpose_b : tensor<96x64xf8E4M3FN>, tensor<40x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<96x40xf32> -> tensor<96x40xf32>
  return %d : tensor<96x40xf32>
}
