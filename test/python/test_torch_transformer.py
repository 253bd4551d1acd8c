"""te_mlir.torch's MultiheadAttention and TransformerLayer against the same
layers written in plain torch from TE's code (torch_refs), forward and
backward; FP8 state in state_dict; the FP8 queries and contexts of
te_mlir.torch.fp8; torch.compile under fp8_autocast.

Tolerances: f32 throughout; te's GEMMs, norms and attention sum in other
orders than torch's, and a layer chains a dozen of them, so values agree
to 1e-5 relative and absolute (a few hundred ulps of the sums), and
gradients, which go through twice as many, to 1e-4."""

import io

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/bootstrap.sh installs "
    "it): te_mlir.torch is untested")
import torch.nn.functional as F  # noqa: E402

import te_mlir.torch as te  # noqa: E402
from te_mlir import recipe  # noqa: E402
from torch_refs import split_qkv, torch_activation, torch_attention, \
    torch_norm, torch_rope  # noqa: E402

FWD = dict(rtol=1e-5, atol=1e-5)
BWD = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def perturb(module):
    """Nonzero biases and non-unit norm weights."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.add_(torch.randn_like(p) * (0.3 if "norm" in name else 0.05))
    return module


def reference_parameters(module):
    return {n: p.detach().clone().requires_grad_()
            for n, p in module.named_parameters()}


def qkv_weight(p, prefix):
    """The fused QKV weight and bias: one parameter, or TE's split ones
    concatenated."""
    if prefix + "weight" in p:
        return p[prefix + "weight"], p[prefix + "bias"]
    names = ("query", "key", "value")
    return (torch.cat([p[f"{prefix}{n}_weight"] for n in names]),
            torch.cat([p[f"{prefix}{n}_bias"] for n in names]))


def torch_self_attention(p, x, prefix, heads, groups, d, fmt, norm,
                         interleaved, freqs=None, eps=1e-5):
    ln = torch_norm(x, norm, p[prefix + "layernorm_qkv.layer_norm_weight"],
                    p.get(prefix + "layernorm_qkv.layer_norm_bias"), eps,
                    False)
    w, b = qkv_weight(p, prefix + "layernorm_qkv.")
    q, k, v = split_qkv(F.linear(ln, w, b), heads, groups, d, interleaved)
    if freqs is not None:
        q, k = torch_rope(q, freqs, fmt), torch_rope(k, freqs, fmt)
    o = torch_attention(q, k, v, fmt)
    return F.linear(o, p[prefix + "proj.weight"]), p[prefix + "proj.bias"]


def torch_mlp(p, x, prefix, norm, activation, eps=1e-5):
    ln = torch_norm(x, norm, p[prefix + "layer_norm_weight"],
                    p.get(prefix + "layer_norm_bias"), eps, False)
    h = F.linear(ln, p[prefix + "fc1_weight"], p[prefix + "fc1_bias"])
    return (F.linear(torch_activation(h, activation), p[prefix +
                                                          "fc2_weight"]),
            p[prefix + "fc2_bias"])


def compare(module, out, want, inputs, ref_inputs, ref):
    torch.testing.assert_close(out, want, **FWD)
    dy = torch.randn_like(out)
    out.backward(dy)
    want.backward(dy)
    for x, xr in zip(inputs, ref_inputs):
        torch.testing.assert_close(x.grad, xr.grad, **BWD)
    for n, param in module.named_parameters():
        torch.testing.assert_close(param.grad, ref[n].grad, **BWD, msg=n)


# --- MultiheadAttention ------------------------------------------------------

@pytest.mark.parametrize("fmt,fused,interleaved,norm", [
    ("sbhd", False, False, "LayerNorm"),
    ("bshd", True, True, "RMSNorm"),
    ("sbhd", True, False, "RMSNorm")])
def test_multihead_attention_matches_torch(fmt, fused, interleaved, norm):
    heads, groups, d = 4, 2, 8
    mha = perturb(te.MultiheadAttention(
        32, heads, num_gqa_groups=groups, attention_dropout=0.0,
        input_layernorm=True, fuse_qkv_params=fused,
        qkv_weight_interleaved=interleaved, normalization=norm,
        qkv_format=fmt, return_bias=True))
    names = {n for n, _ in mha.named_parameters()}
    assert ("layernorm_qkv.weight" in names) == fused
    assert ("layernorm_qkv.query_weight" in names) == (not fused)
    x = torch.randn((6, 2, 32) if fmt == "sbhd" else (2, 6, 32),
                    requires_grad=True)
    freqs = te.RotaryPositionEmbedding(d)(6)
    out, bias = mha(x, rotary_pos_emb=freqs)
    ref = reference_parameters(mha)
    xr = x.detach().clone().requires_grad_()
    want, want_bias = torch_self_attention(ref, xr, "", heads, groups, d,
                                           fmt, norm, interleaved, freqs)
    torch.testing.assert_close(bias, want_bias)
    compare(mha, out + bias, want + want_bias, [x], [xr], ref)


def test_multihead_attention_cross_and_qk_norm():
    mha = perturb(te.MultiheadAttention(
        32, 4, attention_dropout=0.0, attention_type="cross",
        input_layernorm=True, qk_norm_type="RMSNorm", qk_norm_eps=1e-6))
    names = {n for n, _ in mha.named_parameters()}
    assert {"layernorm_query.query_weight", "key_value.key_weight",
            "key_value.value_weight", "q_norm.weight",
            "k_norm.weight"} <= names
    x = torch.randn(5, 2, 32, requires_grad=True)
    enc = torch.randn(7, 2, 32, requires_grad=True)
    out = mha(x, encoder_output=enc, attn_mask_type="no_mask")
    p = reference_parameters(mha)
    xr, er = (t.detach().clone().requires_grad_() for t in (x, enc))
    ln = torch_norm(xr, "LayerNorm", p["layernorm_query.layer_norm_weight"],
                    p["layernorm_query.layer_norm_bias"], 1e-5, False)
    q = F.linear(ln, p["layernorm_query.query_weight"],
                 p["layernorm_query.query_bias"]).reshape(5, 2, 4, 8)
    k = F.linear(er, p["key_value.key_weight"],
                 p["key_value.key_bias"]).reshape(7, 2, 4, 8)
    v = F.linear(er, p["key_value.value_weight"],
                 p["key_value.value_bias"]).reshape(7, 2, 4, 8)
    q = F.rms_norm(q, (8,), p["q_norm.weight"], 1e-6)
    k = F.rms_norm(k, (8,), p["k_norm.weight"], 1e-6)
    o = torch_attention(q, k, v, "sbhd", causal=False)
    want = F.linear(o, p["proj.weight"], p["proj.bias"])
    compare(mha, out, want, [x, enc], [xr, er], p)


def test_multihead_attention_refusals():
    with pytest.raises(NotImplementedError, match="L2Normalization"):
        te.MultiheadAttention(32, 4, qk_norm_type="L2Normalization")
    with pytest.raises(NotImplementedError, match="tp_size"):
        te.MultiheadAttention(32, 4, tp_size=2)
    mha = te.MultiheadAttention(32, 4)
    with pytest.raises(NotImplementedError, match="inference_params"):
        mha(torch.randn(4, 1, 32), inference_params=object())
    with pytest.raises(ValueError, match="encoder_output"):
        te.MultiheadAttention(32, 4, attention_type="cross")(
            torch.randn(4, 1, 32))


# --- TransformerLayer ------------------------------------------------------

def llama_layer(**kw):
    args = dict(hidden_dropout=0.0, attention_dropout=0.0,
                num_gqa_groups=2, normalization="RMSNorm",
                activation="swiglu", bias=False)
    args.update(kw)
    # MXFP8 needs every GEMM dimension a multiple of 32, as in TE.
    return perturb(te.TransformerLayer(32, 64, 4, **args))


def torch_layer(layer, p, x, norm, activation, fmt="sbhd", freqs=None,
                post_ln=False, parallel=False):
    """TE's TransformerLayer forward (no dropout) in plain torch."""
    heads, groups = 4, layer.self_attention.num_gqa_groups
    interleaved = layer.self_attention.qkv_weight_interleaved
    prefix = "self_attention."
    attn, attn_b = torch_self_attention(p, x, prefix, heads, groups, 8, fmt,
                                        norm, interleaved, freqs)
    attn_b = attn_b if attn_b is not None else 0
    if parallel:
        mlp, mlp_b = torch_mlp(p, x, "layernorm_mlp.", norm, activation)
        return x + attn + attn_b + mlp + mlp_b
    residual = x
    if post_ln:
        residual = torch_norm(
            x, norm, p[prefix + "layernorm_qkv.layer_norm_weight"],
            p.get(prefix + "layernorm_qkv.layer_norm_bias"), 1e-5, False)
    h = residual + attn + attn_b
    mlp, mlp_b = torch_mlp(p, h, "layernorm_mlp.", norm, activation)
    residual = h
    if post_ln:
        residual = torch_norm(h, norm, p["layernorm_mlp.layer_norm_weight"],
                              p.get("layernorm_mlp.layer_norm_bias"), 1e-5,
                              False)
    return residual + mlp + mlp_b


