//! How each attention runner enqueues one complete forward pass: naive (three SIMT kernels over
//! S), standard (cuBLAS around a softmax kernel), and the one-kernel Flash rungs.

use super::runner::{Io, Runner, Shape};
use crate::measure::gpu::{Arg, DevBuf, Dtype, Gpu, Kernel, Launch, RowMajorGemm, TensorMap};

/// 1/√d and the mask flag, the arguments every pass shares.
#[derive(Clone, Copy)]
struct Common {
    scale: f32,
    causal: Arg<'static>,
}

impl Runner {
    /// Enqueue one complete forward pass.
    pub(super) fn run(&self, gpu: &Gpu, s: Shape, io: &Io) -> anyhow::Result<()> {
        let scale = 1.0 / (s.d as f32).sqrt();
        let causal = Arg::I32(s.causal as i32);
        let c = Common { scale, causal };
        match self {
            Runner::Naive {
                scores,
                softmax,
                pv,
                s: sbuf,
            } => naive(gpu, s, io, [scores, softmax, pv], sbuf, c),
            Runner::Standard { softmax, s: sbuf, p } => standard(gpu, s, io, softmax, (sbuf, p), c),
            Runner::Flash {
                kernel,
                smem,
                threads,
                rows_per_block,
            } => flash(gpu, s, io, kernel, (*smem, *threads, *rows_per_block), c),
            Runner::Wgmma { kernel, smem, maps } => wgmma(gpu, s, io, kernel, *smem, maps, c),
        }
    }
}

/// Naive: the scores into S, a softmax over S in place, then P·V.
fn naive(
    gpu: &Gpu,
    s: Shape,
    io: &Io,
    [scores, softmax, pv]: [&Kernel; 3],
    sbuf: &DevBuf,
    Common { scale, causal }: Common,
) -> anyhow::Result<()> {
    let (n, d, heads) = (s.n, s.d, s.heads);
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

/// Standard: cuBLAS Q·Kᵀ into S (FP32), the softmax into P (BF16), cuBLAS P·V.
fn standard(
    gpu: &Gpu,
    s: Shape,
    io: &Io,
    softmax: &Kernel,
    (sbuf, p): (&DevBuf, &DevBuf),
    Common { scale, causal }: Common,
) -> anyhow::Result<()> {
    let (n, d, heads) = (s.n, s.d, s.heads);
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

/// A CUDA-core or mma.sync FlashAttention rung: one block per `rows_per_block` query rows.
fn flash(
    gpu: &Gpu,
    s: Shape,
    io: &Io,
    kernel: &Kernel,
    (smem, threads, rows_per_block): (u32, u32, usize),
    Common { scale, causal }: Common,
) -> anyhow::Result<()> {
    let (n, heads) = (s.n, s.heads);
    gpu.launch(
        kernel,
        Launch {
            grid: ((n / rows_per_block) as u32, heads as u32, 1),
            block: (threads, 1, 1),
            smem,
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
    )
}

/// A Hopper rung: one block of three warpgroups per 128 query rows, Q, K, V through TMA.
fn wgmma(
    gpu: &Gpu,
    s: Shape,
    io: &Io,
    kernel: &Kernel,
    smem: u32,
    maps: &[TensorMap; 3],
    Common { scale, causal }: Common,
) -> anyhow::Result<()> {
    let (n, heads) = (s.n, s.heads);
    gpu.launch(
        kernel,
        Launch {
            grid: ((n / 128) as u32, heads as u32, 1),
            block: (384, 1, 1),
            smem,
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
    )
}
