//! What the CPU suite needs to know about the machine it runs on: the CPU's name, how many
//! logical cores it may use, total RAM and the size of the last-level cache (to size the
//! bandwidth arrays well past it). Linux reads /proc and /sys; macOS asks `sysctl`; anything
//! missing becomes "unknown" or 0 rather than an error, since the numbers still stand.

use std::path::Path;

/// The machine the suite measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// e.g. "AMD EPYC 9654 96-Core Processor" (the "model name" of /proc/cpuinfo).
    pub cpu_model: String,
    /// Logical cores the suite uses (`std::thread::available_parallelism`).
    pub threads: usize,
    /// Total RAM in bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Total last-level cache in bytes over all its instances (0 when unknown).
    pub llc_bytes: u64,
}

impl Machine {
    /// Detect this machine.
    pub fn detect() -> Machine {
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| parse_cpuinfo_model(&t))
            .or_else(|| sysctl("machdep.cpu.brand_string"))
            .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH));
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| parse_meminfo_total(&t))
            .or_else(|| sysctl("hw.memsize").and_then(|s| s.parse().ok()))
            .unwrap_or(0);
        let llc_bytes = linux_llc_bytes(Path::new("/sys/devices/system/cpu"))
            .or_else(|| {
                sysctl("hw.perflevel0.l2cachesize")
                    .or_else(|| sysctl("hw.l3cachesize"))
                    .and_then(|s| s.parse().ok())
            })
            .unwrap_or(0);
        Machine {
            cpu_model,
            threads,
            memory_bytes,
            llc_bytes,
        }
    }
}

/// The first "model name" line of /proc/cpuinfo (x86, most ARM servers), whitespace collapsed.
pub fn parse_cpuinfo_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
        (k.trim() == "model name" && !v.is_empty()).then_some(v)
    })
}

/// MemTotal of /proc/meminfo in bytes.
pub fn parse_meminfo_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix("MemTotal:")?;
        let mut it = rest.split_whitespace();
        let kb: u64 = it.next()?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// Parse a sysfs cache size such as "32768K" or "1M".
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// Sum of the highest-level data/unified cache over its distinct instances (an instance is
/// identified by the set of CPUs sharing it), from `/sys/devices/system/cpu`.
fn linux_llc_bytes(cpu_dir: &Path) -> Option<u64> {
    let mut best_level = 0u32;
    let mut instances: Vec<(String, u64)> = Vec::new();
    for cpu in std::fs::read_dir(cpu_dir).ok()?.flatten() {
        let name = cpu.file_name().to_string_lossy().to_string();
        if !name.starts_with("cpu") || !name[3..].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(indices) = std::fs::read_dir(cpu.path().join("cache")) else {
            continue;
        };
        for idx in indices.flatten() {
            let read = |f: &str| std::fs::read_to_string(idx.path().join(f)).ok();
            let (Some(level), Some(kind), Some(size), Some(shared)) = (
                read("level").and_then(|l| l.trim().parse::<u32>().ok()),
                read("type"),
                read("size").and_then(|s| parse_cache_size(&s)),
                read("shared_cpu_list"),
            ) else {
                continue;
            };
            if kind.trim() == "Instruction" || level < best_level {
                continue;
            }
            if level > best_level {
                best_level = level;
                instances.clear();
            }
            let shared = shared.trim().to_string();
            if !instances.iter().any(|(s, _)| *s == shared) {
                instances.push((shared, size));
            }
        }
    }
    let total: u64 = instances.iter().map(|(_, s)| s).sum();
    (total > 0).then_some(total)
}

fn sysctl(name: &str) -> Option<String> {
    if !cfg!(target_os = "macos") {
        return None;
    }
    let out = std::process::Command::new("sysctl")
        .args(["-n", name])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}
