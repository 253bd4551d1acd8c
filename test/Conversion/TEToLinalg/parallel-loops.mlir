// te-cpu-parallel-loops keeps the outermost scf.parallel loops with enough
// work, only as many of their dimensions as give the threads enough
// iterations, moves their bodies into private functions whose buffers are
// noalias, and makes every other scf.parallel sequential.
// RUN: te-opt %s --te-cpu-parallel-loops | FileCheck %s
// te-cpu-openmp-threads then gives each OpenMP region the kernel's thread
// count and coarse loops (65536 operations an iteration) a dynamic
// schedule, fine ones a static one.
// RUN: te-opt %s --te-cpu-parallel-loops --convert-scf-to-openmp --te-cpu-openmp-threads | FileCheck %s --check-prefix=OMP
// RUN: te-opt %s --te-cpu-parallel-loops="min-work=100000000" | FileCheck %s --check-prefix=NONE

// 1024 rows are enough iterations: the columns run sequentially inside the
// outlined body, which reads the view it was given (cloned from above) of
// the whole buffer.
// CHECK-LABEL: func.func private @rows__te_parallel(
// CHECK-SAME: %[[ROW:[a-z0-9]+]]: index, %[[IN:[a-z0-9]+]]: memref<1024x1024xf32> {llvm.noalias}, %[[OUT:[a-z0-9]+]]: memref<1024x1024xf32> {llvm.noalias})
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[IN]]
// CHECK: scf.for %[[COL:[a-z0-9]+]] =
// CHECK: memref.load %[[VIEW]][%[[ROW]],
// CHECK: memref.store {{.*}}, %[[OUT]][%[[ROW]], %[[COL]]]
// CHECK-LABEL: func.func @rows(
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT: func.call @rows__te_parallel(%[[I]], %arg0, %arg1)
// OMP: llvm.mlir.global internal @__te_num_threads(0 : i32)
// OMP-LABEL: func.func @rows(
// OMP: %[[ADDR:.*]] = llvm.mlir.addressof @__te_num_threads
// OMP: %[[N:.*]] = llvm.load %[[ADDR]] : !llvm.ptr -> i32
// OMP: omp.parallel num_threads(%[[N]] : i32)
// OMP: omp.wsloop {
// OMP-NOT: memref.alloca_scope
// OMP: func.call @rows__te_parallel
// NONE-LABEL: func.func @rows(
// NONE-NOT: scf.parallel
func.func @rows(%in: memref<1024x1024xf32>, %out: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  %view = memref.expand_shape %in [[0], [1, 2]] output_shape [1024, 32, 32]
      : memref<1024x1024xf32> into memref<1024x32x32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c1024) step (%c1, %c1) {
    %b = arith.divui %j, %c32 : index
    %x = memref.load %view[%i, %b, %c0] : memref<1024x32x32xf32>
    memref.store %x, %out[%i, %j] : memref<1024x1024xf32>
    scf.reduce
  }
  return
}

// 2 x 8 is too few iterations for the first dimension alone: both stay
// parallel, the innermost of three does not.
// CHECK-LABEL: func.func private @leading__te_parallel(
// CHECK-SAME: %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index,
// CHECK: scf.for
// CHECK-LABEL: func.func @leading(
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) =
// OMP-LABEL: func.func @leading(
// OMP: omp.wsloop {
func.func @leading(%out: memref<2x8x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c8, %c4096) step (%c1, %c1, %c1) {
    memref.store %zero, %out[%i, %j, %k] : memref<2x8x4096xf32>
    scf.reduce
  }
  return
}

// 16 elements are not worth threads.
// CHECK-LABEL: func.func @small(
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: call
// CHECK: return
func.func @small(%in: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<4x4xf32>
    memref.store %x, %out[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  return
}

// A parallel loop inside one that stays parallel runs sequentially in each
// iteration.
// CHECK-LABEL: func.func private @nested__te_parallel(
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK-LABEL: func.func @nested(
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @nested(%in: memref<64x4096xf32>, %out: memref<64x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c4096) step (%c1) {
      %x = memref.load %in[%i, %j] : memref<64x4096xf32>
      memref.store %x, %out[%i, %j] : memref<64x4096xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// 16 iterations of 2^17 stores each: coarse, scheduled dynamically (like
// attention's row tiles, whose lengths differ under a causal mask).
// OMP-LABEL: func.func @coarse(
// OMP: omp.wsloop schedule(dynamic)
func.func @coarse(%out: memref<16x131072xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = arith.constant 131072 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.for %j = %c0 to %n step %c1 {
      memref.store %zero, %out[%i, %j] : memref<16x131072xf32>
    }
    scf.reduce
  }
  return
}

// Bounds known only at run time (a grouped GEMM's tiles of one group) count
// 16 iterations: enough work here, so the loop runs on the threads.
// CHECK-LABEL: func.func private @run_time_bound__te_parallel(
// CHECK-LABEL: func.func @run_time_bound(
// CHECK: scf.parallel
// CHECK-NEXT: func.call @run_time_bound__te_parallel
// OMP-LABEL: func.func @run_time_bound(
// OMP: omp.parallel num_threads
// NONE-LABEL: func.func @run_time_bound(
// NONE-NOT: scf.parallel
func.func @run_time_bound(%out: memref<?x131072xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %out, %c0 : memref<?x131072xf32>
  %n = arith.constant 131072 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    scf.for %j = %c0 to %n step %c1 {
      memref.store %zero, %out[%i, %j] : memref<?x131072xf32>
    }
    scf.reduce
  }
  return
}

// ... but not when the loop uses a view (a subview's offset and strides):
// the outlined body's buffers are noalias, which views of one buffer are
// not (the loops of strided copies are bounded by their views' dims).
// CHECK-LABEL: func.func @run_time_bound_view(
// CHECK-NOT: scf.parallel
// CHECK-NOT: func.call
// CHECK: return
func.func @run_time_bound_view(%out: memref<?x131072xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %view = memref.subview %out[%c1, 0] [%n, 131072] [1, 1]
      : memref<?x131072xf32> to memref<?x131072xf32, strided<[131072, 1], offset: ?>>
  %cols = arith.constant 131072 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %cols step %c1 {
      memref.store %zero, %view[%i, %j] : memref<?x131072xf32, strided<[131072, 1], offset: ?>>
    }
    scf.reduce
  }
  return
}

// A copy with a strided side becomes loops (here too small for threads);
// one between contiguous buffers stays a copy (LLVM's memcpy).
// CHECK-LABEL: func.func @copies(
// CHECK-NOT: memref.copy %arg0
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK: memref.store
// CHECK: memref.copy %arg1, %arg2 : memref<4x4xf32> to memref<4x4xf32>
func.func @copies(%a: memref<4x4xf32, strided<[8, 1]>>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  memref.copy %a, %b : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32>
  memref.copy %b, %c : memref<4x4xf32> to memref<4x4xf32>
  return
}
