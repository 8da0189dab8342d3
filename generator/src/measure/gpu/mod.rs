//! The GPU boundary: the only module that names cudarc types.
//!
//! Why one boundary: cudarc's API moves between releases, and its context constructor panics on
//! a machine without libcuda. Everything the benchmark families need — compile a kernel file,
//! allocate, copy, launch, time with events, call cuBLAS — goes through [`Gpu`], whose methods
//! take and return plain Rust types and `anyhow` errors. The families never see a device
//! pointer type, a stream or an event.
//!
//! Design choices:
//! - One context (the primary one) and the legacy default stream: every operation is ordered
//!   after the previous one, so the families need no synchronisation logic of their own.
//! - Raw driver calls for memory and launches (no `CudaSlice` event tracking in the timed path).
//! - cuBLAS runs in `CUBLAS_DEFAULT_MATH` (set explicitly): true FP32, never TF32.
//!
//! Files: this one holds the plain types the families see; [`Gpu`]'s methods are split by concern
//! into `context` (open the device, provenance), `compile` (NVRTC), `memory` (buffers and copies),
//! `launch` (kernel launches, TMA maps), `blas` (cuBLAS baselines) and `timing` (CUDA events, L2
//! flush). They stay one module because cudarc must stay behind one boundary.

mod blas;
mod blaslt;
mod compile;
mod context;
mod launch;
mod memory;
pub mod nccl;
mod timing;

pub use blaslt::{LtKind, LtPlan};
pub use compile::{nvrtc_compile_only, PendingCompile};
use memory::HostPool;

use super::results::DeviceInfo;
use anyhow::{anyhow, bail, Context as _, Result};
use cudarc::driver::{result as dr, sys, CudaContext, CudaFunction, CudaModule};
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;

/// A device buffer. Freed on drop. Sizes are in bytes.
pub struct DevBuf {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    _ctx: Arc<CudaContext>,
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // Errors here (e.g. after a device fault) cannot be reported usefully; ignore them.
        let _ = crate::measure::prof::timed(crate::measure::prof::Op::Free, || unsafe {
            dr::free_sync(self.ptr)
        });
    }
}

/// A compiled kernel file (one NVRTC program, one module).
pub struct Module {
    module: Arc<CudaModule>,
    file: String,
}

/// One kernel function of a module, with the compiler's resource report.
pub struct Kernel {
    func: CudaFunction,
    pub name: String,
    pub registers: i32,
    pub local_bytes: i32,
    pub static_smem_bytes: i32,
}

/// A kernel argument.
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    Buf(&'a DevBuf),
    I32(i32),
    U32(u32),
    U64(u64),
    F32(f32),
    /// A TMA descriptor passed by value (a `const __grid_constant__` 128-byte parameter).
    TensorMap(&'a TensorMap),
}

/// A TMA tensor map (CUtensorMap): how the copy engine sees a 2-D array in device memory. Opaque
/// outside this module; made by [`Gpu::tensor_map`].
pub struct TensorMap(sys::CUtensorMap);

/// Element types of the cuBLAS products the families ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Bf16,
    F32,
    /// One-byte codes (FP8 E4M3 or INT8): TMA copies bytes, whatever they encode.
    U8,
    I32,
}

impl Dtype {
    fn bytes(self) -> usize {
        match self {
            Dtype::U8 => 1,
            Dtype::Bf16 => 2,
            Dtype::F32 | Dtype::I32 => 4,
        }
    }
}

/// One (batched) row-major product through cuBLAS gemm_ex, FP32 accumulate:
/// `C[i] (m × n) = alpha · A[i] (m × k) · B[i]` for i < batch, A BF16, B BF16 stored either
/// k × n (`b_is_nk: false`) or n × k (`b_is_nk: true`, i.e. Bᵀ row-major, as K in Q·Kᵀ or a
/// Linear weight), C in `c_type`. Strides are in elements between consecutive matrices.
pub struct RowMajorGemm<'a> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub alpha: f32,
    pub a: &'a DevBuf,
    pub stride_a: usize,
    pub b: &'a DevBuf,
    pub stride_b: usize,
    pub b_is_nk: bool,
    pub c: &'a DevBuf,
    pub stride_c: usize,
    pub c_type: Dtype,
}

/// Grid and block shape plus dynamic shared memory, and optionally a thread-block cluster.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub smem: u32,
    /// Blocks per cluster along x (Hopper): `None` is a plain launch. With `Some(c)` the grid's
    /// x extent must be a multiple of c, and c at most 8 (the portable cluster size).
    pub cluster: Option<u32>,
}

impl Launch {
    pub fn linear(blocks: u64, threads: u32) -> Result<Launch> {
        let blocks = u32::try_from(blocks).map_err(|_| anyhow!("grid too large: {blocks} blocks"))?;
        Ok(Launch {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            smem: 0,
            cluster: None,
        })
    }
    pub fn grid2(gx: u32, gy: u32, bx: u32, by: u32) -> Launch {
        Launch {
            grid: (gx, gy, 1),
            block: (bx, by, 1),
            smem: 0,
            cluster: None,
        }
    }

    /// The same launch with its blocks grouped `blocks` at a time into clusters along x.
    pub fn with_cluster(self, blocks: u32) -> Launch {
        Launch {
            cluster: Some(blocks),
            ..self
        }
    }
}

/// Why a kernel file failed to compile: the NVRTC log, for `nvrtc_log` to turn into file:line.
pub struct CompileFailure {
    pub log: String,
}

/// The opened device.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: sys::CUstream,
    blas: Option<cudarc::cublas::sys::cublasHandle_t>,
    blas_version: Option<i32>,
    flush: Option<Flush>,
    host_f32: HostPool<f32>,
    host_u16: HostPool<u16>,
    info: DeviceInfo,
    cc: (i32, i32),
}

/// Bytes read between timed repetitions to push earlier data out of L2 (50 MB on an H100).
const L2_FLUSH_BYTES: usize = 256 << 20;

/// The L2 flush: a buffer five times an H100's L2 and the kernel that reads it (see
/// `timing.rs` for why it reads rather than writes). `reader` is `None` only if that tiny kernel
/// failed to compile; the flush then writes the buffer, as the first harness did.
struct Flush {
    buf: DevBuf,
    reader: Option<(Module, Kernel)>,
}

fn drv<T>(r: std::result::Result<T, dr::DriverError>, what: &str) -> Result<T> {
    r.map_err(|e| anyhow!("{what}: {e:?}"))
}

impl Drop for Gpu {
    fn drop(&mut self) {
        memory::drain(&self.host_f32);
        memory::drain(&self.host_u16);
        if let Some(h) = self.blas.take() {
            // SAFETY: created in init_blas.
            let _ = unsafe { cudarc::cublas::result::destroy_handle(h) };
        }
    }
}
