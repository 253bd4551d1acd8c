// Entry points that return an input, or one value twice: each such output
// is a copy kernel's launch on the GPU (te-host-copies-to-gpu), checked by
// scripts/gpu-check.sh against the CPU bit for bit.
func.func @input_and_amax_twice(%x: tensor<1001xbf16>)
    -> (tensor<1001xbf16>, tensor<f32>, tensor<f32>) {
  %a = te.amax %x : tensor<1001xbf16> -> tensor<f32>
  return %x, %a, %a : tensor<1001xbf16>, tensor<f32>, tensor<f32>
}

func.func @fp8_data_twice(%x: tensor<256x512xf32>, %s: tensor<f32>)
    -> (tensor<256x512xf8E4M3FN>, tensor<256x512xf8E4M3FN>, tensor<256x512xf32>) {
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<256x512xf32>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %d, %x : tensor<256x512xf8E4M3FN>, tensor<256x512xf8E4M3FN>, tensor<256x512xf32>
}
