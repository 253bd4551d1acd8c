"""te_mlir.torch's TE modules and functions beyond attention and the norms:
Linear, LayerNormLinear and LayerNormMLP with TE's constructors, the
custom ops of activations, RoPE, cross-entropy and the GEMM (opcheck,
forward and backward against plain-torch versions of TE's formulas), TE's
import paths, the FP8 paths against te_mlir.ops, and torch.compile.

f32 comparisons: te sums in f32 in another order than torch, so values
agree to f32's tolerance (torch.testing's defaults, 1.3e-6 relative and
1e-5 absolute), and GEMM-sized sums a little wider."""

import math

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/bootstrap.sh installs "
    "it): te_mlir.torch is untested")
import torch.nn.functional as F  # noqa: E402

import te_mlir  # noqa: E402
import te_mlir.torch as tet  # noqa: E402
from te_mlir import ops  # noqa: E402
from te_mlir import recipe  # noqa: E402
from torch_refs import torch_activation, torch_norm, torch_rope  # noqa: E402

#: GEMM sums over a few dozen products in f32.
GEMM_TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def leaf(t):
    return t.detach().clone().requires_grad_()


# --- Custom ops -------------------------------------------------------------

def test_opcheck_new_ops():
    x = torch.randn(6, 32, requires_grad=True)
    for kind, params in (("swiglu", (None, None, None)),
                         ("gelu", (None, None, None)),
                         ("clamped_swiglu", (7.0, 1.702, 1.0))):
        torch.library.opcheck(torch.ops.te_mlir.activation,
                              (x, kind, *params))
    t = torch.randn(5, 2, 3, 16, requires_grad=True)
    freqs = tet.RotaryPositionEmbedding(16)(8)
    torch.library.opcheck(torch.ops.te_mlir.rope,
                          (t, freqs, None, None, "sbhd", False, 1, 0))
    qkv = torch.randn(5, 2, 3, 32, requires_grad=True)
    f6 = torch.rand(8, 1, 1, 6)
    torch.library.opcheck(torch.ops.te_mlir.qkv_rope,
                          (qkv, f6, f6, None, [16, 8, 8], "sbhd", False, 1,
                           0))
    torch.library.opcheck(torch.ops.te_mlir.qkv_rope_backward,
                          (torch.randn(5, 2, 6, 8), torch.randn(5, 2, 3, 8),
                           torch.randn(5, 2, 3, 8), f6, f6, [16, 8, 8],
                           "sbhd", False, 1, 0))
    logits = torch.randn(7, 11, requires_grad=True)
    target = torch.randint(0, 11, (7,))
    torch.library.opcheck(torch.ops.te_mlir.cross_entropy,
                          (logits, target, 0.1, False, -100, 0))
    w = torch.randn(12, 32, requires_grad=True)
    b = torch.randn(12, requires_grad=True)
    torch.library.opcheck(torch.ops.te_mlir.linear, (x, w, b))
    torch.library.opcheck(torch.ops.te_mlir.matmul,
                          (x.detach(), w.detach(), None, False, True, False))


@pytest.mark.parametrize("kind", ops.ACTIVATIONS)
def test_activation_matches_torch(kind):
    x = leaf(torch.randn(3, 5, 24) * 2)
    params = dict(limit=3.0) if kind == "clamped_swiglu" else {}
    y = tet.activation(x, kind, **params)
    xr = leaf(x)
    want = torch_activation(xr, kind, **params)
    torch.testing.assert_close(y, want)
    dy = torch.randn_like(y)
    y.backward(dy)
    want.backward(dy)
    torch.testing.assert_close(x.grad, xr.grad)
    with pytest.raises(ValueError, match="clamped_swiglu"):
        tet.activation(x, "gelu", limit=1.0)


@pytest.mark.parametrize("fmt,interleaved", [("sbhd", False),
                                              ("bshd", True)])
