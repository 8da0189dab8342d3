//! The reader's own CPU roofline: memory bandwidth (STREAM copy and triad, all cores) and a
//! matrix-product ladder (naive → cache-blocked → packed + register-tiled SIMD → the
//! `matrixmultiply` crate as the baseline), measured on the machine that runs `build` and cached
//! per machine under `target/hdlc-cache/`, so every reader gets their own CPU's roofline beside
//! the H100's.
//!
//! The results use the GPU results schema (`measure::results`) with family "cpu": the device is
//! the CPU (`compute_capability` "cpu", `sm_count` = logical cores used), every variant is
//! verified against an f64 reference before it is timed (see `timing`), and a failed variant
//! carries no numbers.
//!
//! **Build profile.** An unoptimized (debug) build runs these loops 3× (copy) to 500× (the SIMD
//! rung) slower than the machine can, so numbers from it are not the machine's roofline. A debug build therefore
//! (1) uses the release-build results cached on this machine when there are any for the same
//! source, and otherwise (2) measures smaller problems, labels every record "(debug build)" and
//! sets `params["debug_build"] = 1`, so a page can never show them silently as the roofline.
//! The cache key includes the profile, so the two never mix.

pub mod bandwidth;
pub mod machine;
pub mod matmul;
pub mod timing;

mod suite;

pub use suite::measure;

pub use machine::Machine;

use crate::measure::results::{
    DeviceInfo, FailStage, Outcome, Provenance, Record, ResultsFile, SCHEMA_VERSION,
};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use timing::Policy;

/// The suite's own source, hashed into the cache key: any edit to a kernel or to the protocol
/// re-measures.
const SOURCES: &[(&str, &str)] = &[
    ("mod.rs", include_str!("mod.rs")),
    ("machine.rs", include_str!("machine.rs")),
    ("timing.rs", include_str!("timing.rs")),
    ("bandwidth.rs", include_str!("bandwidth.rs")),
    ("matmul.rs", include_str!("matmul.rs")),
];

/// The baseline library as pinned in Cargo.toml (part of the key; bump with the dependency).
const LIBRARY: &str = "matrixmultiply 0.3 (threading)";

/// The family name of every CPU record.
pub const FAMILY: &str = crate::measure::CPU_FAMILY;

/// Notes to print beside the figures (how bytes are counted).
pub const NOTES: &[&str] = &[
    "copy and triad count the bytes the loop reads plus the bytes it writes (f64: copy 16 B, \
     triad 24 B per element), as STREAM does; write-allocate traffic is not counted, so the \
     memory really moves 3/2 (copy) and 4/3 (triad) of the figure",
    "both are plain loops with ordinary stores on all cores, each thread its own chunk; copy is \
     not memcpy, whose large-copy path differs from machine to machine",
    "matrix products: f32, FLOPs = 2n³, bytes = 3n²·4 (A and B read once, C written once)",
];

/// How the binary was built; numbers from a debug build are marked as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

impl Profile {
    /// The profile of this binary (`debug_assertions` on = debug).
    pub fn current() -> Profile {
        if cfg!(debug_assertions) {
            Profile::Debug
        } else {
            Profile::Release
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }
}

/// Problem sizes and the timing policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// f64 elements per bandwidth array (three arrays are allocated).
    pub stream_len: usize,
    /// n of the blocked, SIMD and library matrix products.
    pub matmul_n: usize,
    /// n of the naive matrix product (smaller: it is 10–100× slower).
    pub naive_n: usize,
    pub policy: Policy,
}

impl Config {
    /// The real suite for `machine`: arrays ≥ 4× the last-level cache and at least 256 MiB, at
    /// most 512 MiB each (1.5 GiB in all) and at most 1/8 of RAM in all; n = 1024, naive 512.
    pub fn full(machine: &Machine) -> Config {
        const MIB: u64 = 1 << 20;
        let mut bytes = (4 * machine.llc_bytes).clamp(256 * MIB, 512 * MIB);
        if machine.memory_bytes > 0 {
            bytes = bytes.min(machine.memory_bytes / 24).max(16 * MIB);
        }
        Config {
            stream_len: (bytes / bandwidth::ELEM_BYTES as u64) as usize,
            matmul_n: 1024,
            naive_n: 512,
            policy: Policy::FULL,
        }
    }

    /// A debug build: the same protocol on problems small enough for unoptimized code (still
    /// 64 MiB arrays, past most last-level caches) and 0.3 s of timed runs a variant: these
    /// numbers are marked as a debug build's and are not worth a longer wait.
    pub fn debug_build() -> Config {
        Config {
            stream_len: (64 << 20) / bandwidth::ELEM_BYTES,
            matmul_n: 256,
            naive_n: 128,
            policy: Policy {
                min_time: std::time::Duration::from_millis(300),
                ..Policy::FULL
            },
        }
    }

    /// Tests: 1 MiB arrays, n = 64 (naive too), the shortest timing policy.
    pub fn tiny() -> Config {
        Config {
            stream_len: (1 << 20) / bandwidth::ELEM_BYTES,
            matmul_n: 64,
            naive_n: 64,
            policy: Policy::QUICK,
        }
    }

    /// The config `cpu_results` uses for a build profile.
    pub fn for_profile(profile: Profile, machine: &Machine) -> Config {
        match profile {
            Profile::Release => Config::full(machine),
            Profile::Debug => Config::debug_build(),
        }
    }

