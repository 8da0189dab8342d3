"""Train the hdlc-lab model on the book's own text, byte by byte: FP32 vs TF32 vs BF16 autocast.

One idea: a training loop is five steps — sample a batch, forward, next-token loss, backward,
AdamW update (with gradient clipping and a warm-up + cosine learning rate) — and the precision
it runs in changes its speed and memory, not what it learns. Every variant starts from the same
seeded weights and sees the same batches, so their loss curves can be laid over each other.

Corpus: the bytes of cards/**/*.md in sorted path order (nothing is downloaded), split 90/10
into train and validation. Verification, before a variant's numbers are reported:
  1. its gradients on a tiny config equal float64 autograd on the same batch (rel_error ≤ tol);
  2. its final validation loss is below LOSS_BOUND = 0.6 · ln 256. ln 256 is the loss of a
     uniform guess over bytes; the corpus's unigram entropy (the best loss without looking at
     context, reported as a metric) is well above 0.6 · ln 256, so passing means the model
     uses context.
Timing: CUDA events around every step after the warm-up steps; median, p10, p90 over steps.
"""

import math
import time
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import peaks  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

QUICK = labkit.QUICK
DEV = labkit.torch_device()
ROOT = pathlib.Path(__file__).resolve().parents[3]
CFG = model.TINY if QUICK else model.HDLC_LAB
BATCH, SEQ = (4, 32) if QUICK else (32, 256)
STEPS = 30 if QUICK else 400
WARMUP = 5 if QUICK else 50
LR, MIN_LR_FRAC, CLIP, WD = 3e-4 if not QUICK else 1e-3, 0.1, 1.0, 0.1
EVAL_EVERY, EVAL_BATCHES = (10, 2) if QUICK else (50, 8)
TIMING_SKIP = 3 if QUICK else 20  # steps left out of the timing (allocator and autotuning warm-up)
LOSS_BOUND = (0.9 if QUICK else 0.6) * math.log(256)


# ANCHOR: corpus
def load_corpus():
    """All card files as one byte string, split 90/10 into train and validation tensors."""
    files = sorted(ROOT.glob("cards/**/*.md"))
    data = torch.frombuffer(bytearray(b"".join(f.read_bytes() for f in files)), dtype=torch.uint8)
    split = int(0.9 * len(data))
    return data[:split].long(), data[split:].long()


def get_batch(data, gen):
    """BATCH random windows of SEQ + 1 bytes: inputs are the first SEQ, targets the last SEQ."""
    starts = torch.randint(0, len(data) - SEQ - 1, (BATCH,), generator=gen)
    windows = torch.stack([data[s : s + SEQ + 1] for s in starts.tolist()])
    x, y = windows[:, :-1], windows[:, 1:]  # y[b, t] is the byte after x[b, t]
    return x.to(DEV, non_blocking=True), y.to(DEV, non_blocking=True)
# ANCHOR_END: corpus


def lr_at(step):
    """Linear warm-up to LR over WARMUP steps, then cosine decay to MIN_LR_FRAC · LR."""
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, STEPS - WARMUP)
    return LR * (MIN_LR_FRAC + (1 - MIN_LR_FRAC) * 0.5 * (1 + math.cos(math.pi * t)))


def next_token_loss(m, x, y, precision):
    """Mean cross-entropy of predicting y from x; under autocast the matmuls run in BF16."""
    with torch.autocast(device_type=DEV, dtype=torch.bfloat16, enabled=precision == "bf16"):
        logits = m(x)  # [B, S, vocab]
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))


def make_optimizer(m):
    """AdamW; weight decay on the matrices only (not on the RMSNorm gains)."""
    decay = [p for n, p in m.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in m.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.95), eps=1e-8)


# ANCHOR: train_step
def train_step(m, opt, x, y, step, precision):
    for group in opt.param_groups:
        group["lr"] = lr_at(step)
    loss = next_token_loss(m, x, y, precision)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
    opt.step()
    return loss.detach()
# ANCHOR_END: train_step


