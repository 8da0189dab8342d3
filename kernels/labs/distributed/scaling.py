"""DDP and FSDP2 from 1 to n GPUs: step time, tokens/s, scaling efficiency, memory per GPU.

Weak scaling: every GPU trains the same per-GPU batch, so n GPUs do n times the work of one and
perfect scaling keeps one GPU's step time. One torchrun job (any n ≥ 2) measures all of it:

  single   rank 0 alone, the plain model, no DDP, while the others wait at a barrier: the 1-GPU
           baseline, recorded with world = n and shards = 1, so a figure draws 1 → n from one run;
  ddp_bM   DistributedDataParallel, gradient buckets of M MB (1, 5, 25 = DDP's default, 100;
           Li et al. 2020, "PyTorch Distributed", VLDB); `_view`: gradient_as_bucket_view, the
           gradients *are* the buckets (one FP32 copy of the gradients less, no copy-in);
  fsdp2    fully_shard on each block and on the root: weights, gradients and AdamW state split n
           ways (ZeRO-3, Rajbhandari et al. 2020), each block all-gathered when used. Its weights
           stay FP32 (no MixedPrecisionPolicy), so all three variants run the same arithmetic;
           torchtitan-style BF16 all-gathers would halve that traffic.

Model: pytorch/model.py's Transformer at HDLC_LAB_400M (403 M parameters), wide enough that a
step is compute-bound: ≈ 45 TFLOP per GPU per step, about 100 ms on an H100 by that count, with
the FP32 gradient all-reduce (1.6 GB) to hide under backward. A step: forward under BF16
autocast (FP32 weights), next-token cross-entropy on seeded random bytes, backward, AdamW, as
train.py. On gloo CPU processes: the TINY config in FP32 (no autocast), no memory metrics.

Metrics: step_ms (median), tokens_per_s of all ranks, scaling_eff_pct = tokens/s(n) / (n ·
tokens/s(1)), peak_mem_bytes = torch.cuda.max_memory_allocated over the timed steps (largest
rank), resident_mem_bytes = what is still allocated after them: weights, gradients, AdamW state
and DDP's buckets, the "model states" of the parallel-memory calculator (per parameter FP32:
4 + 4 + 8 B, DDP +4 B of buckets unless `_view`, FSDP2 all of it / n). Every DDP variant is
then profiled for PROFILED_STEPS steps: comm_ms, comm_hidden_pct, exposed_comm_ms (CUDA only;
the method is in trace_overlap.py).

Check before timing: one FP32 step (no autocast, no TF32, SDPA's math kernel) on a global check
batch of n sequences that every rank rebuilds from the seed, rank r taking sequence r:
  (a) every parameter's gradient (DDP: the averaged one; FSDP2: reassembled by full_tensor())
      against the single-process gradient of the whole check batch in float64, as the largest
      per-tensor ‖g − g64‖/‖g64‖. A rank that skips the average or sums instead is wrong by O(1)
      (injected on gloo: 1.3 and 1.0); FP32 rounding is ~1e-6 (2.4e-6 measured on CPU for a
      16-layer d 768 stack), hence TOL = 1e-4, train.py's FP32 bound. Both the
      distributed and the 1-GPU gradients are held to the float64 one, so they agree within 2·TOL;
  (b) the parameters after that AdamW step (FSDP2: each rank updated its shards), as updates
      (after − before), against one plain AdamW step on full tensors from the same weights and
      gradients: same TOL (equal up to rounding; a shard changed after the step: 2.4).
The error reported is the larger of the two on the worst rank; a variant over TOL is recorded
as failed and never timed.
"""

import gc
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "pytorch"))
sys.path.insert(0, str(HERE))
import labkit  # noqa: E402
import model  # noqa: E402
import peaks  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import trace_overlap  # noqa: E402
import workers  # noqa: E402
from ranks import max_over_ranks, sync  # noqa: E402

# hdlc-lab's shape, widened: d 1536, 16 layers, 12 query heads of 128, 4 KV heads, SwiGLU 4096.
HDLC_LAB_400M = model.Config(d_model=1536, n_layers=16, n_heads=12, n_kv_heads=4, d_head=128,
                             ffn=4096, context=1024)
TOL = 1e-4
WARMUP, REPS = (1, 3) if labkit.QUICK else (3, 10)
PROFILED_STEPS = 3
BUCKETS_MB = (1, 5, 25, 100)


def sizes(device):
    """(config, sequences per GPU, tokens per sequence, check tokens per sequence)."""
    if device.type == "cuda" and not labkit.QUICK:
        return HDLC_LAB_400M, 16, 1024, 128
    return model.TINY, 2 if labkit.QUICK else 4, model.TINY.context, 16


