// RUN: te-opt %s -split-input-file --convert-te-to-linalg="dot-unit=avx512-bf16" | FileCheck %s
// RUN: te-opt %s -split-input-file --convert-te-to-linalg="vector-lanes=8" | FileCheck %s --check-prefix=FMA8

// te.scaled_matmul on the host: op(A) and op(B) packed once into panels of
// the micro-kernel's element type (FP8 decoded to bf16 for the pair dots,
// by vectors: its bytes shifted into f16's, which converts to f32), the
// output tiles on the threads (scf.forall) with chunks of K, panels of B
// and of A in the tile, and the register micro-kernel; then one epilogue
// pass: alpha = a_scale_inv * b_scale_inv, bias, output cast.
// CHECK-LABEL: func @fp8_bias
// CHECK: %[[AP:.*]] = scf.forall (%{{.*}}) in (9) shared_outs(%{{.*}}) -> (tensor<9x64x24xbf16>)
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<100x128xf8E4M3FN>, vector<32xf8E4M3FN>
// CHECK: vector.bitcast {{.*}} : vector<32xf8E4M3FN> to vector<32xi8>
// CHECK: arith.extf {{.*}} : vector<32xf16> to vector<32xf32>
// CHECK: arith.truncf {{.*}} : vector<32xf32> to vector<32xbf16>
// CHECK: vector.transpose
// CHECK: %[[BP:.*]] = scf.forall (%{{.*}}) in (10) shared_outs(%{{.*}}) -> (tensor<10x64x64xbf16>)
// CHECK: vector.transfer_read %arg1
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<120x336xf32>)
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-24: vector.transfer_read {{.*}} : tensor<60x160xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>
// CHECK: vector.transfer_read %[[BP]]{{.*}} : tensor<10x64x64xbf16>, vector<32xbf16>
// CHECK: vector.transfer_read %[[AP]]{{.*}} : tensor<9x64x24xbf16>, vector<2xbf16>
// CHECK-COUNT-24: x86vector.avx512.dot
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [100, 300] [1, 1] : tensor<120x336xf32> to tensor<100x300xf32>
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.addf
// FMA8-LABEL: func @fp8_bias
// FMA8: linalg.generic {{.*}} outs(%{{.*}} : tensor<17x128x6xf32>)
// FMA8: linalg.generic {{.*}} outs(%{{.*}} : tensor<19x128x16xf32>)
// FMA8: vector.fma {{.*}} : vector<8xf32>
// FMA8-NOT: x86vector
func.func @fp8_bias(%a: tensor<100x128xf8E4M3FN>, %b: tensor<300x128xf8E4M3FN>, %sa: tensor<f32>,
                    %sb: tensor<f32>, %bias: tensor<300xbf16>) -> tensor<100x300xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b
      : tensor<100x128xf8E4M3FN>, tensor<300x128xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<300xbf16>
      -> tensor<100x300xbf16>
  return %d : tensor<100x300xbf16>
}

// -----

// f32 operands take f32 FMAs whatever the dot unit; pairs need bf16. An
// operand already in the kernel's element type is packed by vectors, a
// panel per iteration; with K first (A under transpose_a, B without
// transpose_b), each K row of the panel is one read and one write.
// CHECK-LABEL: func @f32_operands
// CHECK: scf.forall (%{{.*}}) in (3) shared_outs(%{{.*}}) -> (tensor<3x48x12xf32>)
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<40x30xf32>, vector<12xf32>
// CHECK: vector.transfer_write {{.*}} : vector<12xf32>, tensor<1x48x12xf32>
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: x86vector
func.func @f32_operands(%a: tensor<40x30xf32>, %b: tensor<40x20xf32>) -> tensor<30x20xf32> {
  %d = te.scaled_matmul %a, %b transpose_a : tensor<40x30xf32>, tensor<40x20xf32> -> tensor<30x20xf32>
  return %d : tensor<30x20xf32>
}

// -----

