//! The CUDA sources compiled into the binary: each family lists its own `.cu` files (see
//! `families`, which also finds a file by path), and the headers they share live in
//! `kernels/common/`.
//!
//! Why the path is not part of a cache key: a record's key hashes the *text* of its kernel file
//! and of every header it includes, never the file's place under `kernels/`, so moving a file
//! (as the folders by area did) re-measures nothing, while editing a shared header re-measures
//! every kernel built from it. Headers are included by bare name (`#include "hopper_sync.cuh"`):
//! NVRTC has no file system to search, so each program is handed the headers by that name.

use sha2::{Digest, Sha256};

/// sha256 of a source text, hex.
pub fn source_hash(source: &str) -> String {
    hex::encode(Sha256::digest(source.as_bytes()))
}

/// One embedded kernel source file.
#[derive(Debug, Clone, Copy)]
pub struct KernelFile {
    /// Path under `kernels/`, e.g. "gemm/sgemm.cu": what records, logs and `include` blocks name.
    pub path: &'static str,
    pub text: &'static str,
    /// Compiled for the architecture-specific target (sm_90a on Hopper), because its kernels use
    /// instructions that exist only there (wgmma, setmaxnreg). They guard that code with
    /// `__CUDA_ARCH_FEAT_SM90_ALL`, so they still compile (and fail verification) elsewhere.
    pub arch_specific: bool,
}

/// A kernel file under `kernels/`, embedded at build time: `kernel_file!("gemm/sgemm.cu")`, or
/// `kernel_file!("gemm/tc_gemm.cu", arch_specific)`.
macro_rules! kernel_file {
    ($path:literal) => {
        $crate::measure::kernels::KernelFile {
            path: $path,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/", $path)),
            arch_specific: false,
        }
    };
    ($path:literal, arch_specific) => {
        $crate::measure::kernels::KernelFile {
            arch_specific: true,
            ..kernel_file!($path)
        }
    };
}
pub(crate) use kernel_file;

/// Headers the kernel files may `#include "name"`, from `kernels/common/`.
const HEADERS: &[KernelFile] = &[
    kernel_file!("common/hopper_sync.cuh"),
    kernel_file!("common/attention_common.cuh"),
    kernel_file!("common/persistent_gemm.cuh"),
    kernel_file!("common/cluster_sync.cuh"),
    kernel_file!("common/wgmma_gemm.cuh"),
    kernel_file!("common/lowp_wgmma.cuh"),
];

/// The name a header is included by: its file name.
fn header_name(h: &KernelFile) -> &'static str {
    h.path.rsplit('/').next().unwrap_or(h.path)
}

/// The embedded headers as (name as included, source).
pub fn kernel_headers() -> Vec<(&'static str, &'static str)> {
    HEADERS.iter().map(|h| (header_name(h), h.text)).collect()
}

/// The headers `source` includes (`#include "name"` lines naming an embedded header).
pub fn included_headers(source: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    HEADERS
        .iter()
        .map(|h| (header_name(h), h.text))
        .filter(move |(name, _)| {
            source
                .lines()
                .any(|l| l.trim_start().starts_with("#include") && l.contains(&format!("\"{name}\"")))
        })
}

/// A kernel file's text followed by every header it includes: what its source hash covers, so
/// editing a shared header re-measures every kernel built from it.
pub fn with_headers(src: &str) -> String {
    let mut text = src.to_string();
    for (name, header) in included_headers(src) {
        text.push_str(&format!("\n// header {name}\n{header}"));
    }
    text
}
