// What entry points keep in host buffers after bufferization: an output
// that is an input or a value returned twice (a copy), and constants (host
// globals). On the GPU each is a kernel's launch (te-host-copies-to-gpu),
// checked by scripts/gpu-check.sh against the CPU bit for bit.
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

// Constant tensors as operands: a splat and one of distinct values.
func.func @constants(%x: tensor<4x64xbf16>) -> (tensor<4xf32>, tensor<4x64xf8E4M3FN>) {
  %amax = arith.constant dense<[1.0, 448.0, 0.0, 3.5e-3]> : tensor<4xf32>
  %s = te.compute_scale %amax fp8_type f8E4M3FN : tensor<4xf32> -> tensor<4xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %d, %si, %a = te.quantize %x scale(%two) mode per_tensor
      : tensor<4x64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %s, %d : tensor<4xf32>, tensor<4x64xf8E4M3FN>
}
