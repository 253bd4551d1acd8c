// FP8 current scaling, as Transformer Engine's Float8CurrentScaling recipe
// does it: the amax of this very tensor gives the scale (E4M3, power-of-two
// scales), the tensor is cast with a transposed copy for the backward GEMM,
// and dequantized again to show the rounding error.
func.func @current_scaling(%x: tensor<256x512xbf16>)
    -> (tensor<256x512xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<256x512xbf16>) {
  %amax = te.amax %x : tensor<256x512xbf16> -> tensor<f32>
  %scale = te.compute_scale %amax fp8_type f8E4M3FN pow2_scales : tensor<f32> -> tensor<f32>
  %data, %data_t, %scale_inv, %amax2 = te.quantize %x scale(%scale) mode per_tensor usage both
      : tensor<256x512xbf16>, tensor<f32>
      -> tensor<256x512xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %back = te.dequantize %data, %scale_inv mode per_tensor
      : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xbf16>
  return %data, %data_t, %scale_inv, %back
      : tensor<256x512xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<256x512xbf16>
}
