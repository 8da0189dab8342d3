//! GPU counts: the world sizes a lab declares, which of them this machine can run, how each is
//! launched, and what connects the machine's GPUs.
//!
//! Why the runner decides rather than the lab: a 2-GPU result measured on a 2-GPU machine must
//! survive a later `bench` on a 1-GPU machine. Only the runner sees both the shipped records and
//! the machine, so it plans one run per world size the machine has GPUs for, keeps the records of
//! the others as they were (shipped, with their own provenance), and never turns "this machine
//! has too few GPUs" into a failed record.
//!
//! The convention (kernels/labs/README.md): a lab with `world:` is started through torchrun,
//! `python3 -m torch.distributed.run --standalone --nproc-per-node=W lab.py`, one process per GPU
//! (NCCL) or, where no GPU is visible and the manifest lists the size under `cpu_world:`, per CPU
//! process (gloo). Rank 0 prints the records; the runner adds `params.world = W` to each.
//! A lab with `launch: devices` (JAX: one process drives every device it sees) is started as
//! one plain process that sees W devices: the first W GPUs (`CUDA_VISIBLE_DEVICES`), or W
//! simulated CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count=W`).

use super::probe::Env;
use std::path::Path;
use std::time::Duration;

/// Largest world size a manifest may name (8 GPUs a host today; room for a few hosts).
pub const MAX_WORLD: u32 = 64;

/// The process-group backend of one world run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One process per GPU.
    Nccl,
    /// One CPU process per rank (a check that runs anywhere; its times are not GPU times).
    Gloo,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nccl => "nccl",
            Backend::Gloo => "gloo",
        }
    }
}

/// How a world run is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Launch {
    /// torchrun, one process per rank (PyTorch's process groups).
    #[default]
    Torchrun,
    /// One process that sees W devices and uses them all (JAX's single-controller mesh).
    Devices,
}

impl Launch {
    /// The manifest's `launch:` value; None for a word that names no launch.
    pub fn parse(word: &str) -> Option<Launch> {
        match word {
            "torchrun" => Some(Launch::Torchrun),
            "devices" => Some(Launch::Devices),
            _ => None,
        }
    }
}

/// One world size of a lab, as planned on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub size: u32,
    pub backend: Backend,
    /// GPUs the machine shows (0 for gloo CPU processes).
    pub gpus: u32,
    /// What connects the GPUs (`nvidia-smi topo -m`, e.g. "NV18"), when known.
    pub interconnect: Option<String>,
}

/// The arguments after the interpreter: torchrun with one process per rank, then the lab; or
/// the lab alone.
pub fn launch_args(world: &World, launch: Launch, lab_path: &Path) -> Vec<String> {
    let lab = lab_path.to_string_lossy().into_owned();
    match launch {
        Launch::Torchrun => vec![
            "-m".into(),
            "torch.distributed.run".into(),
            "--standalone".into(),
            format!("--nproc-per-node={}", world.size),
            lab,
        ],
        Launch::Devices => vec![lab],
    }
}

/// Environment a world run adds to the lab's: its size and backend, for the lab to read, and for
/// `launch: devices` the W devices the process may see. `visible` is the machine's own
/// `CUDA_VISIBLE_DEVICES`, if set: the run takes the first W of those.
pub fn env(world: &World, launch: Launch, visible: Option<&str>) -> Vec<(String, String)> {
    let mut env = vec![
        ("HDLC_LAB_WORLD".into(), world.size.to_string()),
        ("HDLC_LAB_BACKEND".into(), world.backend.name().into()),
    ];
    if launch == Launch::Devices {
        let n = world.size as usize;
        match world.backend {
            Backend::Nccl => {
                let ids: Vec<String> = match visible.filter(|v| !v.trim().is_empty()) {
                    Some(v) => v.split(',').map(|s| s.trim().to_string()).take(n).collect(),
                    None => (0..n).map(|i| i.to_string()).collect(),
                };
                env.push(("CUDA_VISIBLE_DEVICES".into(), ids.join(",")));
            }
            Backend::Gloo => {
                env.push(("JAX_PLATFORMS".into(), "cpu".into()));
                env.push((
                    "XLA_FLAGS".into(),
                    format!("--xla_force_host_platform_device_count={n}"),
                ));
            }
        }
    }
    env
}

/// Which of a lab's world sizes (`world`, `cpu_world` of its manifest entry) run here, and
/// which do not with why. A lab without `world:` has neither (it runs once, as a plain process).
/// Takes the lists rather than the lab so that the manifest, which calls [`check`], need not be
/// imported here.
pub fn split(world: &[u32], cpu_world: &[u32], env: &Env) -> (Vec<World>, Vec<(u32, String)>) {
    let (mut run, mut skip) = (Vec::new(), Vec::new());
    for &size in world {
        if env.gpu.is_some() {
            if size <= env.gpus {
                run.push(World {
                    size,
                    backend: Backend::Nccl,
                    gpus: env.gpus,
                    interconnect: env.interconnect.clone(),
                });
            } else {
                skip.push((size, format!("needs {size} GPU(s), {} visible", env.gpus)));
            }
        } else if cpu_world.contains(&size) {
            run.push(World {
                size,
                backend: Backend::Gloo,
                gpus: 0,
                interconnect: None,
            });
        } else {
            skip.push((size, format!("needs {size} GPU(s), none visible")));
        }
    }
    (run, skip)
}

