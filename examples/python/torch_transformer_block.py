"""A small pre-norm transformer block trained on the CPU with te_mlir's
attention in place of torch.nn.functional.scaled_dot_product_attention.

Two copies of the block start from the same weights: one calls
te_mlir.torch.DotProductAttention (TE's module and argument names), the
other torch's SDPA. Both train a few SGD steps on the same random
sequences (predicting the next token's embedding); after each step's
backward, every parameter's gradient of the te copy is compared with the
torch copy's. Exits with status 1 if they differ by more than f32
rounding explains.

    PYTHONPATH=build/python .venv/bin/python \\
        examples/python/torch_transformer_block.py --steps 5
"""

import argparse
import copy
import sys

import torch
import torch.nn.functional as F

import te_mlir.torch as tet


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, gqa_groups, use_te):
        super().__init__()
        self.heads, self.groups = heads, gqa_groups
        self.head_dim = hidden // heads
        kv = self.groups * self.head_dim
        self.norm1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, hidden + 2 * kv)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * hidden, hidden))
        self.use_te = use_te
        if use_te:
            self.attention = tet.DotProductAttention(
                heads, self.head_dim, num_gqa_groups=gqa_groups,
                qkv_format="bshd", attn_mask_type="causal")

    def attend(self, q, k, v):
        """q [b, s, h, d], k and v [b, s, g, d] -> [b, s, h * d]."""
        if self.use_te:
            return self.attention(q, k, v)
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
            is_causal=True, enable_gqa=True)
        return out.transpose(1, 2).flatten(2)

    def forward(self, x):
        b, s, _ = x.shape
        d, kv = self.head_dim, self.groups * self.head_dim
        q, k, v = self.qkv(self.norm1(x)).split(
            [self.heads * d, kv, kv], dim=-1)
        attn = self.attend(q.reshape(b, s, self.heads, d),
                           k.reshape(b, s, self.groups, d),
                           v.reshape(b, s, self.groups, d))
        x = x + self.proj(attn)
        return x + self.mlp(self.norm2(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--gqa-groups", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(0)
    ours = Block(args.hidden, args.heads, args.gqa_groups, use_te=True)
    ref = Block(args.hidden, args.heads, args.gqa_groups, use_te=False)
    ref.load_state_dict(ours.state_dict(), strict=False)
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.05)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.05)
    worst = 0.0
    for step in range(args.steps):
        x = torch.randn(args.batch, args.seq + 1, args.hidden)
        inputs, target = x[:, :-1], x[:, 1:]
        losses = []
        for model, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            loss = F.mse_loss(model(inputs), target)
            loss.backward()
            losses.append(loss.item())
        # Gradients, parameter by parameter, relative to the largest entry.
        ref_params = dict(ref.named_parameters())
        step_worst = 0.0
        for name, p in ours.named_parameters():
            g, want = p.grad, ref_params[name].grad
            err = ((g - want).abs().max() /
                   want.abs().max().clamp_min(1e-30)).item()
            step_worst = max(step_worst, err)
        worst = max(worst, step_worst)
        print(f"step {step}: loss te_mlir {losses[0]:.6f} torch "
              f"{losses[1]:.6f}  worst gradient difference "
              f"{step_worst:.2e} (relative)")
        opt_ours.step()
        opt_ref.step()
    # f32 attention summed in another order: a few ulps of f32 per entry
    # (1.2e-7 each), amplified through the block; 1e-5 leaves room for
    # that and catches a wrong mask, scale or head mapping (errors of
    # order 1e-1 and more).
    ok = worst < 1e-5
    print(f"gradients {'match' if ok else 'DIFFER'} torch's SDPA "
          f"(worst {worst:.2e}, bound 1e-5)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
