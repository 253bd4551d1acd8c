// te-cpu-host-steps: an entry point with collectives becomes kernels (steps)
// between the runtime's collective calls; what crosses from one to the
// next is a temporary, and a call's result that is the entry's output is
// written in place.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-results-to-out-params="hoist-static-allocs modify-public-functions" \
// RUN:   --te-cpu-host-steps -verify-diagnostics | FileCheck %s

// CHECK-LABEL: module attributes {te.host_steps = {f = [
// CHECK-SAME: "temp 4",
// CHECK-SAME: "call collective.all_reduce group=world,size=2,ranks=blocks,dtype=f32,shape=4x8,reduce=sum a0 a1",
// CHECK-SAME: "step f__step1__te_packed 1x1x1 1x1x1 0 a1 t0",
// CHECK-SAME: "call collective.all_reduce group=world,size=2,ranks=blocks,dtype=f32,shape=scalar,reduce=max t0 a2"]}}
// The declarations are gone, and the entry itself runs nothing.
// CHECK-NOT: te.process_group
// CHECK: func.func @f(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<f32>) {
// CHECK-NEXT: return
// The amax between the calls: a kernel of its own, from the first call's
// output to the temporary the second call reads.
// CHECK: func.func @f__step1(%[[R:.*]]: memref<4x8xf32>, %[[A:.*]]: memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[R]] : memref<4x8xf32>)
// CHECK: outs(%[[A]] : memref<f32>)
te.process_group @world size 2
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<f32>) {
  %r = te.all_reduce %x group @world reduce sum : tensor<4x8xf32>
  %a = te.amax %r : tensor<4x8xf32> -> tensor<f32>
  %g = te.all_reduce %a group @world reduce max : tensor<f32>
  return %r, %g : tensor<4x8xf32>, tensor<f32>
}

// -----

// FP8 all-gather: the quantize is a step, its payload a temporary the
// gather reads; the gathered tensor is the output, written in place.
// CHECK-LABEL: module attributes {te.host_steps = {g = [
// CHECK-SAME: "temp 32",
// CHECK-SAME: "step g__step0__te_packed 1x1x1 1x1x1 0 a0 a1 t0 a3 a4",
// CHECK-SAME: "call collective.all_gather group=tp,size=2,ranks=blocks,dtype=f8E4M3FN,shape=4x8,dim=0 t0 a2"]}}
te.process_group @tp size 2
func.func @g(%x: tensor<4x8xbf16>, %s: tensor<f32>)
    -> (tensor<8x8xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<4x8xbf16>, tensor<f32>
      -> tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>
  %g = te.all_gather %d group @tp dim 0 : tensor<4x8xf8E4M3FN> -> tensor<8x8xf8E4M3FN>
  return %g, %si, %a : tensor<8x8xf8E4M3FN>, tensor<f32>, tensor<f32>
}

// -----

te.process_group @tp size 2
func.func @in_branch(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    // expected-error @+1 {{a collective inside a loop or region cannot run on the cpu yet}}
    %s = te.all_reduce %x group @tp : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// The runtime runs the calls of entry points only.
te.process_group @tp size 2
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a collective in a private function cannot run on the cpu; call it in the entry point itself}}
  %s = te.all_reduce %x group @tp : tensor<4xf32>
  return %s : tensor<4xf32>
}
func.func @calls_helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A rank-dependent branch: the rank's load repeats in the step that uses
// it (the group_rank call alone writes its buffer), and the branch's
// result, which a later step reads, is copied into a temporary.
// CHECK-LABEL: module attributes {te.host_steps = {branch = [
// CHECK-SAME: "temp 4", "temp 128", "temp 128", "temp 128",
// CHECK-SAME: "call collective.group_rank group=cp,size=2,ranks=blocks t0",
// CHECK-SAME: "call collective.permute group=cp,size=2,ranks=blocks,dtype=f32,shape=4x8,route=shift_1 a0 t1",
// CHECK-SAME: "step branch__step2__te_packed 1x1x1 1x1x1 0 t0 a0 t1 t2",
// CHECK-SAME: "call collective.permute group=cp,size=2,ranks=blocks,dtype=f32,shape=4x8,route=shift_1 t2 t3",
// CHECK-SAME: "step branch__step3__te_packed 1x1x1 1x1x1 0 t3 t2 a1"]}}
// CHECK: func.func @branch__step3(%[[Q:.*]]: memref<4x8xf32>, %[[Y:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-NEXT: linalg.add ins(%[[Q]], %[[Y]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK: func.func @branch__step2(%[[RANK:.*]]: memref<i32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %[[COPY:.*]]: memref<4x8xf32>)
// CHECK: memref.load %[[RANK]][] : memref<i32>
// CHECK: %[[IF:.*]] = scf.if
// CHECK: memref.copy %[[IF]], %[[COPY]]
// CHECK-NOT: func.func @branch__step1
te.process_group @cp size 2
func.func @branch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %rank_tensor = te.group_rank group @cp : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  %p = te.permute %x group @cp shift 1 : tensor<4x8xf32>
  %zero = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %zero : i32
  %y = scf.if %first -> tensor<4x8xf32> {
    %init = tensor.empty() : tensor<4x8xf32>
    %d = linalg.add ins(%x, %p : tensor<4x8xf32>, tensor<4x8xf32>)
        outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %d : tensor<4x8xf32>
  } else {
    scf.yield %p : tensor<4x8xf32>
  }
  %q = te.permute %y group @cp shift 1 : tensor<4x8xf32>
  %init = tensor.empty() : tensor<4x8xf32>
  %s = linalg.add ins(%q, %y : tensor<4x8xf32>, tensor<4x8xf32>)
      outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
