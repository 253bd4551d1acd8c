// te.scaled_matmul on the GPU's matrix units, checked by scripts/gpu-check.sh
// against the CPU within the output type's tolerance (the f32 sums run in
// another order) and timed.
func.func @gemm_tn_bf16(%a: tensor<1024x1024xf8E4M3FN>, %b: tensor<1024x1024xf8E4M3FN>,
                        %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<1024x1024xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b
      : tensor<1024x1024xf8E4M3FN>, tensor<1024x1024xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<1024x1024xbf16>
  return %d : tensor<1024x1024xbf16>
}

// Partial tiles everywhere, A transposed, mixed FP8 formats, bias and GELU.
func.func @gemm_bias_gelu_f32(%a: tensor<555x1000xf8E5M2>, %b: tensor<555x777xf8E4M3FN>,
                              %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<777xbf16>)
    -> tensor<1000x777xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_a gelu
      : tensor<555x1000xf8E5M2>, tensor<555x777xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<777xbf16>
      -> tensor<1000x777xf32>
  return %d : tensor<1000x777xf32>
}

// TN with a bf16 bias and GELU: cuBLASLt's epilogue on sm_89+, against the
// CPU's tanh GELU.
func.func @gemm_tn_bias_gelu_bf16(%a: tensor<512x768xf8E4M3FN>, %b: tensor<256x768xf8E4M3FN>,
                                  %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<256xbf16>)
    -> tensor<512x256xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b gelu
      : tensor<512x768xf8E4M3FN>, tensor<256x768xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<256xbf16>
      -> tensor<512x256xbf16>
  return %d : tensor<512x256xbf16>
}
