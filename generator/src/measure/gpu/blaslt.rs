//! cuBLASLt baselines of the 8-bit GEMMs: FP8 E4M3 with per-tensor scales (BF16 out) and INT8
//! (INT32 out), on the row-major layout of the book's kernels (A m × k, Bᵀ n × k, C m × n).
//!
//! Why cuBLASLt: cublasGemmEx has no FP8 at all; cuBLASLt is NVIDIA's FP8 GEMM, what PyTorch's
//! `_scaled_mm` and vLLM's FP8 layers call. Why a plan: choosing an algorithm (the heuristic
//! query) and building descriptors costs host time that must not sit between timed launches, so
//! [`Gpu::lt_plan`] does it once and [`Gpu::lt_run`] only enqueues.

use super::*;
use cudarc::cublaslt::{result as lr, sys as ls};

/// Which 8-bit product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LtKind {
    /// E4M3 × E4M3, FP32 scale and accumulation, BF16 out. `fast_accum`: accumulate in the
    /// tensor cores' accumulator only (as the book's kernel does); off, cuBLASLt periodically
    /// promotes partial sums into full FP32 (more exact, some speed).
    Fp8 { fast_accum: bool },
    /// INT8 × INT8, INT32 accumulation and output.
    Int8,
}

/// A planned product: handle, descriptors, the chosen algorithm and its workspace.
pub struct LtPlan {
    handle: ls::cublasLtHandle_t,
    desc: ls::cublasLtMatmulDesc_t,
    layouts: [ls::cublasLtMatrixLayout_t; 3], // Bᵀ, A, C (column-major views)
    algo: ls::cublasLtMatmulAlgo_t,
    workspace: DevBuf,
    kind: LtKind,
    m: usize,
    n: usize,
    k: usize,
}

impl Drop for LtPlan {
    fn drop(&mut self) {
        // SAFETY: created in lt_plan and destroyed once, here.
        unsafe {
            for l in self.layouts {
                let _ = lr::destroy_matrix_layout(l);
            }
            let _ = lr::destroy_matmul_desc(self.desc);
            let _ = lr::destroy_handle(self.handle);
        }
    }
}

/// cuBLASLt's recommended workspace on Hopper.
const WORKSPACE: usize = 32 << 20;

fn lt<T>(r: std::result::Result<T, cudarc::cublaslt::result::CublasError>, what: &str) -> Result<T> {
    r.map_err(|e| anyhow!("cuBLASLt {what}: {e:?}"))
}

/// Set one matmul-descriptor attribute from a value.
fn set_attr<T>(
    desc: ls::cublasLtMatmulDesc_t,
    attr: ls::cublasLtMatmulDescAttributes_t,
    v: &T,
) -> Result<()> {
    // SAFETY: `v` is a live value of the attribute's documented type and size.
    lt(
        unsafe {
            lr::set_matmul_desc_attribute(
                desc,
                attr,
                v as *const T as *const c_void,
                std::mem::size_of::<T>(),
            )
        },
        "set attribute",
    )
}

