"""Megatron tensor parallelism of one Transformer block, as code: the conjugate operators, the
block written once for every way of running it, and each rank's shard of its weights.

The block is Llama-style (RMSNorm, causal attention with grouped KV heads, SwiGLU MLP), laid out
[sequence, batch, d] as in Megatron-LM so that sequence parallelism splits dimension 0. It runs
three ways, the same `block` function with a different pair of operators around its GEMMs:

* `single`: the whole block, no communication;
* `tp` (Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053, section 3): Q/K/V and gate/up are
  column-parallel (each rank owns H/n query heads, H_kv/n KV heads, f/n MLP columns), the
  attention output and down projections row-parallel. Megatron's conjugate operators sit around
  them: f (forward identity, backward all-reduce of the input gradient) before each
  column-parallel GEMM, g (forward all-reduce, backward identity) after each row-parallel one:
  two all-reduces forward, two backward;
* `sp` (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", arXiv:2205.05198, section 4.2.2): the norms and residual adds run on 1/n of the
  sequence; f becomes an all-gather along the sequence (backward: reduce-scatter), g a
  reduce-scatter (backward: all-gather). A norm weight then sees only its rank's tokens, so its
  gradient is all-reduced after backward, as Megatron-LM does for its sequence-parallel
  parameters (megatron/core/distributed/finalize_model_grads.py). Dropout, which would live in
  this region too, is left out: Llama-style models train without it.

Weights are stored [in, out]: a column-parallel weight is split along dimension 1, a
row-parallel one along dimension 0. Each rank fuses its Q, K, V columns into one GEMM and its
gate, up columns into another, as Megatron's fused QKV and gate-up weights do.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

ROW, COL = 0, 1  # the dimension a weight is split along ([in, out] layout: rows are inputs)
SPLIT = {"wq": COL, "wk": COL, "wv": COL, "wo": ROW, "wg": COL, "wu": COL, "wd": ROW,
         "norm1": None, "norm2": None}


def gather_seq(x):
    """[s/n, …] on each rank → [s, …], the ranks' parts in rank order."""
    out = x.new_empty((x.shape[0] * dist.get_world_size(), *x.shape[1:]))
    dist.all_gather_into_tensor(out, x.contiguous())
    return out


