// te-materialize-checks: the first failing check of a function becomes its
// status result (n, v0, v1, v2); the messages go into te.kernel_checks.
// RUN: te-opt %s -split-input-file --te-materialize-checks | FileCheck %s
// RUN: te-opt %s -split-input-file --te-materialize-checks --te-materialize-checks | FileCheck %s

// CHECK: module attributes {te.kernel_checks = {f = ["first {0}", "second {0} {1} {2}"]}}
// CHECK-LABEL: func @f
// CHECK-SAME: (%[[A:.*]]: i1, %[[B:.*]]: i1, %[[X:.*]]: i64, %[[Y:.*]]: i64) -> (i64, tensor<4xi64>)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NOT: te.check
// CHECK: %[[NONE1:.*]] = arith.cmpi eq, %[[ZERO]], %[[ZERO]] : i64
// CHECK: %[[FIRST1:.*]] = arith.andi %[[A]], %[[NONE1]] : i1
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[CODE1:.*]] = arith.select %[[FIRST1]], %[[ONE]], %[[ZERO]] : i64
// CHECK: %[[V01:.*]] = arith.select %[[FIRST1]], %[[X]], %[[ZERO]] : i64
// CHECK: %[[NONE2:.*]] = arith.cmpi eq, %[[CODE1]], %[[ZERO]] : i64
// CHECK: %[[FIRST2:.*]] = arith.andi %[[B]], %[[NONE2]] : i1
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[CODE2:.*]] = arith.select %[[FIRST2]], %[[TWO]], %[[CODE1]] : i64
// CHECK: %[[V02:.*]] = arith.select %[[FIRST2]], %[[Y]], %[[V01]] : i64
// CHECK: %[[V12:.*]] = arith.select %[[FIRST2]], %[[X]], %[[ZERO]] : i64
// CHECK: %[[V22:.*]] = arith.select %[[FIRST2]], %[[Y]], %[[ZERO]] : i64
// CHECK: %[[STATUS:.*]] = tensor.from_elements %[[CODE2]], %[[V02]], %[[V12]], %[[V22]] : tensor<4xi64>
// CHECK: return %[[X]], %[[STATUS]] : i64, tensor<4xi64>
// CHECK-LABEL: func @no_checks
// CHECK-SAME: -> i64
func.func @f(%a: i1, %b: i1, %x: i64, %y: i64) -> i64 {
  te.check %a, %x message "first {0}"
  te.check %b, %y, %x, %y message "second {0} {1} {2}"
  return %x : i64
}
func.func @no_checks(%x: i64) -> i64 {
  return %x : i64
}

// -----

// {loc} becomes the check's location, or {@k} for the te op the compiler
// numbered k (the runtime puts in the loading program's location of op k).
// CHECK: te.kernel_checks = {g = ["at prog.mlir:3:4: a", "at {@7}: b {0}"]}
func.func @g(%a: i1, %x: i64) {
  te.check %a message "at {loc}: a" loc("prog.mlir":3:4)
  te.check %a, %x message "at {loc}: b {0}" loc("te.op.7"("prog.mlir":5:6))
  return
}
