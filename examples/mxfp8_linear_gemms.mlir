// One Linear layer's three GEMMs under MXFP8BlockScaling, as Transformer
// Engine runs them: x, W and dY quantized with both copies (row-wise
// scales along the last dimension, column-wise along the first), each GEMM
// on the copies whose scales run along its K; the wgrad GEMM accumulates
// into the f32 main_grad and returns the bias gradient (the sum of dY over
// the tokens, TE's BGRADB epilogue).
//
//   te-run examples/mxfp8_linear_gemms.mlir --random-inputs --check
//   te-run examples/mxfp8_linear_gemms.mlir --explain
func.func @linear_step(%x: tensor<256x512xbf16>, %w: tensor<1024x512xbf16>,
                       %bias: tensor<1024xbf16>, %dy: tensor<256x1024xbf16>,
                       %main_grad: tensor<1024x512xf32>)
    -> (tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32>, tensor<1024xf32>) {
  %xd, %xs, %xc, %xcs = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<256x512xbf16>
      -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
  %wd, %ws, %wc, %wcs = te.quantize %w mode mxfp8_1x32 usage both
      : tensor<1024x512xbf16>
      -> tensor<1024x512xf8E4M3FN>, tensor<1024x16xf8E8M0FNU>, tensor<1024x512xf8E4M3FN>, tensor<32x512xf8E8M0FNU>
  %gd, %gs, %gc, %gcs = te.quantize %dy mode mxfp8_1x32 usage both
      : tensor<256x1024xbf16>
      -> tensor<256x1024xf8E4M3FN>, tensor<256x32xf8E8M0FNU>, tensor<256x1024xf8E4M3FN>, tensor<8x1024xf8E8M0FNU>

  // fprop: y = x W^T + bias (K = in_features, last in both).
  %y = te.scaled_matmul %xd, %wd scales(%xs, %ws) scaling mxfp8_1x32, mxfp8_1x32
      bias(%bias) transpose_b
      : tensor<256x512xf8E4M3FN>, tensor<1024x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>,
        tensor<1024x16xf8E8M0FNU>, tensor<1024xbf16> -> tensor<256x1024xbf16>
  // dgrad: dx = dY W (K = out_features: W's column-wise copy).
  %dx = te.scaled_matmul %gd, %wc scales(%gs, %wcs) scaling mxfp8_1x32, mxfp8_1x32
      : tensor<256x1024xf8E4M3FN>, tensor<1024x512xf8E4M3FN>, tensor<256x32xf8E8M0FNU>,
        tensor<32x512xf8E8M0FNU> -> tensor<256x512xbf16>
  // wgrad: main_grad + dY^T x (K = tokens: both column-wise copies), and
  // the bias gradient.
  %dw, %db = te.scaled_matmul %gc, %xc scales(%gcs, %xcs) scaling mxfp8_1x32, mxfp8_1x32
      accumulate(%main_grad) transpose_a bias_grad
      : tensor<256x1024xf8E4M3FN>, tensor<256x512xf8E4M3FN>, tensor<8x1024xf8E8M0FNU>,
        tensor<8x512xf8E8M0FNU>, tensor<1024x512xf32> -> tensor<1024x512xf32>, tensor<1024xf32>
  return %y, %dx, %dw, %db
      : tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32>, tensor<1024xf32>
}