def scatter_seq(x):
    """[s, …] on each rank → this rank's [s/n, …] part of the sum over ranks."""
    out = x.new_empty((x.shape[0] // dist.get_world_size(), *x.shape[1:]))
    dist.reduce_scatter_tensor(out, x.contiguous())
    return out


# ANCHOR: conjugates
class CopyToTP(torch.autograd.Function):
    """Megatron's f. Every rank holds the whole input, but each rank's backward yields only its
    heads' (or columns') share of the input gradient: the shares are summed."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()  # a fresh tensor from the GEMM's backward: summed in place
        dist.all_reduce(grad)
        return grad


class ReduceFromTP(torch.autograd.Function):
    """Megatron's g. A row-parallel GEMM leaves each rank a partial sum of the output."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)  # summed in place: nothing saved the GEMM's output
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad  # a sum passes its gradient to every term unchanged


class GatherSeq(torch.autograd.Function):
    """SP's f: the column-parallel GEMM needs every token; backward, each rank keeps the summed
    gradient of its own tokens."""

    @staticmethod
    def forward(ctx, x):
        return gather_seq(x)

    @staticmethod
    def backward(ctx, grad):
        return scatter_seq(grad)


class ScatterSeq(torch.autograd.Function):
    """SP's g: sum the row-parallel partial outputs, keep this rank's tokens; backward, every
    rank needs the gradient of the whole output."""

    @staticmethod
    def forward(ctx, x):
        return scatter_seq(x)

    @staticmethod
    def backward(ctx, grad):
        return gather_seq(grad)
# ANCHOR_END: conjugates


# Each way to run the block: (operator before a column-parallel GEMM, after a row-parallel one)
MODES = {"single": (lambda x: x, lambda x: x), "tp": (CopyToTP.apply, ReduceFromTP.apply),
         "sp": (GatherSeq.apply, ScatterSeq.apply)}


def attention(qkv, heads, kv_heads, hd):
    """Causal attention of this rank's heads; qkv is [s, b, (heads + 2·kv_heads)·hd]."""
    s, b, _ = qkv.shape
    q, k, v = qkv.split([heads * hd, kv_heads * hd, kv_heads * hd], dim=-1)
    q, k, v = (t.reshape(s, b, -1, hd).permute(1, 2, 0, 3) for t in (q, k, v))  # [b, h, s, hd]
    group = heads // kv_heads  # query heads per KV head: a group never straddles two ranks
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.permute(2, 0, 1, 3).reshape(s, b, heads * hd)


# ANCHOR: block
def block(x, w, heads, kv_heads, hd, enter, leave):
    """x: [s, b, d] (SP: [s/n, b, d]); w, heads, kv_heads: this rank's.
    `enter` stands before each column-parallel GEMM, `leave` after each row-parallel one."""
    d = x.shape[-1]
    h = F.rms_norm(x, (d,), w["norm1"], eps=1e-5)
    a = attention(enter(h) @ w["qkv"], heads, kv_heads, hd)  # column-parallel Q, K, V
    x = x + leave(a @ w["wo"])                                # row-parallel output projection
    h = F.rms_norm(x, (d,), w["norm2"], eps=1e-5)
    gate, up = (enter(h) @ w["gate_up"]).chunk(2, dim=-1)     # column-parallel gate, up
    return x + leave((F.silu(gate) * up) @ w["wd"])           # row-parallel down projection
# ANCHOR_END: block


# ANCHOR: step
def step(mode, x, dy, w, heads, kv_heads, hd):
    """One forward + backward of the block (gradients replaced, as zero_grad(set_to_none))."""
    for t in [*w.values(), x]:
        t.grad = None
    out = block(x, w, heads, kv_heads, hd, *MODES[mode])
    out.backward(dy)
    if mode == "sp":  # each rank's norm-weight gradients cover only its own tokens
        for name in ("norm1", "norm2"):
            dist.all_reduce(w[name].grad)
    return out.detach()
# ANCHOR_END: step


def full_weights(shape, device, seed):
    """The whole block's weights from the seed, FP32, [in, out], scaled to keep activations O(1)."""
    d, hq, hkv, f, _, _ = shape
    hd = d // hq
    g = torch.Generator(device=device).manual_seed(seed)
    sizes = {"norm1": (d,), "wq": (d, hq * hd), "wk": (d, hkv * hd), "wv": (d, hkv * hd),
             "wo": (hq * hd, d), "norm2": (d,), "wg": (d, f), "wu": (d, f), "wd": (f, d)}
    w = {k: torch.randn(s, generator=g, device=device) for k, s in sizes.items()}
    for k, t in w.items():
        if k.startswith("norm"):
            t.mul_(0.1).add_(1.0)  # near 1, as trained norm weights are, but not all equal
        else:
            t.div_(t.shape[0] ** 0.5)
    return w


def prepare(mode, shape, rank, n, device, dtype, seed):
    """(run, w, x) of this rank: its weights (its columns of Q, K, V and of gate, up, each set
    fused into one GEMM; its rows of the row-parallel weights; whole norm weights), its input
    (SP: its part of the sequence) and run(), one step returning the output."""
    d, hq, hkv, _, _, _ = shape
    k, r = (1, 0) if mode == "single" else (n, rank)
    full = full_weights(shape, device, seed)
    part = {name: t if SPLIT[name] is None else t.chunk(k, dim=SPLIT[name])[r] for name, t in full.items()}
    local = {"norm1": part["norm1"], "norm2": part["norm2"], "wo": part["wo"], "wd": part["wd"],
             "qkv": torch.cat([part["wq"], part["wk"], part["wv"]], dim=1),
             "gate_up": torch.cat([part["wg"], part["wu"]], dim=1)}
    w = {name: t.to(dtype, copy=True).contiguous().requires_grad_(True) for name, t in local.items()}
    del full, part, local
    g = torch.Generator(device=device).manual_seed(seed + 1)
    x, dy = (torch.randn(shape[5], shape[4], d, generator=g, device=device).to(dtype) for _ in range(2))
    if mode == "sp":
        x, dy = x.chunk(n)[rank].clone(), dy.chunk(n)[rank].clone()
    x.requires_grad_(True)
    return (lambda: step(mode, x, dy, w, hq // k, hkv // k, d // hq)), w, x


def gather(t, dim, n):
    """Every rank's piece of t, concatenated along dim (every rank gets the whole)."""
    parts = [torch.empty_like(t) for _ in range(n)]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts, dim=dim)


def whole(mode, out, w, x, shape, n):
    """(output, input gradient, {weight name: gradient}) of the whole block, from the shards."""
    d, hq, hkv, f, _, _ = shape
    k, hd = (1 if mode == "single" else n), d // hq
    q, kk, v = w["qkv"].grad.split([hq // k * hd, hkv // k * hd, hkv // k * hd], dim=1)
    g, u = w["gate_up"].grad.split([f // k, f // k], dim=1)
    grads = {"norm1": w["norm1"].grad, "norm2": w["norm2"].grad, "wq": q, "wk": kk, "wv": v,
             "wo": w["wo"].grad, "wg": g, "wu": u, "wd": w["wd"].grad}
    if k > 1:
        grads = {name: t if SPLIT[name] is None else gather(t, SPLIT[name], n) for name, t in grads.items()}
    dx = x.grad
    if mode == "sp":
        out, dx = gather(out, 0, n), gather(dx, 0, n)
    return out, dx, grads
