//! Opening the device: the primary context, device facts for provenance, the cuBLAS handle.
//!
//! Why apart: this is where a machine without libcuda must give `Ok(None)` instead of a panic,
//! and where every provenance field (driver, CUDA, NVRTC, SMs, memory) is read once.

use super::*;

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
        let datasheet = crate::measure::device::datasheet_for(&name);
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
            host_f32: Default::default(),
            host_u16: Default::default(),
            info,
            cc,
        };
        gpu.flush = Some(gpu.make_flush()?);
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
    crate::measure::device::parse_driver_version(&text)
}
