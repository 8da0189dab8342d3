//! Compiling a kernel file with NVRTC and loading its kernels.
//!
//! Why apart: the compile options (architecture, C++ standard, the program named after its file
//! so that NVRTC's errors read `file(line)`) must be the same for a build with a GPU and for the
//! GPU-less compile check, which are both here.

use super::*;
use std::ffi::{CStr, CString};

/// A kernel file being compiled by NVRTC on another thread.
pub struct PendingCompile {
    file: &'static str,
    job: std::thread::JoinHandle<std::result::Result<cudarc::nvrtc::Ptx, CompileFailure>>,
}

impl Gpu {
    /// Compile one kernel file with NVRTC for this device and load it; `arch_specific` asks for
    /// [`Gpu::arch_specific`]'s target instead of the portable one.
    pub fn compile(
        &self,
        file: &str,
        source: &str,
        arch_specific: bool,
    ) -> std::result::Result<Module, CompileFailure> {
        compile_and_load(&self.ctx, &self.target(arch_specific), file, source)
    }

    /// Start NVRTC on a kernel file on a thread of its own: NVRTC takes seconds for the larger
    /// files and a suite compiles a dozen, so they compile side by side while the first families
    /// run. Only NVRTC runs there; [`Gpu::finish_compile`] loads the PTX on the calling thread,
    /// because a driver call on another thread could stall a launch between two timing events.
    pub fn compile_in_background(
        &self,
        file: &'static str,
        source: &'static str,
        arch_specific: bool,
    ) -> PendingCompile {
        let arch = self.target(arch_specific);
        PendingCompile {
            file,
            job: std::thread::spawn(move || compile_ptx(&arch, file, source)),
        }
    }

    /// Wait for a background compile and load its PTX.
    pub fn finish_compile(&self, pending: PendingCompile) -> std::result::Result<Module, CompileFailure> {
        let ptx = pending.job.join().unwrap_or_else(|_| {
            Err(CompileFailure {
                log: "NVRTC thread panicked".into(),
            })
        })?;
        load_ptx(&self.ctx, pending.file, ptx)
    }

    /// The --gpu-architecture value: [`Gpu::arch_specific`]'s target or the portable one.
    fn target(&self, arch_specific: bool) -> String {
        if arch_specific {
            self.arch_specific()
        } else {
            self.arch()
        }
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
}

/// Compile one kernel file with NVRTC for `arch` and load it into `ctx` (thread-safe: NVRTC
/// programs are independent and the driver loads modules from any thread).
fn compile_and_load(
    ctx: &Arc<CudaContext>,
    arch: &str,
    file: &str,
    source: &str,
) -> std::result::Result<Module, CompileFailure> {
    load_ptx(ctx, file, compile_ptx(arch, file, source)?)
}

/// NVRTC alone: source to machine code for the device's architecture (a cubin; NVRTC runs the
/// PTX assembler itself for a real `sm_XX` target), plain CPU work that never touches the driver,
/// so it can run on another thread while kernels are being timed. Loading a cubin is then quick;
/// loading PTX would make the driver assemble it on the measuring thread (seconds for the larger
/// files). Falls back to PTX if NVRTC gives no cubin.
fn compile_ptx(
    arch: &str,
    file: &str,
    source: &str,
) -> std::result::Result<cudarc::nvrtc::Ptx, CompileFailure> {
    use cudarc::nvrtc::{result, sys, Ptx};
    let fail = |log: String| CompileFailure { log };
    // SAFETY: probes the shared library only.
    if !unsafe { sys::is_culib_present() } {
        return Err(fail("NVRTC library not found".into()));
    }
    let (Ok(src), Ok(name)) = (CString::new(source), CString::new(file)) else {
        return Err(fail(format!("{file}(1): error: source contains a NUL byte")));
    };
    let prog = create_program(&src, &name).map_err(fail)?;
    let options = [format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    // SAFETY: `prog` was just created and is destroyed once, below; `src` and `name` outlive it.
    let out = unsafe {
        match result::compile_program(prog, &options) {
            Err(e) => Err(fail(match result::get_program_log(prog) {
                Ok(log) => CStr::from_ptr(log.as_ptr()).to_string_lossy().into_owned(),
                Err(_) => format!("NVRTC: {e:?}"),
            })),
            Ok(()) => {
                let mut size = 0usize;
                let has_cubin = sys::nvrtcGetCUBINSize(prog, &mut size).result().is_ok() && size > 0;
                if has_cubin {
                    let mut cubin = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                        .result()
                        .map(|_| Ptx::from_binary(cubin))
                        .map_err(|e| fail(format!("NVRTC: {e:?}")))
                } else {
                    result::get_ptx(prog)
                        .map(|p| Ptx::from_src(CStr::from_ptr(p.as_ptr()).to_string_lossy().into_owned()))
                        .map_err(|e| fail(format!("NVRTC: {e:?}")))
                }
            }
        }
    };
    // SAFETY: created above, not used afterwards.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// Load a cubin (or PTX, which the driver then compiles) into the context.
fn load_ptx(
    ctx: &Arc<CudaContext>,
    file: &str,
    ptx: cudarc::nvrtc::Ptx,
) -> std::result::Result<Module, CompileFailure> {
    let module = ctx.load_module(ptx).map_err(|e| CompileFailure {
        log: format!("loading the compiled {file} failed: {e:?}"),
    })?;
    Ok(Module {
        module,
        file: file.to_string(),
    })
}

/// Compile `source` (named `file`) with NVRTC for `arch` (e.g. "sm_90") without a GPU.
/// `None` when the NVRTC library is not installed; `Some(Err(log))` on a compile error.
pub fn nvrtc_compile_only(file: &str, source: &str, arch: &str) -> Option<std::result::Result<(), String>> {
    // SAFETY: probes the shared library only.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return None;
    }
    Some(compile_ptx(arch, file, source).map(|_| ()).map_err(|f| f.log))
}

/// An NVRTC program for `src` named `name`, with every embedded kernel header available to its
/// `#include` lines (NVRTC has no file system to search).
fn create_program(src: &CStr, name: &CStr) -> std::result::Result<cudarc::nvrtc::sys::nvrtcProgram, String> {
    use cudarc::nvrtc::sys;
    // Made once and kept: the program may refer to them until it is destroyed.
    static HEADERS: std::sync::OnceLock<Vec<(CString, CString)>> = std::sync::OnceLock::new();
    let headers = HEADERS.get_or_init(|| {
        crate::measure::kernel_headers()
            .iter()
            .filter_map(|(n, h)| Some((CString::new(*n).ok()?, CString::new(*h).ok()?)))
            .collect()
    });
    let names: Vec<*const std::ffi::c_char> = headers.iter().map(|(n, _)| n.as_ptr()).collect();
    let texts: Vec<*const std::ffi::c_char> = headers.iter().map(|(_, h)| h.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is to a NUL-terminated string: the headers live for the whole
    // process, `src` and `name` until the caller destroys the program.
    unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            src.as_ptr(),
            name.as_ptr(),
            headers.len() as i32,
            texts.as_ptr(),
            names.as_ptr(),
        )
        .result()
        .map_err(|e| format!("NVRTC: {e:?}"))?;
        Ok(prog.assume_init())
    }
}
