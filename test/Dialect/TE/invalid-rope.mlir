// te.rope and te.rope_backward reject bad formats, shapes and context-parallel settings with a message that names the fix.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @bhsd(%x: tensor<2x4x16x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{format bhsd is not one of TE's RoPE formats (sbhd, bshd, thd)}}
  %0 = te.rope %x, %f format bhsd : tensor<2x4x16x64xbf16>, tensor<64x1x1x64xf32> -> tensor<2x4x16x64xbf16>
  return
}

// -----

func.func @rank(%x: tensor<16x4x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{format sbhd takes a rank-4 input ([s, b, h, d]), got 'tensor<16x4x64xbf16>'}}
  %0 = te.rope %x, %f format sbhd : tensor<16x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x4x64xbf16>
  return
}

// -----

func.func @freqs_shape(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x64xf32>) {
  // expected-error @+1 {{'freqs' must be f32 [s2, 1, 1, d2] (TE's RotaryPositionEmbedding output), got 'tensor<64x64xf32>'}}
  %0 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @rotary_dim(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x66xf32>) {
  // expected-error @+1 {{the rotary dimension d2 (the last of 'freqs', 66) must be even, > 0 and <= the head dimension d (64)}}
  %0 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x66xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @thd_needs_cu(%x: tensor<40x4x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{format thd needs cu_seqlens(%cu) (i32 [sequences + 1])}}
  %0 = te.rope %x, %f format thd : tensor<40x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<40x4x64xbf16>
  return
}

// -----

func.func @start_count(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>, %sp: tensor<3xi32>) {
  // expected-error @+1 {{'start_positions' must have one entry per sequence (2), got 'tensor<3xi32>'}}
  %0 = te.rope %x, %f start_positions(%sp) format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32>, tensor<3xi32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @cp_rank(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{'cp_size' must be >= 1 and 'cp_rank' in [0, cp_size), got 2 and 2}}
  %0 = te.rope %x, %f format sbhd cp_size 2 cp_rank 2 : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @too_few_positions(%x: tensor<16x2x4x64xbf16>, %f: tensor<24x1x1x64xf32>) {
  // expected-error @+1 {{'freqs' has 24 positions, fewer than the 32 the sequence needs (s * cp_size)}}
  %0 = te.rope_backward %x, %f format sbhd cp_size 2 cp_rank 0 : tensor<16x2x4x64xbf16>, tensor<24x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @result_type(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{the result must have the input's type 'tensor<16x2x4x64xbf16>', got 'tensor<16x2x4x64xf32>'}}
  %0 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xf32>
  return
}

// -----

func.func @cu_seqlens_entries(%x: tensor<40x4x64xbf16>, %f: tensor<64x1x1x64xf32>, %cu: tensor<1xi32>) {
  // expected-error @+1 {{'cu_seqlens' must have sequences + 1 >= 2 entries, got 'tensor<1xi32>'}}
  %0 = te.rope %x, %f cu_seqlens(%cu) format thd : tensor<40x4x64xbf16>, tensor<64x1x1x64xf32>, tensor<1xi32> -> tensor<40x4x64xbf16>
  return
}

// -----

func.func @no_positions(%x: tensor<16x2x4x64xbf16>, %f: tensor<0x1x1x64xf32>, %sp: tensor<2xi32>) {
  // expected-error @+1 {{'freqs' must have at least one position, got 'tensor<0x1x1x64xf32>'}}
  %0 = te.rope %x, %f start_positions(%sp) format sbhd : tensor<16x2x4x64xbf16>, tensor<0x1x1x64xf32>, tensor<2xi32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @negative_cp_size(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>) {
  // expected-error @+1 {{'cp_size' must be >= 1 and 'cp_rank' in [0, cp_size), got -1 and 0}}
  %0 = te.rope %x, %f format sbhd cp_size -1 : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return
}

// -----

func.func @qkv_thd(%x: tensor<40x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{format thd is not one of TE's fused QKV RoPE formats (sbhd, bshd)}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format thd split [64, 32, 32] : tensor<40x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<40x8x32xbf16>, tensor<40x4x32xbf16>, tensor<40x4x32xbf16>
  return
}

// -----

func.func @qkv_split_sum(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'split' [64, 32, 16] must sum to the last dimension of 'qkv' (128)}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 16] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x16xbf16>
  return
}

// -----

func.func @qkv_split_multiple(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x16xf32>) {
  // expected-error @+1 {{the query size 48 must be a multiple of the key size 40, and that of the value size 40 (the head dimension)}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [48, 40, 40] : tensor<16x2x4x128xbf16>, tensor<64x1x1x16xf32>, tensor<64x1x1x16xf32> -> tensor<16x2x4x48xbf16>, tensor<16x2x4x40xbf16>, tensor<16x2x4x40xbf16>
  return
}

// -----

func.func @qkv_result(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'q' must be 'tensor<16x2x8x32xbf16>' (TE's layout of the queries), got 'tensor<16x2x4x64xbf16>'}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x4x64xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_freqs_d2(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>, %g: tensor<64x1x1x16xf32>) {
  // expected-error @+1 {{'q_freqs' and 'k_freqs' must rotate as many channels (TE takes d2 from q_freqs for both), got 32 and 16}}
  %q, %k, %v = te.qkv_rope %x, %f, %g format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x16xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_start_and_cp(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>, %sp: tensor<2xi32>) {
  // expected-error @+1 {{start_positions are for inference and exclude cp_size > 1 (as TE asserts)}}
  %q, %k, %v = te.qkv_rope %x, %f, %f start_positions(%sp) format sbhd split [64, 32, 32] cp_size 2 cp_rank 0 : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32>, tensor<2xi32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_backward_dv(%q: tensor<16x2x8x32xbf16>, %k: tensor<16x2x4x32xbf16>, %v: tensor<16x2x4x16xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'dv' must be 'tensor<16x2x4x32xbf16>' (TE's layout of the values), got 'tensor<16x2x4x16xbf16>'}}
  %d = te.qkv_rope_backward %q, %k, %v, %f, %f format sbhd split [64, 32, 32] : tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x16xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x4x128xbf16>
  return
}

// -----

func.func @qkv_short_freqs(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>, %g: tensor<8x1x1x32xf32>) {
  // expected-error @+1 {{'k_freqs' has 8 positions, fewer than the 16 the sequence needs (s)}}
  %q, %k, %v = te.qkv_rope %x, %f, %g format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<8x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_empty(%x: tensor<0x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'qkv' must have no empty dimension, got 'tensor<0x2x4x128xbf16>'}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] : tensor<0x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<0x2x8x32xbf16>, tensor<0x2x4x32xbf16>, tensor<0x2x4x32xbf16>
  return
}

// -----

func.func @qkv_rank(%x: tensor<16x8x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'qkv' must be [s, b, h, q + k + v], got 'tensor<16x8x128xbf16>'}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] : tensor<16x8x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_split_zero(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'split' must be three sizes [q, k, v] > 0 (TE's qkv_split_arg_list), got [96, 32, 0]}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [96, 32, 0] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_no_positions(%x: tensor<16x2x4x128xbf16>, %f: tensor<0x1x1x32xf32>) {
  // expected-error @+1 {{'q_freqs' must be f32 [s2, 1, 1, d2] with s2 >= 1}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<0x1x1x32xf32>, tensor<0x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>, tensor<16x2x4x32xbf16>
  return
}

// -----

func.func @qkv_cp_odd(%x: tensor<15x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{with cp_size 2 each rank holds two chunks of every sequence, so the sequence dimension must be even, got 15}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] cp_size 2 cp_rank 1 : tensor<15x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<15x2x8x32xbf16>, tensor<15x2x4x32xbf16>, tensor<15x2x4x32xbf16>
  return
}

// -----

func.func @qkv_k_layout(%x: tensor<16x2x4x128xbf16>, %f: tensor<64x1x1x32xf32>) {
  // expected-error @+1 {{'k' must be 'tensor<16x2x4x32xbf16>' (TE's layout of the keys), got 'tensor<16x2x8x32xbf16>'}}
  %q, %k, %v = te.qkv_rope %x, %f, %f format sbhd split [64, 32, 32] : tensor<16x2x4x128xbf16>, tensor<64x1x1x32xf32>, tensor<64x1x1x32xf32> -> tensor<16x2x8x32xbf16>, tensor<16x2x8x32xbf16>, tensor<16x2x4x32xbf16>
  return
}
