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

use super::super::gpu::{Arg, DevBuf, Dtype, Gpu, Kernel, Launch, RowMajorGemm, TensorMap};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::plan::Item;
use super::super::reference::{
    attention_rows_f64, attention_rows_vs, bf16_to_f32, random_bf16, rel_error_f32, sample_rows,
};
use super::super::results::{FailStage, Timing};
use std::rc::Rc;

const FILE: &str = "attention.cu";
/// The flash_wgmma rungs live apart: that file is compiled for sm_90a (wgmma, setmaxnreg).
const HOPPER_FILE: &str = "attention_hopper.cu";
const TOL: f64 = 1e-2;
const GIB: f64 = (1u64 << 30) as f64;
/// Memory left free beside a workspace (cuBLAS workspace, the L2 flush buffer, fragmentation).
const MARGIN: usize = 1 << 30;

#[derive(Clone, Copy, Debug)]
struct Shape {
    heads: usize,
    n: usize,
    d: usize,
    causal: bool,
}

impl Shape {
    fn elems(&self) -> usize {
        self.heads * self.n * self.d
    }
    fn s_elems(&self) -> usize {
        self.heads * self.n * self.n
    }
}

/// Inputs and output of one shape: device buffers and the exact BF16 values on the host.
struct Io {
    q: DevBuf,
    k: DevBuf,
    v: DevBuf,
    o: DevBuf,
    qh: Vec<f32>,
    kh: Vec<f32>,
    vh: Vec<f32>,
}

/// Scores with a spread of about 2 (Q in [−6, 6), K and V in [−1, 1)): softmax rows that are
/// neither uniform nor one-hot, so a wrong max, sum or mask shows.
fn make_io(gpu: &Gpu, s: Shape, seed: u64) -> anyhow::Result<Io> {
    let e = s.elems();
    let (qb, qh) = random_bf16(e, seed ^ 0x51, -6.0, 6.0);
    let (kb, kh) = random_bf16(e, seed ^ 0x4b, -1.0, 1.0);
    let (vb, vh) = random_bf16(e, seed ^ 0x56, -1.0, 1.0);
    let (q, k, v, o) = (
        gpu.alloc(e * 2)?,
        gpu.alloc(e * 2)?,
        gpu.alloc(e * 2)?,
        gpu.alloc(e * 2)?,
    );
    gpu.upload_u16(&q, &qb)?;
    gpu.upload_u16(&k, &kb)?;
    gpu.upload_u16(&v, &vb)?;
    Ok(Io {
        q,
        k,
        v,
        o,
        qh,
        kh,
        vh,
    })
}

/// Extra device memory a variant needs at a shape.
fn workspace_bytes(variant: &str, s: Shape) -> usize {
    match variant {
        "naive" => s.s_elems() * 4,
        "standard" => s.s_elems() * 6,
        _ => 0,
    }
}

fn flash_smem(variant: &str, d: usize) -> u32 {
    if variant.starts_with("flash_wgmma") {
        // Q and two stages of K and V, 128 × d each, + 1 KiB to align the swizzled tiles to
        // 1024 bytes + the mbarriers.
        (5 * 128 * d * 2 + 1024 + 256) as u32
    } else if variant == "flash_tc" {
        (128 * d + 4 * 64 * d) as u32 * 2
    } else {
        ((32 * (d + 1) * 2 + 32 * d + 32 * 33) * 4) as u32
    }
}

/// A variant ready to run at one shape: its kernels and workspace.
enum Runner {
    Naive {
        scores: Kernel,
        softmax: Kernel,
        pv: Kernel,
        s: DevBuf,
    },
    Standard {
        softmax: Kernel,
        s: DevBuf,
        p: DevBuf,
    },
    Flash {
        kernel: Kernel,
        smem: u32,
        threads: u32,
        rows_per_block: usize,
    },
    /// Q, K and V reach the kernel as TMA tensor maps of the [B·H·N] × d matrices, made once
    /// for the inputs this runner was built with.
    Wgmma {
        kernel: Kernel,
        smem: u32,
        maps: Box<[TensorMap; 3]>,
    },
}