/// cuBLASLt's (input, output, compute, scale) types of a kind.
fn lt_types(
    kind: LtKind,
) -> (
    ls::cudaDataType,
    ls::cudaDataType,
    ls::cublasComputeType_t,
    ls::cudaDataType,
) {
    use ls::cublasComputeType_t::{CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I};
    use ls::cudaDataType::{CUDA_R_16BF, CUDA_R_32F, CUDA_R_32I, CUDA_R_8F_E4M3, CUDA_R_8I};
    match kind {
        LtKind::Fp8 { .. } => (CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        LtKind::Int8 => (CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I),
    }
}

/// The TN transposes and, for FP8, the scale pointers (cuBLASLt's A is our Bᵀ, its B our A)
/// and the accumulation mode.
fn set_desc(desc: ls::cublasLtMatmulDesc_t, kind: LtKind, scales: Option<(&DevBuf, &DevBuf)>) -> Result<()> {
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    use ls::cublasLtMatmulDescAttributes_t as A;
    set_attr(desc, A::CUBLASLT_MATMUL_DESC_TRANSA, &CUBLAS_OP_T)?;
    set_attr(desc, A::CUBLASLT_MATMUL_DESC_TRANSB, &CUBLAS_OP_N)?;
    if let LtKind::Fp8 { fast_accum } = kind {
        let (sa, sb) = scales.ok_or_else(|| anyhow!("FP8 needs its scales"))?;
        set_attr(desc, A::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sb.ptr)?;
        set_attr(desc, A::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sa.ptr)?;
        set_attr(desc, A::CUBLASLT_MATMUL_DESC_FAST_ACCUM, &(fast_accum as i8))?;
    }
    Ok(())
}

impl Gpu {
    /// Whether the cuBLASLt library can be loaded.
    pub fn has_cublaslt(&self) -> bool {
        // SAFETY: probes the shared library only.
        unsafe { ls::is_culib_present() }
    }

    /// Plan row-major C (m × n) = A (m × k) · Bᵀ (n × k)ᵀ. FP8 reads one FP32 scale each from
    /// the device buffers `sa` and `sb`. Column-major cuBLASLt computes Cᵀ = Bᵀ·Aᵀ: its "A" is
    /// our Bᵀ (k × n, ld k, transposed: the TN form FP8 and INT8 require), its "B" our A.
    pub fn lt_plan(
        &self,
        kind: LtKind,
        m: usize,
        n: usize,
        k: usize,
        scales: Option<(&DevBuf, &DevBuf)>,
    ) -> Result<LtPlan> {
        if !self.has_cublaslt() {
            bail!("cuBLASLt library not found");
        }
        let (input, output, compute, scale) = lt_types(kind);
        drv(self.ctx.bind_to_thread(), "bind context")?;
        let handle = lt(
            std::panic::catch_unwind(lr::create_handle).map_err(|_| anyhow!("cuBLASLt failed to load"))?,
            "create handle",
        )?;
        let desc = lt(lr::create_matmul_desc(compute, scale), "matmul descriptor")?;
        let layouts = [
            lt(
                lr::create_matrix_layout(input, k as u64, n as u64, k as i64),
                "layout",
            )?,
            lt(
                lr::create_matrix_layout(input, k as u64, m as u64, k as i64),
                "layout",
            )?,
            lt(
                lr::create_matrix_layout(output, n as u64, m as u64, n as i64),
                "layout",
            )?,
        ];
        let mut plan = LtPlan {
            handle,
            desc,
            layouts,
            algo: unsafe { std::mem::zeroed() },
            workspace: self.alloc(WORKSPACE)?,
            kind,
            m,
            n,
            k,
        };
        set_desc(desc, kind, scales)?;
        plan.algo = self.lt_algo(&plan)?;
        Ok(plan)
    }

    /// The heuristic's first algorithm for a plan, with at most [`WORKSPACE`] bytes.
    fn lt_algo(&self, p: &LtPlan) -> Result<ls::cublasLtMatmulAlgo_t> {
        let pref = lt(lr::create_matmul_pref(), "preference")?;
        let ws = WORKSPACE as u64;
        // SAFETY: pref is live; the attribute is a u64.
        let r = unsafe {
            lr::set_matmul_pref_attribute(
                pref,
                ls::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                8,
            )
            .and_then(|_| {
                let [a, b, c] = p.layouts;
                lr::get_matmul_algo_heuristic(p.handle, p.desc, a, b, c, c, pref)
            })
        };
        // SAFETY: created above.
        let _ = unsafe { lr::destroy_matmul_pref(pref) };
        let h = lt(r, "no algorithm for this FP8/INT8 product")?;
        if h.state != ls::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cuBLASLt heuristic: {:?}", h.state);
        }
        Ok(h.algo)
    }

    /// Enqueue one planned product on the harness stream.
    pub fn lt_run(&self, p: &LtPlan, a: &DevBuf, bt: &DevBuf, c: &DevBuf) -> Result<()> {
        let out = if p.kind == LtKind::Int8 { 4 } else { 2 };
        if a.bytes < p.m * p.k || bt.bytes < p.n * p.k || c.bytes < p.m * p.n * out {
            bail!("cuBLASLt operands too small");
        }
        let (af, bf, ai, bi) = (1.0f32, 0.0f32, 1i32, 0i32);
        let (alpha, beta): (*const c_void, *const c_void) = match p.kind {
            LtKind::Int8 => (&ai as *const i32 as _, &bi as *const i32 as _),
            LtKind::Fp8 { .. } => (&af as *const f32 as _, &bf as *const f32 as _),
        };
        let [la, lb, lc] = p.layouts;
        // SAFETY: sizes checked above; every descriptor is live; C doubles as D (beta = 0).
        let st = unsafe {
            ls::cublasLtMatmul(
                p.handle,
                p.desc,
                alpha,
                bt.ptr as *const c_void,
                la,
                a.ptr as *const c_void,
                lb,
                beta,
                c.ptr as *const c_void,
                lc,
                c.ptr as *mut c_void,
                lc,
                &p.algo,
                p.workspace.ptr as *mut c_void,
                WORKSPACE,
                self.stream as _,
            )
        };
        if st != ls::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasLtMatmul failed: {st:?}");
        }
        Ok(())
    }
}
