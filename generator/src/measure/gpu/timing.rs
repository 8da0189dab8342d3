//! Timing: CUDA-event timed repetitions with an L2 flush between them.
//!
//! Why apart: every measured number in the book comes out of `time_runs`; the rules (flush,
//! events on the same stream, one sync per repetition) are kept in one short file.

use super::*;

impl Gpu {
    /// Write the flush buffer, evicting whatever the previous repetition left in L2.
    pub fn flush_l2(&self) -> Result<()> {
        match &self.flush {
            Some(f) => self.fill_u32(f, 0x3f80_0000),
            None => Ok(()),
        }
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
