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

func.func @mxfp8_both(%x: tensor<8192x4096xbf16>)
    -> (tensor<8192x4096xf8E4M3FN>, tensor<8192x128xf8E8M0FNU>,
        tensor<8192x4096xf8E4M3FN>, tensor<256x4096xf8E8M0FNU>) {
  %d, %s, %dc, %sc = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<8192x4096xbf16>
      -> tensor<8192x4096xf8E4M3FN>, tensor<8192x128xf8E8M0FNU>,
         tensor<8192x4096xf8E4M3FN>, tensor<256x4096xf8E8M0FNU>
  return %d, %s, %dc, %sc : tensor<8192x4096xf8E4M3FN>, tensor<8192x128xf8E8M0FNU>,
      tensor<8192x4096xf8E4M3FN>, tensor<256x4096xf8E8M0FNU>
}

func.func @mxfp8_dequantize(%d: tensor<8192x4096xf8E4M3FN>, %s: tensor<8192x128xf8E8M0FNU>)
    -> tensor<8192x4096xbf16> {
  %x = te.dequantize %d, %s mode mxfp8_1x32
      : tensor<8192x4096xf8E4M3FN>, tensor<8192x128xf8E8M0FNU> -> tensor<8192x4096xbf16>
  return %x : tensor<8192x4096xbf16>
}

// Partial blocks at both edges, f32 input, E5M2, no power-of-two rounding.
func.func @block_1x128_both(%x: tensor<1000x999xf32>)
    -> (tensor<1000x999xf8E5M2>, tensor<1000x8xf32>, tensor<999x1000xf8E5M2>, tensor<999x8xf32>) {
  %d, %s, %dt, %st = te.quantize %x mode block_1x128 usage both pow2_scales false
      : tensor<1000x999xf32>
      -> tensor<1000x999xf8E5M2>, tensor<1000x8xf32>, tensor<999x1000xf8E5M2>, tensor<999x8xf32>
  return %d, %s, %dt, %st : tensor<1000x999xf8E5M2>, tensor<1000x8xf32>, tensor<999x1000xf8E5M2>, tensor<999x8xf32>
}

func.func @block_128x128_both(%x: tensor<4096x4000xbf16>)
    -> (tensor<4096x4000xf8E4M3FN>, tensor<32x32xf32>, tensor<4000x4096xf8E4M3FN>, tensor<32x32xf32>) {
  %d, %s, %dt, %st = te.quantize %x mode block_128x128 usage both
      : tensor<4096x4000xbf16>
      -> tensor<4096x4000xf8E4M3FN>, tensor<32x32xf32>, tensor<4000x4096xf8E4M3FN>, tensor<32x32xf32>
  return %d, %s, %dt, %st : tensor<4096x4000xf8E4M3FN>, tensor<32x32xf32>, tensor<4000x4096xf8E4M3FN>, tensor<32x32xf32>
}
