//! attention: the forward pass O = softmax(Q·Kᵀ/√d)·V in BF16 (FP32 inside) for B·H heads of
//! N × d, causal and not, against "standard" attention — cuBLAS for both products around a
//! softmax kernel — measured in the same run.
//!
//! Verification, for every variant (the baseline included): (1) the variant at a small shape
//! (2 heads, N = 256) against an f64 CPU reference over every element; (2) at the timed shape,
//! 64 sampled output rows against f64 (including the first and the last row); (3) for the other
//! variants, the whole output against standard attention's output on the same inputs, when
//! standard fits in memory. The recorded error is the largest of the three. BF16 P and O put
//! the honest error near 1e-3, hence the 1e-2 tolerance.
//!
//! Memory: naive keeps S (B·H·N² floats), standard S and a BF16 P; flash keeps neither. A
//! variant whose workspace does not fit in free device memory is recorded as not measured, with
//! the size it would have needed; each record carries its workspace in `workspace_bytes`.

use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::{ladder, params, Item, V};
use super::super::reference::{
    attention_rows_f64, attention_rows_vs, bf16_to_f32, rel_error_f32, sample_rows,
};
use super::super::results::{FailStage, Timing};
use super::Family;
use runner::{make_io, small_check, workspace_bytes, Io, Runner, Shape};
use std::rc::Rc;

mod pass;
mod runner;

pub(crate) const FAMILY: Family = Family {
    name: "attention",
    sources: SOURCES,
    items,
    work,
    cublas: &["standard"],
    measure,
};
/// The flash_wgmma rungs live apart: that file is compiled for sm_90a (wgmma, setmaxnreg).
const SOURCES: &[KernelFile] = &[
    kernel_file!("attention/attention.cu"),
    kernel_file!("attention/attention_hopper.cu", arch_specific),
];
const FILE: &str = SOURCES[0].path;
const HOPPER_FILE: &str = SOURCES[1].path;
const TOL: f64 = 1e-2;

/// Batch and heads are fixed (B·H = 64 heads fill the 132 SMs of an H100 from N = 1024 on:
/// flash_tc runs N/128 · 64 blocks) while the sequence grows, so the N² score matrix of the
/// naive and standard variants grows with it until it no longer fits.
pub const ATTN_BATCH: u64 = 4;
pub const ATTN_HEADS: u64 = 16;
pub const ATTN_SEQS: &[u64] = &[512, 1024, 2048, 4096, 8192, 16384];
pub const ATTN_HEAD_DIMS: &[u64] = &[64, 128];

/// The ladder at every (d, N, mask), the mask innermost: both masks of a shape run on the same
/// Q, K, V, made once.
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &d in ATTN_HEAD_DIMS {
        for &n in ATTN_SEQS {
            for causal in [0, 1] {
                out.extend(shape_items(d, n, causal));
            }
        }
    }
    // Shape by shape, every rung: unlike the GEMM families (see `plan::run_last`), moving the
    // intricate rungs to a second pass here would make every shape's inputs twice — up to 1.5 GB
    // of Q, K, V and a standard-attention reference each — about a twentieth of the suite's
    // time budget. A device fault in a Hopper rung would fail the items after it (recorded as
    // failed, never drawn), a cost paid only when something is broken.
    out
}

/// The ladder at one shape, the slowest rungs skipped where they stop teaching.
fn shape_items(d: u64, n: u64, causal: u64) -> Vec<Item> {
    let mut items = ladder(
        "attention",
        FILE,
        &[
            V("naive", "naive: S in FP32, softmax, P·V (SIMT)"),
            V("flash_simt", "FlashAttention tiling, CUDA cores"),
            V("flash_tc", "FlashAttention-2, tensor cores (mma.sync)"),
            V(
                "flash_wgmma",
                "WGMMA + TMA, producer and 2 consumer warpgroups (Hopper)",
            ),
            V(
                "flash_wgmma_pipe",
                "+ softmax overlapped with the next Q·Kᵀ (FlashAttention-3)",
            ),
            V(
                "flash_wgmma_pingpong",
                "+ ping-pong: the 2 warpgroups take turns on the tensor cores",
            ),
        ],
        &params(&[
            ("b", ATTN_BATCH),
            ("h", ATTN_HEADS),
            ("n", n),
            ("d", d),
            ("causal", causal),
        ]),
        ("standard", "standard: cuBLAS Q·Kᵀ, softmax, cuBLAS P·V"),
    );
    // The baseline's softmax kernel lives in attention.cu too; the Hopper rungs in their file.
    for it in items.iter_mut() {
        if it.baseline {
            it.source_file = Some(FILE);
        } else if it.variant.starts_with("flash_wgmma") {
            it.source_file = Some(HOPPER_FILE);
        }
    }
    // The slowest rungs stop where they stop teaching: their shape is clear by N = 4096, and
    // each larger size would cost the suite seconds (issue 17: a 90-second suite).
    if n >= 16384 {
        items[0].skip = Some(
            "skipped: too slow — the SIMT score and P·V products take over a second per run at \
             N = 16384, and S alone is 64 GiB",
        );
    } else if n >= 8192 {
        items[0].skip = Some(
            "skipped: slow — the naive kernel writes and reads a 16 GiB S at N = 8192; its trend \
             is clear by 4096",
        );
    }
    if n >= 8192 {
        items[1].skip = Some(
            "skipped: slow — CUDA-core FlashAttention's time grows as N², so from N = 8192 it costs \
             the suite seconds; its trend is clear by 4096",
        );
    }
    items
}

