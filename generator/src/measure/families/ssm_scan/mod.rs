//! ssm_scan: the selective scan of a Mamba-style layer (FP32, D channels, state 16): one decode
//! step (`l = 1`: constant work per token, whatever the context) and a prefill scan over `l`
//! tokens (sequential and chunked), each against a device memcpy in the same run (of the state
//! for the decode step, of x for prefill).
//!
//! Verification, for every variant: 64 channels (the first and the last among them), every
//! batch row and every token, against an f64 scan of the same FP32 inputs — y and the final
//! state — and every y must be finite. The kernels use `__expf`; 1e-3 holds that with room.
//!
//! Files: `inputs.rs` (the host inputs and the f64 scan they are checked against).

use super::super::gpu::{Arg, DevBuf, Gpu, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, V};
use super::super::results::{FailStage, Timing};
use super::Family;
use super::{blocks, memcpy_baseline_bytes};

mod inputs;

pub use inputs::Inputs;

/// One timed run of a variant: every kernel it launches, made once and timed many times.
type Run<'a> = Box<dyn FnMut() -> anyhow::Result<()> + 'a>;

pub(crate) const FAMILY: Family = Family {
    name: "ssm_scan",
    sources: &[kernel_file!("inference/ssm_scan.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// D = 5120 channels (Mamba 2.8B's inner width), state 16.
pub const SSM_D: u64 = 5120;
pub const SSM_N: u64 = 16;
pub const SSM_DECODE_BATCH: &[u64] = &[1, 8, 32, 64];
pub const SSM_PREFILL_L: &[u64] = &[512, 2048, 8192, 32768];

/// One decode step at each batch (against a memcpy of the state), and prefill scans of growing
/// length (against a memcpy of x).
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &b in SSM_DECODE_BATCH {
        out.extend(ladder(
            "ssm_scan",
            FILE,
            &[V("decode_step", "decode step: one token, state read and written")],
            &params(&[("b", b), ("d", SSM_D), ("n", SSM_N), ("l", 1)]),
            ("memcpy", "device memcpy of the state (cuMemcpyDtoD)"),
        ));
    }
    for &l in SSM_PREFILL_L {
        out.extend(ladder(
            "ssm_scan",
            FILE,
            &[
                V(
                    "scan_sequential",
                    "prefill: one thread per channel over all tokens",
                ),
                V(
                    "scan_chunked",
                    "prefill: chunks of 128 tokens scanned in parallel, states carried",
                ),
            ],
            &params(&[("b", 1), ("d", SSM_D), ("n", SSM_N), ("l", l)]),
            ("memcpy", "device memcpy of x (cuMemcpyDtoD)"),
        ));
    }
    out
}

/// Per token, channel and state element 7 FLOPs (Δ·A, exp, ·h, Δ·B·x as 2, C·h as 2), plus 2
/// per token and channel (the skip term) — a convention, stated for figures. Bytes (FP32): x, Δ,
/// y per token and channel; B, C per token; A, Dskip; the state (read and written by a decode
/// step, written by a prefill that starts from zero).
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    let (b, d, n, l) = (f("b"), f("d"), f("n"), f("l"));
    let state = b * d * n * 4.0;
    if item.variant == "memcpy" {
        return (0.0, 2.0 * if l == 1.0 { state } else { 4.0 * b * l * d });
    }
    let flops = b * l * d * (7.0 * n + 2.0);
    let io = 4.0 * (3.0 * b * l * d + 2.0 * b * l * n + d * n + d);
    let st = if l == 1.0 { 2.0 * state } else { state };
    (flops, io + st)
}
const TOL: f64 = 1e-3;
pub const N: usize = 16;
/// Tokens per chunk of scan_chunked.
pub const CHUNK: usize = 128;

/// `head` then `tail`, as one argument list.
fn concat<'a>(head: &[Arg<'a>], tail: &[Arg<'a>]) -> Vec<Arg<'a>> {
    head.iter().chain(tail).copied().collect()
}

/// A device copy of `v`.
fn upload(gpu: &Gpu, v: &[f32]) -> anyhow::Result<DevBuf> {
    let b = gpu.alloc_f32(v.len())?;
    gpu.upload_f32(&b, v)?;
    Ok(b)
}

/// The device copies of one scan's inputs (x, Δ, A, B, C, Dskip), its state h and output y, and
/// the chunked scan's carried states and Δ sums (per chunk).
struct Bufs {
    x: DevBuf,
    dt: DevBuf,
    a: DevBuf,
    bm: DevBuf,
    cm: DevBuf,
    ds: DevBuf,
    h: DevBuf,
    y: DevBuf,
    state: DevBuf,
    dsum: DevBuf,
}

/// Upload `inp` and allocate y and the chunked scan's workspace (`chunks` chunks per row).
fn device_buffers(gpu: &Gpu, inp: &Inputs, (b, l, d): (usize, usize, usize), chunks: usize) -> Res<Bufs> {
    let (x, dt, a, bm, cm, ds) = (
        upload(gpu, &inp.x)?,
        upload(gpu, &inp.dt)?,
        upload(gpu, &inp.a)?,
        upload(gpu, &inp.bm)?,
        upload(gpu, &inp.cm)?,
        upload(gpu, &inp.dskip)?,
    );
    let h = upload(gpu, &inp.h0)?;
    let y = gpu.alloc_f32(b * l * d)?;
    let (state, dsum) = (
        gpu.alloc_f32((b * chunks * d * N).max(1))?,
        gpu.alloc_f32((b * chunks * d).max(1))?,
    );
    Ok(Bufs {
        x,
        dt,
        a,
        bm,
        cm,
        ds,
        h,
        y,
        state,
        dsum,
    })
}

/// Set up (fresh inputs, with a random state for the decode step), check and time one item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (b, l, d) = (item.p("b") as usize, item.p("l") as usize, item.p("d") as usize);
    if item.p("n") as usize != N || (l > 1 && l % CHUNK != 0) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "ssm kernels need state size 16 and, for prefill, l divisible by 128",
        ));
    }
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    if item.baseline {
        // The decode step's main traffic is the state, prefill's is x (and Δ, y alike).
        let floats = if l == 1 { b * d * N } else { b * l * d };
        return memcpy_baseline_bytes(gpu, floats * 4, seed);
    }
    let inp = Inputs::random(b, l, d, seed, l == 1);
    let chunks = l / CHUNK.min(l);
    let bufs = device_buffers(gpu, &inp, (b, l, d), chunks)?;
    let mut run = runner(ctx, item.variant, &bufs, (b, l, d), chunks)?;
    let Bufs { y, h, .. } = &bufs;
    check_and_time(gpu, TOL, &[y], &mut *run, &mut || {
        let out = gpu.download_f32(y, b * l * d)?;
        let state = gpu.download_f32(h, b * d * N)?;
        Ok(inp.checked_rel(&out, &state, seed))
    })
}

