//! The results file format: one JSON file per device under `kernels/results/`.
//!
//! Why a schema of its own: these files are committed and shipped, read by every build on
//! machines without a GPU, and written by the harness on machines with one. The version number
//! lets a later generator refuse (rather than misread) an older layout.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bump when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything measured on one device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResultsFile {
    pub schema: u32,
    pub device: DeviceInfo,
    pub records: Vec<Record>,
}

/// Which machine the numbers come from: printed under every figure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceInfo {
    /// e.g. "NVIDIA H100 80GB HBM3"
    pub name: String,
    /// e.g. "9.0"
    pub compute_capability: String,
    pub sm_count: u32,
    pub memory_bytes: u64,
    /// e.g. "580.159.04" (or the CUDA driver API version when the string is unavailable)
    pub driver_version: String,
    /// CUDA driver API version, e.g. "13.0"
    pub cuda_version: String,
    /// NVRTC version, e.g. "13.0"
    pub nvrtc_version: String,
    /// Datasheet peaks for this device where known, for printing beside measured baselines.
    #[serde(default)]
    pub datasheet: Option<Datasheet>,
}

/// Vendor datasheet figures: printed as references, never drawn as measurements.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Datasheet {
    pub source: String,
    pub memory_bandwidth_gbs: f64,
    pub fp32_tflops: f64,
    #[serde(default)]
    pub bf16_tensor_tflops: Option<f64>,
    /// Dense FP8 (and INT8) tensor-core peak, TFLOP/s (TOPS).
    #[serde(default)]
    pub fp8_tensor_tflops: Option<f64>,
}

/// One measured (or failed) variant at one parameter set.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// Benchmark family: "bandwidth", "transpose", "reduction", "softmax", "sgemm", ...
    pub family: String,
    /// Variant id within the family, e.g. "copy_vec4"; baselines too ("memcpy", "cublas").
    pub variant: String,
    /// Human label for figures, e.g. "vectorized copy (float4)".
    pub label: String,
    /// Position in the family's teaching ladder (baselines last).
    pub rung: u32,
    pub baseline: bool,
    /// Problem parameters, e.g. {"n": 268435456} or {"m":4096,"n":4096,"k":4096}.
    pub params: BTreeMap<String, u64>,
    /// Cache key: hash of kernel source + params + device + toolchain (see `cache`).
    pub key: String,
    /// sha256 of the kernel source file the variant was compiled from ("" for library baselines).
    pub source_hash: String,
    /// Which kernels/*.cu file the variant lives in (None for baselines).
    #[serde(default)]
    pub source_file: Option<String>,
    pub outcome: Outcome,
    pub provenance: Provenance,
    /// Seconds the item took in its run, set-up and checks included (a lab: its whole process,
    /// on each of its records). What `build` says a first measurement will take is summed from
    /// these. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

/// Either a verified timing or a failure; a failure is never drawn as a number.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Ok(Timing),
    Failed { stage: FailStage, error: String },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailStage {
    Compile,
    Launch,
    Verify,
    Unsupported,
    /// A lab process exited with an error status.
    Crash,
    /// A lab process outlived its time-out and was killed.
    Timeout,
    /// A lab printed something that is not a record.
    Output,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    /// ‖out − ref‖ / ‖ref‖ of the verification run.
    pub rel_error: f64,
    /// Tolerance the variant was held to.
    pub tolerance: f64,
    pub reps: u32,
    pub median_ms: f64,
    /// 10th and 90th percentile of the repetitions: the spread shown on figures.
    pub p10_ms: f64,
    pub p90_ms: f64,
    /// Floating-point operations of one run (0 for pure data movement).
    pub flops: f64,
    /// Fewest bytes one run must move through device memory.
    pub bytes: f64,
    /// Device memory the variant needs beyond its inputs and outputs (e.g. the materialized
    /// score matrix of standard attention), where the family records it. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_bytes: Option<f64>,
    /// Named numbers beyond time, FLOPs and bytes (labs: tokens/s, TTFT, peak memory; quantized
    /// kernels: their error against the unquantized result). Absent in older files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// Named curves of `[x, y]` points, e.g. a training loss per step.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub series: BTreeMap<String, Vec<[f64; 2]>>,
    /// Named tables, e.g. a profiler's top kernels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, Table>,
}

/// A small table a lab measured (a profiler's top kernels, the collectives in compiled HLO).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// One table cell: a number or a piece of text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Cell {
    Num(f64),
    Text(String),
}

impl Outcome {
    /// A deliberate skip: the plan does not measure this point (e.g. a kernel too slow to teach
    /// anything at that size), which is not a failure.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            Outcome::Failed {
                stage: FailStage::Unsupported,
                ..
            }
        )
    }
}

impl Timing {
    pub fn gflops(&self) -> f64 {
        self.flops / (self.median_ms * 1e-3) / 1e9
    }
    pub fn gbs(&self) -> f64 {
        self.bytes / (self.median_ms * 1e-3) / 1e9
    }
    pub fn intensity(&self) -> f64 {
        if self.bytes > 0.0 {
            self.flops / self.bytes
        } else {
            0.0
        }
    }
}

/// Where and how a record was produced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub generator_version: String,
    pub git_commit: String,
    /// RFC 3339 UTC.
    pub date: String,
    /// Labs only: the interpreter and framework versions the lab ran with (python, torch, cuda,
    /// triton, jax, ...). Absent for kernels, which the device's own fields describe.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub frameworks: BTreeMap<String, String>,
    /// Multi-GPU labs only: how many GPUs the machine showed (0: gloo CPU processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// Multi-GPU labs only: what connects the GPUs, from `nvidia-smi topo -m` ("NV18", "PIX").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interconnect: Option<String>,
}