def tokens(batch, seq, seed, device):
    """Seeded random bytes: inputs and their next-token targets."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, 256, (batch, seq + 1), generator=g)
    return t[:, :-1].to(device), t[:, 1:].to(device)


def next_token_loss(m, x, y, bf16):
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = m(x)
    logits = logits.float() if logits.dtype == torch.bfloat16 else logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def make_optimizer(params):
    return torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)


# ANCHOR: step
def train_step(m, opt, x, y):
    opt.zero_grad(set_to_none=False)  # gradients stay allocated, as the memory models assume
    next_token_loss(m, x, y, bf16=x.is_cuda).backward()  # DDP: bucket all-reduces start in here
    opt.step()  # FSDP2: each rank updates only its shards
# ANCHOR_END: step


def fresh_model(cfg, init, device, dtype=torch.float32):
    """The model with the seeded weights `init` (built on `device`: no slow CPU init)."""
    with torch.device(device):
        net = model.Model(cfg)
    net.load_state_dict(init)
    return net.to(dtype)


def fp64_gradients(cfg, init, x, y, device):
    """The single-process gradient of the whole check batch in float64 (kept on the CPU)."""
    net = fresh_model(cfg, init, device, torch.float64)
    next_token_loss(net, x, y, bf16=False).backward()
    return {k: p.grad.float().cpu() for k, p in net.named_parameters()}


# ANCHOR: verify
def verify(net, m, opt, full, ref, init, x, y):
    """Largest per-tensor relative error of (a) the FP32 gradients and (b) one AdamW step."""
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    opt.zero_grad(set_to_none=False)
    with sdpa_kernel(SDPBackend.MATH):  # attention as plain FP32 matmuls, like the reference
        next_token_loss(m, x, y, bf16=False).backward()
    grads = {k: full(p.grad) for k, p in net.named_parameters()}  # FSDP2: reassembled
    err = max(labkit.rel_error(g, ref[k]) for k, g in grads.items())
    opt.step()
    plain = {k: torch.nn.Parameter(init[k].to(g.device, copy=True)) for k, g in grads.items()}
    for k, p in plain.items():
        p.grad = grads[k]
    make_optimizer(plain.values()).step()  # the same step on unsharded tensors
    for k, p in plain.items():
        before = init[k].to(p.device)
        after = full(net.get_parameter(k).detach())
        err = max(err, labkit.rel_error(after - before, p.detach() - before))
    return err
# ANCHOR_END: verify


def timed(step, device, solo):
    """Timing of `step` and the memory it needs (max over ranks unless rank 0 runs alone)."""
    gc.collect()
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        timing = labkit.time_torch(step, warmup=WARMUP, flush=False, reps=REPS)
    else:
        timing = labkit.time_wall(step, warmup=WARMUP, reps=REPS)
    if not cuda:
        return timing, {}
    mem = {"peak_mem_bytes": torch.cuda.max_memory_allocated(),
           "resident_mem_bytes": torch.cuda.memory_allocated()}
    if not solo:
        mem = {k: max_over_ranks(v, device) for k, v in mem.items()}
    return timing, mem


def comm_overlap(step, device, rank):
    """Profile PROFILED_STEPS steps on every rank (the same profiler cost everywhere); rank 0
    reads the all-reduce overlap from its trace. {} off the GPU (no kernels to read)."""
    activities = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=activities) as prof:
        for _ in range(PROFILED_STEPS):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    if rank != 0:
        return {}
    found = trace_overlap.from_profiler(prof, PROFILED_STEPS)
    if found is None and device.type == "cuda":
        labkit.log("comm_overlap: no NCCL kernel in the trace; no comm metrics")
    return found or {}


# ANCHOR: wrap
def wrap(kind, net, device, n, bucket_mb=25, view=False):
    """(model to call, full-tensor view of a parameter or gradient) for one variant."""
    if kind == "ddp":
        # broadcast_buffers=False: the only buffers are RoPE's constant tables.
        m = DDP(net, device_ids=[device.index] if device.type == "cuda" else None,
                bucket_cap_mb=bucket_mb, gradient_as_bucket_view=view, broadcast_buffers=False)
        return m, lambda t: t
    if kind == "fsdp2":
        mesh = init_device_mesh(device.type, (n,))
        for block in net.blocks:
            fully_shard(block, mesh=mesh)  # one all-gather / reduce-scatter unit per block
        fully_shard(net, mesh=mesh)  # the rest: embedding, final norm, LM head
        return net, lambda t: t.full_tensor()
    return net, lambda t: t
# ANCHOR_END: wrap


class Lab:
    """What every variant shares: sizes, seeded weights, the check batch and its reference."""

    def __init__(self, rank, n, device):
        self.rank, self.n, self.device = rank, n, device
        self.cfg, self.batch, self.seq, check_len = sizes(device)
        self.init = model.build(self.cfg, seed=0).state_dict()  # the same weights on every rank
        self.check = tokens(n, check_len, labkit.SEED, device)  # one sequence per rank
        self.ref = fp64_gradients(self.cfg, self.init, *self.check, device)
        self.data = tokens(self.batch, self.seq, labkit.SEED + 1 + rank, device)
        self.single_tps = None  # tokens/s of the 1-GPU baseline, once measured

    def params(self, shards, **extra):
        return dict(world=self.n, shards=shards, batch_per_gpu=self.batch, seq=self.seq,
                    d_model=self.cfg.d_model, layers=self.cfg.n_layers, **extra)

    def run(self, variant, label, kind, bucket_mb=25, view=False):
        """Build → verify (FP32) → time (BF16 autocast) → profile (DDP) → record on rank 0."""
        solo = kind == "single"
        shards = 1 if solo else self.n
        params = self.params(shards, **({} if kind != "ddp" else
                                        {"bucket_mb": bucket_mb, "bucket_view": int(view)}))
        net = fresh_model(self.cfg, self.init, self.device)
        m, full = wrap(kind, net, self.device, self.n, bucket_mb, view)
        opt = make_optimizer(net.parameters())
        x, y = self.check
        rows = slice(None) if solo else slice(self.rank, self.rank + 1)
        err = verify(net, m, opt, full, self.ref, self.init, x[rows], y[rows])
        err = err if solo else max_over_ranks(err, self.device)
        if not err <= TOL:
            if self.rank == 0:
                labkit.failed(variant, label, params, "verify",
                              f"rel_error {err:.3e} exceeds {TOL:.0e}", baseline=solo)
            return
        step = lambda: train_step(m, opt, *self.data)  # noqa: E731
        timing, metrics = timed(step, self.device, solo)
        if kind == "ddp" and (self.device.type == "cuda" or (bucket_mb, view) == (25, False)):
            metrics.update(comm_overlap(step, self.device, self.rank))  # CPU: the path, once
        if self.rank == 0:
            self.report(variant, label, params, timing, err, metrics, shards)

    def report(self, variant, label, params, timing, err, metrics, shards):
        flops_per_gpu = 3 * model.forward_flops(self.cfg, self.batch, self.seq)  # fwd + bwd
        tps = shards * self.batch * self.seq / (timing["median_ms"] * 1e-3)
        metrics.update(step_ms=timing["median_ms"], tokens_per_s=tps,
                       params_count=sum(v.numel() for v in self.init.values()))
        if self.device.type == "cuda":
            metrics.update(peaks.mfu_metrics(flops_per_gpu, timing["median_ms"]))
        if shards == 1:
            self.single_tps = tps
        elif self.single_tps:
            metrics["scaling_eff_pct"] = 100.0 * tps / (shards * self.single_tps)
        labkit.ok(variant, label, params, timing, rel_error=err, tolerance=TOL,
                  flops=shards * flops_per_gpu, baseline=shards == 1, metrics=metrics)
        labkit.log(f"{variant}: {timing['median_ms']:.1f} ms/step, {tps:,.0f} tokens/s")


def main():
    cuda = torch.cuda.is_available()
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if cuda else "gloo")
    if not workers.under_torchrun():
        labkit.failed("single", "1 GPU", {"world": 1}, "unsupported",
                      "scaling needs 2+ ranks: run under torchrun --nproc-per-node=N (N ≥ 2)")
        return
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = workers.init_group(rank, n, backend)
    gpus = "GPUs" if device.type == "cuda" else f"{backend} ranks"
    try:
        lab = Lab(rank, n, device)
        if rank == 0:
            lab.run("single", "1 GPU alone (no DDP)" if device.type == "cuda" else "1 rank alone",
                    "single")
        sync(device)  # the other ranks wait here while rank 0 measures the baseline
        lab.run("ddp_b25", f"DDP, {n} {gpus}", "ddp")
        lab.run("fsdp2", f"FSDP2, {n} {gpus}", "fsdp2")
        for mb in BUCKETS_MB:
            for view in (False, True):
                if (mb, view) != (25, False):
                    suffix = ", grad = bucket view" if view else ""
                    lab.run(f"ddp_b{mb}" + ("_view" if view else ""),
                            f"DDP, {n} {gpus}, {mb} MB buckets{suffix}", "ddp", mb, view)
        sync(device)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
