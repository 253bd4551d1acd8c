// te.scaled_matmul on the cuda target: 64x64 blocks of 128 threads, FP8
// tiles widened to bf16 in shared memory, read back with ldmatrix into
// 32-bit registers of two bf16 each, mma.sync m16n8k16, and the epilogue; an FP8 output
// adds the amax (zeroed first, one atomic per block).
// RUN: te-opt --te-lower-target=device=cuda -split-input-file %s | FileCheck %s

// CHECK-LABEL: func.func @bf16_out
// CHECK: gpu.launch_func @[[M:te_scaled_matmul_[0-9a-f]+]]::@[[M]]_gemm blocks in (%c3, %c2, %c1) threads in (%c128, %c1, %c1)
// CHECK: gpu.module @[[M]]
// CHECK: llvm.mlir.global internal @__wg_[[M]]_gemm_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2560 x bf16>
// CHECK: llvm.func @[[M]]_gemm(
// CHECK: nvvm.barrier0
// CHECK: nvvm.ldmatrix {{.*}}num = 2 {{.*}} -> !llvm.struct<(i32, i32)>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
func.func @bf16_out(%a: tensor<100x72xf8E4M3FN>, %b: tensor<130x72xf8E5M2>, %sa: tensor<f32>, %sb: tensor<f32>)
    -> tensor<100x130xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b
      : tensor<100x72xf8E4M3FN>, tensor<130x72xf8E5M2>, tensor<f32>, tensor<f32> -> tensor<100x130xbf16>
  return %d : tensor<100x130xbf16>
}

// -----

// CHECK-LABEL: func.func @fp8_out
// CHECK-SAME: %[[AMAX:[^:]*]]: memref<f32>)
// CHECK: gpu.launch_func @[[M:te_scaled_matmul_[0-9a-f]+]]::@[[M]]_amax_init {{.*}} args(%[[AMAX]] : memref<f32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_gemm {{.*}} %[[AMAX]] : memref<f32>)
// CHECK: llvm.func @[[M]]_gemm(
// CHECK: nvvm.mma.sync
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.atomicrmw umax
func.func @fp8_out(%a: tensor<64x32xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>,
                   %bias: tensor<64xf32>, %so: tensor<f32>) -> (tensor<64x64xf8E4M3FN>, tensor<f32>) {
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) out_scale(%so) gelu
      : tensor<64x32xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>, tensor<f32>
      -> tensor<64x64xf8E4M3FN>, tensor<f32>
  return %d, %amax : tensor<64x64xf8E4M3FN>, tensor<f32>
}
