//! Device memory: allocation, host↔device copies, fills.
//!
//! Why apart: the families move only plain `f32`/`u16` slices; the raw driver calls and their
//! size checks stay here, next to the `DevBuf` drop that frees them.

use super::*;
use crate::measure::prof;

impl Gpu {
    pub fn alloc(&self, bytes: usize) -> Result<DevBuf> {
        drv(self.ctx.bind_to_thread(), "bind context")?;
        // SAFETY: plain cuMemAlloc; freed in DevBuf::drop.
        let ptr = prof::timed(prof::Op::Alloc, || {
            drv(
                unsafe { dr::malloc_sync(bytes.max(4)) },
                &format!("cuMemAlloc({bytes} bytes)"),
            )
        })?;
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
        prof::timed(prof::Op::Upload, || {
            drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
        })
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
        prof::timed(prof::Op::Upload, || {
            drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
        })
    }

    /// Download 16-bit words (BF16 bit patterns).
    pub fn download_u16(&self, src: &DevBuf, n: usize) -> Result<HostVec<u16>> {
        if n * 2 > src.bytes {
            bail!(
                "download of {n} 16-bit words from a buffer of {} bytes",
                src.bytes
            );
        }
        let mut out = HostVec::take(&self.host_u16, n);
        self.sync()?;
        // SAFETY: bounds checked above; synchronous copy.
        prof::timed(prof::Op::Download, || {
            drv(unsafe { dr::memcpy_dtoh_sync(&mut out, src.ptr) }, "copy to host")
        })?;
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
        prof::timed(prof::Op::Upload, || {
            drv(unsafe { dr::memcpy_htod_sync(dst.ptr, src) }, "copy to device")
        })
    }

    pub fn download_f32(&self, src: &DevBuf, n: usize) -> Result<HostVec<f32>> {
        if n * 4 > src.bytes {
            bail!("download of {n} floats from a buffer of {} bytes", src.bytes);
        }
        let mut out = HostVec::take(&self.host_f32, n);
        self.sync()?;
        // SAFETY: bounds checked above; synchronous copy.
        prof::timed(prof::Op::Download, || {
            drv(unsafe { dr::memcpy_dtoh_sync(&mut out, src.ptr) }, "copy to host")
        })?;
        Ok(out)
    }

    /// Fill a buffer with a 32-bit pattern (asynchronous, on the stream).
    pub(super) fn fill_u32(&self, buf: &DevBuf, word: u32) -> Result<()> {
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
}

/// Host buffers that downloads reuse: a check downloads up to a gigabyte, and a fresh allocation
/// that size is a fresh mapping whose first touch faults every page in (seconds per suite family
/// on the lent VMs). A few buffers are kept, page-locked (`cuMemHostRegister`) so the copy runs
/// as one DMA instead of through the driver's staging buffer, and handed out again.
pub type HostPool<T> = Rc<RefCell<Vec<Vec<T>>>>;

/// A downloaded array. Reads like a slice; its buffer goes back to the device's pool when
/// dropped (`into_vec` keeps it instead).
pub struct HostVec<T: Copy + Default> {
    /// The whole pinned buffer, initialized to its full length; the array is its first `n`.
    v: Vec<T>,
    n: usize,
    pool: HostPool<T>,
}

/// Buffers kept per element type.
const POOL_KEEP: usize = 3;

/// Page-lock a vector's whole allocation. Best effort: if the driver refuses, the copy still
/// works from pageable memory, only slower. Every pooled vector with a capacity is pinned.
fn pin<T>(v: &mut Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes > 0 {
        // SAFETY: the range is this vector's allocation; it is unpinned before it is freed or
        // reallocated (see `unpin`).
        let _ = unsafe { sys::cuMemHostRegister_v2(v.as_mut_ptr().cast(), bytes, 0) };
    }
}

/// Undo [`pin`] (harmless for a vector that was never pinned).
fn unpin<T>(v: &mut Vec<T>) {
    if v.capacity() > 0 {
        // SAFETY: unregisters the range `pin` registered, if it did.
        let _ = unsafe { sys::cuMemHostUnregister(v.as_mut_ptr().cast()) };
    }
}

/// Unpin and free every pooled buffer (the device is closing).
pub(super) fn drain<T>(pool: &HostPool<T>) {
    for mut v in pool.borrow_mut().drain(..) {
        unpin(&mut v);
    }
}

impl<T: Copy + Default> HostVec<T> {
    /// A buffer of `n` elements from `pool` (the largest kept one; a new pinned one if that is
    /// too small). Its contents are stale: the caller overwrites all `n`.
    fn take(pool: &HostPool<T>, n: usize) -> HostVec<T> {
        let mut v = pool.borrow_mut().pop().unwrap_or_default();
        if v.len() < n {
            unpin(&mut v);
            // Filled once, when made: a kept buffer is handed out again as it is (its length is
            // its capacity), so a gigabyte download does not first write a gigabyte of zeros.
            v = vec![T::default(); n];
            pin(&mut v);
        }
        HostVec {
            v,
            n,
            pool: pool.clone(),
        }
    }

    /// The contents as an owned vector (its buffer leaves the pool, unpinned).
    pub fn into_vec(mut self) -> Vec<T> {
        unpin(&mut self.v);
        let mut v = std::mem::take(&mut self.v);
        v.truncate(self.n);
        v
    }
}

/// A slice, not the vector: nothing may grow (reallocate) a pinned buffer.
impl<T: Copy + Default> std::ops::Deref for HostVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.v[..self.n]
    }
}

impl<T: Copy + Default> std::ops::DerefMut for HostVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.v[..self.n]
    }
}

impl<T: Copy + Default> Drop for HostVec<T> {
    fn drop(&mut self) {
        if self.v.capacity() == 0 {
            return;
        }
        let mut pool = self.pool.borrow_mut();
        pool.push(std::mem::take(&mut self.v));
        // Keep the largest few (most reuse, fewest faults).
        pool.sort_by_key(|v| v.len());
        if pool.len() > POOL_KEEP {
            unpin(&mut pool.remove(0));
        }
    }
}