// Block scales: K in chunks of 128 (two here), each chunk's sums started
// from zero and added to the tile times the row and column scales of that
// K block, expanded once per padded row and column.
// CHECK-LABEL: func @block_scaled
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x24xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x32xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2{{.*}} step
// CHECK: x86vector.avx512.dot
// CHECK: tensor.extract %{{.*}} : tensor<2x24xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<2x32xf32>, vector<16xf32>
// CHECK: vector.fma
func.func @block_scaled(%a: tensor<20x200xf8E4M3FN>, %b: tensor<30x200xf8E4M3FN>,
                        %sa: tensor<20x2xf32>, %sb: tensor<1x2xf32>) -> tensor<20x30xf32> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) scaling block_1x128, block_128x128 transpose_b
      : tensor<20x200xf8E4M3FN>, tensor<30x200xf8E4M3FN>, tensor<20x2xf32>, tensor<1x2xf32>
      -> tensor<20x30xf32>
  return %d : tensor<20x30xf32>
}

// -----

// te.grouped_matmul: the splits' clamped prefix sums give each A panel its
// group, first row and row count (each group starts a panel: at most
// (100 + 3 * 11) / 12 = 11 panels), which A's packing reads its rows by.
// Then group by group: B[g] is packed alone (the packed copy is one
// group's matrix), and the group's tiles, as many as its panels need (a
// run-time count), start at its first panel; the product has a tile of
// rows to spare for the last group's last tile. The epilogue reads each
// row's product through its product row and adds its group's bias.
// CHECK-LABEL: func @grouped_bias
// CHECK: scf.for {{.*}} -> (index)
// CHECK: tensor.extract %arg2
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<11xindex>)
// CHECK: %[[AP:.*]] = scf.forall (%{{.*}}) in (11) shared_outs(%{{.*}}) -> (tensor<11x64x24xbf16>)
// CHECK: tensor.extract %{{.*}} : tensor<11xindex>
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<100x128xbf16>, vector<32xbf16>
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %c3 {{.*}} -> (tensor<216x80xf32>)
// CHECK: %[[BP:.*]] = scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<2x64x64xbf16>)
// CHECK: vector.transfer_read %arg1[%[[G]], {{.*}} : tensor<3x40x128xbf16>, vector<32xbf16>
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<216x80xf32>)
// CHECK: vector.transfer_read %[[BP]]{{.*}} : tensor<2x64x64xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<100xindex>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<100x40xbf16>)
// CHECK: tensor.extract %{{.*}} : tensor<216x80xf32>
// CHECK: tensor.extract %arg3
// FMA8-LABEL: func @grouped_bias
// FMA8: vector.fma {{.*}} : vector<8xf32>
func.func @grouped_bias(%x: tensor<100x128xbf16>, %w: tensor<3x40x128xbf16>, %m: tensor<3xi64>,
                        %b: tensor<3x40xbf16>) -> tensor<100x40xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
      : tensor<100x128xbf16>, tensor<3x40x128xbf16>, tensor<3xi64>, tensor<3x40xbf16>
      -> tensor<100x40xbf16>
  return %y : tensor<100x40xbf16>
}

// -----

// bf16 operands with K contiguous: each panel packed 16 pairs at a time,
// its rows' 32 elements read one row at a time (1-D reads: no stack
// buffer), transposed as 32-bit words (one bf16 pair each) and written as
// 16 rows of the panel.
// CHECK-LABEL: func @bf16_packing
// CHECK: scf.forall (%{{.*}}) in (3) shared_outs(%{{.*}}) -> (tensor<3x32x24xbf16>)
// CHECK-COUNT-12: vector.transfer_read %arg0{{.*}} : tensor<30x64xbf16>, vector<32xbf16>
// CHECK: vector.bitcast {{.*}} : vector<12x32xbf16> to vector<12x16xi32>
// CHECK: vector.transpose {{.*}} [1, 0] : vector<12x16xi32> to vector<16x12xi32>
// CHECK-COUNT-16: vector.transfer_write {{.*}} : vector<24xbf16>, tensor<1x32x24xbf16>
// CHECK: scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}}) -> (tensor<1x32x64xbf16>)
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<20x64xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot
func.func @bf16_packing(%a: tensor<30x64xbf16>, %b: tensor<20x64xbf16>) -> tensor<30x20xbf16> {
  %d = te.scaled_matmul %a, %b transpose_b : tensor<30x64xbf16>, tensor<20x64xbf16> -> tensor<30x20xbf16>
  return %d : tensor<30x20xbf16>
}