@pytest.mark.parametrize("variant", ["llama", "gpt", "post_ln", "parallel"])
def test_transformer_layer_matches_torch(variant):
    fmt, freqs = "sbhd", None
    if variant == "llama":
        layer = te.TransformerLayer(
            32, 48, 4, num_gqa_groups=2, hidden_dropout=0.0,
            attention_dropout=0.0, normalization="RMSNorm",
            activation="swiglu", attn_input_format="bshd")
        fmt, norm, act = "bshd", "RMSNorm", "swiglu"
        freqs = te.RotaryPositionEmbedding(8)(6)
    else:
        layer = te.TransformerLayer(
            32, 48, 4, hidden_dropout=0.0, attention_dropout=0.0,
            apply_residual_connection_post_layernorm=variant == "post_ln",
            parallel_attention_mlp=variant == "parallel",
            fuse_qkv_params=variant == "gpt")
        norm, act = "LayerNorm", "gelu"
    layer = perturb(layer)
    x = torch.randn((2, 6, 32) if fmt == "bshd" else (6, 2, 32),
                    requires_grad=True)
    out = layer(x, rotary_pos_emb=freqs)
    p = reference_parameters(layer)
    xr = x.detach().clone().requires_grad_()
    want = torch_layer(layer, p, xr, norm, act, fmt, freqs,
                       post_ln=variant == "post_ln",
                       parallel=variant == "parallel")
    compare(layer, out, want, [x], [xr], p)


