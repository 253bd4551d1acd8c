// RUN: te-opt --convert-te-to-gpu -split-input-file %s | FileCheck %s

// te.amax: the amax zeroed by one thread, then a grid-stride loop of 16-byte
// loads (8 bf16), a warp butterfly, the warps' values through shared
// memory and one atomic per block.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @amax
// CHECK-SAME: (%[[X:.*]]: tensor<256x512xbf16>)
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[A:.*]] = memref.alloc() {alignment = 256 : i64} : memref<f32>
// CHECK: gpu.launch_func @[[M:te_amax_[0-9a-f]+]]::@[[M]]_amax_init blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in ({{.*}}) args(%[[A]] : memref<f32>)
// CHECK: gpu.launch_func @[[M]]::@[[M]]_amax {{.*}} args(%[[XB]] : memref<256x512xbf16>, %[[A]] : memref<f32>)
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[A]] restrict writable
// CHECK: return %[[R]]
// CHECK: gpu.module @[[M]]
// CHECK: gpu.func @[[M]]_amax_init(%{{.*}}: memref<f32>) kernel
// CHECK: gpu.func @[[M]]_amax(%{{.*}}: memref<256x512xbf16>, %[[OUT:.*]]: memref<f32>) workgroup(%[[SCRATCH:.*]] : memref<8xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (i32)
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<131072xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.maxui
// CHECK: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK: memref.store %{{.*}}, %[[SCRATCH]]
// CHECK: gpu.barrier
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: llvm.atomicrmw umax
func.func @amax(%x: tensor<256x512xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<256x512xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// Two ops of one configuration share one module of kernels.

// CHECK-LABEL: func.func @same_kernels
// CHECK: gpu.launch_func @[[M:te_amax_[0-9a-f]+]]::@[[M]]_amax_init
// CHECK: gpu.launch_func @[[M]]::@[[M]]_amax
// CHECK: gpu.launch_func @[[M]]::@[[M]]_amax_init
// CHECK: gpu.launch_func @[[M]]::@[[M]]_amax
// CHECK: gpu.module @[[M]]
// CHECK-NOT: gpu.module
func.func @same_kernels(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<f32>, tensor<f32>) {
  %a = te.amax %x : tensor<64xf32> -> tensor<f32>
  %b = te.amax %y : tensor<64xf32> -> tensor<f32>
  return %a, %b : tensor<f32>, tensor<f32>
}

// -----

// An element count that is not a multiple of the vector width: scalar
// accesses.

// CHECK-LABEL: func.func @odd_amax
// CHECK: gpu.func @{{.*}}_amax(%{{.*}}: memref<7xf16>
// CHECK-NOT: vector.load
// CHECK: memref.load {{.*}} : memref<7xf16>
func.func @odd_amax(%x: tensor<7xf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<7xf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @compute_scale
// CHECK: gpu.launch_func @[[M:te_compute_scale_[0-9a-f]+]]::@[[M]]_compute_scale blocks in
// CHECK: gpu.func @[[M]]_compute_scale(%[[A:.*]]: memref<f32>, %[[S:.*]]: memref<f32>) kernel
// CHECK: gpu.thread_id x
// CHECK: scf.if
// CHECK: memref.load %[[A]][]
// CHECK: arith.divf
// CHECK: arith.constant -8388608 : i32
// CHECK: memref.store %{{.*}}, %[[S]][]
func.func @compute_scale(%amax: tensor<f32>) -> tensor<f32> {
  %s = te.compute_scale %amax fp8_type f8E4M3FN pow2_scales : tensor<f32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// One thread per managed tensor rolls its history column and takes the
// maximum with maxnumf (NaN skipped) before TE's scale formula.

// CHECK-LABEL: func.func @delayed
// CHECK: gpu.launch_func @[[M:te_delayed_scaling_[0-9a-f]+]]::@[[M]]_update {{.*}} args(%{{.*}} : memref<16x3xf32>, %{{.*}} : memref<3xf32>, %{{.*}} : memref<3xf32>, %{{.*}} : memref<16x3xf32>, %{{.*}} : memref<3xf32>)
// CHECK: gpu.func @[[M]]_update
// CHECK: arith.maxnumf
// CHECK: scf.for %{{.*}} = %c1 to %c16 step %{{.*}} iter_args
// CHECK: arith.maxnumf
// CHECK: arith.divf
func.func @delayed(%h: tensor<16x3xf32>, %a: tensor<3xf32>, %s: tensor<3xf32>) -> (tensor<16x3xf32>, tensor<3xf32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %a, %s fp8_type f8E4M3FN margin 1
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>, tensor<3xf32>
  return %h2, %s2 : tensor<16x3xf32>, tensor<3xf32>
}

// -----

// A history of one step (TE's amax_history_len = 1): no roll, the new amax
// is stored as the history and its maximum with 0 feeds the scale.

// CHECK-LABEL: func.func @delayed_history_of_one
// CHECK: gpu.launch_func @[[M:te_delayed_scaling_[0-9a-f]+]]::@[[M]]_update {{.*}} args(%{{.*}} : memref<1x3xf32>, %{{.*}} : memref<3xf32>, %{{.*}} : memref<3xf32>, %{{.*}} : memref<1x3xf32>, %{{.*}} : memref<3xf32>)
// CHECK: gpu.func @[[M]]_update
// CHECK-NOT: scf.for %{{.*}} = %c1 to
// CHECK: %[[AMAX:.*]] = memref.load
// CHECK-NEXT: memref.store %[[AMAX]]
// CHECK: arith.maxnumf %{{.*}}, %[[AMAX]]
// CHECK-NOT: scf.for %{{.*}} = %c1 to
// CHECK: arith.divf
// CHECK: gpu.return
func.func @delayed_history_of_one(%h: tensor<1x3xf32>, %a: tensor<3xf32>, %s: tensor<3xf32>) -> (tensor<1x3xf32>, tensor<3xf32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %a, %s fp8_type f8E5M2 amax_algo max margin 1
      : tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3xf32>, tensor<3xf32>
  return %h2, %s2 : tensor<1x3xf32>, tensor<3xf32>
}

// -----

// Per-tensor quantization with the transposed copy: init (scale_inv and a
// zero amax), the cast with the fused amax, and the transpose through 32x32
// shared tiles on 32x8 blocks.

// CHECK-LABEL: func.func @quantize_both
// CHECK: gpu.launch_func @[[M:te_quantize_[0-9a-f]+]]::@[[M]]_init
// CHECK: gpu.launch_func @[[M]]::@[[M]]_cast blocks in (%c3, {{.*}}) threads in (%c256,
// CHECK: gpu.launch_func @[[M]]::@[[M]]_transpose blocks in (%c3{{.*}}, %c2, {{.*}}) threads in (%c32, %c8,
// CHECK: gpu.func @[[M]]_init
// CHECK: arith.divf
// CHECK: gpu.func @[[M]]_cast
// CHECK: vector.load {{.*}} vector<8xbf16>
// CHECK: arith.mulf
// CHECK: arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK: vector.store {{.*}} {alignment = 8 : i64} : memref<6144xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK: llvm.atomicrmw umax
// CHECK: gpu.func @[[M]]_transpose({{.*}}) workgroup(%[[TILE:.*]] : memref<32x33xf8E4M3FN, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK: memref.store %{{.*}}, %[[TILE]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[TILE]]
// CHECK: memref.store {{.*}} : memref<96x64xf8E4M3FN>
func.func @quantize_both(%x: tensor<64x96xbf16>, %s: tensor<f32>)
    -> (tensor<64x96xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<64x96xbf16>, tensor<f32>
      -> tensor<64x96xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %dt, %si, %a : tensor<64x96xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>
}

// -----

// Column-wise only: the amax comes from the amax kernel.

// CHECK-LABEL: func.func @quantize_columnwise
// CHECK: gpu.launch_func @[[M:te_quantize_[0-9a-f]+]]::@[[M]]_init
// CHECK: gpu.launch_func @[[M]]::@[[M]]_amax
// CHECK: gpu.launch_func @[[M]]::@[[M]]_transpose
// CHECK-NOT: gpu.func @te_quantize_{{[0-9a-f]+}}_cast
func.func @quantize_columnwise(%x: tensor<40x24xf32>, %s: tensor<f32>)
    -> (tensor<24x40xf8E5M2>, tensor<f32>, tensor<f32>) {
  %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage columnwise
      : tensor<40x24xf32>, tensor<f32> -> tensor<24x40xf8E5M2>, tensor<f32>, tensor<f32>
  return %dt, %si, %a : tensor<24x40xf8E5M2>, tensor<f32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @dequantize
// CHECK: gpu.launch_func @[[M:te_dequantize_[0-9a-f]+]]::@[[M]]_dequantize
// CHECK: gpu.func @[[M]]_dequantize
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<1024xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK: arith.mulf
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<1024xbf16>, vector<8xbf16>
func.func @dequantize(%d: tensor<32x32xf8E4M3FN>, %si: tensor<f32>) -> tensor<32x32xbf16> {
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<32x32xf8E4M3FN>, tensor<f32> -> tensor<32x32xbf16>
  return %x : tensor<32x32xbf16>
}