/// 4·N²·d FLOPs per head (two products of 2·N²·d), half of it when causal; the fewest bytes are
/// Q, K, V read and O written once, BF16.
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    let (heads, n, d) = (f("b") * f("h"), f("n"), f("d"));
    let causal = if item.p("causal") != 0 { 0.5 } else { 1.0 };
    (causal * 4.0 * n * n * d * heads, 8.0 * heads * n * d)
}

/// Check one variant at a small shape, then against sampled f64 rows and standard attention at
/// the timed shape, and time it.
fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let s = Shape {
        heads: (item.p("b") * item.p("h")) as usize,
        n: item.p("n") as usize,
        d: item.p("d") as usize,
        causal: item.p("causal") != 0,
    };
    let variant = item.variant;
    let seed = ctx.seed(item);
    // The small check first: a variant that is wrong fails fast, before any large allocation.
    let small_rel = small_check(ctx, variant, s, seed)?;
    if !(small_rel.is_finite() && small_rel <= TOL) {
        return Err(Fail::new(
            FailStage::Verify,
            format!("at 2 heads × N = 256: relative error {small_rel:.3e} against f64 (tolerance {TOL:.0e})"),
        ));
    }
    // The shape's inputs and standard attention's output on them are shared by its variants
    // (see `Ctx::shared`): the output buffer is poisoned before each variant's check anyway.
    // Q, K, V do not depend on the mask: both masks of a shape (adjacent in the plan) share them.
    let io_key = format!("heads {} n {} d {}", s.heads, s.n, s.d);
    let io = ctx.shared("attention_io", &io_key, |gpu, seed| Ok(make_io(gpu, s, seed)?))?;
    let key = format!("{:?}", item.params);
    let standard_out = standard_output(ctx, variant, s, &io, &key)?;
    let reference = standard_out.as_ref().as_ref();
    // The sampled rows and their f64 reference are the shape's (and mask's), shared by its
    // variants like the inputs: 64 rows, each a pass over up to N keys.
    let sampled = ctx.shared("attention_rows", &key, |_, seed| {
        let rows = sample_rows(s.heads, s.n, 64, seed);
        let want = attention_rows_f64(&io.qh, &io.kh, &io.vh, s.n, s.d, s.causal, &rows);
        Ok((rows, want))
    })?;
    let runner = Runner::new(ctx, variant, s, &io)?;
    let gpu = ctx.gpu;
    let mut t = check_and_time(gpu, TOL, &[&io.o], &mut || runner.run(gpu, s, &io), &mut || {
        // Read as BF16 where compared (see `OutElem`): no f32 copy of the output.
        let out = gpu.download_u16(&io.o, s.elems())?;
        let (rows, want) = &*sampled;
        let sampled = attention_rows_vs(&out, s.n, s.d, rows, want);
        let vs_standard = reference.as_ref().map_or(0.0, |r| rel_error_f32(&out, r));
        Ok(small_rel.max(sampled).max(vs_standard))
    })?;
    t.workspace_bytes = Some(workspace_bytes(variant, s) as f64);
    Ok(t)
}

/// Standard attention's output on the same inputs, where it fits (its workspace is freed
/// before the variant's own is allocated), made once per shape and mask; `None` for the
/// baseline itself and where standard does not fit.
fn standard_output(ctx: &mut Ctx, variant: &str, s: Shape, io: &Io, key: &str) -> Res<Rc<Option<Vec<f32>>>> {
    Ok(if variant == "standard" {
        Rc::new(None)
    } else if let Some(r) = ctx.get_shared("attention_standard_out", key) {
        r
    } else {
        let out = match Runner::new(ctx, "standard", s, io) {
            Ok(std) => {
                ctx.gpu.fill_nan(&io.o)?;
                std.run(ctx.gpu, s, io)?;
                Some(bf16_to_f32(&ctx.gpu.download_u16(&io.o, s.elems())?))
            }
            Err(_) => None,
        };
        ctx.put_shared("attention_standard_out", key, out)
    })
}
