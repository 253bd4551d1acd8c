// te-approximate-math replaces f32 exp and log with polynomial arith code,
// so host kernels call no libm function.
// RUN: te-opt %s --te-approximate-math | FileCheck %s

// CHECK-LABEL: func @softmax_pieces
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK: arith.bitcast
// CHECK: return
func.func @softmax_pieces(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>) {
  %e = math.exp %x : f32
  %l = math.log %v : vector<8xf32>
  return %e, %l : f32, vector<8xf32>
}
