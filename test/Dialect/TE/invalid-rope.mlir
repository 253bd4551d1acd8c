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
