// The cuda target's pipeline: te ops become launches and kernels, the
// function's tensors its arguments (inputs, then outputs) and temporaries,
// and the kernels NVVM for the arch in TE_CUDA_ARCH (default sm_80).
// RUN: te-opt --te-lower-target=device=cuda %s | FileCheck %s
// RUN: env TE_CUDA_ARCH=sm_90a te-opt --te-lower-target=device=cuda %s | FileCheck %s --check-prefix=SM90
// RUN: env TE_CUDA_ARCH=sm_70 not te-opt --te-lower-target=device=cuda %s 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @scale_and_cast
// CHECK-SAME: (%[[X:.*]]: memref<128x64xf32>, %[[D:.*]]: memref<128x64xf8E5M2>, %[[SI:.*]]: memref<f32>)
// CHECK: %[[AMAX:.*]] = memref.alloc() {alignment = 256 : i64} : memref<f32>
// CHECK: gpu.launch_func @[[A:te_amax_[0-9a-f]+]]::@{{.*}}_amax_init {{.*}} args(%[[AMAX]] : memref<f32>)
// CHECK: gpu.launch_func @[[A]]::@{{.*}}_amax {{.*}} args(%[[X]] : memref<128x64xf32>, %[[AMAX]] : memref<f32>)
// CHECK: %[[SCALE:.*]] = memref.alloc() {alignment = 256 : i64} : memref<f32>
// CHECK: gpu.launch_func @{{.*}}_compute_scale {{.*}} args(%[[AMAX]] : memref<f32>, %[[SCALE]] : memref<f32>)
// CHECK: gpu.launch_func @{{.*}}_init {{.*}} args(%[[SCALE]] : memref<f32>, %[[SI]] : memref<f32>, %{{.*}} : memref<f32>)
// CHECK: gpu.launch_func @{{.*}}_cast {{.*}} args(%[[X]] : memref<128x64xf32>, %[[SCALE]] : memref<f32>, %[[D]] : memref<128x64xf8E5M2>, %{{.*}} : memref<f32>)
// CHECK-NEXT: return
// CHECK: gpu.module @[[A]] [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx81">]
// CHECK: llvm.func @{{.*}}_amax_init(%{{.*}}: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel}
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: nvvm.shfl.sync bfly
// CHECK: nvvm.barrier0
// CHECK: llvm.atomicrmw umax

// SM90: chip = "sm_90a"
// BAD: TE_CUDA_ARCH=sm_70 is not an arch the cuda target generates code for; use one of sm_80, sm_86, sm_89, sm_90, sm_90a
func.func @scale_and_cast(%x: tensor<128x64xf32>) -> (tensor<128x64xf8E5M2>, tensor<f32>) {
  %amax = te.amax %x : tensor<128x64xf32> -> tensor<f32>
  %scale = te.compute_scale %amax fp8_type f8E5M2 : tensor<f32> -> tensor<f32>
  %d, %si, %a = te.quantize %x scale(%scale) mode per_tensor
      : tensor<128x64xf32>, tensor<f32> -> tensor<128x64xf8E5M2>, tensor<f32>, tensor<f32>
  return %d, %si : tensor<128x64xf8E5M2>, tensor<f32>
}
