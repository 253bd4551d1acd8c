// te-host-copies-to-gpu: the scalar code of an entry point (what
// te-insert-checks and te-materialize-checks leave on the host: loads of
// index operands, arithmetic, stores of the status) becomes one kernel run
// by a single thread, on the buffers the code reads and writes, launched
// where the last store was. Code that uses a value no kernel can take is
// refused with the reason.
// RUN: te-opt --te-lower-target=device=cuda -split-input-file -verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @scalar(
// CHECK-SAME: %[[IN:.*]]: memref<4xi32>, %[[OUT:.*]]: memref<4xi64>)
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: gpu.launch_func @[[M:te_host_code_[0-9a-f]+]]::@[[M]]_run blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]]) args(%[[IN]] : memref<4xi32>, %[[OUT]] : memref<4xi64>)
// CHECK-NEXT: return
// CHECK: gpu.module @[[M]]
// CHECK: llvm.func @[[M]]_run(
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: llvm.load
// CHECK: llvm.sext
// CHECK: llvm.store
func.func @scalar(%a: memref<4xi32>, %out: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %v = memref.load %a[%c3] : memref<4xi32>
  %e = arith.extsi %v : i32 to i64
  memref.store %e, %out[%c0] : memref<4xi64>
  return
}

// -----

func.func @index_argument(%out: memref<4xi64>, %i: index) {
  %c = arith.constant 7 : i64
  // expected-error @+1 {{a GPU target runs the scalar code of an entry point as a kernel, which cannot take this operand of type 'index'}}
  memref.store %c, %out[%i] : memref<4xi64>
  return
}

// -----

// A launch between the code's stores that uses a buffer the code writes:
// running the code after it would reorder the two.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @touch(%m: memref<4xi64>) kernel {
      gpu.return
    }
  }
  func.func @reordered(%out: memref<4xi64>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c = arith.constant 7 : i64
    memref.store %c, %out[%c0] : memref<4xi64>
    // expected-error @+1 {{a GPU target runs the scalar code of an entry point as one kernel after its last store, but this launch, inside that code, uses a buffer the code writes, or a temporary it reads}}
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xi64>)
    memref.store %c, %out[%c1] : memref<4xi64>
    return
  }
}
