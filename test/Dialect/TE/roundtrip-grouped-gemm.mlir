// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s -mlir-print-op-generic | te-opt | FileCheck %s

// Every form of te.grouped_matmul prints as it parses.

// CHECK-LABEL: func.func @bf16_fprop_bias
// CHECK: te.grouped_matmul %arg0, %arg1 splits(%arg2) bias(%arg3) transpose_b : tensor<64x32xbf16>, tensor<4x16x32xbf16>, tensor<4xi64>, tensor<4x16xbf16> -> tensor<64x16xbf16>
func.func @bf16_fprop_bias(%x: tensor<64x32xbf16>, %w: tensor<4x16x32xbf16>, %m: tensor<4xi64>,
                           %b: tensor<4x16xbf16>) -> tensor<64x16xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
      : tensor<64x32xbf16>, tensor<4x16x32xbf16>, tensor<4xi64>, tensor<4x16xbf16>
      -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// CHECK-LABEL: func.func @fp8_per_tensor_dgrad_accumulate
// CHECK: te.grouped_matmul %arg0, %arg1 splits(%arg2) scales(%arg3, %arg4) accumulate(%arg5) : tensor<64x16xf8E5M2>, tensor<2x16x32xf8E4M3FN>, tensor<2xi64>, tensor<2xf32>, tensor<2xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
func.func @fp8_per_tensor_dgrad_accumulate(%dy: tensor<64x16xf8E5M2>, %w: tensor<2x16x32xf8E4M3FN>,
    %m: tensor<2xi64>, %sdy: tensor<2xf32>, %sw: tensor<2xf32>, %c: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %dx = te.grouped_matmul %dy, %w splits(%m) scales(%sdy, %sw) accumulate(%c)
      : tensor<64x16xf8E5M2>, tensor<2x16x32xf8E4M3FN>, tensor<2xi64>, tensor<2xf32>,
        tensor<2xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  return %dx : tensor<64x32xf32>
}

// CHECK-LABEL: func.func @mxfp8
// CHECK: scaling mxfp8_1x32, mxfp8_1x32 transpose_b
func.func @mxfp8(%x: tensor<64x64xf8E4M3FN>, %w: tensor<3x16x64xf8E4M3FN>, %m: tensor<3xi64>,
                 %sx: tensor<64x2xf8E8M0FNU>, %sw: tensor<3x16x2xf8E8M0FNU>) -> tensor<64x16xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling mxfp8_1x32, mxfp8_1x32 transpose_b
      : tensor<64x64xf8E4M3FN>, tensor<3x16x64xf8E4M3FN>, tensor<3xi64>, tensor<64x2xf8E8M0FNU>,
        tensor<3x16x2xf8E8M0FNU> -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// CHECK-LABEL: func.func @blocks
// CHECK: scaling block_1x128, block_128x128 transpose_b
func.func @blocks(%x: tensor<64x300xf8E4M3FN>, %w: tensor<3x200x300xf8E4M3FN>, %m: tensor<3xi64>,
                  %sx: tensor<64x3xf32>, %sw: tensor<3x2x3xf32>) -> tensor<64x200xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling block_1x128, block_128x128 transpose_b
      : tensor<64x300xf8E4M3FN>, tensor<3x200x300xf8E4M3FN>, tensor<3xi64>, tensor<64x3xf32>,
        tensor<3x2x3xf32> -> tensor<64x200xbf16>
  return %y : tensor<64x200xbf16>
}