impl Runner {
    /// Compile and allocate; a workspace that does not fit is `Unsupported`, with its size.
    fn new(ctx: &mut Ctx, variant: &str, s: Shape, io: &Io) -> Res<Runner> {
        let ws = workspace_bytes(variant, s);
        if ws > 0 {
            let (free, _) = ctx.gpu.mem_info()?;
            if ws + MARGIN > free {
                let what = if variant == "naive" {
                    "S (FP32)"
                } else {
                    "S (FP32) and P (BF16)"
                };
                return Err(Fail::new(
                    FailStage::Unsupported,
                    format!(
                        "skipped: out of memory — {what} would need {:.1} GiB; {:.1} GiB of device memory free",
                        ws as f64 / GIB,
                        free as f64 / GIB
                    ),
                ));
            }
        }
        if !s.n.is_multiple_of(128) || (s.d != 64 && s.d != 128) {
            return Err(Fail::new(
                FailStage::Unsupported,
                "attention kernels need N divisible by 128 and d of 64 or 128",
            ));
        }
        let gpu = ctx.gpu;
        Ok(match variant {
            "naive" => Runner::Naive {
                scores: ctx.kernel(FILE, "attn_naive_scores")?,
                softmax: ctx.kernel(FILE, "attn_naive_softmax")?,
                pv: ctx.kernel(FILE, "attn_naive_pv")?,
                s: gpu.alloc(ws)?,
            },
            "standard" => {
                if !gpu.has_cublas() {
                    return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
                }
                Runner::Standard {
                    softmax: ctx.kernel(FILE, "attn_softmax_bf16")?,
                    s: gpu.alloc(s.s_elems() * 4)?,
                    p: gpu.alloc(s.s_elems() * 2)?,
                }
            }
            "flash_simt" | "flash_tc" => {
                let kernel = ctx.kernel(FILE, &format!("{variant}_d{}", s.d))?;
                let smem = flash_smem(variant, s.d);
                gpu.set_max_dynamic_smem(&kernel, smem)?;
                let (threads, rows_per_block) = if variant == "flash_tc" {
                    (256, 128)
                } else {
                    (128, 32)
                };
                Runner::Flash {
                    kernel,
                    smem,
                    threads,
                    rows_per_block,
                }
            }
            "flash_wgmma" | "flash_wgmma_pipe" | "flash_wgmma_pingpong" => {
                let kernel = ctx.kernel(HOPPER_FILE, &format!("{variant}_d{}", s.d))?;
                let smem = flash_smem(variant, s.d);
                gpu.set_max_dynamic_smem(&kernel, smem)?;
                let map = |b: &DevBuf| gpu.tensor_map(b, Dtype::Bf16, s.heads * s.n, s.d, 128, 64);
                Runner::Wgmma {
                    kernel,
                    smem,
                    maps: Box::new([map(&io.q)?, map(&io.k)?, map(&io.v)?]),
                }
            }
            other => {
                return Err(Fail::new(
                    FailStage::Unsupported,
                    format!("unknown attention variant {other}"),
                ))
            }
        })
    }

