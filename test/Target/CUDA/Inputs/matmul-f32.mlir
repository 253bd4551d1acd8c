// An f32 GEMM, which the generated kernel multiplies on the lanes' FMAs
// (sass.test).
func.func @f32_gemm(%a: tensor<100x72xf32>, %b: tensor<90x72xf32>) -> tensor<100x90xf32> {
  %d = te.scaled_matmul %a, %b transpose_b : tensor<100x72xf32>, tensor<90x72xf32> -> tensor<100x90xf32>
  return %d : tensor<100x90xf32>
}
