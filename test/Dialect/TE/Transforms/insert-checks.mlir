// te-insert-checks: one te.check per rule on each index operand of the
// attention ops, the grouped GEMM, RoPE and cross-entropy, in front of the op, naming the op,
// its location ({loc}), the operand and the sizes it must respect.
// RUN: te-opt %s -split-input-file --te-insert-checks | FileCheck %s

// Padding masks: every seqlens entry in [0, s].
// CHECK-LABEL: func @padding
// CHECK: %[[Q:.*]]:3 = scf.for {{.*}} -> (i1, i64, i64)
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sgt, %{{.*}}, %{{.*}} : i64
// CHECK: te.check %[[Q]]#0, %[[Q]]#1, %[[Q]]#2 message "te.attention at {loc}: seqlens_q[{0}] = {1} is outside [0, 16] (s_q)"
// CHECK: te.check %{{.*}}#0, %{{.*}}#1, %{{.*}}#2 message "te.attention at {loc}: seqlens_kv[{0}] = {1} is outside [0, 12] (s_kv)"
// CHECK-NEXT: te.attention
func.func @padding(%q: tensor<2x16x4x8xf32>, %k: tensor<2x12x4x8xf32>, %v: tensor<2x12x4x8xf32>, %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> tensor<2x16x4x8xf32> {
  %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%lq, %lkv)
      : (tensor<2x16x4x8xf32>, tensor<2x12x4x8xf32>, tensor<2x12x4x8xf32>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x16x4x8xf32>
  return %o : tensor<2x16x4x8xf32>
}

// -----

// thd without seq_offsets: cu_seqlens start at 0, never decrease, and end
// within the tokens; for q and for k/v.
// CHECK-LABEL: func @thd
// CHECK: te.check %{{.*}}, %{{.*}} message "te.attention at {loc}: cu_seqlens_q[0] = {0}; cu_seqlens start at 0"
// CHECK: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_q[{0}] = {1} is less than the entry before it ({2}); cu_seqlens are prefix sums of the sequence lengths and never decrease"
// CHECK: te.check %{{.*}}, %{{.*}} message "te.attention at {loc}: cu_seqlens_q[3] = {0} is past the 20 tokens of q (t_q); the sequences must fit in the tensor"
// CHECK: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_kv[0] = {0}; cu_seqlens start at 0"
// CHECK: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_kv[{0}] = {1} is less than the entry before it
// CHECK: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_kv[3] = {0} is past the 13 tokens of k and v (t_kv); the sequences must fit in the tensor"
// CHECK-NOT: te.check
// CHECK: te.attention
func.func @thd(%q: tensor<20x4x8xbf16>, %k: tensor<13x2x8xbf16>, %v: tensor<13x2x8xbf16>, %cq: tensor<4xi32>, %ckv: tensor<4xi32>) -> tensor<20x4x8xbf16> {
  %o = te.attention %q, %k, %v layout thd mask padding_causal cu_seqlens(%cq, %ckv)
      : (tensor<20x4x8xbf16>, tensor<13x2x8xbf16>, tensor<13x2x8xbf16>, tensor<4xi32>, tensor<4xi32>) -> tensor<20x4x8xbf16>
  return %o : tensor<20x4x8xbf16>
}

// -----

// thd with seq_offsets: no offset is negative, each sequence fits before the
// next offset, and the last offset is within the tokens.
// CHECK-LABEL: func @thd_offsets
// CHECK-COUNT-2: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_q
// CHECK: te.check {{.*}} message "te.attention at {loc}: seq_offsets_q[{0}] = {1} is negative"
// CHECK: te.check {{.*}} message "te.attention at {loc}: sequence {0} of q has {1} tokens, but seq_offsets_q leaves room for {2};
// CHECK: te.check {{.*}} message "te.attention at {loc}: seq_offsets_q[2] = {0} is past the 20 tokens of q (t_q)"
// CHECK-COUNT-2: te.check {{.*}} message "te.attention at {loc}: cu_seqlens_kv
// CHECK: te.check {{.*}} message "te.attention at {loc}: seq_offsets_kv[{0}] = {1} is negative"
// CHECK: te.check {{.*}} message "te.attention at {loc}: sequence {0} of k and v has {1} tokens, but seq_offsets_kv leaves room for {2};
// CHECK: te.check {{.*}} message "te.attention at {loc}: seq_offsets_kv[2] = {0} is past the 20 tokens of k and v (t_kv)"
// CHECK-NEXT: te.attention
func.func @thd_offsets(%q: tensor<20x4x8xf32>, %k: tensor<20x4x8xf32>, %v: tensor<20x4x8xf32>, %cq: tensor<3xi32>, %ckv: tensor<3xi32>, %oq: tensor<3xi32>, %okv: tensor<3xi32>) -> tensor<20x4x8xf32> {
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cq, %ckv) seq_offsets(%oq, %okv)
      : (tensor<20x4x8xf32>, tensor<20x4x8xf32>, tensor<20x4x8xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<20x4x8xf32>
  return %o : tensor<20x4x8xf32>
}

// -----

// The backward op takes the same checks; ops without index operands none.
// CHECK-LABEL: func @backward_and_plain
// CHECK: te.check {{.*}} message "te.attention_backward at {loc}: seqlens_q[{0}] = {1} is outside [0, 6] (s_q)"
// CHECK: te.check {{.*}} message "te.attention_backward at {loc}: seqlens_kv[{0}] = {1} is outside [0, 6] (s_kv)"
// CHECK-NEXT: te.attention_backward
// CHECK-NOT: te.check
// CHECK: te.attention {{.*}}mask{{ +}}causal
func.func @backward_and_plain(%q: tensor<1x6x2x4xf32>, %o: tensor<1x6x2x4xf32>, %lse: tensor<1x2x6x1xf32>, %l: tensor<1xi32>) -> (tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>) {
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %o, %o, %lse layout bshd mask padding seqlens(%l, %l)
      : (tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x2x6x1xf32>, tensor<1xi32>, tensor<1xi32>)
      -> (tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>)
  %p = te.attention %q, %q, %q layout bshd mask causal
      : (tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>) -> tensor<1x6x2x4xf32>
  return %dq, %p : tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>
}

// -----

// The grouped GEMM's splits: none negative, and they sum to the rows of a.
// CHECK-LABEL: func @grouped_matmul
// CHECK: te.check {{.*}} message "te.grouped_matmul at {loc}: splits[{0}] = {1} is negative; each group has zero or more rows"
// CHECK: te.check {{.*}} message "te.grouped_matmul at {loc}: the splits sum to {0}, but 'a' has 40 rows; the groups split the rows as torch.split does, so they must add up to all of them"
// CHECK-NEXT: te.grouped_matmul
func.func @grouped_matmul(%x: tensor<40x16xbf16>, %w: tensor<3x8x16xbf16>, %m: tensor<3xi64>) -> tensor<40x8xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) transpose_b
      : tensor<40x16xbf16>, tensor<3x8x16xbf16>, tensor<3xi64> -> tensor<40x8xbf16>
  return %y : tensor<40x8xbf16>
}

