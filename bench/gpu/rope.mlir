// te.rope and te.rope_backward on the cuda target at a Llama layer's sizes
// (sequence 2048, batch 2, 32 heads of 128, bf16): scripts/gpu-check.sh
// checks the GPU's values against the CPU's and times each entry
// (bench/gpu/torch_peers.py times the same rotation in torch).
func.func @rope_sbhd(%x: tensor<2048x2x32x128xbf16>, %f: tensor<2048x1x1x128xf32>) -> tensor<2048x2x32x128xbf16> {
  %y = te.rope %x, %f format sbhd : tensor<2048x2x32x128xbf16>, tensor<2048x1x1x128xf32> -> tensor<2048x2x32x128xbf16>
  return %y : tensor<2048x2x32x128xbf16>
}

func.func @drope_sbhd(%g: tensor<2048x2x32x128xbf16>, %f: tensor<2048x1x1x128xf32>) -> tensor<2048x2x32x128xbf16> {
  %dx = te.rope_backward %g, %f format sbhd : tensor<2048x2x32x128xbf16>, tensor<2048x1x1x128xf32> -> tensor<2048x2x32x128xbf16>
  return %dx : tensor<2048x2x32x128xbf16>
}

func.func @rope_thd(%x: tensor<4096x32x128xbf16>, %f: tensor<4096x1x1x128xf32>, %cu: tensor<9xi32>) -> tensor<4096x32x128xbf16> {
  %y = te.rope %x, %f cu_seqlens(%cu) format thd interleaved
      : tensor<4096x32x128xbf16>, tensor<4096x1x1x128xf32>, tensor<9xi32> -> tensor<4096x32x128xbf16>
  return %y : tensor<4096x32x128xbf16>
}

// TE's fused QKV RoPE at a GQA layer's sizes (8 query heads per key head
// group of 4, head dim 128; the key part with positions of its own freqs),
// forward and backward.
func.func @qkv_rope_sbhd(%x: tensor<2048x2x4x1280xbf16>, %qf: tensor<2048x1x1x128xf32>, %kf: tensor<4096x1x1x128xf32>) -> (tensor<2048x2x32x128xbf16>, tensor<2048x2x4x128xbf16>, tensor<2048x2x4x128xbf16>) {
  %q, %k, %v = te.qkv_rope %x, %qf, %kf format sbhd split [1024, 128, 128]
      : tensor<2048x2x4x1280xbf16>, tensor<2048x1x1x128xf32>, tensor<4096x1x1x128xf32>
      -> tensor<2048x2x32x128xbf16>, tensor<2048x2x4x128xbf16>, tensor<2048x2x4x128xbf16>
  return %q, %k, %v : tensor<2048x2x32x128xbf16>, tensor<2048x2x4x128xbf16>, tensor<2048x2x4x128xbf16>
}

func.func @dqkv_rope_bshd(%dq: tensor<2x2048x32x128xbf16>, %dk: tensor<2x2048x4x128xbf16>, %dv: tensor<2x2048x4x128xbf16>, %qf: tensor<2048x1x1x128xf32>, %kf: tensor<2048x1x1x128xf32>) -> tensor<2x2048x4x1280xbf16> {
  %g = te.qkv_rope_backward %dq, %dk, %dv, %qf, %kf format bshd split [1024, 128, 128] interleaved
      : tensor<2x2048x32x128xbf16>, tensor<2x2048x4x128xbf16>, tensor<2x2048x4x128xbf16>, tensor<2048x1x1x128xf32>, tensor<2048x1x1x128xf32>
      -> tensor<2x2048x4x1280xbf16>
  return %g : tensor<2x2048x4x1280xbf16>
}
