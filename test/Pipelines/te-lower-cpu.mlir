// te-lower-cpu takes te ops to the LLVM dialect: results become trailing
// out-parameters and every buffer is a bare pointer.
// RUN: te-opt %s --te-lower-cpu | FileCheck %s

// CHECK-LABEL: llvm.func @quantize(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr) {
// CHECK-NOT: te.
// CHECK-NOT: linalg.
// CHECK: llvm.return
func.func @quantize(%x: tensor<16x32xf32>, %s: tensor<f32>)
    -> (tensor<16x32xf8E5M2>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<16x32xf32>, tensor<f32> -> tensor<16x32xf8E5M2>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<16x32xf8E5M2>, tensor<f32>, tensor<f32>
}
