// te.grouped_matmul on the GPU (the GEMM kernel with one group's rows per
// block), checked by scripts/gpu-check.sh against the CPU on random splits
// (some groups empty).
func.func @grouped_per_tensor(%x: tensor<70x96xf8E4M3FN>, %w: tensor<4x40x96xf8E4M3FN>, %m: tensor<4xi64>, %sx: tensor<4xf32>, %sw: tensor<4xf32>, %c: tensor<70x40xbf16>) -> tensor<70x40xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) accumulate(%c) transpose_b
      : tensor<70x96xf8E4M3FN>, tensor<4x40x96xf8E4M3FN>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>, tensor<70x40xbf16> -> tensor<70x40xbf16>
  return %y : tensor<70x40xbf16>
}
func.func @grouped_mxfp8(%x: tensor<70x96xf8E4M3FN>, %w: tensor<4x96x40xf8E5M2>, %m: tensor<4xi64>, %sx: tensor<70x3xf8E8M0FNU>, %sw: tensor<4x3x40xf8E8M0FNU>) -> tensor<70x40xf32> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling mxfp8_1x32, mxfp8_1x32
      : tensor<70x96xf8E4M3FN>, tensor<4x96x40xf8E5M2>, tensor<4xi64>, tensor<70x3xf8E8M0FNU>, tensor<4x3x40xf8E8M0FNU> -> tensor<70x40xf32>
  return %y : tensor<70x40xf32>
}
func.func @grouped_blocks(%x: tensor<70x300xf8E4M3FN>, %w: tensor<3x140x300xf8E4M3FN>, %m: tensor<3xi64>, %sx: tensor<70x3xf32>, %sw: tensor<3x2x3xf32>, %b: tensor<3x140xf32>) -> tensor<70x140xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling block_1x128, block_128x128 bias(%b) transpose_b
      : tensor<70x300xf8E4M3FN>, tensor<3x140x300xf8E4M3FN>, tensor<3xi64>, tensor<70x3xf32>, tensor<3x2x3xf32>, tensor<3x140xf32> -> tensor<70x140xbf16>
  return %y : tensor<70x140xbf16>
}
func.func @grouped_blocks_nn(%x: tensor<70x300xf8E4M3FN>, %w: tensor<3x300x140xf8E4M3FN>, %m: tensor<3xi64>, %sx: tensor<70x3xf32>, %sw: tensor<3x3x140xf32>) -> tensor<70x140xf32> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling block_1x128, block_1x128
      : tensor<70x300xf8E4M3FN>, tensor<3x300x140xf8E4M3FN>, tensor<3xi64>, tensor<70x3xf32>, tensor<3x3x140xf32> -> tensor<70x140xf32>
  return %y : tensor<70x140xf32>
}
func.func @grouped_f16(%x: tensor<70x33xf16>, %w: tensor<5x33x17xf16>, %m: tensor<5xi64>) -> tensor<70x17xf16> {
  %y = te.grouped_matmul %x, %w splits(%m) : tensor<70x33xf16>, tensor<5x33x17xf16>, tensor<5xi64> -> tensor<70x17xf16>
  return %y : tensor<70x17xf16>
}
func.func @grouped_f32(%x: tensor<70x33xf32>, %w: tensor<5x17x33xf32>, %m: tensor<5xi64>, %b: tensor<5x17xf32>) -> tensor<70x17xf32> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b : tensor<70x33xf32>, tensor<5x17x33xf32>, tensor<5xi64>, tensor<5x17xf32> -> tensor<70x17xf32>
  return %y : tensor<70x17xf32>
}
func.func @grouped_bf16_moe(%x: tensor<2048x512xbf16>, %w: tensor<8x1024x512xbf16>, %m: tensor<8xi64>,
                            %b: tensor<8x1024xbf16>) -> tensor<2048x1024xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
      : tensor<2048x512xbf16>, tensor<8x1024x512xbf16>, tensor<8xi64>, tensor<8x1024xbf16>
      -> tensor<2048x1024xbf16>
  return %y : tensor<2048x1024xbf16>
}