    /// Stable text for the cache key.
    pub fn describe(&self) -> String {
        format!(
            "stream_len={},matmul_n={},naive_n={},{}",
            self.stream_len,
            self.matmul_n,
            self.naive_n,
            self.policy.describe()
        )
    }
}

/// sha256 over the suite's source files, hex.
pub fn source_hash() -> String {
    let mut h = Sha256::new();
    for (name, text) in SOURCES {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    hex::encode(h.finalize())
}

/// What the cache key is made of: everything that could change a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInput<'a> {
    pub source_hash: &'a str,
    pub cpu_model: &'a str,
    pub threads: usize,
    pub profile: Profile,
    /// `Config::describe()`.
    pub config: &'a str,
}

/// Hex sha256 over the key inputs, each field length-prefixed.
pub fn cache_key(k: &KeyInput) -> String {
    let mut h = Sha256::new();
    let threads = k.threads.to_string();
    for (name, value) in [
        ("source", k.source_hash),
        ("cpu", k.cpu_model),
        ("threads", threads.as_str()),
        ("profile", k.profile.name()),
        ("config", k.config),
        ("library", LIBRARY),
        ("arch", std::env::consts::ARCH),
    ] {
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The key of this suite's results for `machine` built as `profile` with `config`.
pub fn suite_key(machine: &Machine, profile: Profile, config: &Config) -> String {
    cache_key(&KeyInput {
        source_hash: &source_hash(),
        cpu_model: &machine.cpu_model,
        threads: machine.threads,
        profile,
        config: &config.describe(),
    })
}

/// `<root>/target/hdlc-cache/cpu-<slug>.json` (`-debug` before `.json` for a debug build).
pub fn cache_path(root: &Path, machine: &Machine, profile: Profile) -> PathBuf {
    let slug = crate::measure::device::slug(&machine.cpu_model);
    let suffix = match profile {
        Profile::Release => "",
        Profile::Debug => "-debug",
    };
    root.join("target")
        .join("hdlc-cache")
        .join(format!("cpu-{slug}{suffix}.json"))
}

/// The cached file at `path` if it holds a complete result set made under `key`; any other
/// state (missing, unreadable, older schema, other key, a failure that may be transient) is a
/// miss.
pub fn load_cached(path: &Path, key: &str) -> Option<ResultsFile> {
    let text = std::fs::read_to_string(path).ok()?;
    let file: ResultsFile = serde_json::from_str(&text).ok()?;
    let valid = file.schema == SCHEMA_VERSION
        && !file.records.is_empty()
        && file.records.iter().all(|r| {
            r.key == key
                && !matches!(
                    r.outcome,
                    Outcome::Failed {
                        stage: FailStage::Launch,
                        ..
                    }
                )
        });
    valid.then_some(file)
}

/// Where the results came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Read from this cache file (possibly a release-build file, read by a debug build).
    Cached(PathBuf),
    /// Measured now and written to this file.
    Measured(PathBuf),
}

/// The measuring function `cpu_results_with` calls on a cache miss (`measure` in real use).
pub type MeasureFn<'a> =
    &'a mut dyn FnMut(&Machine, Profile, &Config, &str, &Path, bool) -> Result<ResultsFile>;

/// The CPU results for this machine: cached under `<root>/target/hdlc-cache/` when the key
/// matches (unless `force`), otherwise measured (about 10 s on 2 cores) and cached.
pub fn cpu_results(root: &Path, force: bool, progress: bool) -> Result<ResultsFile> {
    let machine = Machine::detect();
    let profile = Profile::current();
    let config = Config::for_profile(profile, &machine);
    let (file, _) = cpu_results_with(root, &machine, profile, &config, force, progress, &mut measure)?;
    Ok(file)
}

/// `cpu_results` with every input explicit and the measuring function injectable (tests).
///
/// Order: unless `force`, the cache file of this profile; then, for a debug build, the release
/// file (real numbers from an optimized build of the same source on the same machine); else
/// `measure_fn`, whose result is written to this profile's cache file atomically.
pub fn cpu_results_with(
    root: &Path,
    machine: &Machine,
    profile: Profile,
    config: &Config,
    force: bool,
    progress: bool,
    measure_fn: MeasureFn,
) -> Result<(ResultsFile, Source)> {
    let path = cache_path(root, machine, profile);
    let key = suite_key(machine, profile, config);
    if !force {
        if let Some(file) = load_cached(&path, &key) {
            return Ok((file, Source::Cached(path)));
        }
        if profile == Profile::Debug {
            let release = cache_path(root, machine, Profile::Release);
            let release_key = suite_key(machine, Profile::Release, &Config::full(machine));
            if let Some(file) = load_cached(&release, &release_key) {
                return Ok((file, Source::Cached(release)));
            }
        }
    }
    let file = measure_fn(machine, profile, config, &key, root, progress)?;
    crate::measure::store::save_atomic(&path, &file)
        .with_context(|| format!("{}: cannot write the CPU results cache", path.display()))?;
    Ok((file, Source::Measured(path)))
}

/// The device description of a CPU.
pub fn device_info(machine: &Machine) -> DeviceInfo {
    DeviceInfo {
        name: machine.cpu_model.clone(),
        compute_capability: "cpu".to_string(),
        sm_count: machine.threads as u32,
        memory_bytes: machine.memory_bytes,
        driver_version: "n/a".to_string(),
        cuda_version: "n/a".to_string(),
        nvrtc_version: "n/a".to_string(),
        datasheet: None,
    }
}