def test_transformer_layer_dropout_and_arguments():
    layer = te.TransformerLayer(32, 64, 4, hidden_dropout=0.5,
                                attention_dropout=0.0)
    x = torch.randn(4, 2, 32)
    layer.eval()
    a, b = layer(x), layer(x)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    layer.train()
    assert not torch.equal(layer(x), a)
    assert layer.layernorm_mlp.activation == "gelu"
    assert layer.self_attention.core_attention.attn_mask_type == "causal"
    # TE's parameter names, TE's init std.
    names = [n for n, _ in layer.named_parameters()]
    assert "self_attention.layernorm_qkv.query_weight" in names
    assert "layernorm_mlp.fc1_weight" in names
    w = layer.layernorm_mlp.fc1_weight
    assert abs(w.std().item() - 0.023) < 0.003
    for kw, match in ((dict(ub_tp_comm_overlap=True), "userbuffers"),
                      (dict(tp_size=2), "tp_size")):
        with pytest.raises(NotImplementedError, match=match):
            te.TransformerLayer(32, 64, 4, **kw)
    with pytest.raises(ValueError, match="parallel_attention_mlp"):
        te.TransformerLayer(32, 64, 4, parallel_attention_mlp=True,
                            output_layernorm=True)


def test_decoder_layer_runs_cross_attention():
    layer = te.TransformerLayer(32, 64, 4, layer_type="decoder",
                                hidden_dropout=0.0, attention_dropout=0.0)
    x = torch.randn(5, 2, 32, requires_grad=True)
    enc = torch.randn(7, 2, 32, requires_grad=True)
    out = layer(x, encoder_output=enc)
    out.sum().backward()
    assert out.shape == x.shape and enc.grad.abs().sum() > 0
    # The cross attention is what reads the encoder: without it the
    # output changes.
    with torch.no_grad():
        layer.inter_attention.proj.weight.zero_()
        layer.inter_attention.proj.bias.zero_()
        changed = layer(x, encoder_output=enc)
        assert not torch.equal(changed, out)
        enc2 = torch.randn_like(enc)
        assert torch.equal(changed, layer(x, encoder_output=enc2))
    # The post-norm residuals with the norm at the output, as TE routes
    # them, and TE's spelling of the bias types.
    post = te.TransformerLayer(32, 64, 4, layer_type="decoder",
                               hidden_dropout=0.0, attention_dropout=0.0,
                               output_layernorm=True,
                               apply_residual_connection_post_layernorm=True)
    assert post(x, encoder_output=enc).shape == x.shape
    encoder = te.TransformerLayer(32, 64, 4, hidden_dropout=0.0,
                                  attention_dropout=0.0,
                                  self_attn_mask_type="no_mask")
    bias = torch.randn(1, 4, 5, 5)
    y = encoder(x, core_attention_bias_type="post_scale_bias",
                core_attention_bias=bias)
    assert not torch.equal(y, encoder(x))