def set_precision(precision):
    """TF32 lets FP32 matmuls use tensor cores with a 10-bit mantissa; off for the other two."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"


def grad_check(precision, train):
    """Gradients of one batch on the TINY config vs float64 autograd: ‖g − g64‖ / ‖g64‖."""
    gen = torch.Generator().manual_seed(labkit.SEED + 1)
    x, y = get_batch(train, gen)
    x, y = x[:, : model.TINY.context], y[:, : model.TINY.context]
    grads = []
    for dtype, prec in [(torch.float32, precision), (torch.float64, "fp32")]:
        m = model.build(model.TINY, seed=1, device=DEV, dtype=dtype)
        next_token_loss(m, x, y, prec).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in m.parameters()]))
    return labkit.rel_error(grads[0], grads[1])


def evaluate(m, val, precision):
    gen = torch.Generator().manual_seed(labkit.SEED + 2)  # the same validation batches every time
    m.eval()
    with torch.no_grad():
        losses = [next_token_loss(m, *get_batch(val, gen), precision).item()
                  for _ in range(EVAL_BATCHES)]
    m.train()
    return sum(losses) / len(losses)


def summarize(times_ms):
    t = sorted(times_ms)
    pct = lambda p: t[min(len(t) - 1, max(0, round(p * (len(t) - 1))))]  # noqa: E731
    return {"reps": len(t), "median_ms": pct(0.5), "p10_ms": pct(0.1), "p90_ms": pct(0.9)}


def run_variant(precision, label, rung, train, val, tolerance, unigram):
    params = {"batch": BATCH, "seq": SEQ, "steps": STEPS}
    set_precision(precision)
    err = grad_check(precision, train)
    if not err <= tolerance:
        labkit.failed(precision, label, params, "verify",
                      f"gradient rel_error {err:.3e} exceeds {tolerance:.1e}", rung=rung)
        return
    if DEV == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    m = model.build(CFG, seed=0, device=DEV)  # FP32 weights in every variant
    opt = make_optimizer(m)
    gen = torch.Generator().manual_seed(labkit.SEED)
    losses, val_curve, times = [], [], []
    for step in range(STEPS):
        x, y = get_batch(train, gen)
        if DEV == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            losses.append(train_step(m, opt, x, y, step, precision))
            end.record()
            times.append((start, end))
        else:
            t0 = time.perf_counter()
            losses.append(train_step(m, opt, x, y, step, precision))
            times.append((time.perf_counter() - t0) * 1e3)
        if (step + 1) % EVAL_EVERY == 0 or step + 1 == STEPS:
            val_curve.append((step + 1, evaluate(m, val, precision)))
    if DEV == "cuda":
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in times]
    loss_curve = [(i + 1, float(v)) for i, v in enumerate(torch.stack(losses).tolist())]
    final_val = val_curve[-1][1]
    if not math.isfinite(final_val) or final_val >= LOSS_BOUND:
        labkit.failed(precision, label, params, "verify",
                      f"final validation loss {final_val:.3f} not below {LOSS_BOUND:.3f}", rung=rung)
        return
    timing = summarize(times[TIMING_SKIP:])
    flops = 3 * model.forward_flops(CFG, BATCH, SEQ)  # forward + backward (2× forward)
    metrics = {"tokens_per_s": BATCH * SEQ / (timing["median_ms"] * 1e-3),
               "step_ms": timing["median_ms"], "final_loss": final_val,
               "final_train_loss": sum(v for _, v in loss_curve[-20:]) / len(loss_curve[-20:]),
               "params_count": sum(p.numel() for p in m.parameters()),
               "unigram_entropy": unigram, "loss_bound": LOSS_BOUND}
    metrics.update(peaks.mfu_metrics(flops, timing["median_ms"], "bf16"))
    if DEV == "cuda":
        metrics["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    labkit.ok(precision, label, params, timing, rel_error=err, tolerance=tolerance, flops=flops,
              rung=rung, metrics=metrics, series={"loss": loss_curve, "val_loss": val_curve})
    labkit.log(f"{precision}: step {timing['median_ms']:.2f} ms, val loss {final_val:.3f}")


def unigram_entropy(data):
    """Entropy (nats) of the byte frequencies: the best loss of a model that ignores context."""
    p = torch.bincount(data, minlength=256).double() / len(data)
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def main():
    torch.manual_seed(labkit.SEED)
    train, val = load_corpus()
    unigram = unigram_entropy(train)
    labkit.log(f"corpus: {len(train)} train / {len(val)} val bytes, unigram entropy {unigram:.3f}")
    # Gradient tolerances: FP32 matmuls agree with float64 to ~1e-6; TF32 rounds matmul inputs to
    # 10 mantissa bits (~5e-4 relative); BF16 to 7 bits (~4e-3), summed over many ops.
    for rung, (prec, label, tol) in enumerate([("fp32", "FP32", 1e-4), ("tf32", "TF32", 1e-2),
                                               ("bf16", "BF16 autocast", 5e-2)]):
        params = {"batch": BATCH, "seq": SEQ, "steps": STEPS}
        if prec == "tf32" and DEV != "cuda":
            labkit.failed(prec, label, params, "unsupported", "TF32 needs an NVIDIA GPU", rung=rung)
            continue
        try:
            run_variant(prec, label, rung, train, val, tol, unigram)
        except Exception as e:
            labkit.failed(prec, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)


if __name__ == "__main__":
    main()