    /// Enqueue one complete forward pass.
    fn run(&self, gpu: &Gpu, s: Shape, io: &Io) -> anyhow::Result<()> {
        let (n, d, heads) = (s.n, s.d, s.heads);
        let scale = 1.0 / (d as f32).sqrt();
        let causal = Arg::I32(s.causal as i32);
        match self {
            Runner::Naive {
                scores,
                softmax,
                pv,
                s: sbuf,
            } => {
                let tiles = (n / 32) as u32;
                gpu.launch(
                    scores,
                    Launch {
                        grid: (tiles, tiles, heads as u32),
                        block: (32, 32, 1),
                        smem: 0,
                        cluster: None,
                    },
                    &[
                        Arg::Buf(&io.q),
                        Arg::Buf(&io.k),
                        Arg::Buf(sbuf),
                        Arg::I32(n as i32),
                        Arg::I32(d as i32),
                        Arg::F32(scale),
                    ],
                )?;
                gpu.launch(
                    softmax,
                    Launch::linear((heads * n) as u64, 256)?,
                    &[Arg::Buf(sbuf), Arg::I32(n as i32), causal],
                )?;
                gpu.launch(
                    pv,
                    Launch {
                        grid: ((d / 32) as u32, tiles, heads as u32),
                        block: (32, 32, 1),
                        smem: 0,
                        cluster: None,
                    },
                    &[
                        Arg::Buf(sbuf),
                        Arg::Buf(&io.v),
                        Arg::Buf(&io.o),
                        Arg::I32(n as i32),
                        Arg::I32(d as i32),
                    ],
                )
            }
            Runner::Standard { softmax, s: sbuf, p } => {
                gpu.gemm_bf16(&RowMajorGemm {
                    m: n,
                    n,
                    k: d,
                    batch: heads,
                    alpha: scale,
                    a: &io.q,
                    stride_a: n * d,
                    b: &io.k,
                    stride_b: n * d,
                    b_is_nk: true,
                    c: sbuf,
                    stride_c: n * n,
                    c_type: Dtype::F32,
                })?;
                gpu.launch(
                    softmax,
                    Launch::linear((heads * n) as u64, 256)?,
                    &[Arg::Buf(sbuf), Arg::Buf(p), Arg::I32(n as i32), causal],
                )?;
                gpu.gemm_bf16(&RowMajorGemm {
                    m: n,
                    n: d,
                    k: n,
                    batch: heads,
                    alpha: 1.0,
                    a: p,
                    stride_a: n * n,
                    b: &io.v,
                    stride_b: n * d,
                    b_is_nk: false,
                    c: &io.o,
                    stride_c: n * d,
                    c_type: Dtype::Bf16,
                })
            }
            Runner::Flash {
                kernel,
                smem,
                threads,
                rows_per_block,
            } => gpu.launch(
                kernel,
                Launch {
                    grid: ((n / rows_per_block) as u32, heads as u32, 1),
                    block: (*threads, 1, 1),
                    smem: *smem,
                    cluster: None,
                },
                &[
                    Arg::Buf(&io.q),
                    Arg::Buf(&io.k),
                    Arg::Buf(&io.v),
                    Arg::Buf(&io.o),
                    Arg::I32(n as i32),
                    Arg::F32(scale * std::f32::consts::LOG2_E),
                    causal,
                ],
            ),
            Runner::Wgmma { kernel, smem, maps } => gpu.launch(
                kernel,
                Launch {
                    grid: ((n / 128) as u32, heads as u32, 1),
                    block: (384, 1, 1),
                    smem: *smem,
                    cluster: None,
                },
                &[
                    Arg::TensorMap(&maps[0]),
                    Arg::TensorMap(&maps[1]),
                    Arg::TensorMap(&maps[2]),
                    Arg::Buf(&io.o),
                    Arg::I32(n as i32),
                    Arg::F32(scale * std::f32::consts::LOG2_E),
                    causal,
                ],
            ),
        }
    }
}

/// Run `variant` once at the small shape on fresh inputs and compare every element with f64.
fn small_check(ctx: &mut Ctx, variant: &str, s: Shape, seed: u64) -> Res<f64> {
    let small = Shape {
        heads: 2,
        n: 256,
        ..s
    };
    let io = make_io(ctx.gpu, small, seed ^ 0x5a11)?;
    let runner = Runner::new(ctx, variant, small, &io)?;
    let gpu = ctx.gpu;
    gpu.fill_nan(&io.o)?;
    runner.run(gpu, small, &io)?;
    let out = gpu.download_u16(&io.o, small.elems())?;
    let rows: Vec<(usize, usize)> = (0..small.heads)
        .flat_map(|h| (0..small.n).map(move |i| (h, i)))
        .collect();
    let want = attention_rows_f64(&io.qh, &io.kh, &io.vh, small.n, small.d, small.causal, &rows);
    Ok(attention_rows_vs(&out, small.n, small.d, &rows, &want))
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
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
    // Standard attention's output on the same inputs, where it fits (its workspace is freed
    // before the variant's own is allocated).
    let standard_out: Rc<Option<Vec<f32>>> = if variant == "standard" {
        Rc::new(None)
    } else if let Some(r) = ctx.get_shared("attention_standard_out", &key) {
        r
    } else {
        let out = match Runner::new(ctx, "standard", s, &io) {
            Ok(std) => {
                ctx.gpu.fill_nan(&io.o)?;
                std.run(ctx.gpu, s, &io)?;
                Some(bf16_to_f32(&ctx.gpu.download_u16(&io.o, s.elems())?))
            }
            Err(_) => None,
        };
        ctx.put_shared("attention_standard_out", &key, out)
    };
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
    let mut t = check_and_time(
        gpu,
        item,
        TOL,
        &[&io.o],
        &mut || runner.run(gpu, s, &io),
        &mut || {
            // Read as BF16 where compared (see `OutElem`): no f32 copy of the output.
            let out = gpu.download_u16(&io.o, s.elems())?;
            let (rows, want) = &*sampled;
            let sampled = attention_rows_vs(&out, s.n, s.d, rows, want);
            let vs_standard = reference.as_ref().map_or(0.0, |r| rel_error_f32(&out, r));
            Ok(small_rel.max(sampled).max(vs_standard))
        },
    )?;
    t.workspace_bytes = Some(workspace_bytes(variant, s) as f64);
    Ok(t)
}
