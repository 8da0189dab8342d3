//! Kernel launches: argument packing, thread-block clusters, dynamic shared memory, TMA
//! tensor maps.
//!
//! Why apart: this is the one place with `unsafe` pointer packing for `cuLaunchKernel`; the
//! families describe a launch with [`Launch`] and [`Arg`] and never touch a pointer.

use super::*;

impl Gpu {
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
        if let Some(c) = cfg.cluster {
            return self.launch_cluster(k, cfg, c, &mut ptrs);
        }
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

    /// A launch whose blocks form clusters of `blocks` along x: `cuLaunchKernelEx` with the
    /// cluster-dimension attribute (plain `cuLaunchKernel` cannot ask for clusters).
    fn launch_cluster(&self, k: &Kernel, cfg: Launch, blocks: u32, ptrs: &mut [*mut c_void]) -> Result<()> {
        use sys::*;
        if blocks == 0 || blocks > 8 || !cfg.grid.0.is_multiple_of(blocks) {
            bail!(
                "launch of {}: cluster of {blocks} blocks does not divide a grid of {} (or exceeds 8)",
                k.name,
                cfg.grid.0
            );
        }
        // SAFETY: a zeroed launch-attribute value is a valid (empty) union; we set the one member
        // the attribute id selects.
        let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.clusterDim.x = blocks;
        value.clusterDim.y = 1;
        value.clusterDim.z = 1;
        let mut attr = CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        };
        let config = CUlaunchConfig {
            gridDimX: cfg.grid.0,
            gridDimY: cfg.grid.1,
            gridDimZ: cfg.grid.2,
            blockDimX: cfg.block.0,
            blockDimY: cfg.block.1,
            blockDimZ: cfg.block.2,
            sharedMemBytes: cfg.smem,
            hStream: self.stream,
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: as for `launch`; `config` and `attr` outlive the call, which copies them.
        drv(
            unsafe {
                cuLaunchKernelEx(
                    &config,
                    k.func.cu_function(),
                    ptrs.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result(),
            &format!("cluster launch of {}", k.name),
        )
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

    /// A TMA tensor map for a row-major `dtype` matrix of `rows` × `cols` in `buf`, copied in
    /// boxes of `box_rows` × `box_cols` with the 128-byte swizzle (a box row must be 128 bytes at
    /// most): BF16 maps feed the WGMMA kernels' operands, an FP32 map is the one through which a
    /// kernel's TMA engine stores tiles of C.
    pub fn tensor_map(
        &self,
        buf: &DevBuf,
        dtype: Dtype,
        rows: usize,
        cols: usize,
        box_rows: u32,
        box_cols: u32,
    ) -> Result<TensorMap> {
        use sys::*;
        let elem_bytes = dtype.bytes();
        if rows * cols * elem_bytes > buf.bytes
            || !(cols * elem_bytes).is_multiple_of(16)
            || box_cols as usize * elem_bytes > 128
            || box_rows > 256
        {
            bail!("tensor map {rows} × {cols} (box {box_rows} × {box_cols}) does not fit its buffer or the TMA rules");
        }
        let data_type = match dtype {
            Dtype::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Dtype::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            Dtype::U8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            Dtype::I32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        };
        let mut map = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
        let dims: [u64; 2] = [cols as u64, rows as u64];
        let strides: [u64; 1] = [(cols * elem_bytes) as u64];
        let boxes: [u32; 2] = [box_cols, box_rows];
        let elem: [u32; 2] = [1, 1];
        // SAFETY: all arrays have rank (2) entries (strides rank − 1); the map is written.
        drv(
            unsafe {
                cuTensorMapEncodeTiled(
                    map.as_mut_ptr(),
                    data_type,
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
}
