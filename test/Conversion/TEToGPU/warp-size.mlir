// The warp size shapes the reductions: 64-lane warps butterfly over six
// steps and keep one shared slot per warp (256 / 64 = 4); a warp size that
// is not a power of two is refused.
// RUN: te-opt %s --convert-te-to-gpu=warp-size=64 | FileCheck %s
// RUN: not te-opt %s --convert-te-to-gpu=warp-size=48 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: workgroup(%{{.*}} : memref<4xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: gpu.shuffle xor %{{.*}}, %c32_i32, %c64_i32 : i32
// BAD: error: convert-te-to-gpu: warp-size must be a power of two up to 64, not 48
func.func @amax(%x: tensor<1024xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<1024xf32> -> tensor<f32>
  return %a : tensor<f32>
}
