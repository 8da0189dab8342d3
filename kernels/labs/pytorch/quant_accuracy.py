"""What each quantization format costs in quality, on a model trained on the book's own text.

One idea: quantization trades bytes (or FLOP/s) for accuracy, and the accuracy side can be
measured like the speed side. hdlc-lab is trained exactly as train.py trains its BF16 variant
(train.py's functions, seeds and 400 steps on the cards' bytes), then copied once per format,
quantized after training (round-to-nearest, no fine-tuning) and scored on validation bytes it
never trained on, beside the unquantized model in the same run:

  weight-only  INT8 per-channel; INT4 per-channel; INT4 g128, symmetric (absmax, codes ±7) and
               asymmetric (min/max with a zero point: all 16 codes used on a lopsided group, for
               4 more bits per group). FP16 scales, as GPTQ/AWQ/MARLIN checkpoints store them.
  W8A8         INT8 per-token activations × per-channel weights, without and with SmoothQuant
               (α = 0.5, calibrated on training text; Xiao et al. 2023); FP8 E4M3 with per-tensor
               and with per-token × per-channel scales. FP32 scales.
  KV cache     K (after RoPE) and V in INT8 or FP8 E4M3, one FP32 scale per token and KV head, as
               the book's kv_int8 / kv_fp8 decode kernels store them.
The embedding and LM head stay BF16 (GPTQ, AWQ and vLLM leave them so by default); the seven
projections of every block are quantized.

Simulated on purpose: every quantized tensor goes to codes + scales and back (codes × scales),
and the model computes with those values. Weight-only formats give the dequantized weights to a
BF16 matmul, as a W4A16 kernel does after unpacking in registers. W8A8 multiplies the integer or
FP8 codes in FP32 — a product of two 8-bit codes is exact there, and so are the INT8 sums, which
stay below 2^24 (checked) — then applies scale_x · scale_w, as an INT8/FP8 GEMM's epilogue does.
K and V are replaced by their dequantized values where attention reads them. So the matmuls see
exactly the values the format can represent: this measures the format. A real kernel multiplies
the same values and differs only in summation order and accumulator width, an effect the size
of the FP32-vs-BF16 row, not of the formats. Speed is measured by the kernels (quant_gemv,
decode_attention); a row's time here is its evaluation pass, the cost of the simulation.

Measured over the same held-out bytes (EVAL_BATCHES × BATCH windows of SEQ bytes tiled from the
start of the validation split, each byte predicted once): perplexity = exp(mean next-byte loss),
its change against BF16 in %, the share of positions whose greedy next byte (argmax) equals
BF16's, and ‖logits − logits_BF16‖ / ‖logits_BF16‖.

Verification (rel_error ≤ tolerance) before a row is reported; accuracy itself is measured,
never a pass/fail bound:
  FP32: logits against a float64 copy of the model, ≤ 1e-4 (train.py's FP32 bound).
  BF16: logits against FP32, ≤ 5e-2, and held-out loss below train.py's LOSS_BOUND, or no row is
    reported: the model must use context before its quantization means anything.
  quantized: the round trip (quantize.RoundTrip), exact, so tolerance 0. The codes of every
    tensor the format quantizes are the format's own (its quantizer maps them to themselves:
    integers in range, values an E4M3 holds), and where the model reads a dequantized tensor
    (weight-only weights as the matmul gets them in BF16, K and V as attention gets them) it
    equals codes × scales: the model computes on the format's grid with no extra precision.
    The number of tensors checked in one forward pass must equal what the format quantizes,
    INT8 sums must stay below 2^24, and SmoothQuant must leave the unquantized FP32 logits
    unchanged (≤ 1e-4): it is an identity until something is rounded.
"""

import copy
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import quantize as qz  # noqa: E402  (the formats and where they are applied)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import train  # noqa: E402  (its corpus, batches, optimizer, step and loss bound)

