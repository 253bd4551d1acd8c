// RUN: te-opt %s -split-input-file --convert-te-to-linalg="dot-unit=avx512-bf16 tile-unit=amx-bf16" | FileCheck %s
// RUN: not te-opt %s -split-input-file --convert-te-to-linalg="tile-unit=amx9" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: convert-te-to-linalg: unknown tile-unit 'amx9'; known units: amx-bf16, or empty for none

// With a tile unit (tile-unit=amx-bf16, which the cpu target sets where
// the host has AMX-BF16), bf16 and FP8 GEMMs run on tiles: op(A) packed in
// blocks of 32 rows by 32 K ([panels, K / 32, 32, 32]: each tile's rows
// contiguous), op(B) in the pair panels of the dot unit (32 columns); the
// micro-kernel's 2x2 C tiles start at zero, take each K step's two A and
// two B tiles (K of 300 padded to 2 chunks of 160: 5 steps each, unrolled),
// and leave through a stack buffer as vectors, which add to the tile's
// sums so far.
// CHECK-LABEL: func @bf16
// CHECK: %[[AP:.*]] = scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}}) -> (tensor<4x10x32x32xbf16>)
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<100x300xbf16>, vector<32xbf16>
// CHECK: %[[BP:.*]] = scf.forall (%{{.*}}) in (3) shared_outs(%{{.*}}) -> (tensor<3x160x64xbf16>)
// CHECK: %[[AB:.*]] = bufferization.to_buffer %[[AP]] read_only : tensor<4x10x32x32xbf16> to memref<4x10x32x32xbf16>
// CHECK: %[[BB:.*]] = bufferization.to_buffer %[[BP]] read_only : tensor<3x160x64xbf16> to memref<3x160x64xbf16>
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: amx.tile_load %[[AB]]{{.*}} : memref<4x10x32x32xbf16> into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[AB]]
// CHECK: amx.tile_load %[[BB]]{{.*}} : memref<3x160x64xbf16> into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[BB]]
// CHECK-COUNT-4: amx.tile_mulf
// CHECK-COUNT-32: amx.tile_
// CHECK-NOT: amx.tile_mulf
// CHECK: memref.alloca_scope
// CHECK: memref.alloca() : memref<32x32xf32>
// CHECK-COUNT-4: amx.tile_store
// CHECK-COUNT-64: vector.load
// CHECK: memref.alloca_scope.return
// CHECK-COUNT-64: arith.addf {{.*}} : vector<16xf32>
// CHECK: tensor.parallel_insert_slice
func.func @bf16(%a: tensor<100x300xbf16>, %b: tensor<300x70xbf16>) -> tensor<100x70xbf16> {
  %d = te.scaled_matmul %a, %b : tensor<100x300xbf16>, tensor<300x70xbf16> -> tensor<100x70xbf16>
  return %d : tensor<100x70xbf16>
}

// -----

// f32 operands would be rounded by bf16 tiles: f32 FMAs.
// CHECK-LABEL: func @f32
// CHECK-NOT: amx.
// CHECK: vector.fma
func.func @f32(%a: tensor<20x30xf32>, %b: tensor<30x40xf32>) -> tensor<20x40xf32> {
  %d = te.scaled_matmul %a, %b : tensor<20x30xf32>, tensor<30x40xf32> -> tensor<20x40xf32>
  return %d : tensor<20x40xf32>
}
