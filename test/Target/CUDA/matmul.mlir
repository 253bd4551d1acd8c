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

// -----

// f16 operands: f16 tiles and f16 MMAs. dGELU with DGELU_BGRAD: the column
// sums start from zero (bias_grad_init), each warp adds its columns with
// XOR shuffles and one atomic add per column, and bias_grad_cast rounds the
// f32 sums to the result's type.
// CHECK-LABEL: func.func @f16_dgelu_bias_grad
// CHECK: gpu.launch_func @[[M:te_scaled_matmul_[0-9a-f]+]]::@[[M]]_bias_grad_init {{.*}} args(%[[SUMS:.*]] : memref<90xf32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_gemm {{.*}} %[[SUMS]] : memref<90xf32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_bias_grad_cast {{.*}} args(%[[SUMS]] : memref<90xf32>, %{{.*}} : memref<90xf16>)
// CHECK: llvm.func @[[M]]_gemm(
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.atomicrmw fadd
func.func @f16_dgelu_bias_grad(%a: tensor<100x72xf16>, %b: tensor<90x72xf16>, %pre: tensor<100x90xf16>)
    -> (tensor<100x90xf16>, tensor<90xf16>) {
  %d, %db = te.scaled_matmul %a, %b dgelu(%pre) transpose_b bias_grad
      : tensor<100x72xf16>, tensor<90x72xf16>, tensor<100x90xf16> -> tensor<100x90xf16>, tensor<90xf16>
  return %d, %db : tensor<100x90xf16>, tensor<90xf16>
}

// -----

// Block scaling: K in blocks of 128 (3 for K = 300), each block's sums
// from zero, then added to the totals times its row and column scales.
// CHECK-LABEL: func.func @block_scaling
// CHECK: llvm.func @[[M:te_scaled_matmul_[0-9a-f]+]]_gemm(
// CHECK: llvm.icmp "slt" {{.*}}
// CHECK: nvvm.mma.sync
// CHECK: llvm.call @__nv_fmaf
func.func @block_scaling(%a: tensor<150x300xf8E4M3FN>, %b: tensor<140x300xf8E4M3FN>, %sa: tensor<150x3xf32>,
                         %sb: tensor<2x3xf32>) -> tensor<150x140xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_1x128, block_128x128 transpose_b
      : tensor<150x300xf8E4M3FN>, tensor<140x300xf8E4M3FN>, tensor<150x3xf32>, tensor<2x3xf32>
      -> tensor<150x140xf32>
  return %d : tensor<150x140xf32>
}

// -----

// BGRADB (wgrad's bias gradient without dGELU): the row sums of op(A),
// each element times its MXFP8 scale, in a kernel of their own.
// CHECK-LABEL: func.func @mxfp8_wgrad_bgradb
// CHECK: gpu.launch_func @[[M:te_scaled_matmul_[0-9a-f]+]]::@[[M]]_gemm
// CHECK: gpu.launch_func @[[M]]::@[[M]]_bias_grad_rows {{.*}} args(%arg0 : memref<64x40xf8E5M2>, %arg2 : memref<2x40xf8E8M0FNU>, %{{.*}} : memref<40xbf16>)
func.func @mxfp8_wgrad_bgradb(%dy: tensor<64x40xf8E5M2>, %x: tensor<64x24xf8E4M3FN>, %sdy: tensor<2x40xf8E8M0FNU>,
                              %sx: tensor<2x24xf8E8M0FNU>) -> (tensor<40x24xbf16>, tensor<40xbf16>) {
  %d, %db = te.scaled_matmul %dy, %x scales(%sdy, %sx) scaling mxfp8_1x32, mxfp8_1x32 transpose_a bias_grad
      : tensor<64x40xf8E5M2>, tensor<64x24xf8E4M3FN>, tensor<2x40xf8E8M0FNU>, tensor<2x24xf8E8M0FNU>
      -> tensor<40x24xbf16>, tensor<40xbf16>
  return %d, %db : tensor<40x24xbf16>, tensor<40xbf16>
}

// -----

// te.grouped_matmul: the GEMM kernel on a grid of (T + G (64 - 1)) / 64 =
// (100 + 3 * 63) / 64 = 4 row blocks; each block finds its group by walking
// the splits (one row block per 64 rows of a group, each group starting a
// block) and computes 64 of that group's rows against B[g], or returns
// when the splits leave it no rows. The splits' checks run after it.
// CHECK-LABEL: func.func @grouped
// CHECK: gpu.launch_func @[[M:te_grouped_matmul_[0-9a-f]+]]::@[[M]]_gemm blocks in (%c1, %c4, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<100x64xbf16>, %arg1 : memref<3x40x64xbf16>, %arg2 : memref<3xi64>, %arg3 : memref<3x40xbf16>, %{{.*}} : memref<100x40xbf16>)
// CHECK: llvm.func @[[M]]_gemm(
// CHECK: llvm.load {{.*}} : !llvm.ptr -> i64
// CHECK: llvm.cond_br
// CHECK: nvvm.mma.sync
func.func @grouped(%x: tensor<100x64xbf16>, %w: tensor<3x40x64xbf16>, %m: tensor<3xi64>, %b: tensor<3x40xbf16>)
    -> tensor<100x40xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
      : tensor<100x64xbf16>, tensor<3x40x64xbf16>, tensor<3xi64>, tensor<3x40xbf16> -> tensor<100x40xbf16>
  return %y : tensor<100x40xbf16>
}
