//! tc_gemm's checks: the host operands and their f64 entries, the cuBLAS call, the baseline
//! (checked against f64 at 256³ and on sampled entries) and each rung's comparison with cuBLAS.

use super::{Problem, TOL};
use crate::measure::gpu::{DevBuf, Dtype, Gpu, RowMajorGemm};
use crate::measure::harness::{check_and_time, Fail, Res};
use crate::measure::reference::{random_bf16, rel_error, rel_error_f32, sampled_entries_rel};
use crate::measure::results::{FailStage, Timing};

/// Host copies of the operands (exact BF16 values): A is m × k, Bt is n × k, both row-major.
pub(super) struct Operands<'a> {
    pub(super) a: &'a [f32],
    pub(super) bt: &'a [f32],
    pub(super) n: usize,
    pub(super) k: usize,
}

impl Operands<'_> {
    fn entry(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (&self.a[i * self.k..][..self.k], &self.bt[j * self.k..][..self.k]);
        a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
    }
}

/// ‖c − ref‖ / ‖ref‖ over `samples` entries chosen from `seed`, ref in f64.
fn sampled_rel(c: &[f32], ops: &Operands, m: usize, samples: usize, seed: u64) -> f64 {
    sampled_entries_rel(c, m, ops.n, samples, seed, |i, j| ops.entry(i, j))
}

fn cublas(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    a: &DevBuf,
    bt: &DevBuf,
    c: &DevBuf,
) -> anyhow::Result<()> {
    gpu.gemm_bf16(&RowMajorGemm {
        m,
        n,
        k,
        batch: 1,
        alpha: 1.0,
        a,
        stride_a: 0,
        b: bt,
        stride_b: 0,
        b_is_nk: true,
        c,
        stride_c: 0,
        c_type: Dtype::F32,
    })
}

/// cuBLAS against f64 at 256³ on fresh inputs.
fn cublas_small_check(gpu: &Gpu, seed: u64) -> anyhow::Result<f64> {
    let s = 256;
    let (a_bits, a) = random_bf16(s * s, seed ^ 1, -1.0, 1.0);
    let (b_bits, bt) = random_bf16(s * s, seed ^ 2, -1.0, 1.0);
    let (da, db, dc) = (
        gpu.alloc(s * s * 2)?,
        gpu.alloc(s * s * 2)?,
        gpu.alloc_f32(s * s)?,
    );
    gpu.upload_u16(&da, &a_bits)?;
    gpu.upload_u16(&db, &b_bits)?;
    gpu.fill_nan(&dc)?;
    cublas(gpu, s, s, s, &da, &db, &dc)?;
    let c = gpu.download_f32(&dc, s * s)?;
    let ops = Operands {
        a: &a,
        bt: &bt,
        n: s,
        k: s,
    };
    let reference: Vec<f64> = (0..s * s).map(|idx| ops.entry(idx / s, idx % s)).collect();
    Ok(rel_error(&c, &reference))
}

/// The cuBLAS baseline: its check is the 256³ f64 product and 256 sampled entries at this size.
pub(super) fn time_cublas(p: &Problem) -> Res<Timing> {
    let (gpu, m, n, k, a, bt, c, seed) = (p.gpu, p.m, p.n, p.k, p.a, p.bt, p.c, p.seed);
    if !gpu.has_cublas() {
        return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
    }
    check_and_time(
        gpu,
        TOL,
        &[c],
        &mut || cublas(gpu, m, n, k, a, bt, c),
        &mut || {
            let small = cublas_small_check(gpu, seed)?;
            let out = gpu.download_f32(c, m * n)?;
            Ok(small.max(sampled_rel(&out, &p.ops, m, 256, seed)))
        },
    )
}

/// cuBLAS's output at this size, the reference of every rung (`None` without cuBLAS).
pub(super) fn cublas_reference(p: &Problem) -> Res<Option<impl std::ops::Deref<Target = [f32]>>> {
    let (gpu, m, n, k, a, bt) = (p.gpu, p.m, p.n, p.k, p.a, p.bt);
    Ok(if gpu.has_cublas() {
        let r = gpu.alloc_f32(m * n)?;
        gpu.fill_nan(&r)?;
        cublas(gpu, m, n, k, a, bt, &r)?;
        Some(gpu.download_f32(&r, m * n)?)
    } else {
        None
    })
}

/// A rung's error: against cuBLAS's output when there is one, else (all entries finite) on 4096
/// sampled f64 entries.
pub(super) fn kernel_rel(p: &Problem, c_ref: Option<&[f32]>) -> anyhow::Result<f64> {
    let (gpu, m, seed) = (p.gpu, p.m, p.seed);
    let out = gpu.download_f32(p.c, m * p.n)?;
    Ok(match c_ref {
        Some(r) => rel_error_f32(&out, r),
        None => {
            if out.iter().any(|v| !v.is_finite()) {
                f64::INFINITY
            } else {
                sampled_rel(&out, &p.ops, m, 4096, seed)
            }
        }
    })
}
