//! NCCL from Rust: one process, one thread, every visible GPU (ncclCommInitAll), each collective
//! issued on all ranks inside one NCCL group, timed with CUDA events on every rank's stream.
//!
//! Why apart from `Gpu`: the kernel harness drives device 0 only; this is the one place that
//! opens the others. NCCL is loaded at run time (cudarc's dynamic loading); a machine without
//! it, or with fewer than two GPUs, gets an error that says so, never a panic.

use anyhow::{anyhow, bail, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudarc::nccl::result as nr;
use cudarc::nccl::safe::{Comm, ReduceOp};
use std::sync::Arc;

/// The collectives this boundary issues (their sizes and bandwidth factors: `collectives`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coll {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    /// A ring of sends and receives: rank r sends to r + 1 and receives from r − 1.
    SendRecv,
}

impl Coll {
    pub fn name(self) -> &'static str {
        match self {
            Coll::AllReduce => "all_reduce",
            Coll::AllGather => "all_gather",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Broadcast => "broadcast",
            Coll::SendRecv => "send_recv",
        }
    }
}

/// Communicators and streams of every visible GPU, rank i on device i.
pub struct Nccl {
    comms: Vec<Comm>,
    streams: Vec<Arc<CudaStream>>,
}

/// One buffer per rank.
pub type Bufs = Vec<CudaSlice<f32>>;

fn nccl<T>(r: std::result::Result<T, nr::NcclError>, what: &str) -> Result<T> {
    r.map_err(|e| anyhow!("NCCL {what}: {e:?}"))
}

impl Nccl {
    /// Open every visible GPU and one communicator over them.
    pub fn open() -> Result<Nccl> {
        // SAFETY: probes the shared libraries only.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            bail!("no CUDA driver");
        }
        if !unsafe { cudarc::nccl::sys::is_culib_present() } {
            bail!("the NCCL library (libnccl.so) was not found on the library path");
        }
        let n = CudaContext::device_count().map_err(|e| anyhow!("device count: {e:?}"))? as usize;
        // HDLC_NCCL_MIN_GPUS=1: a one-rank communicator, to smoke-test this path on one GPU
        // (every collective is then a copy; its numbers mean nothing and are not shipped).
        let min = std::env::var("HDLC_NCCL_MIN_GPUS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        if n < min.max(1) {
            bail!("{n} GPU(s) visible: a collective needs at least {min}");
        }
        let mut streams = Vec::with_capacity(n);
        for i in 0..n {
            let ctx = CudaContext::new(i).map_err(|e| anyhow!("GPU {i}: {e:?}"))?;
            // The harness synchronizes explicitly; cudarc's per-use event records would add
            // work to every call of a latency-bound 8-byte collective.
            // SAFETY: no buffer of this context is shared with another stream.
            unsafe { ctx.disable_event_tracking() };
            streams.push(ctx.new_stream().map_err(|e| anyhow!("GPU {i} stream: {e:?}"))?);
        }
        let comms = nccl(Comm::from_devices(streams.clone()), "init")?;
        Ok(Nccl { comms, streams })
    }

    pub fn world(&self) -> usize {
        self.comms.len()
    }

    /// "2.27.7" from ncclGetVersion (major·10000 + minor·100 + patch).
    pub fn version() -> Option<String> {
        nr::get_nccl_version()
            .ok()
            .map(|v| format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
    }

    /// Rank i's buffer holds `host[i]`.
    pub fn upload(&self, host: &[Vec<f32>]) -> Result<Bufs> {
        self.streams
            .iter()
            .zip(host)
            .map(|(s, h)| s.clone_htod(h).map_err(|e| anyhow!("upload: {e:?}")))
            .collect()
    }

    /// A zeroed buffer of `count` on every rank.
    pub fn zeros(&self, count: usize) -> Result<Bufs> {
        self.streams
            .iter()
            .map(|s| s.alloc_zeros::<f32>(count).map_err(|e| anyhow!("alloc: {e:?}")))
            .collect()
    }

    /// Every rank's buffer, on the host.
    pub fn download(&self, bufs: &Bufs) -> Result<Vec<Vec<f32>>> {
        self.streams
            .iter()
            .zip(bufs)
            .map(|(s, b)| s.clone_dtoh(b).map_err(|e| anyhow!("download: {e:?}")))
            .collect()
    }

    pub fn sync(&self) -> Result<()> {
        for s in &self.streams {
            s.synchronize().map_err(|e| anyhow!("synchronize: {e:?}"))?;
        }
        Ok(())
    }

    /// Issue one collective on every rank, inside one NCCL group (a single thread driving
    /// several GPUs must group its calls, or the first rank's call waits for the others forever).
    pub fn run(&self, c: Coll, send: &Bufs, recv: &mut Bufs) -> Result<()> {
        let n = self.world() as i32;
        nccl(nr::group_start(), "group start")?;
        let mut result = Ok(());
        for (r, ((comm, s), d)) in self.comms.iter().zip(send).zip(recv.iter_mut()).enumerate() {
            let r = r as i32;
            let status = match c {
                Coll::AllReduce => comm.all_reduce(s, d, &ReduceOp::Sum).map(|_| ()),
                Coll::AllGather => comm.all_gather(s, d).map(|_| ()),
                Coll::ReduceScatter => comm.reduce_scatter(s, d, &ReduceOp::Sum).map(|_| ()),
                Coll::Broadcast => comm.broadcast(Some(s), d, 0).map(|_| ()),
                Coll::SendRecv => comm
                    .send(s, (r + 1) % n)
                    .and_then(|_| comm.recv(d, (r + n - 1) % n).map(|_| ())),
            };
            if let Err(e) = status {
                result = Err(anyhow!("NCCL {}: {e:?}", c.name()));
                break;
            }
        }
        nccl(nr::group_end(), "group end")?;
        result
    }

    /// Milliseconds per call: `iters` back-to-back calls between two events on every rank's
    /// stream, divided by `iters` and averaged over the ranks (as nccl-tests reports).
    pub fn time(&self, c: Coll, send: &Bufs, recv: &mut Bufs, iters: usize) -> Result<f64> {
        let ev = |s: &Arc<CudaStream>| {
            s.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| anyhow!("event: {e:?}"))
        };
        let starts = self.streams.iter().map(ev).collect::<Result<Vec<_>>>()?;
        for _ in 0..iters {
            self.run(c, send, recv)?;
        }
        let ends = self.streams.iter().map(ev).collect::<Result<Vec<_>>>()?;
        self.sync()?;
        let mut sum = 0.0;
        for (a, b) in starts.iter().zip(&ends) {
            sum += a.elapsed_ms(b).map_err(|e| anyhow!("elapsed: {e:?}"))? as f64;
        }
        Ok(sum / self.world() as f64 / iters as f64)
    }
}
