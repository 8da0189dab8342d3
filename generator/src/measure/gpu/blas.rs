//! cuBLAS baselines: FP32 SGEMM and BF16 GEMM on row-major matrices.
//!
//! Why apart: the baselines every GEMM figure compares against; the row-major ↔ column-major
//! swap and the math mode (true FP32, never TF32) are decided here once.

use super::*;

impl Gpu {
    /// Row-major C (m×n) = A (m×k) · B (k×n) through cuBLAS SGEMM, FP32 math.
    pub fn sgemm_cublas(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &DevBuf,
        b: &DevBuf,
        c: &DevBuf,
    ) -> Result<()> {
        use cudarc::cublas::sys as bs;
        let handle = self.blas.ok_or_else(|| anyhow!("cuBLAS not available"))?;
        if a.bytes < m * k * 4 || b.bytes < k * n * 4 || c.bytes < m * n * 4 {
            bail!("cuBLAS SGEMM operands too small");
        }
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Column-major cuBLAS computes Cᵀ = Bᵀ·Aᵀ, which is row-major C = A·B.
        // SAFETY: sizes checked above; pointers are device allocations.
        let st = unsafe {
            bs::cublasSgemm_v2(
                handle,
                bs::cublasOperation_t::CUBLAS_OP_N,
                bs::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                &alpha,
                b.ptr as *const f32,
                n as i32,
                a.ptr as *const f32,
                k as i32,
                &beta,
                c.ptr as *mut f32,
                n as i32,
            )
        };
        if st != bs::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasSgemm failed: {st:?}");
        }
        Ok(())
    }

    /// A row-major (batched) BF16 product through cublasGemmStridedBatchedEx, FP32 compute.
    pub fn gemm_bf16(&self, g: &RowMajorGemm) -> Result<()> {
        use cudarc::cublas::sys as bs;
        let handle = self.blas.ok_or_else(|| anyhow!("cuBLAS not available"))?;
        let need = |rows: usize, cols: usize, stride: usize, t: Dtype| {
            ((g.batch.max(1) - 1) * stride + rows * cols) * t.bytes()
        };
        if g.a.bytes < need(g.m, g.k, g.stride_a, Dtype::Bf16)
            || g.b.bytes < need(g.k, g.n, g.stride_b, Dtype::Bf16)
            || g.c.bytes < need(g.m, g.n, g.stride_c, g.c_type)
        {
            bail!("cuBLAS gemm_ex operands too small");
        }
        let int = |v: usize| i32::try_from(v).map_err(|_| anyhow!("cuBLAS dimension {v} too large"));
        let ctype = match g.c_type {
            Dtype::Bf16 => bs::cudaDataType::CUDA_R_16BF,
            Dtype::F32 => bs::cudaDataType::CUDA_R_32F,
            other => bail!("cuBLAS gemm_ex writes BF16 or FP32, not {other:?}"),
        };
        // Column-major cuBLAS computes Cᵀ (n × m, ld n) = op(B)ᵀ · Aᵀ. Row-major A seen column-major
        // is Aᵀ (k × m, ld k). Row-major B (k × n) seen column-major is Bᵀ (n × k, ld n): no
        // transpose; a stored n × k B seen column-major is B (k × n, ld k): transposed.
        let (transa, lda) = if g.b_is_nk {
            (bs::cublasOperation_t::CUBLAS_OP_T, g.k)
        } else {
            (bs::cublasOperation_t::CUBLAS_OP_N, g.n)
        };
        let beta = 0.0f32;
        // SAFETY: sizes checked above; pointers are device allocations.
        let st = unsafe {
            bs::cublasGemmStridedBatchedEx(
                handle,
                transa,
                bs::cublasOperation_t::CUBLAS_OP_N,
                int(g.n)?,
                int(g.m)?,
                int(g.k)?,
                &g.alpha as *const f32 as *const c_void,
                g.b.ptr as *const c_void,
                bs::cudaDataType::CUDA_R_16BF,
                int(lda)?,
                g.stride_b as i64,
                g.a.ptr as *const c_void,
                bs::cudaDataType::CUDA_R_16BF,
                int(g.k)?,
                g.stride_a as i64,
                &beta as *const f32 as *const c_void,
                g.c.ptr as *mut c_void,
                ctype,
                int(g.n)?,
                g.stride_c as i64,
                int(g.batch.max(1))?,
                bs::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                bs::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if st != bs::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasGemmStridedBatchedEx failed: {st:?}");
        }
        Ok(())
    }
}
