// One FP8 training step of a linear layer with delayed scaling: quantize the
// activations and weights with last step's scales, run the FP8 GEMM, fold
// this step's amaxes into the histories to get the next step's scales
// (16 steps of history, E4M3), and dequantize the activations to measure
// the quantization error against the input.
func.func @fp8_linear(%x: tensor<128x256xbf16>, %w: tensor<64x256xbf16>,
                      %x_history: tensor<16xf32>, %w_history: tensor<16xf32>,
                      %x_scale: tensor<f32>, %w_scale: tensor<f32>)
    -> (tensor<128x64xbf16>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>,
        tensor<128x256xbf16>, tensor<f32>) {
  %xq, %x_si, %x_amax = te.quantize %x scale(%x_scale) mode per_tensor
      : tensor<128x256xbf16>, tensor<f32>
      -> tensor<128x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %wq, %w_si, %w_amax = te.quantize %w scale(%w_scale) mode per_tensor
      : tensor<64x256xbf16>, tensor<f32>
      -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %y = te.scaled_matmul %xq, %wq scales(%x_si, %w_si) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<128x64xbf16>
  %x_history2, %x_scale2 = te.update_delayed_scaling %x_history, %x_amax, %x_scale
      fp8_type f8E4M3FN amax_algo max margin 0
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  %w_history2, %w_scale2 = te.update_delayed_scaling %w_history, %w_amax, %w_scale
      fp8_type f8E4M3FN amax_algo most_recent
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  %x_back = te.dequantize %xq, %x_si mode per_tensor
      : tensor<128x256xf8E4M3FN>, tensor<f32> -> tensor<128x256xbf16>
  %y_amax = te.amax %y : tensor<128x64xbf16> -> tensor<f32>
  return %y, %x_history2, %x_scale2, %w_history2, %w_scale2, %x_back, %y_amax
      : tensor<128x64xbf16>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>,
        tensor<128x256xbf16>, tensor<f32>
}
