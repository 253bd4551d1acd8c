"""A small Llama-style decoder trained on the CPU with te_mlir.torch.

The model is what a Transformer Engine user builds for Llama: token
embeddings tied to the output projection, a stack of
te_mlir.torch.TransformerLayer (RMSNorm, rotary position embeddings, GQA
causal attention, SwiGLU MLP, no biases), a final RMSNorm, and TE's
fused cross-entropy (parallel_cross_entropy). It learns to predict the
next byte of a text the repository carries (its own documentation), so
nothing is downloaded.

    PYTHONPATH=build/python .venv/bin/python examples/python/llama_train.py \\
        --steps 300 --dtype bf16 --recipe mxfp8

--recipe trains under fp8_autocast (delayed, current, mxfp8, block);
--compare-torch trains the same model written in plain torch beside it,
from the same weights on the same batches, and prints both loss curves'
largest difference. train() is what tests call.
"""

import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

import te_mlir.torch as te
from te_mlir import recipe as te_recipe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
DEFAULT_TEXT = [os.path.join(ROOT, "README.md"),
                os.path.join(ROOT, "docs", "Architecture.md")]
VOCAB = 256  # bytes

RECIPES = {
    "none": None,
    "delayed": lambda: te_recipe.DelayedScaling(amax_history_len=16),
    "current": lambda: te_recipe.Float8CurrentScaling(),
    "mxfp8": lambda: te_recipe.MXFP8BlockScaling(),
    "block": lambda: te_recipe.Float8BlockScaling(),
}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


class Config:
    def __init__(self, hidden=128, ffn=256, heads=4, kv_groups=2, layers=2,
                 seq=64, batch=8):
        self.hidden, self.ffn, self.heads = hidden, ffn, heads
        self.kv_groups, self.layers = kv_groups, layers
        self.seq, self.batch = seq, batch
        self.head_dim = hidden // heads


class TELlama(torch.nn.Module):
    """The decoder on te_mlir.torch's modules."""

    def __init__(self, c, dtype):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(VOCAB, c.hidden, dtype=dtype)
        torch.nn.init.normal_(self.embed.weight, std=0.02)
        self.layers = torch.nn.ModuleList(
            te.TransformerLayer(
                c.hidden, c.ffn, c.heads, num_gqa_groups=c.kv_groups,
                hidden_dropout=0.0, attention_dropout=0.0,
                self_attn_mask_type="causal", normalization="RMSNorm",
                activation="swiglu", bias=False, attn_input_format="bshd",
                params_dtype=dtype, layer_number=i + 1)
            for i in range(c.layers))
        self.norm = te.RMSNorm(c.hidden, eps=1e-5, params_dtype=dtype)
        self.rope = te.RotaryPositionEmbedding(c.head_dim)

    def forward(self, tokens, targets):
        h = self.embed(tokens)                       # [b, s, hidden]
        freqs = self.rope(tokens.shape[1])
        for layer in self.layers:
            h = layer(h, rotary_pos_emb=freqs)
        logits = te.linear(self.norm(h), self.embed.weight)  # tied
        return te.parallel_cross_entropy(logits, targets, reduce_loss=True)


class TorchLlama(torch.nn.Module):
    """The same decoder in plain torch, from TE's formulas: the reference
    of the comparison. load() copies a TELlama's weights."""

    def __init__(self, c, dtype):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(VOCAB, c.hidden, dtype=dtype)
        q, kv = c.heads * c.head_dim, c.kv_groups * c.head_dim
        p = lambda *shape: torch.nn.Parameter(torch.empty(shape,
                                                          dtype=dtype))
        self.blocks = torch.nn.ModuleList()
        for _ in range(c.layers):
            block = torch.nn.Module()
            block.attn_norm = p(c.hidden)
            block.wq, block.wk, block.wv = p(q, c.hidden), p(kv, c.hidden), \
                p(kv, c.hidden)
            block.wo = p(c.hidden, q)
            block.mlp_norm = p(c.hidden)
            block.w1 = p(2 * c.ffn, c.hidden)
            block.w2 = p(c.hidden, c.ffn)
            self.blocks.append(block)
        self.norm = p(c.hidden)
        inv = 1.0 / 10000.0 ** (torch.arange(0, c.head_dim, 2).float() /
                                c.head_dim)
        self.register_buffer("inv_freq", inv)

    @torch.no_grad()
    def load(self, te_model):
        s = te_model.state_dict()
        self.embed.weight.copy_(s["embed.weight"])
        self.norm.copy_(s["norm.weight"])
        for i, b in enumerate(self.blocks):
            a = f"layers.{i}.self_attention."
            b.attn_norm.copy_(s[a + "layernorm_qkv.layer_norm_weight"])
            b.wq.copy_(s[a + "layernorm_qkv.query_weight"])
            b.wk.copy_(s[a + "layernorm_qkv.key_weight"])
            b.wv.copy_(s[a + "layernorm_qkv.value_weight"])
            b.wo.copy_(s[a + "proj.weight"])
            m = f"layers.{i}.layernorm_mlp."
            b.mlp_norm.copy_(s[m + "layer_norm_weight"])
            b.w1.copy_(s[m + "fc1_weight"])
            b.w2.copy_(s[m + "fc2_weight"])

    def rope(self, x):
        """Rotate-half RoPE of x [b, s, h, d] in f32, as TE's fused
        kernel computes it."""
        s = x.shape[1]
        angles = torch.outer(torch.arange(s).float(), self.inv_freq)
        angles = torch.cat((angles, angles), -1)[None, :, None, :]
        x1, x2 = x.float().chunk(2, -1)
        rotated = torch.cat((-x2, x1), -1)
        return (x.float() * angles.cos() + rotated * angles.sin()).to(
            x.dtype)

    def forward(self, tokens, targets):
        c = self.c
        b, s = tokens.shape
        h = self.embed(tokens)
        for blk in self.blocks:
            x = F.rms_norm(h, (c.hidden,), blk.attn_norm, 1e-5)
            q = F.linear(x, blk.wq).reshape(b, s, c.heads, c.head_dim)
            k = F.linear(x, blk.wk).reshape(b, s, c.kv_groups, c.head_dim)
            v = F.linear(x, blk.wv).reshape(b, s, c.kv_groups, c.head_dim)
            q, k = self.rope(q), self.rope(k)
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True, enable_gqa=True)
            h = h + F.linear(o.transpose(1, 2).flatten(2), blk.wo)
            x = F.rms_norm(h, (c.hidden,), blk.mlp_norm, 1e-5)
            gate, up = F.linear(x, blk.w1).chunk(2, -1)
            h = h + F.linear(F.silu(gate) * up, blk.w2)
        logits = F.linear(F.rms_norm(h, (c.hidden,), self.norm, 1e-5),
                          self.embed.weight)
        return F.cross_entropy(logits.float().reshape(-1, VOCAB),
                               targets.reshape(-1))