def test_rope_embedding_and_apply_match_te_formulas(fmt, interleaved):
    emb = tet.RotaryPositionEmbedding(32, rotary_percent=0.5,
                                      interleaved=interleaved)
    freqs = emb(12)
    # RotaryPositionEmbedding: positions times 1 / 10000^(2i / d').
    inv = 1.0 / 10000.0 ** (torch.arange(0, 16, 2).float() / 16)
    angles = torch.outer(torch.arange(12).float(), inv)
    want = (torch.stack((angles, angles), -1).reshape(12, 16) if interleaved
            else torch.cat((angles, angles), -1))
    torch.testing.assert_close(freqs, want.reshape(12, 1, 1, 16), rtol=0,
                               atol=0)
    shape = (10, 2, 3, 32) if fmt == "sbhd" else (2, 10, 3, 32)
    t = leaf(torch.randn(shape))
    from te_mlir.torch.attention.rope import apply_rotary_pos_emb
    y = apply_rotary_pos_emb(t, freqs, fmt, interleaved=interleaved,
                             fused=True)
    tr = leaf(t)
    want = torch_rope(tr, freqs, fmt, interleaved)
    torch.testing.assert_close(y, want)
    dy = torch.randn_like(y)
    y.backward(dy)
    want.backward(dy)
    torch.testing.assert_close(t.grad, tr.grad)
    with pytest.raises(ValueError, match="cu_seqlens"):
        apply_rotary_pos_emb(t, freqs, "thd")


