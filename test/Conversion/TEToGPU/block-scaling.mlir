// RUN: te-opt --convert-te-to-gpu -split-input-file %s | FileCheck %s

// MXFP8 on a rank-3 tensor seen as [128, 96]: one thread per 1x32 block
// (128 rows x 3) and per 32x1 block (4 x 96 columns), each finding
// its block's amax, its E8M0 scale, and casting the block, with
// consecutive threads on consecutive blocks of a row (row-wise) or on
// consecutive columns (column-wise).

// CHECK-LABEL: func.func @mxfp8_both
// CHECK: gpu.launch_func @[[M:te_block_quantize_[0-9a-f]+]]::@[[M]]_rowwise_blocks blocks in (%c2,
// CHECK-SAME: args(%{{.*}} : memref<2x64x96xbf16>, %{{.*}} : memref<2x64x96xf8E4M3FN>, %{{.*}} : memref<2x64x3xf8E8M0FNU>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_columnwise_blocks
// CHECK-SAME: %{{.*}} : memref<2x2x96xf8E8M0FNU>)
// CHECK: gpu.func @[[M]]_rowwise_blocks
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c384 step
// CHECK: arith.remui %[[T]], %c3
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (i32)
// CHECK: arith.maxui
// CHECK: arith.minui %{{.*}}, %c254_i32
// CHECK: arith.bitcast %{{.*}} : i8 to f8E8M0FNU
// CHECK: memref.store %{{.*}} : memref<384xf8E8M0FNU>
// CHECK: memref.store %{{.*}} : memref<12288xf8E4M3FN>
// CHECK: gpu.func @[[M]]_columnwise_blocks
// CHECK: scf.for %[[U:.*]] = %{{.*}} to %c384 step
// CHECK: arith.remui %[[U]], %c96
func.func @mxfp8_both(%x: tensor<2x64x96xbf16>)
    -> (tensor<2x64x96xf8E4M3FN>, tensor<2x64x3xf8E8M0FNU>, tensor<2x64x96xf8E4M3FN>, tensor<2x2x96xf8E8M0FNU>) {
  %d, %s, %dc, %sc = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<2x64x96xbf16>
      -> tensor<2x64x96xf8E4M3FN>, tensor<2x64x3xf8E8M0FNU>, tensor<2x64x96xf8E4M3FN>, tensor<2x2x96xf8E8M0FNU>
  return %d, %s, %dc, %sc : tensor<2x64x96xf8E4M3FN>, tensor<2x64x3xf8E8M0FNU>, tensor<2x64x96xf8E4M3FN>, tensor<2x2x96xf8E8M0FNU>
}

// -----

// 128x128 blocks, partial at the edges: each row segment's amax into a
// temporary, each block's scale from its segments (with the multiplier in
// a second temporary), then the cast, one thread per element; the
// column-wise copy does the same through a transposed view.

// CHECK-LABEL: func.func @block_128x128
// CHECK: %[[SEG:.*]] = memref.alloc() {alignment = 256 : i64} : memref<600xi32>
// CHECK: %[[MUL:.*]] = memref.alloc() {alignment = 256 : i64} : memref<6xf32>
// CHECK: gpu.launch_func @[[M:te_block_quantize_[0-9a-f]+]]::@[[M]]_rowwise_segment_amax {{.*}} args(%{{.*}} : memref<300x200xbf16>, %[[SEG]] : memref<600xi32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_rowwise_block_scales {{.*}} args(%[[SEG]] : memref<600xi32>, %{{.*}} : memref<3x2xf32>, %[[MUL]] : memref<6xf32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_rowwise_cast {{.*}} args(%{{.*}} : memref<300x200xbf16>, %[[MUL]] : memref<6xf32>, %{{.*}} : memref<300x200xf8E4M3FN>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_columnwise_segment_amax
// CHECK: gpu.launch_func @[[M]]::@[[M]]_columnwise_block_scales {{.*}} %{{.*}} : memref<2x3xf32>
// CHECK: gpu.launch_func @[[M]]::@[[M]]_columnwise_cast {{.*}} %{{.*}} : memref<200x300xf8E4M3FN>)
// CHECK: gpu.func @[[M]]_rowwise_block_scales
// CHECK: arith.divf
// CHECK: arith.constant -8388608 : i32
func.func @block_128x128(%x: tensor<300x200xbf16>)
    -> (tensor<300x200xf8E4M3FN>, tensor<3x2xf32>, tensor<200x300xf8E4M3FN>, tensor<2x3xf32>) {
  %d, %s, %dt, %st = te.quantize %x mode block_128x128 usage both
      : tensor<300x200xbf16> -> tensor<300x200xf8E4M3FN>, tensor<3x2xf32>, tensor<200x300xf8E4M3FN>, tensor<2x3xf32>
  return %d, %s, %dt, %st : tensor<300x200xf8E4M3FN>, tensor<3x2xf32>, tensor<200x300xf8E4M3FN>, tensor<2x3xf32>
}

// -----

// Dequantization: one thread per element, its block's scale by index; E8M0
// scales widened exactly.

// CHECK-LABEL: func.func @dequantize_mxfp8_columnwise
// CHECK: gpu.launch_func @[[M:te_block_dequantize_[0-9a-f]+]]::@[[M]]_dequantize
// CHECK: gpu.func @[[M]]_dequantize
// CHECK: arith.divui %{{.*}}, %c32
// CHECK: memref.load %{{.*}} : memref<192xf8E8M0FNU>
// CHECK: arith.bitcast %{{.*}} : f8E8M0FNU to i8
// CHECK: arith.mulf
// CHECK: memref.store %{{.*}} : memref<6144xf16>
func.func @dequantize_mxfp8_columnwise(%d: tensor<64x96xf8E4M3FN>, %s: tensor<2x96xf8E8M0FNU>) -> tensor<64x96xf16> {
  %x = te.dequantize %d, %s mode mxfp8_1x32 columnwise
      : tensor<64x96xf8E4M3FN>, tensor<2x96xf8E8M0FNU> -> tensor<64x96xf16>
  return %x : tensor<64x96xf16>
}