@pytest.mark.parametrize("r", [recipe.DelayedScaling(),
                               recipe.MXFP8BlockScaling()],
                         ids=lambda r: type(r).__name__)
def test_transformer_layer_fp8_stays_close(r):
    layer = llama_layer()
    x = torch.randn(32, 2, 32, requires_grad=True)
    freqs = te.RotaryPositionEmbedding(8)(32)
    want = layer(x, rotary_pos_emb=freqs)
    for _ in range(2):
        with te.fp8_autocast(fp8_recipe=r):
            out = layer(x, rotary_pos_emb=freqs)
    # E4M3 rounds each operand by up to 2^-4 (about 3.6% rms); one GEMM
    # of few terms keeps about that much relative error, and the layer
    # chains four GEMMs and the attention: 7% here, bounded by 10%.
    rel = ((out - want).norm() / want.norm()).item()
    assert 1e-4 < rel < 0.1, rel  # FP8 on, and close
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


# --- FP8 state in state_dict ------------------------------------------------

def test_extra_state_resumes_delayed_scaling_bit_exactly():
    r = recipe.DelayedScaling(amax_history_len=3)
    a = te.LayerNormMLP(32, 64, activation="swiglu")
    x = torch.randn(16, 32)
    for _ in range(2):
        with te.fp8_autocast(fp8_recipe=r):
            a(x).sum().backward()
    buf = io.BytesIO()
    torch.save(a.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    assert state["_extra_state"]["recipe"] == "DelayedScaling"
    b = te.LayerNormMLP(32, 64, activation="swiglu")
    b.load_state_dict(state)
    x2 = torch.randn(16, 32)
    with te.fp8_autocast(fp8_recipe=recipe.DelayedScaling(
            amax_history_len=3)):
        ya, yb = a(x2), b(x2)
    torch.testing.assert_close(ya, yb, rtol=0, atol=0)
    for gemm in ("fc1", "fc2"):
        for role in ("input", "weight"):
            qa, qb = a.quantizers[gemm][role], b.quantizers[gemm][role]
            assert (qa.amax_history == qb.amax_history).all()
            assert qa.scale == qb.scale
    # A damaged entry, or TE's own serialized metadata, is a clear error.
    bad = dict(state)
    bad["_extra_state"] = {"recipe": "DelayedScaling", "fields": {}}
    with pytest.raises(ValueError, match="not te_mlir's FP8 state"):
        b.load_state_dict(bad)
    bad["_extra_state"] = torch.tensor([1, 2, 3], dtype=torch.uint8)
    with pytest.raises(ValueError, match="strict=False"):
        b.load_state_dict(bad)
    # Without FP8 steps, and under stateless recipes, nothing is saved.
    assert te.Linear(4, 4).state_dict()["_extra_state"] == {}
    fresh = te.Linear(4, 4)
    fresh.load_state_dict(te.Linear(4, 4).state_dict())
    assert fresh.quantizers is None


# --- te_mlir.torch.fp8 and torch.compile ------------------------------------

def test_fp8_queries_and_contexts():
    assert te.is_fp8_available() is True
    assert te.is_mxfp8_available(return_reason=True) == (True, "")
    assert te.is_fp8_block_scaling_available()
    with te.fp8_model_init(enabled=False):
        pass
    with pytest.raises(NotImplementedError, match="fp8_model_init"):
        with te.fp8_model_init():
            pass
    layer = te.Linear(32, 32)
    with te.autocast(recipe=recipe.Float8CurrentScaling()):
        y = layer(torch.randn(32, 32))
    assert y.shape == (32, 32)
    dpa = te.DotProductAttention(2, 8)
    q = torch.randn(4, 1, 2, 8)
    with pytest.raises(NotImplementedError, match="fp8_dpa"):
        with te.fp8_autocast(fp8_recipe=recipe.DelayedScaling(fp8_dpa=True)):
            dpa(q, q, q)


def test_parameters_split():
    layer = te.Linear(8, 12, parameters_split=("a", "b", "c"))
    # TE's order: the weights, then the biases.
    assert [n for n, _ in layer.named_parameters()] == [
        "a_weight", "b_weight", "c_weight", "a_bias", "b_bias", "c_bias"]
    layer = te.Linear(8, 12, parameters_split={"q": 8, "kv": 4})
    x = torch.randn(3, 8)
    w = torch.cat([layer.q_weight, layer.kv_weight])
    torch.testing.assert_close(layer(x), F.linear(x, w), **FWD)
    with pytest.raises(ValueError, match="parameters_split"):
        te.Linear(8, 12, parameters_split={"q": 8, "kv": 8})


def test_compile_runs_fp8_modules():
    mlp = te.LayerNormMLP(32, 64, activation="swiglu")
    x = torch.randn(32, 32)
    r = recipe.Float8CurrentScaling()  # stateless: eager and compiled agree
    with te.fp8_autocast(fp8_recipe=r):
        want = mlp(x)
    compiled = torch.compile(mlp)
    with te.fp8_autocast(fp8_recipe=r):
        got = compiled(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


# --- TE's getting-started walk-through, with te_mlir's imports ----------------

class _UnfusedLayer(torch.nn.Module):
    """The walk-through's layer built from TE's basic modules: LayerNorm,
    a fused-QKV Linear whose output is viewed per head and split,
    DotProductAttention (causal), Linear, and a Linear-gelu-Linear MLP.
    Here with te_mlir.torch's modules, as a TE user writes it."""

    def __init__(self, hidden, ffn, heads, fused):
        super().__init__()
        self.heads, self.kv = heads, hidden // heads
        self.fused = fused
        if fused:
            self.ln_qkv = te.LayerNormLinear(hidden, 3 * hidden, eps=1e-5,
                                             bias=True)
            self.ln_mlp = te.LayerNormMLP(hidden, ffn, eps=1e-5, bias=True)
        else:
            self.ln1 = te.LayerNorm(hidden, eps=1e-5)
            self.qkv = te.Linear(hidden, 3 * hidden, bias=True)
            self.ln2 = te.LayerNorm(hidden, eps=1e-5)
            self.fc1 = te.Linear(hidden, ffn, bias=True)
            self.fc2 = te.Linear(ffn, hidden, bias=True)
        self.attention = te.DotProductAttention(
            num_attention_heads=heads, kv_channels=self.kv,
            attention_dropout=0.1, attn_mask_type="causal")
        self.projection = te.Linear(hidden, hidden, bias=True)
        self.dropout = torch.nn.Dropout(0.1)

    def forward(self, x, attention_mask=None):
        qkv = self.ln_qkv(x) if self.fused else self.qkv(self.ln1(x))
        qkv = qkv.view(qkv.size(0), qkv.size(1), self.heads, 3 * self.kv)
        q, k, v = torch.split(qkv, qkv.size(3) // 3, dim=3)
        x = x + self.dropout(self.projection(
            self.attention(q, k, v, attention_mask)))
        if self.fused:
            h = self.ln_mlp(x)
        else:
            h = self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return x + self.dropout(h)


def test_te_getting_started_walkthrough_runs():
    """TE's getting-started steps (basic modules, TE attention, FP8 with
    DelayedScaling(HYBRID, 16, "max"), fused modules, TransformerLayer),
    in bf16 at a small size on the CPU: each trains a step forward and
    backward under te.autocast, and the FP8 layers stay near bf16."""
    from te_mlir.recipe import DelayedScaling, Format
    fp8 = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=16,
                         amax_compute_algo="max")
    hidden, ffn, heads, dtype = 64, 128, 4, torch.bfloat16
    x = torch.rand(32, 2, hidden).to(dtype=dtype)
    grad = torch.rand_like(x)
    layers = [_UnfusedLayer(hidden, ffn, heads, False),
              _UnfusedLayer(hidden, ffn, heads, True),
              te.TransformerLayer(hidden_size=hidden, ffn_hidden_size=ffn,
                                  num_attention_heads=heads,
                                  self_attn_mask_type="causal",
                                  layernorm_epsilon=1e-5, bias=True,
                                  hidden_dropout=0.0, attention_dropout=0.0)]
    for layer in layers:
        layer = layer.to(dtype=dtype).eval()
        outputs = {}
        for enabled in (False, True, True):
            with te.autocast(enabled=enabled, recipe=fp8):
                out = layer(x, attention_mask=None)
            out.backward(grad)
            assert out.dtype == dtype and out.shape == x.shape
            outputs[enabled] = out.detach().float()
        rel = ((outputs[True] - outputs[False]).norm() /
               outputs[False].norm()).item()
        # FP8 on (the outputs differ), and close to bf16.
        assert 1e-4 < rel < 0.05, (type(layer).__name__, rel)


def test_process_groups_of_one_rank_pass_and_larger_ones_are_refused(
        monkeypatch):
    """A torch ProcessGroup is accepted where it has one rank (the whole
    computation is in this process) and refused, naming the argument,
    where it has more; the group's size is what decides."""
    import torch.distributed as dist

    class Group:
        def __init__(self, size):
            self.size = size
    monkeypatch.setattr(dist, "get_world_size", lambda group: group.size)
    one, two = Group(1), Group(2)
    layer = te.Linear(8, 8, tp_group=one)
    with te.fp8_autocast(fp8_recipe=recipe.Float8CurrentScaling(),
                         fp8_group=one):
        layer(torch.randn(32, 8))
    logits, target = torch.randn(4, 10), torch.randint(0, 10, (4,))
    from te_mlir.torch.cross_entropy import parallel_cross_entropy
    torch.testing.assert_close(
        parallel_cross_entropy(logits, target, dist_process_group=one),
        parallel_cross_entropy(logits, target))
    with pytest.raises(NotImplementedError, match="tp_group"):
        te.Linear(8, 8, tp_group=two)
    with pytest.raises(NotImplementedError, match="ProcessGroup of 2 ranks"):
        te.fp8_autocast(fp8_group=two)
    # A vocabulary split over two ranks needs torch's world to be te's.
    with pytest.raises(NotImplementedError, match="dist_process_group has 2 "
                       "ranks.*torch.distributed is not initialized"):
        parallel_cross_entropy(logits, target, dist_process_group=two)
    te.DotProductAttention(2, 8, tp_group=one)
    with pytest.raises(NotImplementedError, match="tp_group"):
        te.DotProductAttention(2, 8, tp_group=two)


class ForkingTracker:
    """An rng state tracker as TE's (CudaRNGStatesTracker.fork), on torch's
    CPU generator: fork() runs its body on the tracker's own state."""

    def __init__(self, seed):
        gen = torch.Generator().manual_seed(seed)
        self.state = gen.get_state()

    def fork(self, name="model-parallel-rng"):
        import contextlib

        @contextlib.contextmanager
        def forked():
            outside = torch.get_rng_state()
            torch.set_rng_state(self.state)
            try:
                yield
            finally:
                self.state = torch.get_rng_state()
                torch.set_rng_state(outside)
        return forked()


def test_attention_dropout_draws_inside_the_rng_tracker_fork():
    """As TE, DotProductAttention's dropout draws from the tracker's
    fork: the same tracker state gives the same dropout, and torch's own
    generator is not advanced."""
    q, k, v = (torch.randn(6, 2, 2, 8) for _ in range(3))
    outputs = []
    for _ in range(2):
        tracker = ForkingTracker(11)
        dpa = te.DotProductAttention(2, 8, attention_dropout=0.5,
                                     get_rng_state_tracker=lambda: tracker)
        torch.manual_seed(3)
        outputs.append(dpa(q, k, v))
        after = torch.get_rng_state()
        torch.manual_seed(3)
        assert torch.equal(after, torch.get_rng_state())
    torch.testing.assert_close(outputs[0], outputs[1], rtol=0, atol=0)
    other = te.DotProductAttention(
        2, 8, attention_dropout=0.5,
        get_rng_state_tracker=lambda: ForkingTracker(12))
    assert not torch.equal(other(q, k, v), outputs[0])
