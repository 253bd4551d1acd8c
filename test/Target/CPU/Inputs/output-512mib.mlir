// A scalar input and a 512 MiB result.
func.func @large_output(%x: tensor<f32>) -> tensor<134217728xf32> {
  %empty = tensor.empty() : tensor<134217728xf32>
  %value = tensor.extract %x[] : tensor<f32>
  %filled = linalg.fill ins(%value : f32) outs(%empty : tensor<134217728xf32>) -> tensor<134217728xf32>
  return %filled : tensor<134217728xf32>
}
