// Configurations cuBLASLt declines (library-calls.test).
func.func @nn_layout(%a: tensor<32x64xf8E4M3FN>, %b: tensor<64x32xf8E4M3FN>,
                     %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<32x32xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) : tensor<32x64xf8E4M3FN>, tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<32x32xbf16>
  return %d : tensor<32x32xbf16>
}
func.func @fp8_out(%a: tensor<32x64xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>, %sa: tensor<f32>,
                   %sb: tensor<f32>, %so: tensor<f32>) -> (tensor<32x32xf8E4M3FN>, tensor<f32>) {
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%so) transpose_b : tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32> -> tensor<32x32xf8E4M3FN>, tensor<f32>
  return %d, %amax : tensor<32x32xf8E4M3FN>, tensor<f32>
}
func.func @f32_bias(%a: tensor<32x64xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>, %sa: tensor<f32>,
                    %sb: tensor<f32>, %bias: tensor<32xf32>) -> tensor<32x32xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b : tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xf32> -> tensor<32x32xf32>
  return %d : tensor<32x32xf32>
}
func.func @unaligned(%a: tensor<32x24xf8E4M3FN>, %b: tensor<8x24xf8E4M3FN>,
                     %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<32x8xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b : tensor<32x24xf8E4M3FN>, tensor<8x24xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<32x8xbf16>
  return %d : tensor<32x8xbf16>
}
func.func @dynamic(%a: tensor<?x64xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>,
                   %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<?x32xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b : tensor<?x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<?x32xbf16>
  return %d : tensor<?x32xbf16>
}
func.func @mxfp8(%a: tensor<32x64xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>, %sa: tensor<32x2xf8E8M0FNU>, %sb: tensor<32x2xf8E8M0FNU>) -> tensor<32x32xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 transpose_b : tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<32x2xf8E8M0FNU>, tensor<32x2xf8E8M0FNU> -> tensor<32x32xbf16>
  return %d : tensor<32x32xbf16>
}
func.func @fp8_bgradb(%a: tensor<32x64xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> (tensor<32x32xf32>, tensor<32xf32>) {
  %d, %db = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b bias_grad : tensor<32x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<32x32xf32>, tensor<32xf32>
  return %d, %db : tensor<32x32xf32>, tensor<32xf32>
}
func.func @bf16_to_f16(%a: tensor<32x64xbf16>, %b: tensor<32x64xbf16>) -> tensor<32x32xf16> {
  %d = te.scaled_matmul %a, %b transpose_b : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x32xf16>
  return %d : tensor<32x32xf16>
}
func.func @f32_bias_bf16(%a: tensor<32x64xbf16>, %b: tensor<32x64xbf16>, %bias: tensor<32xf32>) -> tensor<32x32xbf16> {
  %d = te.scaled_matmul %a, %b bias(%bias) transpose_b : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32xf32> -> tensor<32x32xbf16>
  return %d : tensor<32x32xbf16>
}
func.func @bias_dgelu(%a: tensor<32x64xbf16>, %b: tensor<32x64xbf16>, %bias: tensor<32xbf16>, %pre: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %d = te.scaled_matmul %a, %b bias(%bias) dgelu(%pre) transpose_b : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x32xbf16> -> tensor<32x32xbf16>
  return %d : tensor<32x32xbf16>
}
func.func @gelu_aux_n12(%a: tensor<32x64xf16>, %b: tensor<12x64xf16>) -> (tensor<32x12xf16>, tensor<32x12xf16>) {
  %d, %p = te.scaled_matmul %a, %b transpose_b gelu pre_gelu : tensor<32x64xf16>, tensor<12x64xf16> -> tensor<32x12xf16>, tensor<32x12xf16>
  return %d, %p : tensor<32x12xf16>, tensor<32x12xf16>
}
func.func @empty_k(%a: tensor<32x0xbf16>, %b: tensor<16x0xbf16>, %c: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %d = te.scaled_matmul %a, %b accumulate(%c) transpose_b : tensor<32x0xbf16>, tensor<16x0xbf16>, tensor<32x16xf32> -> tensor<32x16xf32>
  return %d : tensor<32x16xf32>
}