// -----

// RoPE: start positions keep every sequence inside freqs' rows; thd's
// cu_seqlens start at 0, never decrease, fit the tokens (times cp_size),
// and split in 2 * cp_size equal chunks; without either, nothing (the
// verifier checked the sizes).
// CHECK-LABEL: func @rope
// CHECK: te.check {{.*}} message "te.rope at {loc}: sequence {0} spans positions [{1}, {2}) (start position and length), outside the 64 rows of freqs"
// CHECK-NEXT: te.rope
// CHECK: te.check {{.*}} message "te.rope_backward at {loc}: cu_seqlens[0] = {0}; cu_seqlens start at 0"
// CHECK: te.check {{.*}} message "te.rope_backward at {loc}: cu_seqlens[{0}] = {1} is less than the entry before it ({2}); cu_seqlens are prefix sums of the sequence lengths and never decrease"
// CHECK: te.check {{.*}} message "te.rope_backward at {loc}: cu_seqlens[3] = {0} is past the 40 tokens of the input times cp_size 2; the sequences must fit in the tensor"
// CHECK: te.check {{.*}} message "te.rope_backward at {loc}: sequence {0} spans positions [{1}, {2}) (start position and length), outside the 64 rows of freqs"
// CHECK: te.check {{.*}} message "te.rope_backward at {loc}: sequence {0} has {1} tokens, not a multiple of 2 * cp_size = 4; each rank holds two equal chunks of every sequence"
// CHECK-NEXT: te.rope_backward
// CHECK-NOT: te.check
// CHECK: te.rope
func.func @rope(%x: tensor<16x2x4x64xbf16>, %xt: tensor<40x4x64xf32>, %f: tensor<64x1x1x64xf32>,
                %sp: tensor<2xi32>, %cu: tensor<4xi32>) {
  %0 = te.rope %x, %f start_positions(%sp) format sbhd
      : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32>, tensor<2xi32> -> tensor<16x2x4x64xbf16>
  %1 = te.rope_backward %xt, %f cu_seqlens(%cu) format thd cp_size 2 cp_rank 1
      : tensor<40x4x64xf32>, tensor<64x1x1x64xf32>, tensor<4xi32> -> tensor<40x4x64xf32>
  %2 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

// Cross-entropy: every target is a class of the vocabulary or the ignore
// index.
// CHECK-LABEL: func @cross_entropy
// CHECK: te.check {{.*}} message "te.cross_entropy at {loc}: target[{0}] = {1} is outside [0, 1000) (the vocabulary) and is not the ignore index -1"
// CHECK-NEXT: te.cross_entropy
func.func @cross_entropy(%x: tensor<2x8x1000xbf16>, %t: tensor<2x8xi32>) {
  %l, %g = te.cross_entropy %x, %t ignore_index -1 : tensor<2x8x1000xbf16>, tensor<2x8xi32> -> tensor<2x8xf32>, tensor<2x8x1000xbf16>
  return
}

// -----

// Split over a group, the targets are classes of every rank's columns.
// CHECK-LABEL: func @vocab_parallel
// CHECK: te.check {{.*}} message "te.cross_entropy at {loc}: target[{0}] = {1} is outside [0, 4000) (the vocabulary) and is not the ignore index -100"
// CHECK-NEXT: te.cross_entropy
te.process_group @tp size 4
func.func @vocab_parallel(%x: tensor<8x1000xbf16>, %t: tensor<8xi64>) {
  %l, %g = te.cross_entropy %x, %t group @tp : tensor<8x1000xbf16>, tensor<8xi64> -> tensor<8xf32>, tensor<8x1000xf32>
  return
}

// -----

// Fused QKV RoPE: start positions keep every token within both freqs.
// CHECK-LABEL: func @qkv_rope
// CHECK: te.check {{.*}} message "te.qkv_rope at {loc}: sequence {0} spans positions [{1}, {2}) (start position and length), outside the 32 rows of freqs"
// CHECK: te.qkv_rope
func.func @qkv_rope(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>, %g: tensor<32x1x1x32xf32>, %sp: tensor<2xi32>) {
  %q, %k, %v = te.qkv_rope %x, %f, %g start_positions(%sp) format sbhd split [64, 32, 32]
      : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<32x1x1x32xf32>, tensor<2xi32>
      -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}
