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

use super::results::DeviceInfo;
use anyhow::{anyhow, bail, Context as _, Result};
use cudarc::driver::{result as dr, sys, CudaContext, CudaFunction, CudaModule};
use std::ffi::c_void;
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
        let _ = unsafe { dr::free_sync(self.ptr) };
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
/// outside this module; made by [`Gpu::tensor_map_bf16`].
pub struct TensorMap(sys::CUtensorMap);

/// Element types of the cuBLAS products the families ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Bf16,
    F32,
}

impl Dtype {
    fn bytes(self) -> usize {
        match self {
            Dtype::Bf16 => 2,
            Dtype::F32 => 4,
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

/// Grid and block shape plus dynamic shared memory.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub smem: u32,
}

impl Launch {
    pub fn linear(blocks: u64, threads: u32) -> Result<Launch> {
        let blocks = u32::try_from(blocks).map_err(|_| anyhow!("grid too large: {blocks} blocks"))?;
        Ok(Launch {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            smem: 0,
        })
    }
    pub fn grid2(gx: u32, gy: u32, bx: u32, by: u32) -> Launch {
        Launch {
            grid: (gx, gy, 1),
            block: (bx, by, 1),
            smem: 0,
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
    flush: Option<DevBuf>,
    info: DeviceInfo,
    cc: (i32, i32),
}

/// Bytes written between timed repetitions to push earlier data out of L2 (50 MB on an H100).
const L2_FLUSH_BYTES: usize = 256 << 20;

fn drv<T>(r: std::result::Result<T, dr::DriverError>, what: &str) -> Result<T> {
    r.map_err(|e| anyhow!("{what}: {e:?}"))
}

impl Gpu {
    /// Open device 0. `Ok(None)` means no usable GPU (no libcuda, no device); `Err` means a GPU
    /// seemed present but could not be initialised.
    pub fn open() -> Result<Option<Gpu>> {
        // SAFETY: only probes whether the shared library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Ok(None);
        }
        let count = match std::panic::catch_unwind(CudaContext::device_count) {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => return Ok(None),
        };
        if count < 1 {
            return Ok(None);
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
            .map_err(|_| anyhow!("CUDA context creation panicked"))?
            .map_err(|e| anyhow!("CUDA context creation failed: {e:?}"))?;
        drv(ctx.bind_to_thread(), "bind context")?;
        let name = drv(ctx.name(), "device name")?;
        let cc = drv(ctx.compute_capability(), "compute capability")?;
        let sm_count = drv(
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            "SM count",
        )?;
        let memory_bytes = drv(ctx.total_mem(), "total memory")? as u64;
        let mut v: i32 = 0;
        // SAFETY: writes one int.
        drv(
            unsafe { sys::cuDriverGetVersion(&mut v) }.result(),
            "driver version",
        )?;
        let cuda_version = format!("{}.{}", v / 1000, (v % 1000) / 10);
        let driver_version = read_kernel_driver_version().unwrap_or_else(|| cuda_version.clone());
        let nvrtc_version = nvrtc_version().unwrap_or_else(|| "unavailable".to_string());
        let datasheet = super::device::datasheet_for(&name);
        let info = DeviceInfo {
            name,
            compute_capability: format!("{}.{}", cc.0, cc.1),
            sm_count: sm_count.max(0) as u32,
            memory_bytes,
            driver_version,
            cuda_version,
            nvrtc_version,
            datasheet,
        };
        let mut gpu = Gpu {
            ctx,
            stream: std::ptr::null_mut(),
            blas: None,
            blas_version: None,
            flush: None,
            info,
            cc,
        };
        gpu.flush = Some(gpu.alloc(L2_FLUSH_BYTES)?);
        gpu.init_blas();
        Ok(Some(gpu))
    }

    fn init_blas(&mut self) {
        use cudarc::cublas::{result as br, sys as bs};
        // SAFETY: probes the shared library only.
        if !unsafe { bs::is_culib_present() } {
            return;
        }
        let Ok(Ok(handle)) = std::panic::catch_unwind(br::create_handle) else {
            return;
        };
        // SAFETY: valid handle; the null stream is the legacy default stream.
        let ok = unsafe {
            br::set_stream(handle, self.stream as _).is_ok()
                && bs::cublasSetMathMode(handle, bs::cublasMath_t::CUBLAS_DEFAULT_MATH)
                    == bs::cublasStatus_t::CUBLAS_STATUS_SUCCESS
        };
        if !ok {
            let _ = unsafe { br::destroy_handle(handle) };
            return;
        }
        let mut ver: i32 = 0;
        // SAFETY: writes one int.
        if unsafe { bs::cublasGetVersion_v2(handle, &mut ver) } == bs::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            self.blas_version = Some(ver);
        }
        self.blas = Some(handle);
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// NVRTC target, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.cc.0, self.cc.1)
    }

    pub fn sm_count(&self) -> u32 {
        self.info.sm_count
    }

    /// cuBLAS version as "13.1.0" style, if cuBLAS is loaded.
    pub fn cublas_version(&self) -> Option<String> {
        self.blas_version
            .map(|v| format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
    }

    pub fn has_cublas(&self) -> bool {
        self.blas.is_some()
    }

    /// The architecture-specific target ("sm_90a") for Hopper-only instructions (wgmma,
    /// setmaxnreg); the plain target elsewhere.
    pub fn arch_specific(&self) -> String {
        if self.cc == (9, 0) {
            "sm_90a".to_string()
        } else {
            self.arch()
        }
    }

    /// Compile one kernel file with NVRTC for this device and load it; `arch_specific` asks for
    /// [`Gpu::arch_specific`]'s target instead of the portable one.
    pub fn compile(
        &self,
        file: &str,
        source: &str,
        arch_specific: bool,
    ) -> std::result::Result<Module, CompileFailure> {
        use cudarc::nvrtc;
        // SAFETY: probes the shared library only.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return Err(CompileFailure {
                log: "NVRTC library not found".into(),
            });
        }
        if source.contains('\0') {
            return Err(CompileFailure {
                log: format!("{file}(1): error: source contains a NUL byte"),
            });
        }
        let opts = nvrtc::CompileOptions {
            options: vec![
                format!(
                    "--gpu-architecture={}",
                    if arch_specific {
                        self.arch_specific()
                    } else {
                        self.arch()
                    }
                ),
                "--std=c++17".into(),
            ],
            name: Some(file.to_string()),
            ..Default::default()
        };
        let src = source.to_string();
        let compiled = std::panic::catch_unwind(move || nvrtc::compile_ptx_with_opts(src, opts));
        let ptx = match compiled {
            Err(_) => {
                return Err(CompileFailure {
                    log: "NVRTC panicked".into(),
                })
            }
            Ok(Err(nvrtc::CompileError::CompileError { log, .. })) => {
                return Err(CompileFailure {
                    log: log.to_string_lossy().into_owned(),
                })
            }
            Ok(Err(e)) => {
                return Err(CompileFailure {
                    log: format!("NVRTC: {e:?}"),
                })
            }
            Ok(Ok(ptx)) => ptx,
        };
        let module = self.ctx.load_module(ptx).map_err(|e| CompileFailure {
            log: format!("loading the PTX of {file} failed: {e:?}"),
        })?;
        Ok(Module {
            module,
            file: file.to_string(),
        })
    }

    /// Look up a kernel function in a compiled module.
    pub fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        use sys::CUfunction_attribute::*;
        let func = module
            .module
            .load_function(name)
            .map_err(|e| anyhow!("kernel `{name}` not found in {}: {e:?}", module.file))?;
        let attr = |a| func.get_attribute(a).unwrap_or(-1);
        Ok(Kernel {
            name: name.to_string(),
            registers: attr(CU_FUNC_ATTRIBUTE_NUM_REGS),
            local_bytes: attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            static_smem_bytes: attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            func,
        })
    }

