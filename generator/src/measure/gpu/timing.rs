//! Timing: CUDA-event timed repetitions with an L2 flush between them.
//!
//! Why apart: every measured number in the book comes out of `time_runs`; the rules (flush,
//! events on the same stream, one sync per repetition) are kept in one short file.
//!
//! Why the flush *reads*: writing 256 MiB (a memset) does push the previous repetition's data out
//! of L2, but it leaves the L2 full of dirty lines (about 50 MB on an H100). The timed kernel then
//! pays for writing the flush's own data back to HBM as it evicts them — for a 60 µs memory-bound
//! kernel that is a third of its traffic again, a cost no real workload has. Reading the buffer
//! evicts just as well and leaves only clean lines, so the write-back of everything earlier
//! happens inside the flush, outside the timed region (Nsight Compute's cache control likewise
//! writes back and invalidates before each measured launch).

use super::*;

/// The flush kernel: every thread reads 16-byte words of the buffer and folds them; the result
/// is stored only if it equals a value the filled buffer can never produce, so the loads cannot
/// be optimised away and nothing is written.
const FLUSH_SOURCE: &str = r#"
extern "C" __global__ void l2_flush_read(const uint4* __restrict__ p, unsigned long long n,
                                         unsigned* sink)
{
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}
"#;

/// The word the flush buffer is filled with: four equal words fold to 0, never the sentinel.
const FLUSH_WORD: u32 = 0x3f80_0000;

impl Gpu {
    /// Allocate and fill the flush buffer and compile its reader (see the module comment).
    pub(super) fn make_flush(&self) -> Result<Flush> {
        let buf = self.alloc(L2_FLUSH_BYTES)?;
        self.fill_u32(&buf, FLUSH_WORD)?;
        self.sync()?;
        let reader = self
            .compile("l2_flush_read.cu", FLUSH_SOURCE, false)
            .ok()
            .and_then(|m| self.kernel(&m, "l2_flush_read").ok().map(|k| (m, k)));
        Ok(Flush { buf, reader })
    }

    /// How the L2 is flushed between timed runs, for the build log.
    pub fn flush_method(&self) -> &'static str {
        match &self.flush {
            Some(Flush { reader: Some(_), .. }) => "read of a 256 MiB buffer",
            Some(_) => "write of a 256 MiB buffer (the read kernel did not compile)",
            None => "none",
        }
    }

    /// Evict whatever the previous repetition left in L2 (asynchronous, on the stream).
    pub fn flush_l2(&self) -> Result<()> {
        let Some(f) = &self.flush else {
            return Ok(());
        };
        let Some((_, k)) = &f.reader else {
            return self.fill_u32(&f.buf, FLUSH_WORD);
        };
        let words = (f.buf.bytes / 16) as u64;
        let blocks = (self.sm_count().max(1) * 8) as u64;
        // The sink is never written (see FLUSH_SOURCE); the buffer itself stands in for it.
        self.launch(
            k,
            Launch::linear(blocks, 256)?,
            &[Arg::Buf(&f.buf), Arg::U64(words), Arg::Buf(&f.buf)],
        )
    }

    /// Wait for all work; reports faults from earlier launches.
    pub fn sync(&self) -> Result<()> {
        drv(self.ctx.bind_to_thread(), "bind context")?;
        // SAFETY: the null stream.
        drv(unsafe { dr::stream::synchronize(self.stream) }, "synchronize")
    }

    /// Time `reps` runs of `f` with CUDA events (CU_EVENT_DEFAULT, so they record time). Before
    /// each run the L2 is flushed, outside the timed region. Returns milliseconds per run.
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