QUICK = labkit.QUICK
DEV = train.DEV
CFG, BATCH, SEQ = train.CFG, train.BATCH, train.SEQ
EVAL_BATCHES = 2 if QUICK else 16  # 16 × 32 × 256 = 131,072 held-out bytes scored
CALIB_BATCHES = 2 if QUICK else 8  # SmoothQuant's activation maxima, from training text
GROUP = 32 if QUICK else 128  # INT4 group size along K (TINY's K = 64 has no group of 128)
ALPHA = 0.5
REPS = 2 if QUICK else 5  # timed evaluation passes per row
if QUICK:  # smoke test only: after train.py's 30 quick steps TINY sits within 1% of the loss
    train.STEPS = 100  # bound, too close for a run that must reach the quantized rows


def heldout_batches(val):
    """EVAL_BATCHES × [BATCH, SEQ] windows tiled from the start of the validation split."""
    n = EVAL_BATCHES * BATCH * SEQ
    if len(val) < n + 1:
        raise ValueError(f"validation split has {len(val)} bytes, the evaluation needs {n + 1}")
    x = val[:n].view(EVAL_BATCHES, BATCH, SEQ).to(DEV)
    y = val[1 : n + 1].view(EVAL_BATCHES, BATCH, SEQ).to(DEV)
    return list(zip(x, y))


def logits_of(m, x, precision):
    with torch.no_grad(), torch.autocast(device_type=DEV, dtype=torch.bfloat16,
                                         enabled=precision == "bf16"):
        return m(x).float()


def eval_pass(m, batches, precision="bf16"):
    """Summed loss and the logits of every held-out batch (tensors: no host sync while timed)."""
    out = []
    for x, y in batches:
        logits = logits_of(m, x, precision)
        out.append((F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                    reduction="sum"), logits))
    return out


def score(out, ref, ref_ppl):
    """Perplexity and its agreement with the BF16 reference, over the same held-out bytes."""
    loss = sum(float(l) for l, _ in out) / (EVAL_BATCHES * BATCH * SEQ)
    agree = sum(int((lg.argmax(-1) == r.argmax(-1)).sum()) for (_, lg), (_, r) in zip(out, ref))
    diff = math.sqrt(sum(float((lg - r).pow(2).sum()) for (_, lg), (_, r) in zip(out, ref)))
    norm = math.sqrt(sum(float(r.pow(2).sum()) for _, r in ref))
    ppl = math.exp(loss)
    return {"heldout_loss": loss, "perplexity": ppl,
            "ppl_delta_pct": 100.0 * (ppl / ref_ppl - 1.0) if ref_ppl else 0.0,
            "top1_agree_pct": 100.0 * agree / (EVAL_BATCHES * BATCH * SEQ),
            "logits_rel_err": diff / norm, "tokens": EVAL_BATCHES * BATCH * SEQ}


def train_model(train_data):
    """hdlc-lab trained as pt_train's BF16 variant: the same seeds, batches, schedule and steps."""
    train.set_precision("bf16")
    m = model.build(CFG, seed=0, device=DEV)
    opt = train.make_optimizer(m)
    gen = torch.Generator().manual_seed(labkit.SEED)
    losses = []
    for step in range(train.STEPS):
        losses.append(train.train_step(m, opt, *train.get_batch(train_data, gen), step, "bf16"))
    labkit.log(f"trained {train.STEPS} steps, last train loss {float(losses[-1]):.3f}")
    return m.eval(), float(torch.stack(losses[-20:]).mean())