def fused_qkv_rope_reference(qkv, q_freqs, k_freqs, splits, fmt,
                             interleaved):
    """TE's fused_qkv_rope_forward_kernel element by element (in f64): for
    each token and group h, the q, k and v parts of the row, each in
    chunks of d = v channels; channels below d2 of q and k rotate by their
    freqs at the token's position, the rest (and v) are copied."""
    x = qkv.double()
    if fmt == "bshd":
        x = x.transpose(0, 1)
    s, b, h, total = x.shape
    q_size, k_size, d = splits
    d2 = q_freqs.shape[-1]
    outs = []
    for offset, size, freqs in ((0, q_size, q_freqs),
                                (q_size, k_size, k_freqs),
                                (q_size + k_size, d, None)):
        out = torch.empty(s, b, h, size, dtype=torch.float64)
        for si in range(s):
            for bi in range(b):
                for hi in range(h):
                    row = x[si, bi, hi]
                    for i in range(0, size, d):
                        for j in range(d):
                            src = row[offset + i + j]
                            if freqs is None or j >= d2:
                                out[si, bi, hi, i + j] = src
                                continue
                            angle = freqs[si, 0, 0, j].double()
                            if not interleaved:
                                other = (-row[offset + i + j + d2 // 2]
                                         if j < d2 // 2 else
                                         row[offset + i + j - d2 // 2])
                            else:
                                other = (-row[offset + i + j + 1]
                                         if j % 2 == 0 else
                                         row[offset + i + j - 1])
                            out[si, bi, hi, i + j] = (src * torch.cos(angle)
                                                      + other
                                                      * torch.sin(angle))
        heads = h * size // k_size if size != d or freqs is not None else h
        out = out.reshape(s, b, heads, size * h // heads)
        outs.append(out.transpose(0, 1) if fmt == "bshd" else out)
    return outs


@pytest.mark.parametrize("fmt,interleaved,splits", [
    ("sbhd", False, [16, 8, 8]), ("bshd", True, [16, 8, 8]),
    ("sbhd", False, [32, 16, 8])])
def test_fused_qkv_rope_matches_te_kernel(fmt, interleaved, splits):
    """apply_fused_qkv_rotary_pos_emb: TE's grouped QKV layout (2 query
    heads per group), a rotary fraction (d2 6 of d 8), q and k with their
    own freqs, v copied; key heads of two d-chunks where k = 2 v; the
    gradient is the reference's."""
    from te_mlir.torch.attention.rope import apply_fused_qkv_rotary_pos_emb
    total = sum(splits)
    shape = (5, 2, 3, total) if fmt == "sbhd" else (2, 5, 3, total)
    qkv = leaf(torch.randn(shape))
    q_freqs = torch.rand(7, 1, 1, 6) * 4
    k_freqs = torch.rand(7, 1, 1, 6) * 4
    q, k, v = apply_fused_qkv_rotary_pos_emb(qkv, q_freqs, k_freqs, splits,
                                             fmt, interleaved=interleaved)
    lead = list(shape[:2])
    q_size, k_size, v_size = splits
    assert list(q.shape) == lead + [3 * q_size // k_size, k_size]
    assert list(k.shape) == lead + [3, k_size]
    assert list(v.shape) == lead + [3, v_size]
    ref = leaf(qkv.double())
    want = fused_qkv_rope_reference(ref, q_freqs, k_freqs, splits, fmt,
                                    interleaved)
    for got, exp in zip((q, k, v), want):
        torch.testing.assert_close(got.double(), exp, rtol=1e-6, atol=1e-6)
    grads = [torch.randn_like(t) for t in (q, k, v)]
    torch.autograd.backward((q, k, v), grads)
    torch.autograd.backward(want, [g.double() for g in grads])
    torch.testing.assert_close(qkv.grad.double(), ref.grad, rtol=1e-6,
                               atol=1e-6)
    with pytest.raises(ValueError, match="sum to qkv's last dimension"):
        apply_fused_qkv_rotary_pos_emb(qkv, q_freqs, k_freqs, [16, 8, 4])
    with pytest.raises(ValueError, match="'sbhd' or 'bshd'"):
        apply_fused_qkv_rotary_pos_emb(qkv, q_freqs, k_freqs, splits, "thd")


def test_rope_position_interpolation():
    emb = tet.RotaryPositionEmbedding(8, seq_len_interpolation_factor=2,
                                      pretrained_max_position_embeddings=4)
    inv = emb.inv_freq
    # Within pretrained * factor: positions / factor; beyond: scaled to
    # fit the pretrained length.
    torch.testing.assert_close(emb(6)[:, 0, 0, :4],
                               torch.outer(torch.arange(6.) / 2, inv))
    torch.testing.assert_close(emb(16)[:, 0, 0, :4],
                               torch.outer(torch.arange(16.) / 4, inv))


def test_parallel_cross_entropy_matches_torch_per_token():
    from te_mlir.torch.cross_entropy import parallel_cross_entropy
    logits = leaf(torch.randn(2, 5, 40) * 3)
    target = torch.randint(0, 40, (2, 5))
    target[0, 1] = -100
    loss = parallel_cross_entropy(logits, target, 0.1)
    lr = leaf(logits)
    want = F.cross_entropy(lr.reshape(10, 40), target.reshape(10),
                           label_smoothing=0.1, reduction="none",
                           ignore_index=-100).reshape(2, 5)
    torch.testing.assert_close(loss, want)
    dloss = torch.randn(2, 5)
    loss.backward(dloss)
    want.backward(dloss)
    torch.testing.assert_close(logits.grad, lr.grad)
    # reduce_loss: the mean over the tokens not ignored (TE's
    # n_non_ignore), torch's mean; its gradient too.
    logits.grad = None
    mean = parallel_cross_entropy(logits, target, 0.1, True)
    lr2 = leaf(logits)
    want_mean = F.cross_entropy(lr2.reshape(10, 40), target.reshape(10),
                                label_smoothing=0.1)
    # TE's shape: the sum divided by a one-element count.
    assert mean.shape == (1,)
    torch.testing.assert_close(mean, want_mean.reshape(1))
    mean.backward()
    want_mean.backward()
    torch.testing.assert_close(logits.grad, lr2.grad)


def test_parallel_cross_entropy_gradient_rounds_once():
    """bf16 logits: the gradient stays f32 through the backward and is
    rounded once to bf16, as TE's autograd returns it."""
    from te_mlir.torch.cross_entropy import parallel_cross_entropy
    logits = leaf((torch.randn(3, 4, 64) * 3).to(torch.bfloat16))
    target = torch.randint(0, 64, (3, 4))
    dloss = torch.randn(3, 4)
    parallel_cross_entropy(logits, target).backward(dloss)
    assert logits.grad.dtype == torch.bfloat16
    x = logits.detach().float().reshape(12, 64)
    p = torch.softmax(x.double(), dim=-1)
    p[torch.arange(12), target.reshape(12)] -= 1
    want = (p * dloss.reshape(12, 1).double()).reshape(3, 4, 64)
    # f32's error in the softmax, then one bf16 rounding.
    err = (logits.grad.double() - want).abs()
    assert (err <= want.abs() * 2.0 ** -8 + 1e-5).all()


# --- Linear ------------------------------------------------------------------

def test_linear_takes_te_arguments_in_te_order():
    # TE's third parameter is sequence_parallel: the bias stays.
    layer = tet.Linear(256, 128, False)
    assert layer.bias is not None and torch.equal(layer.bias,
                                                  torch.zeros(128))
    # TE's init: normal(0, 0.023).
    assert abs(layer.weight.std().item() - 0.023) < 0.001
    assert abs(layer.weight.mean().item()) < 0.001
    layer = tet.Linear(8, 4, init_method=torch.nn.init.ones_, bias=False,
                       return_bias=True, params_dtype=torch.bfloat16)
    assert torch.equal(layer.weight, torch.ones(4, 8, dtype=torch.bfloat16))
    assert layer.bias is None
    with pytest.raises(NotImplementedError, match="tp_size"):
        tet.Linear(8, 4, tp_size=2)
    with pytest.raises(NotImplementedError, match="ub_overlap_ag"):
        tet.Linear(8, 4, ub_overlap_ag=True)
    with pytest.raises(te_mlir.DeviceError, match="CPU"):
        tet.Linear(8, 4, device="cuda")
    with pytest.raises(NotImplementedError, match="fp8_output"):
        tet.Linear(8, 4)(torch.randn(2, 8), fp8_output=True)
    with pytest.raises(TypeError, match="torch.float64"):
        tet.Linear(8, 4)(torch.randn(2, 8, dtype=torch.float64))


def test_linear_return_bias_and_autocast():
    layer = tet.Linear(16, 8, return_bias=True)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(3, 16)
    y, b = layer(x, is_first_microbatch=True)
    torch.testing.assert_close(y, F.linear(x, layer.weight), **GEMM_TOL)
    assert b is layer.bias or torch.equal(b, layer.bias)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, b = layer(x)
    assert y.dtype == torch.bfloat16 and b.dtype == torch.bfloat16


# --- LayerNormLinear and LayerNormMLP ----------------------------------------

def perturbed(module):
    """Nonzero biases and non-unit norm weights, so that every parameter
    shows in the result."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.add_(torch.randn_like(p) * (0.3 if "layer_norm" in name
                                          else 0.05))
    return module


def reference_grads(module, out, inputs, dy):
    out.backward(dy)
    return [t.grad for t in inputs] + [p.grad for p in module.parameters()]


@pytest.mark.parametrize("normalization,zero_centered",
                         [("LayerNorm", False), ("RMSNorm", True)])
def test_layernorm_linear_matches_torch(normalization, zero_centered):
    layer = perturbed(tet.LayerNormLinear(
        32, 24, eps=1e-4, normalization=normalization,
        zero_centered_gamma=zero_centered, return_layernorm_output=True))
    names = [n for n, _ in layer.named_parameters()]
    assert names == (["layer_norm_weight"] +
                     (["layer_norm_bias"] if normalization == "LayerNorm"
                      else []) + ["weight", "bias"])
    x = leaf(torch.randn(2, 5, 32) * 2 + 1)
    y, ln_out = layer(x)
    ref = {n: leaf(p) for n, p in layer.named_parameters()}
    xr = leaf(x)
    ln_want = torch_norm(xr, normalization, ref["layer_norm_weight"],
                         ref.get("layer_norm_bias"), 1e-4, zero_centered)
    want = F.linear(ln_want, ref["weight"], ref["bias"])
    torch.testing.assert_close(ln_out, ln_want)
    torch.testing.assert_close(y, want, **GEMM_TOL)
    # A gradient of the norm's output adds to the input's, as in TE.
    dy, dln = torch.randn_like(y), torch.randn_like(ln_out)
    torch.autograd.backward([y, ln_out], [dy, dln])
    torch.autograd.backward([want, ln_want], [dy, dln])
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
    for n, p in layer.named_parameters():
        torch.testing.assert_close(p.grad, ref[n].grad, rtol=1e-4,
                                   atol=1e-4, msg=n)


@pytest.mark.parametrize("activation", ops.ACTIVATIONS)
def test_layernorm_mlp_matches_torch(activation):
    params = ({"limit": 2.0, "alpha": 1.5} if activation == "clamped_swiglu"
              else None)
    mlp = perturbed(tet.LayerNormMLP(16, 24, activation=activation,
                                     activation_params=params,
                                     normalization="RMSNorm"))
    gated = activation in ops.GATED_ACTIVATIONS
    assert mlp.fc1_weight.shape == ((48 if gated else 24), 16)
    assert mlp.fc2_weight.shape == (16, 24)
    x = leaf(torch.randn(3, 4, 16))
    y = mlp(x)
    ref = {n: leaf(p) for n, p in mlp.named_parameters()}
    xr = leaf(x)
    z = torch_norm(xr, "RMSNorm", ref["layer_norm_weight"], None, 1e-5,
                   False)
    h = F.linear(z, ref["fc1_weight"], ref["fc1_bias"])
    a = torch_activation(h, activation, **(params or {}))
    want = F.linear(a, ref["fc2_weight"], ref["fc2_bias"])
    torch.testing.assert_close(y, want, **GEMM_TOL)
    dy = torch.randn_like(y)
    y.backward(dy)
    want.backward(dy)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
    for n, p in mlp.named_parameters():
        torch.testing.assert_close(p.grad, ref[n].grad, rtol=1e-4,
                                   atol=1e-4, msg=n)


def test_layernorm_mlp_arguments():
    mlp = tet.LayerNormMLP(16, 32, return_bias=True,
                           return_layernorm_output=True)
    assert mlp.activation == "gelu" and mlp.layer_norm_bias is not None
    y, bias, ln_out = mlp(torch.randn(2, 16))
    assert bias is mlp.fc2_bias or torch.equal(bias, mlp.fc2_bias)
    assert ln_out.shape == (2, 16)
    glu = tet.LayerNormMLP(16, 32, activation="glu")
    assert glu.fc1_weight.shape == (64, 16)
    with pytest.raises(ValueError, match="unknown activation"):
        tet.LayerNormMLP(16, 32, activation="tanh")
    with pytest.raises(ValueError, match="normalization"):
        tet.LayerNormMLP(16, 32, normalization="BatchNorm")
    with pytest.raises(ValueError, match="clamped_swiglu"):
        tet.LayerNormMLP(16, 32, activation_params={"limit": 1.0})
    with pytest.raises(NotImplementedError, match="set_parallel_mode"):
        tet.LayerNormMLP(16, 32, set_parallel_mode=True)
    with pytest.raises(ValueError, match="hidden_size=16"):
        tet.LayerNormMLP(16, 32)(torch.randn(2, 8))


# --- FP8 ------------------------------------------------------------------

def test_layernorm_linear_delayed_scaling_fuses_the_cast_into_the_norm():
    layer = perturbed(tet.LayerNormLinear(64, 32,
                                          params_dtype=torch.bfloat16))
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    r = recipe.DelayedScaling(amax_history_len=4)
    w, b = layer.weight.detach(), layer.bias.detach()
    ln_w, ln_b = layer.layer_norm_weight.detach(), \
        layer.layer_norm_bias.detach()
    scales = dict(input=1.0, weight=1.0)
    for step in range(2):
        with tet.fp8_autocast(fp8_recipe=r):
            y = layer(x)
        # The norm casts its f32 output with the input quantizer's scale
        # (TE's fused kernel), then the FP8 GEMM.
        zq, _mu, _rs = ops.layer_norm(x, ln_w, ln_b, quantize="per_tensor",
                                      scale=scales["input"], usage="both")
        wq = ops.quantize(w, "e4m3", scale=scales["weight"], usage="both")
        want = ops.scaled_matmul(zq, wq, transpose_b=True, bias=b,
                                 out_dtype="bf16")
        torch.testing.assert_close(y, want, rtol=0, atol=0)
        # Casting the norm's output rounded to bf16 (the unfused path)
        # gives other bits.
        z, _mu, _rs = ops.layer_norm(x, ln_w, ln_b)
        unfused = ops.quantize(z, scale=scales["input"])
        assert not torch.equal(unfused.data.view(torch.uint8),
                               zq.data.view(torch.uint8))
        q = layer.quantizers
        assert q["input"].amax_history[0] == zq.amax.item()
        scales = dict(input=float(q["input"].scale),
                      weight=float(q["weight"].scale))
    assert scales["input"] != 1.0
    # A new but equal recipe keeps the state.
    before = layer.quantizers["input"].amax_history.copy()
    with tet.fp8_autocast(fp8_recipe=recipe.DelayedScaling(
            amax_history_len=4)):
        layer(x)
    assert (layer.quantizers["input"].amax_history[1:] == before[:3]).all()


RECIPES = [recipe.DelayedScaling(), recipe.Float8CurrentScaling(),
           recipe.MXFP8BlockScaling(), recipe.Float8BlockScaling()]


@pytest.mark.parametrize("r", RECIPES, ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("activation", ["swiglu", "gelu"])
def test_layernorm_mlp_fp8_stays_close_to_high_precision(r, activation):
    mlp = perturbed(tet.LayerNormMLP(64, 64, activation=activation))
    x = leaf(torch.randn(32, 64))
    dy = torch.randn(32, 64)
    y = mlp(x)
    grads = reference_grads(mlp, y, [x], dy)
    x.grad = None
    mlp.zero_grad()
    for _ in range(2):  # DelayedScaling's second step has real scales
        x.grad = None
        mlp.zero_grad()
        with tet.fp8_autocast(fp8_recipe=r):
            y8 = mlp(x)
        y8.backward(dy)
    got = [x.grad] + [p.grad for p in mlp.parameters()]
    # E4M3 carries 3 mantissa bits (6% relative rounding at worst, ~2%
    # on average), E5M2 2; over sums of many products the errors average:
    # a relative error of the whole tensor well under 10%.
    rel = lambda a, b: ((a - b).norm() / b.norm()).item()
    assert rel(y8, y) < 0.1
    names = ["x"] + [n for n, _ in mlp.named_parameters()]
    for name, g8, g in zip(names, got, grads):
        assert rel(g8, g) < 0.15, name


@pytest.mark.parametrize("override", ["high_precision", "dequantized"])
def test_fp8_backward_overrides_and_layernorm_output(override):
    r = recipe.Float8CurrentScaling(backward_override=override)
    rel = lambda a, b: ((a - b).norm() / b.norm()).item()
    for module in (tet.LayerNormLinear(64, 32, return_layernorm_output=True),
                   tet.LayerNormMLP(64, 32, activation="sreglu",
                                    return_layernorm_output=True)):
        module = perturbed(module)
        x = leaf(torch.randn(32, 64))
        y, ln_out = module(x)
        dy, dln = torch.randn_like(y), torch.randn_like(ln_out)
        torch.autograd.backward([y, ln_out], [dy, dln])
        want = [x.grad] + [p.grad for p in module.parameters()]
        x.grad = None
        module.zero_grad()
        with tet.fp8_autocast(fp8_recipe=r):
            y8, ln8 = module(x)
        torch.autograd.backward([y8, ln8], [dy, dln])
        # The norm's output is returned in high precision.
        torch.testing.assert_close(ln8, ln_out)
        assert rel(y8, y) < 0.1
        got = [x.grad] + [p.grad for p in module.parameters()]
        exact = (override == "high_precision" and
                 isinstance(module, tet.LayerNormLinear))
        for g8, g in zip(got, want):
            if exact:
                # The backward GEMMs on the unquantized tensors and the
                # norm's backward: the high-precision layer's gradients.
                torch.testing.assert_close(g8, g, rtol=1e-4, atol=1e-4)
            else:
                assert 0 < rel(g8, g) < 0.15


def test_layernorm_mlp_fp8_matches_te_ops_under_current_scaling():
    mlp = perturbed(tet.LayerNormMLP(64, 32, activation="gelu",
                                     normalization="RMSNorm"))
    x = torch.randn(32, 64)
    with tet.fp8_autocast(fp8_recipe=recipe.Float8CurrentScaling()):
        y = mlp(x)
    p = {n: t.detach() for n, t in mlp.named_parameters()}
    zq, _ = ops.rms_norm(x, p["layer_norm_weight"], quantize="per_tensor",
                         usage="both")
    w1q = ops.quantize(p["fc1_weight"], usage="both")
    h = ops.scaled_matmul(zq, w1q, transpose_b=True, bias=p["fc1_bias"],
                          out_dtype="f32")
    aq = ops.activation(h, "gelu", quantize="per_tensor", usage="both")
    w2q = ops.quantize(p["fc2_weight"], usage="both")
    want = ops.scaled_matmul(aq, w2q, transpose_b=True, bias=p["fc2_bias"],
                             out_dtype="f32")
    torch.testing.assert_close(y, want, rtol=0, atol=0)


# --- Import paths and torch.compile ---------------------------------------

def test_te_import_paths():
    from te_mlir.torch.attention import DotProductAttention  # noqa: F401
    from te_mlir.torch.attention.dot_product_attention import \
        DotProductAttention as D  # noqa: F401
    from te_mlir.torch.attention.rope import (  # noqa: F401
        RotaryPositionEmbedding, apply_rotary_pos_emb)
    from te_mlir.torch.module import (  # noqa: F401
        LayerNorm, LayerNormLinear, LayerNormMLP, Linear, RMSNorm)
    assert D is tet.DotProductAttention
    # TE's module paths, by attribute too.
    assert callable(tet.cross_entropy.parallel_cross_entropy)
    assert tet.module.LayerNormMLP is tet.LayerNormMLP
    assert tet.attention.rope.RotaryPositionEmbedding is \
        tet.RotaryPositionEmbedding
    # The old function spelling still calls attention.
    q = torch.randn(1, 4, 2, 8)
    torch.testing.assert_close(tet.attention(q, q, q),
                               tet.dot_product_attention(q, q, q))


def test_compile_traces_layernorm_mlp():
    mlp = tet.LayerNormMLP(32, 48, activation="swiglu",
                           normalization="RMSNorm")
    x = leaf(torch.randn(4, 32))
    want = mlp(x)
    compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)
    y = compiled(x)
    torch.testing.assert_close(y, want, rtol=0, atol=0)
    y.sum().backward()
    assert x.grad is not None and math.isfinite(x.grad.sum().item())
