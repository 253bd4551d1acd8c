// The FP8 kernels of the cuda target at sizes where bandwidth shows (64 MiB
// of bf16): scripts/gpu-check.sh compiles this for the GPU and the CPU,
// runs both on the same inputs, checks the GPU's bits against the CPU's and
// times each GPU entry against a device-to-device copy.
func.func @amax(%x: tensor<8192x4096xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<8192x4096xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

func.func @quantize_rowwise(%x: tensor<8192x4096xbf16>, %s: tensor<f32>)
    -> (tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<8192x4096xbf16>, tensor<f32> -> tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>
}

func.func @quantize_both(%x: tensor<8192x4096xbf16>, %s: tensor<f32>)
    -> (tensor<8192x4096xf8E4M3FN>, tensor<4096x8192xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<8192x4096xbf16>, tensor<f32>
      -> tensor<8192x4096xf8E4M3FN>, tensor<4096x8192xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %dt, %si, %a : tensor<8192x4096xf8E4M3FN>, tensor<4096x8192xf8E4M3FN>, tensor<f32>, tensor<f32>
}

func.func @quantize_e5m2_f32(%x: tensor<1000x999xf32>, %s: tensor<f32>)
    -> (tensor<1000x999xf8E5M2>, tensor<999x1000xf8E5M2>, tensor<f32>, tensor<f32>) {
  %d, %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<1000x999xf32>, tensor<f32>
      -> tensor<1000x999xf8E5M2>, tensor<999x1000xf8E5M2>, tensor<f32>, tensor<f32>
  return %d, %dt, %si, %a : tensor<1000x999xf8E5M2>, tensor<999x1000xf8E5M2>, tensor<f32>, tensor<f32>
}

func.func @dequantize(%d: tensor<8192x4096xf8E4M3FN>, %si: tensor<f32>) -> tensor<8192x4096xbf16> {
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<8192x4096xf8E4M3FN>, tensor<f32> -> tensor<8192x4096xbf16>
  return %x : tensor<8192x4096xbf16>
}

func.func @delayed_scaling(%h: tensor<1024x3xf32>, %a: tensor<3xf32>, %s: tensor<3xf32>)
    -> (tensor<1024x3xf32>, tensor<3xf32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %a, %s fp8_type f8E4M3FN margin 1
      : tensor<1024x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1024x3xf32>, tensor<3xf32>
  return %h2, %s2 : tensor<1024x3xf32>, tensor<3xf32>
}

func.func @compute_scale(%amax: tensor<64xf32>) -> tensor<64xf32> {
  %s = te.compute_scale %amax fp8_type f8E5M2 pow2_scales : tensor<64xf32> -> tensor<64xf32>
  return %s : tensor<64xf32>
}
