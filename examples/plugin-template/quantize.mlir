// The template plugin takes the per-tensor te.quantize; the MXFP8 one is
// declined and lowers natively.
func.func @quantize(%x: tensor<64x128xbf16>, %s: tensor<f32>)
    -> (tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>) {
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<64x128xbf16>, tensor<f32>
      -> tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>
  %m, %ms = te.quantize %x mode mxfp8_1x32
      : tensor<64x128xbf16> -> tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>
  return %d, %si, %amax, %m, %ms
      : tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>
}
