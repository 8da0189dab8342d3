//! One attention variant ready to run at one shape: its kernels and workspace, the shape's
//! inputs, and the small-shape check every variant passes before it is timed.
//!
//! Why apart from `mod.rs`: that file holds what the family is (plan, work, the measuring steps);
//! this one how each rung is set up, and `pass.rs` how it is launched: the rungs differ most
//! there.

use super::{FILE, HOPPER_FILE};
use crate::measure::gpu::{DevBuf, Dtype, Gpu, Kernel, TensorMap};
use crate::measure::harness::{Ctx, Fail, Res};
use crate::measure::reference::{attention_rows_f64, attention_rows_vs, random_bf16};
use crate::measure::results::FailStage;

const GIB: f64 = (1u64 << 30) as f64;
/// Memory left free beside a workspace (cuBLAS workspace, the L2 flush buffer, fragmentation).
const MARGIN: usize = 1 << 30;

#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) heads: usize,
    pub(super) n: usize,
    pub(super) d: usize,
    pub(super) causal: bool,
}

impl Shape {
    pub(super) fn elems(&self) -> usize {
        self.heads * self.n * self.d
    }
    fn s_elems(&self) -> usize {
        self.heads * self.n * self.n
    }
}

/// Inputs and output of one shape: device buffers and the exact BF16 values on the host.
pub(super) struct Io {
    pub(super) q: DevBuf,
    pub(super) k: DevBuf,
    pub(super) v: DevBuf,
    pub(super) o: DevBuf,
    pub(super) qh: Vec<f32>,
    pub(super) kh: Vec<f32>,
    pub(super) vh: Vec<f32>,
}

/// Scores with a spread of about 2 (Q in [−6, 6), K and V in [−1, 1)): softmax rows that are
/// neither uniform nor one-hot, so a wrong max, sum or mask shows.
pub(super) fn make_io(gpu: &Gpu, s: Shape, seed: u64) -> anyhow::Result<Io> {
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
pub(super) fn workspace_bytes(variant: &str, s: Shape) -> usize {
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
pub(super) enum Runner {
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
    pub(super) fn new(ctx: &mut Ctx, variant: &str, s: Shape, io: &Io) -> Res<Runner> {
        let ws = workspace_bytes(variant, s);
        fits(ctx.gpu, variant, ws)?;
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
            "flash_simt" | "flash_tc" => Runner::flash(ctx, variant, s)?,
            "flash_wgmma" | "flash_wgmma_pipe" | "flash_wgmma_pingpong" => {
                Runner::wgmma(ctx, variant, s, io)?
            }
            other => {
                return Err(Fail::new(
                    FailStage::Unsupported,
                    format!("unknown attention variant {other}"),
                ))
            }
        })
    }

    /// A CUDA-core or mma.sync FlashAttention rung: its kernel for d, shared memory and blocks.
    fn flash(ctx: &mut Ctx, variant: &str, s: Shape) -> Res<Runner> {
        let gpu = ctx.gpu;
        let kernel = ctx.kernel(FILE, &format!("{variant}_d{}", s.d))?;
        let smem = flash_smem(variant, s.d);
        gpu.set_max_dynamic_smem(&kernel, smem)?;
        let (threads, rows_per_block) = if variant == "flash_tc" {
            (256, 128)
        } else {
            (128, 32)
        };
        Ok(Runner::Flash {
            kernel,
            smem,
            threads,
            rows_per_block,
        })
    }

    /// A Hopper rung: its kernel for d, shared memory and the TMA maps of Q, K and V.
    fn wgmma(ctx: &mut Ctx, variant: &str, s: Shape, io: &Io) -> Res<Runner> {
        let gpu = ctx.gpu;
        let kernel = ctx.kernel(HOPPER_FILE, &format!("{variant}_d{}", s.d))?;
        let smem = flash_smem(variant, s.d);
        gpu.set_max_dynamic_smem(&kernel, smem)?;
        let map = |b: &DevBuf| gpu.tensor_map(b, Dtype::Bf16, s.heads * s.n, s.d, 128, 64);
        Ok(Runner::Wgmma {
            kernel,
            smem,
            maps: Box::new([map(&io.q)?, map(&io.k)?, map(&io.v)?]),
        })
    }
}

/// A workspace of `ws` bytes that does not fit beside the margin is `Unsupported`, with its size.
fn fits(gpu: &Gpu, variant: &str, ws: usize) -> Res<()> {
    if ws > 0 {
        let (free, _) = gpu.mem_info()?;
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
    Ok(())
}

/// Run `variant` once at the small shape on fresh inputs and compare every element with f64.
pub(super) fn small_check(ctx: &mut Ctx, variant: &str, s: Shape, seed: u64) -> Res<f64> {
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