    pub fn alloc(&self, bytes: usize) -> Result<DevBuf> {
        drv(self.ctx.bind_to_thread(), "bind context")?;
        // SAFETY: plain cuMemAlloc; freed in DevBuf::drop.
        let ptr = drv(
            unsafe { dr::malloc_sync(bytes.max(4)) },
            &format!("cuMemAlloc({bytes} bytes)"),
        )?;
        Ok(DevBuf {
            ptr,
            bytes,
            _ctx: self.ctx.clone(),
        })
    }

    pub fn alloc_f32(&self, n: usize) -> Result<DevBuf> {
        self.alloc(n * 4)
    }

    /// (free, total) device memory in bytes.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        drv(self.ctx.bind_to_thread(), "bind context")?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two integers.
        drv(
            unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result(),
            "cuMemGetInfo",
        )?;
        Ok((free, total))
    }

    /// Upload 16-bit words (BF16 bit patterns).
    pub fn upload_u16(&self, dst: &DevBuf, src: &[u16]) -> Result<()> {
        if src.len() * 2 > dst.bytes {
            bail!(
                "upload of {} 16-bit words into a buffer of {} bytes",
                src.len(),
                dst.bytes
            );
        }
        // SAFETY: bounds checked above; synchronous copy.
        drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
    }

    /// Upload raw bytes (quantized codes; little-endian words packed by the caller).
    pub fn upload_bytes(&self, dst: &DevBuf, src: &[u8]) -> Result<()> {
        if src.len() > dst.bytes {
            bail!(
                "upload of {} bytes into a buffer of {} bytes",
                src.len(),
                dst.bytes
            );
        }
        // SAFETY: bounds checked above; synchronous copy.
        drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
    }

    /// Download 16-bit words (BF16 bit patterns).
    pub fn download_u16(&self, src: &DevBuf, n: usize) -> Result<Vec<u16>> {
        if n * 2 > src.bytes {
            bail!(
                "download of {n} 16-bit words from a buffer of {} bytes",
                src.bytes
            );
        }
        let mut out = vec![0u16; n];
        self.sync()?;
        // SAFETY: bounds checked above; synchronous copy.
        drv(unsafe { dr::memcpy_dtoh_sync(&mut out, src.ptr) }, "copy to host")?;
        Ok(out)
    }

    pub fn upload_f32(&self, dst: &DevBuf, src: &[f32]) -> Result<()> {
        if src.len() * 4 > dst.bytes {
            bail!(
                "upload of {} floats into a buffer of {} bytes",
                src.len(),
                dst.bytes
            );
        }
        // SAFETY: bounds checked above; synchronous copy.
        drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
    }

    pub fn download_f32(&self, src: &DevBuf, n: usize) -> Result<Vec<f32>> {
        if n * 4 > src.bytes {
            bail!("download of {n} floats from a buffer of {} bytes", src.bytes);
        }
        let mut out = vec![0f32; n];
        self.sync()?;
        // SAFETY: bounds checked above; synchronous copy.
        drv(unsafe { dr::memcpy_dtoh_sync(&mut out, src.ptr) }, "copy to host")?;
        Ok(out)
    }

    /// Fill a buffer with a 32-bit pattern (asynchronous, on the stream).
    fn fill_u32(&self, buf: &DevBuf, word: u32) -> Result<()> {
        // SAFETY: writes buf.bytes / 4 words inside the allocation.
        drv(
            unsafe { sys::cuMemsetD32Async(buf.ptr, word, buf.bytes / 4, self.stream) }.result(),
            "cuMemsetD32",
        )
    }

    /// Poison an output buffer with NaN so that unwritten elements fail verification. The word
    /// 0x7fc07fc0 is a NaN read as one f32 and as two BF16 (0x7fc0 each), so one poison serves
    /// both element types.
    pub fn fill_nan(&self, buf: &DevBuf) -> Result<()> {
        self.fill_u32(buf, 0x7fc0_7fc0)
    }

    /// Zero a buffer (asynchronous, on the stream).
    pub fn fill_zero(&self, buf: &DevBuf) -> Result<()> {
        self.fill_u32(buf, 0)
    }

    /// Write the flush buffer, evicting whatever the previous repetition left in L2.
    pub fn flush_l2(&self) -> Result<()> {
        match &self.flush {
            Some(f) => self.fill_u32(f, 0x3f80_0000),
            None => Ok(()),
        }
    }

    /// Device-to-device copy of `bytes` bytes (the bandwidth baseline), asynchronous.
    pub fn memcpy_dtod(&self, dst: &DevBuf, src: &DevBuf, bytes: usize) -> Result<()> {
        if bytes > dst.bytes || bytes > src.bytes {
            bail!("memcpy of {bytes} bytes exceeds a buffer");
        }
        // SAFETY: bounds checked above.
        drv(
            unsafe { dr::memcpy_dtod_async(dst.ptr, src.ptr, bytes, self.stream) },
            "cuMemcpyDtoD",
        )
    }

    /// Launch a kernel (asynchronous). Launch-configuration errors come back at once; faults
    /// inside the kernel surface at the next `sync`.
    pub fn launch(&self, k: &Kernel, cfg: Launch, args: &[Arg]) -> Result<()> {
        // Every argument is at most 8 bytes; keep each in its own 8-byte slot and pass pointers
        // to the slots (cuLaunchKernel copies them before returning).
        // A tensor map (128 bytes) is passed by pointing at the map itself.
        let mut slots: Vec<[u8; 8]> = Vec::with_capacity(args.len());
        for a in args {
            let mut s = [0u8; 8];
            match a {
                Arg::Buf(b) => s.copy_from_slice(&b.ptr.to_ne_bytes()),
                Arg::I32(v) => s[..4].copy_from_slice(&v.to_ne_bytes()),
                Arg::U32(v) => s[..4].copy_from_slice(&v.to_ne_bytes()),
                Arg::U64(v) => s.copy_from_slice(&v.to_ne_bytes()),
                Arg::F32(v) => s[..4].copy_from_slice(&v.to_ne_bytes()),
                Arg::TensorMap(_) => {}
            }
            slots.push(s);
        }
        let mut ptrs: Vec<*mut c_void> = slots
            .iter_mut()
            .zip(args)
            .map(|(s, a)| match a {
                Arg::TensorMap(t) => &t.0 as *const sys::CUtensorMap as *mut c_void,
                _ => s.as_mut_ptr() as *mut c_void,
            })
            .collect();
        // SAFETY: the caller passes arguments matching the kernel's signature; buffers are live.
        drv(
            unsafe {
                dr::launch_kernel(
                    k.func.cu_function(),
                    cfg.grid,
                    cfg.block,
                    cfg.smem,
                    self.stream,
                    &mut ptrs,
                )
            },
            &format!("launch of {}", k.name),
        )
    }

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

    /// Allow a kernel up to `bytes` of dynamic shared memory (above the default 48 KiB).
    pub fn set_max_dynamic_smem(&self, k: &Kernel, bytes: u32) -> Result<()> {
        // SAFETY: a valid function handle.
        drv(
            unsafe {
                sys::cuFuncSetAttribute(
                    k.func.cu_function(),
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
            }
            .result(),
            &format!("cuFuncSetAttribute(max dynamic shared memory) of {}", k.name),
        )
    }

    /// A TMA tensor map for a row-major BF16 matrix of `rows` × `cols` in `buf`, copied in boxes
    /// of `box_rows` × `box_cols` with the 128-byte swizzle (box_cols · 2 must be 128 at most).
    pub fn tensor_map_bf16(
        &self,
        buf: &DevBuf,
        rows: usize,
        cols: usize,
        box_rows: u32,
        box_cols: u32,
    ) -> Result<TensorMap> {
        use sys::*;
        if rows * cols * 2 > buf.bytes
            || !(cols * 2).is_multiple_of(16)
            || box_cols * 2 > 128
            || box_rows > 256
        {
            bail!("tensor map {rows} × {cols} (box {box_rows} × {box_cols}) does not fit its buffer or the TMA rules");
        }
        let mut map = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
        let dims: [u64; 2] = [cols as u64, rows as u64];
        let strides: [u64; 1] = [(cols * 2) as u64];
        let boxes: [u32; 2] = [box_cols, box_rows];
        let elem: [u32; 2] = [1, 1];
        // SAFETY: all arrays have rank (2) entries (strides rank − 1); the map is written.
        drv(
            unsafe {
                cuTensorMapEncodeTiled(
                    map.as_mut_ptr(),
                    CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                    2,
                    buf.ptr as *mut c_void,
                    dims.as_ptr(),
                    strides.as_ptr(),
                    boxes.as_ptr(),
                    elem.as_ptr(),
                    CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                    CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                )
            }
            .result(),
            "cuTensorMapEncodeTiled",
        )?;
        // SAFETY: initialised by the successful call above.
        Ok(TensorMap(unsafe { map.assume_init() }))
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

    /// Wait for all work; reports faults from earlier launches.
    pub fn sync(&self) -> Result<()> {
        drv(self.ctx.bind_to_thread(), "bind context")?;
        // SAFETY: the null stream.
        drv(unsafe { dr::stream::synchronize(self.stream) }, "synchronize")
    }

    /// Time `reps` runs of `f` with CUDA events (CU_EVENT_DEFAULT, so they record time). Before
    /// each run the L2 flush buffer is written, outside the timed region. Returns milliseconds
    /// per run.
    pub fn time_runs(&self, reps: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        let mut events = Vec::with_capacity(reps * 2);
        let result = (|| -> Result<Vec<f64>> {
            for _ in 0..reps * 2 {
                events.push(drv(
                    dr::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT),
                    "cuEventCreate",
                )?);
            }
            for r in 0..reps {
                self.flush_l2()?;
                // SAFETY: events and stream are valid.
                drv(
                    unsafe { dr::event::record(events[2 * r], self.stream) },
                    "cuEventRecord",
                )?;
                f()?;
                drv(
                    unsafe { dr::event::record(events[2 * r + 1], self.stream) },
                    "cuEventRecord",
                )?;
            }
            self.sync()?;
            let mut ms = Vec::with_capacity(reps);
            for r in 0..reps {
                // SAFETY: both events were recorded and completed.
                let t = drv(
                    unsafe { dr::event::elapsed(events[2 * r], events[2 * r + 1]) },
                    "cuEventElapsedTime",
                )?;
                ms.push(t as f64);
            }
            Ok(ms)
        })();
        for e in events {
            // SAFETY: created above, not used afterwards.
            let _ = unsafe { dr::event::destroy(e) };
        }
        result.context("timing")
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if let Some(h) = self.blas.take() {
            // SAFETY: created in init_blas.
            let _ = unsafe { cudarc::cublas::result::destroy_handle(h) };
        }
    }
}

