// MXFP8: E4M3 data with one E8M0 scale per 32 elements, row-wise and
// column-wise copies for the forward and backward GEMMs, then dequantized.
func.func @mxfp8_roundtrip(%x: tensor<256x512xbf16>)
    -> (tensor<256x512xbf16>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>) {
  %d, %s, %dc, %sc = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<256x512xbf16>
      -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>,
         tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
  %y = te.dequantize %d, %s mode mxfp8_1x32
      : tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU> -> tensor<256x512xbf16>
  return %y, %dc, %sc : tensor<256x512xbf16>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
}