def load_text(paths):
    data = b"".join(open(p, "rb").read() for p in paths)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def batches(data, c, steps, seed):
    """`steps` batches of (tokens, next tokens) [batch, seq], drawn from
    the text by a generator of their own."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - c.seq - 1, (c.batch,),
                               generator=g)
        window = torch.stack([data[i:i + c.seq + 1] for i in starts])
        yield window[:, :-1], window[:, 1:]


def train(steps=300, dtype="bf16", recipe="none", config=None, seed=0,
          compare_torch=False, lr=3e-3, text=None, log=None):
    """Trains TELlama (and TorchLlama beside it with compare_torch) for
    `steps` AdamW steps; returns {"te": losses, "torch": losses or None,
    "seconds": te's training time}."""
    c = config or Config()
    torch.manual_seed(seed)
    model = TELlama(c, DTYPES[dtype])
    ref = None
    if compare_torch:
        ref = TorchLlama(c, DTYPES[dtype])
        ref.load(model)
    data = load_text(text or DEFAULT_TEXT)
    fp8 = RECIPES[recipe]() if RECIPES[recipe] else None
    opts = [torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.0)
            for m in ([model, ref] if ref is not None else [model])]
    losses = {"te": [], "torch": [] if ref is not None else None}
    spent = 0.0
    for step, (tokens, targets) in enumerate(batches(data, c, steps, seed)):
        start = time.perf_counter()
        with te.fp8_autocast(enabled=fp8 is not None, fp8_recipe=fp8):
            loss = model(tokens, targets)
        loss.backward()
        opts[0].step()
        opts[0].zero_grad()
        spent += time.perf_counter() - start
        losses["te"].append(loss.item())
        if ref is not None:
            ref_loss = ref(tokens, targets)
            ref_loss.backward()
            opts[1].step()
            opts[1].zero_grad()
            losses["torch"].append(ref_loss.item())
        if log and (step % log == 0 or step == steps - 1):
            extra = (f"  torch {losses['torch'][-1]:.4f}"
                     if ref is not None else "")
            print(f"step {step:4d}  loss {loss.item():.4f}{extra}",
                  flush=True)
    return {"te": losses["te"], "torch": losses["torch"], "seconds": spent}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="none")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-torch", action="store_true")
    parser.add_argument("--text", nargs="*",
                        help="text files to learn (default: README.md and "
                        "docs/Architecture.md)")
    args = parser.parse_args(argv)
    c = Config(hidden=args.hidden, ffn=2 * args.hidden, layers=args.layers,
               seq=args.seq, batch=args.batch)
    out = train(args.steps, args.dtype, args.recipe, c, args.seed,
                args.compare_torch, args.lr, args.text,
                log=max(1, args.steps // 20))
    first, last = out["te"][0], sum(out["te"][-10:]) / len(out["te"][-10:])
    print(f"te_mlir: loss {first:.4f} -> {last:.4f} (mean of the last 10) "
          f"in {out['seconds']:.1f} s, {args.dtype}, recipe {args.recipe}")
    if not math.isfinite(last) or last >= first:
        print("the loss did not fall")
        return 1
    if out["torch"] is not None:
        diff = max(abs(a - b) for a, b in zip(out["te"], out["torch"]))
        print(f"plain torch: largest loss difference {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
