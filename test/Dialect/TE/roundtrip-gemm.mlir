// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s -mlir-print-op-generic | te-opt | FileCheck %s

// Every form of te.scaled_matmul prints as it parses.

// CHECK-LABEL: func.func @bf16_gelu_aux
// CHECK: %d, %pre_gelu = te.scaled_matmul %arg0, %arg1 bias(%arg2) transpose_b gelu pre_gelu : tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<8xbf16> -> tensor<16x8xbf16>, tensor<16x8xf32>
func.func @bf16_gelu_aux(%a: tensor<16x32xbf16>, %b: tensor<8x32xbf16>, %bias: tensor<8xbf16>)
    -> (tensor<16x8xbf16>, tensor<16x8xf32>) {
  %d, %pre = te.scaled_matmul %a, %b bias(%bias) transpose_b gelu pre_gelu
      : tensor<16x32xbf16>, tensor<8x32xbf16>, tensor<8xbf16>
      -> tensor<16x8xbf16>, tensor<16x8xf32>
  return %d, %pre : tensor<16x8xbf16>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @f32_wgrad_accumulate_bgradb
// CHECK: te.scaled_matmul %arg0, %arg1 accumulate(%arg2) transpose_a bias_grad : tensor<64x16xf32>, tensor<64x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16xf32>
func.func @f32_wgrad_accumulate_bgradb(%dy: tensor<64x16xf32>, %x: tensor<64x8xf32>,
                                       %main: tensor<16x8xf32>)
    -> (tensor<16x8xf32>, tensor<16xf32>) {
  %dw, %db = te.scaled_matmul %dy, %x accumulate(%main) transpose_a bias_grad
      : tensor<64x16xf32>, tensor<64x8xf32>, tensor<16x8xf32>
      -> tensor<16x8xf32>, tensor<16xf32>
  return %dw, %db : tensor<16x8xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @mxfp8_dgelu_bgrad
// CHECK: te.scaled_matmul %arg0, %arg1 scales(%arg2, %arg3) scaling mxfp8_1x32, mxfp8_1x32 dgelu(%arg4) bias_grad : tensor<16x64xf8E5M2>, tensor<64x8xf8E4M3FN>, tensor<16x2xf8E8M0FNU>, tensor<2x8xf8E8M0FNU>, tensor<16x8xbf16> -> tensor<16x8xbf16>, tensor<8xbf16>
func.func @mxfp8_dgelu_bgrad(%dy: tensor<16x64xf8E5M2>, %w: tensor<64x8xf8E4M3FN>,
                             %sdy: tensor<16x2xf8E8M0FNU>, %sw: tensor<2x8xf8E8M0FNU>,
                             %pre: tensor<16x8xbf16>) -> (tensor<16x8xbf16>, tensor<8xbf16>) {
  %dx, %db = te.scaled_matmul %dy, %w scales(%sdy, %sw) scaling mxfp8_1x32, mxfp8_1x32
      dgelu(%pre) bias_grad
      : tensor<16x64xf8E5M2>, tensor<64x8xf8E4M3FN>, tensor<16x2xf8E8M0FNU>,
        tensor<2x8xf8E8M0FNU>, tensor<16x8xbf16> -> tensor<16x8xbf16>, tensor<8xbf16>
  return %dx, %db : tensor<16x8xbf16>, tensor<8xbf16>
}

// CHECK-LABEL: func.func @block_1d_by_2d
// CHECK: te.scaled_matmul %arg0, %arg1 scales(%arg2, %arg3) scaling block_1x128, block_128x128 bias(%arg4) transpose_b : tensor<16x200xf8E4M3FN>, tensor<130x200xf8E4M3FN>, tensor<16x2xf32>, tensor<2x2xf32>, tensor<130xbf16> -> tensor<16x130xf32>
func.func @block_1d_by_2d(%x: tensor<16x200xf8E4M3FN>, %w: tensor<130x200xf8E4M3FN>,
                          %sx: tensor<16x2xf32>, %sw: tensor<2x2xf32>, %bias: tensor<130xbf16>)
    -> tensor<16x130xf32> {
  %y = te.scaled_matmul %x, %w scales(%sx, %sw) scaling block_1x128, block_128x128
      bias(%bias) transpose_b
      : tensor<16x200xf8E4M3FN>, tensor<130x200xf8E4M3FN>, tensor<16x2xf32>, tensor<2x2xf32>,
        tensor<130xbf16> -> tensor<16x130xf32>
  return %y : tensor<16x130xf32>
}

// The per_tensor default prints no scaling clause.
// CHECK-LABEL: func.func @per_tensor_fp8_out
// CHECK: te.scaled_matmul %arg0, %arg1 scales(%arg2, %arg3) out_scale(%arg4) transpose_b :
func.func @per_tensor_fp8_out(%a: tensor<16x32xf8E4M3FN>, %b: tensor<8x32xf8E4M3FN>,
                              %sa: tensor<f32>, %sb: tensor<f32>, %so: tensor<f32>)
    -> (tensor<16x8xf8E4M3FN>, tensor<f32>) {
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%so) transpose_b
      : tensor<16x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32>
      -> tensor<16x8xf8E4M3FN>, tensor<f32>
  return %d, %amax : tensor<16x8xf8E4M3FN>, tensor<f32>
}