def formats(L):
    """(variant, label, params, build, tensors the check must see); build(model, rt, ctx) → metrics."""
    fp16, int8, fp8, fp8_tensor = torch.float16, qz.Fmt("int", 8), qz.Fmt("fp8"), qz.Fmt("fp8", group=-1)

    def wo(f):
        return lambda mq, rt, ctx: {"bits_per_weight": qz.weight_only(mq, f, rt)}

    def kv(f):
        return lambda mq, rt, ctx: {"kv_bits_per_value": qz.kv_quant(mq, f, rt)}

    def a8(w_fmt, a_fmt, smoothed=False):
        def build(mq, rt, ctx):
            metrics = {}
            if w_fmt.kind == "int":  # how outlier-heavy the smoothed inputs are, before/after
                metrics["act_outlier_ratio"] = max(float(a.max() / a.median()) for a in ctx["amax"].values())
            if smoothed:
                _, metrics["act_outlier_ratio"] = qz.smooth(mq, ctx["amax"], ALPHA)
                err = labkit.rel_error(logits_of(mq, ctx["x0"], "fp32"), ctx["fp32_logits0"])
                if not err <= 1e-4:
                    raise Verify(f"smoothing changed the FP32 logits by {err:.2e} (> 1e-4)")
            metrics["bits_per_weight"] = qz.w8a8(mq, w_fmt, a_fmt, rt)
            return metrics
        return build

    def p(w, a, kv_bits=16, group=0):
        return {"w_bits": w, "a_bits": a, "kv_bits": kv_bits, "group": group}

    g = GROUP
    return [
        ("w8_channel", "W8A16 INT8 per-channel", p(8, 16), wo(qz.Fmt("int", 8, scale_dtype=fp16)), 7 * L),
        ("w4_channel", "W4A16 INT4 per-channel", p(4, 16), wo(qz.Fmt("int", 4, scale_dtype=fp16)), 7 * L),
        ("w4_group", f"W4A16 INT4 g{g} symmetric", p(4, 16, group=g),
         wo(qz.Fmt("int", 4, g, scale_dtype=fp16)), 7 * L),
        ("w4_group_asym", f"W4A16 INT4 g{g} asymmetric (zero point)", p(4, 16, group=g),
         wo(qz.Fmt("int", 4, g, symmetric=False, scale_dtype=fp16)), 7 * L),
        ("w8a8_int8", "W8A8 INT8 (per-token × per-channel)", p(8, 8), a8(int8, int8), 14 * L),
        ("w8a8_int8_smooth", f"W8A8 INT8 + SmoothQuant α={ALPHA}", p(8, 8),
         a8(int8, int8, smoothed=True), 14 * L),
        ("w8a8_fp8_tensor", "W8A8 FP8 E4M3 per-tensor", p(8, 8), a8(fp8_tensor, fp8_tensor), 14 * L),
        ("w8a8_fp8_row", "W8A8 FP8 E4M3 (per-token × per-channel)", p(8, 8), a8(fp8, fp8), 14 * L),
        ("kv_int8", "KV cache INT8 (per-token absmax)", p(16, 16, 8), kv(int8), 2 * L),
        ("kv_fp8", "KV cache FP8 E4M3 (per-token scale)", p(16, 16, 8), kv(fp8), 2 * L),
    ]


class Verify(Exception):
    """A row whose check failed: reported as failed at the verify stage, never as a number."""


COLUMNS = ["perplexity", "ppl_delta_pct", "top1_agree_pct", "logits_rel_err", "bits_per_weight",
           "kv_bits_per_value"]
REFERENCES = [("fp32", "FP32 (no autocast)", {"w_bits": 32, "a_bits": 32, "kv_bits": 32, "group": 0}),
              ("bf16", "BF16 (autocast, reference)", {"w_bits": 16, "a_bits": 16, "kv_bits": 16, "group": 0})]


