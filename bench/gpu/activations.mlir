// te.activation and te.activation_backward on the cuda target at sizes
// where bandwidth shows (TE's MLP: 8192 tokens, ffn 4096, bf16):
// scripts/gpu-check.sh compiles this for the GPU and the CPU, runs both on
// the same inputs, checks the GPU's values against the CPU's and times
// each GPU entry against a device-to-device copy.
func.func @gelu(%x: tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16> {
  %y = te.activation %x kind gelu : tensor<8192x4096xbf16> -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}

func.func @swiglu(%x: tensor<8192x8192xbf16>) -> tensor<8192x4096xbf16> {
  %y = te.activation %x kind swiglu : tensor<8192x8192xbf16> -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}

func.func @dgelu(%g: tensor<8192x4096xbf16>, %x: tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16> {
  %dx = te.activation_backward %g, %x kind gelu : tensor<8192x4096xbf16>, tensor<8192x4096xbf16> -> tensor<8192x4096xbf16>
  return %dx : tensor<8192x4096xbf16>
}

func.func @dswiglu(%g: tensor<8192x4096xbf16>, %x: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %dx = te.activation_backward %g, %x kind swiglu : tensor<8192x4096xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>
  return %dx : tensor<8192x8192xbf16>
}