/// NVRTC's version as "13.0".
fn nvrtc_version() -> Option<String> {
    use cudarc::nvrtc::sys as ns;
    // SAFETY: probes the shared library only.
    if !unsafe { ns::is_culib_present() } {
        return None;
    }
    let (mut major, mut minor) = (0i32, 0i32);
    let r = std::panic::catch_unwind(move || {
        // SAFETY: writes two ints.
        unsafe { ns::nvrtcVersion(&mut major, &mut minor) };
        (major, minor)
    })
    .ok()?;
    Some(format!("{}.{}", r.0, r.1))
}

/// "580.159.04" from /proc/driver/nvidia/version, if present.
fn read_kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    super::device::parse_driver_version(&text)
}

/// Compile `source` (named `file`) with NVRTC for `arch` (e.g. "sm_90") without a GPU.
/// `None` when the NVRTC library is not installed; `Some(Err(log))` on a compile error.
pub fn nvrtc_compile_only(file: &str, source: &str, arch: &str) -> Option<std::result::Result<(), String>> {
    use cudarc::nvrtc;
    // SAFETY: probes the shared library only.
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return None;
    }
    let opts = nvrtc::CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(file.to_string()),
        ..Default::default()
    };
    let src = source.to_string();
    Some(
        match std::panic::catch_unwind(move || nvrtc::compile_ptx_with_opts(src, opts)) {
            Err(_) => Err("NVRTC panicked".into()),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(nvrtc::CompileError::CompileError { log, .. })) => Err(log.to_string_lossy().into_owned()),
            Ok(Err(e)) => Err(format!("NVRTC: {e:?}")),
        },
    )
}
