// te-cpu-host-steps in the cpu pipeline (te-insert-checks first): scalars
// that cross a collective go through one-element temporaries.
// RUN: te-opt %s -split-input-file --te-lower-cpu | FileCheck %s

// A run-time check's status, computed before a collective and reported
// after it, crosses the call in a one-element temporary (stored in step 0,
// loaded in the last step); vocab-parallel cross-entropy gathers each
// rank's row statistics between its steps.
// The plan: the check's three scalars go to t0, t1 and t2 in step 0 and
// come back in step 2, which writes the status (a4).
// CHECK-LABEL: module attributes {te.host_steps = {xent = [
// CHECK-SAME: "temp 8", "temp 8", "temp 8", "temp 4", "temp 48", "temp 96",
// CHECK-SAME: "step xent__step0__te_packed 1x1x1 1x1x1 0 a1 t0 t1 t2",
// CHECK-SAME: "call collective.group_rank group=tp,size=2,ranks=blocks t3",
// CHECK-SAME: "step xent__step1__te_packed 1x1x1 1x1x1 0 a0 a1 t3 t4",
// CHECK-SAME: "call collective.all_gather group=tp,size=2,ranks=blocks,dtype=f32,shape=4x3,dim=0 t4 t5",
// CHECK-SAME: "step xent__step2__te_packed 1x1x1 1x1x1 0 t5 a1 t3 a2 a0 a3 t0 a4 t1 t2"]}
// CHECK-SAME: te.kernel_checks = {xent = ["te.cross_entropy at {{.*}}: target[{0}] = {1} is outside [0, 12) (the vocabulary) and is not the ignore index -100"]}
te.process_group @tp size 2
func.func @xent(%x: tensor<4x6xf32>, %t: tensor<4xi64>) -> (tensor<4xf32>, tensor<4x6xf32>) {
  %l, %g = te.cross_entropy %x, %t group @tp
      : tensor<4x6xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4x6xf32>
  return %l, %g : tensor<4xf32>, tensor<4x6xf32>
}

// -----

// An index chosen before a collective and used after it crosses as an i64.
// CHECK-LABEL: module attributes {te.host_steps = {idx = [
// CHECK-SAME: "temp 8", "step idx__step0__te_packed 1x1x1 1x1x1 0 a1 t0",
// CHECK-SAME: "call collective.all_reduce group=tp,size=2,ranks=blocks,dtype=f32,shape=4,reduce=sum a0 a2",
// CHECK-SAME: "step idx__step1__te_packed 1x1x1 1x1x1 0 t0 a2"]}
te.process_group @tp size 2
func.func @idx(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %i = scf.if %c -> index {
    scf.yield %c1 : index
  } else {
    scf.yield %c3 : index
  }
  %r = te.all_reduce %x group @tp : tensor<4xf32>
  %e = tensor.extract %r[%i] : tensor<4xf32>
  %y = tensor.insert %e into %r[%c1] : tensor<4xf32>
  return %y : tensor<4xf32>
}