def emit(head, rung, m, batches, precision, metrics, err, tol):
    """Time the row's evaluation pass and print its record, with a one-row `accuracy` table that
    the book merges over the family's records into the whole table."""
    variant, label, params = head
    if not err <= tol:
        labkit.failed(variant, label, params, "verify", f"rel_error {err:.3e} exceeds {tol:.1e}", rung=rung)
        return
    timing = labkit.time_torch(lambda: eval_pass(m, batches, precision), warmup=1, reps=REPS)
    table = {"columns": COLUMNS, "rows": [[float(metrics[c]) for c in COLUMNS]]}
    labkit.ok(variant, label, params, timing, rel_error=err, tolerance=tol, rung=rung,
              baseline=variant == "bf16", metrics=metrics, tables={"accuracy": table})
    labkit.log(f"{variant}: ppl {metrics['perplexity']:.4f} ({metrics['ppl_delta_pct']:+.2f}%), "
               f"top-1 {metrics['top1_agree_pct']:.2f}%, logits {metrics['logits_rel_err']:.2e}")


def run_format(spec, rung, m, batches, ref, ref_ppl, ctx):
    """Quantize a copy of the model, check the round trip in one forward pass, score, time."""
    variant, label, params, build, expected = spec
    try:
        mq, rt = copy.deepcopy(m), qz.RoundTrip()
        metrics = {"bits_per_weight": 16.0, "kv_bits_per_value": 16.0}
        metrics.update(build(mq, rt, ctx))
        rt.active = True  # one checked forward: activations, K and V re-quantize to their codes
        logits_of(mq, batches[0][0], "bf16")
        rt.active = False
        if rt.count != expected:
            raise Verify(f"checked {rt.count} quantized tensors, the format quantizes {expected}")
        if not rt.exact_sums:
            raise Verify("an INT8 partial sum reached 2^24: FP32 sums would not be exact")
        metrics.update(score(eval_pass(mq, batches), ref, ref_ppl))
        emit((variant, label, params), rung, mq, batches, "bf16", metrics, rt.err, 0.0)
    except Verify as e:
        labkit.failed(variant, label, params, "verify", str(e), rung=rung)
    except Exception as e:  # a format that does not run is a result too: a failed one
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)


def main():
    torch.manual_seed(labkit.SEED)
    train_data, val = train.load_corpus()
    m, train_loss = train_model(train_data)
    batches = heldout_batches(val)
    ref, out32 = eval_pass(m, batches, "bf16"), eval_pass(m, batches, "fp32")
    base = score(ref, ref, None)
    specs = formats(CFG.n_layers)
    if not base["heldout_loss"] < train.LOSS_BOUND:  # no model worth quantizing: nothing to report
        why = f"BF16 held-out loss {base['heldout_loss']:.3f} not below {train.LOSS_BOUND:.3f}"
        for rung, (variant, label, params, *_) in enumerate(REFERENCES + specs):
            labkit.failed(variant, label, params, "verify", why, rung=rung)
        return
    labkit.log(f"BF16 held-out loss {base['heldout_loss']:.3f} (bound {train.LOSS_BOUND:.3f})")
    x0 = batches[0][0]
    with torch.no_grad():
        err64 = labkit.rel_error(out32[0][1], copy.deepcopy(m).double()(x0))
    fp32 = dict(score(out32, ref, base["perplexity"]), bits_per_weight=32.0, kv_bits_per_value=32.0)
    emit(REFERENCES[0], 0, m, batches, "fp32", fp32, err64, 1e-4)
    bf16 = dict(base, bits_per_weight=16.0, kv_bits_per_value=16.0, loss_bound=train.LOSS_BOUND,
                unigram_entropy=train.unigram_entropy(train_data), final_train_loss=train_loss)
    emit(REFERENCES[1], 1, m, batches, "bf16", bf16, labkit.rel_error(ref[0][1], out32[0][1]), 5e-2)
    gen = torch.Generator().manual_seed(labkit.SEED + 3)  # calibration text: training batches
    calib = [train.get_batch(train_data, gen)[0] for _ in range(CALIB_BATCHES)]
    ctx = {"amax": qz.calibrate(m, calib), "x0": x0, "fp32_logits0": out32[0][1]}
    for rung, spec in enumerate(specs, start=2):
        run_format(spec, rung, m, batches, ref, base["perplexity"], ctx)


if __name__ == "__main__":
    main()