/// The run of `variant`: the decode step, the sequential scan, or the chunked one.
fn runner<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    variant: &str,
    bufs: &'a Bufs,
    (b, l, d): (usize, usize, usize),
    chunks: usize,
) -> Res<Run<'a>> {
    let gpu = ctx.gpu;
    let Bufs {
        x,
        dt,
        a,
        bm,
        cm,
        ds,
        h,
        y,
        ..
    } = bufs;
    let (bi, li, di) = (Arg::I32(b as i32), Arg::I32(l as i32), Arg::I32(d as i32));
    // x, Δ, A, B, C, Dskip: the leading arguments of the decode, sequential and local kernels.
    let ins = [x, dt, a, bm, cm, ds].map(Arg::Buf);
    Ok(match variant {
        "decode_step" => {
            let k = ctx.kernel(FILE, "ssm_decode_step")?;
            let cfg = Launch::linear(blocks((b * d * N) as u64, 256), 256)?;
            let args = concat(&ins, &[Arg::Buf(h), Arg::Buf(y), bi, di]);
            Box::new(move || gpu.launch(&k, cfg, &args))
        }
        "scan_sequential" => {
            let k = ctx.kernel(FILE, "scan_sequential")?;
            let cfg = Launch::linear(blocks((b * d) as u64, 128), 128)?;
            let args = concat(&ins, &[Arg::Buf(y), Arg::Buf(h), bi, li, di]);
            Box::new(move || gpu.launch(&k, cfg, &args))
        }
        "scan_chunked" => chunked(ctx, bufs, ins, [bi, li, di], (b, d, chunks))?,
        other => {
            return Err(Fail::new(
                FailStage::Unsupported,
                format!("unknown ssm_scan variant {other}"),
            ))
        }
    })
}

/// The chunked scan: local scans of each chunk from zero, the carried states, then the
/// correction of each chunk's y by its incoming state.
fn chunked<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    bufs: &'a Bufs,
    ins: [Arg<'a>; 6],
    [bi, li, di]: [Arg<'a>; 3],
    (b, d, chunks): (usize, usize, usize),
) -> Res<Run<'a>> {
    let gpu = ctx.gpu;
    let Bufs {
        dt,
        a,
        cm,
        h,
        y,
        state,
        dsum,
        ..
    } = bufs;
    let t_arg = Arg::I32(CHUNK as i32);
    let (k1, k2, k3) = (
        ctx.kernel(FILE, "scan_chunk_local")?,
        ctx.kernel(FILE, "scan_chunk_carry")?,
        ctx.kernel(FILE, "scan_chunk_fix")?,
    );
    let per_chunk = Launch::linear(blocks((b * chunks * d) as u64, 128), 128)?;
    let per_state = Launch::linear(blocks((b * d * N) as u64, 256), 256)?;
    let a1 = concat(
        &ins,
        &[Arg::Buf(y), Arg::Buf(state), Arg::Buf(dsum), bi, li, di, t_arg],
    );
    let a2 = [
        Arg::Buf(a),
        Arg::Buf(state),
        Arg::Buf(dsum),
        Arg::Buf(h),
        bi,
        li,
        di,
        t_arg,
    ];
    let a3 = [
        Arg::Buf(dt),
        Arg::Buf(a),
        Arg::Buf(cm),
        Arg::Buf(state),
        Arg::Buf(y),
        bi,
        li,
        di,
        t_arg,
    ];
    Ok(Box::new(move || {
        gpu.launch(&k1, per_chunk, &a1)?;
        gpu.launch(&k2, per_state, &a2)?;
        gpu.launch(&k3, per_chunk, &a3)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssm_prefill_lengths_divide_into_chunks() {
        for i in items() {
            assert!(i.p("l") == 1 || i.p("l") % 128 == 0);
        }
    }
}
