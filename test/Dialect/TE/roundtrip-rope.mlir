// Round-trips te.rope, te.rope_backward, te.qkv_rope and te.qkv_rope_backward through the custom and generic forms with every format, optional operand and attribute.
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s --mlir-print-op-generic | te-opt | FileCheck %s

// CHECK-LABEL: func @rope
// CHECK: te.rope %{{.*}}, %{{.*}} format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
// CHECK: te.rope %{{.*}}, %{{.*}} start_positions(%{{.*}}) format bshd interleaved cp_size 2 cp_rank 1 : tensor<2x16x4x64xf16>, tensor<64x1x1x32xf32>, tensor<2xi32> -> tensor<2x16x4x64xf16>
// CHECK: te.rope %{{.*}}, %{{.*}} cu_seqlens(%{{.*}}) start_positions(%{{.*}}) format thd : tensor<40x4x64xf32>, tensor<64x1x1x64xf32>, tensor<4xi32>, tensor<3xi32> -> tensor<40x4x64xf32>
// CHECK: te.rope_backward %{{.*}}, %{{.*}} format sbhd interleaved : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
func.func @rope(%x: tensor<16x2x4x64xbf16>, %xb: tensor<2x16x4x64xf16>, %xt: tensor<40x4x64xf32>,
                %f: tensor<64x1x1x64xf32>, %f32: tensor<64x1x1x32xf32>, %sp: tensor<2xi32>,
                %cu: tensor<4xi32>, %spt: tensor<3xi32>) {
  %0 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  %1 = te.rope %xb, %f32 start_positions(%sp) format bshd interleaved cp_size 2 cp_rank 1
      : tensor<2x16x4x64xf16>, tensor<64x1x1x32xf32>, tensor<2xi32> -> tensor<2x16x4x64xf16>
  %2 = te.rope %xt, %f cu_seqlens(%cu) start_positions(%spt) format thd
      : tensor<40x4x64xf32>, tensor<64x1x1x64xf32>, tensor<4xi32>, tensor<3xi32> -> tensor<40x4x64xf32>
  %3 = te.rope_backward %x, %f format sbhd interleaved : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// CHECK-LABEL: func @qkv_rope
// CHECK: te.qkv_rope %{{.*}}, %{{.*}}, %{{.*}} format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
// CHECK: te.qkv_rope %{{.*}}, %{{.*}}, %{{.*}} start_positions(%{{.*}}) format bshd split [32, 32, 32] interleaved : tensor<2x16x4x96xf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>, tensor<2xi32> -> tensor<2x16x4x32xf16>, tensor<2x16x4x32xf16>, tensor<2x16x4x32xf16>
// CHECK: te.qkv_rope_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} format sbhd split [64, 32, 32] cp_size 2 cp_rank 1 : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x4x128xbf16>
func.func @qkv_rope(%x: tensor<16x2x4x128xbf16>, %xb: tensor<2x16x4x96xf16>,
                    %f: tensor<64x1x1x32xf32>, %sp: tensor<2xi32>) {
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32]
      : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>
      -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  %q2, %k2, %v2 = te.qkv_rope %xb, %f, %f start_positions(%sp) format bshd split [32, 32, 32] interleaved
      : tensor<2x16x4x96xf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>, tensor<2xi32>
      -> tensor<2x16x4x32xf16>, tensor<2x16x4x32xf16>, tensor<2x16x4x32xf16>
  %d = te.qkv_rope_backward %q, %k, %v, %f, %f format sbhd split [64, 32, 32] cp_size 2 cp_rank 1
      : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>
      -> tensor<16x2x4x128xbf16>
  return
}
