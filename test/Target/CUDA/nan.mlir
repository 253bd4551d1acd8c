// REQUIRES: ptxas
// RUN: te-run %s --backend cuda --emit=ptx -o - | FileCheck %s
// Output casts to bf16 and f16 replace the NaN PTX's cvt produces (0x7FFF)
// with the one every target writes (0x7FC0, 0x7E00), so the GPU's outputs
// stay bit-identical to the CPU's for NaN inputs too.
// CHECK-LABEL: .entry
// CHECK: cvt.rn.bf16.f32 [[BF16:%rs[0-9]+]],
// CHECK: selp.b16 {{%rs[0-9]+}}, 0x7FC0, [[BF16]],
// CHECK-LABEL: .entry
// CHECK: cvt.rn.f16.f32 [[F16:%rs[0-9]+]],
// CHECK: selp.b16 {{%rs[0-9]+}}, 0x7E00, [[F16]],
func.func @d(%d: tensor<4xf8E4M3FN>, %si: tensor<f32>) -> (tensor<4xbf16>, tensor<4xf16>) {
  %x = te.dequantize %d, %si mode per_tensor : tensor<4xf8E4M3FN>, tensor<f32> -> tensor<4xbf16>
  %y = te.dequantize %d, %si mode per_tensor : tensor<4xf8E4M3FN>, tensor<f32> -> tensor<4xf16>
  return %x, %y : tensor<4xbf16>, tensor<4xf16>
}