/// Check `world:`, `cpu_world:` and `launch:` of a manifest entry; `report(key, message, hint)`
/// per problem.
pub(super) fn check(
    world: Option<&[u32]>,
    cpu_world: Option<&[u32]>,
    launch: Option<&str>,
    requires: &[String],
    report: &mut dyn FnMut(&str, String, &str),
) -> bool {
    let mut ok = check_launch(world.is_some(), launch, report);
    // (An unknown launch is reported once, above, not again as a torchrun without torch.)
    let torchrun = match launch {
        None => true,
        Some(word) => Launch::parse(word) == Some(Launch::Torchrun),
    };
    let sizes_ok = |key: &str, v: &[u32], report: &mut dyn FnMut(&str, String, &str)| {
        let increasing = v.windows(2).all(|w| w[0] < w[1]);
        if v.is_empty() || !increasing || v.iter().any(|w| !(1..=MAX_WORLD).contains(w)) {
            report(
                key,
                format!("`{key}: {v:?}` is not a list of GPU counts"),
                &format!("increasing numbers from 1 to {MAX_WORLD}, e.g. `{key}: [1, 2, 4, 8]`"),
            );
            return false;
        }
        true
    };
    if let Some(w) = world {
        ok &= sizes_ok("world", w, report);
        if torchrun && !requires.iter().any(|r| r == "torch") {
            report(
                "world",
                "a lab with `world` is started through torchrun, so it requires torch".into(),
                "add `torch` to `requires`",
            );
            ok = false;
        }
    }
    if let Some(c) = cpu_world {
        ok &= sizes_ok("cpu_world", c, report);
        let declared = world.unwrap_or(&[]);
        if let Some(extra) = c.iter().find(|s| !declared.contains(s)) {
            report(
                "cpu_world",
                format!("cpu_world size {extra} is not one of the lab's `world` sizes"),
                "cpu_world names which of the `world` sizes may run on gloo CPU processes",
            );
            ok = false;
        }
        if requires.iter().any(|r| r == "gpu") {
            report(
                "cpu_world",
                "a lab that requires `gpu` cannot run on CPU processes".into(),
                "drop `gpu` from `requires` or drop `cpu_world`",
            );
            ok = false;
        }
    }
    ok
}

/// `launch:` names a launch, and only beside `world:`.
fn check_launch(has_world: bool, launch: Option<&str>, report: &mut dyn FnMut(&str, String, &str)) -> bool {
    let Some(word) = launch else { return true };
    if Launch::parse(word).is_none() {
        report(
            "launch",
            format!("`launch: {word}` is not a way to start a lab"),
            "`torchrun` (one process per rank, the default) or `devices` (one process that sees W devices)",
        );
        return false;
    }
    if !has_world {
        report(
            "launch",
            "`launch` says how each world size is started, but the lab has no `world`".into(),
            "add `world: [2, 4, 8]` or drop `launch`",
        );
        return false;
    }
    true
}

/// The short name of what connects the GPUs, from the text of `nvidia-smi topo -m`: the link
/// between every pair of GPUs ("NV18", "PIX", "SYS"), several joined with "/" in order of first
/// appearance when the pairs differ. None for one GPU or text that is not such a matrix.
pub fn parse_topo(text: &str) -> Option<String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next()?;
    let gpus = header
        .split_whitespace()
        .take_while(|t| t.starts_with("GPU") && t[3..].chars().all(|c| c.is_ascii_digit()))
        .count();
    let mut links: Vec<String> = Vec::new();
    for row in lines {
        let mut cells = row.split_whitespace();
        let Some(name) = cells.next() else { continue };
        if !(name.starts_with("GPU") && name.len() > 3 && name[3..].chars().all(|c| c.is_ascii_digit())) {
            continue;
        }
        for cell in cells.take(gpus) {
            if cell != "X" && !links.iter().any(|l| l == cell) {
                links.push(cell.to_string());
            }
        }
    }
    (!links.is_empty()).then(|| links.join("/"))
}

/// Run `nvidia-smi topo -m` (bounded in time) and parse it; None without nvidia-smi.
pub fn read_interconnect(root: &Path) -> Option<String> {
    let run = super::child::run(
        "nvidia-smi",
        &["topo", "-m"],
        root,
        &[],
        Duration::from_secs(30),
        crate::measure::interrupt::flag(),
        &mut |_| {},
    );
    match run.exit {
        super::child::Exit::Code(Some(0)) => parse_topo(&run.stdout),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topo_matrices_become_short_names() {
        let two = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n\
                   GPU0\t X \tNV18\t0-63\t0\t\tN/A\n\
                   GPU1\tNV18\t X \t0-63\t0\t\tN/A\n\n\
                   Legend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe\n";
        assert_eq!(parse_topo(two).as_deref(), Some("NV18"));
        let nics = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\n\
                    GPU0\t X \tPIX\tSYS\t0-15\n\
                    GPU1\tPIX\t X \tSYS\t0-15\n\
                    NIC0\tSYS\tSYS\t X \n";
        assert_eq!(
            parse_topo(nics).as_deref(),
            Some("PIX"),
            "NIC columns are not GPU links"
        );
        let mixed = "\tGPU0\tGPU1\tGPU2\n GPU0 X NV4 SYS\nGPU1 NV4 X SYS\nGPU2 SYS SYS X\n";
        assert_eq!(parse_topo(mixed).as_deref(), Some("NV4/SYS"));
        let one = "\tGPU0\tCPU Affinity\nGPU0\t X \t0-15\n";
        assert_eq!(parse_topo(one), None);
        assert_eq!(parse_topo("NVIDIA-SMI has failed"), None);
        assert_eq!(parse_topo(""), None);
    }
}
