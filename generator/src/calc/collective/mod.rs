//! `calc: collective` — the α–β cost of a collective: how many bytes each GPU sends, and how
//! long that takes on a stated link, as a function of the message size.
//!
//! Why a model and not a measurement: the multi-GPU machines that would measure NCCL are not
//! available yet, and the model is what one reasons with anyway (the measured points will be
//! drawn beside it later). T = steps·α + (bytes each GPU sends)/β, with
//! (Thakur, Rabenseifner & Gropp 2005; NCCL's performance notes for the bus-bandwidth factors):
//! - ring all-reduce: 2(n−1) steps, 2(n−1)/n·M bytes per GPU;
//! - ring all-gather, reduce-scatter (M = the full gathered buffer): n−1 steps, (n−1)/n·M;
//! - all-to-all (pairwise exchange, M = each GPU's buffer): n−1 steps, (n−1)/n·M;
//! - tree all-reduce (reduce up a binary tree, broadcast down, pipelined in chunks):
//!   2·⌈log2 n⌉ steps, about 2·M per GPU.
//!
//! β is the link's per-direction bandwidth per GPU from the vendor's datasheet and α is an input
//! (an assumed latency per step), so the caption marks both.

mod render;

use super::kv::{Fields, KeyDoc, ParseError};

pub(super) use render::render;

const KIND: &str = "collective";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Ring,
    Tree,
}

/// Links with their datasheet per-direction bandwidth per GPU (bytes/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub name: &'static str,
    pub label: &'static str,
    pub bytes_per_s: f64,
    pub source: &'static str,
}

pub const LINKS: &[Link] = &[
    Link {
        name: "nvlink4",
        label: "NVLink 4 / NVSwitch (H100 SXM)",
        bytes_per_s: 450e9,
        source: "NVIDIA H100 datasheet: 900 GB/s NVLink per GPU, both directions → 450 GB/s each way",
    },
    Link {
        name: "ib-ndr",
        label: "InfiniBand NDR 400 Gb/s, one NIC per GPU",
        bytes_per_s: 50e9,
        source: "NVIDIA ConnectX-7 / Quantum-2 NDR datasheet: 400 Gb/s per port = 50 GB/s each way",
    },
    Link {
        name: "pcie5",
        label: "PCIe 5.0 x16",
        bytes_per_s: 64e9,
        source: "PCI-SIG PCIe 5.0: 32 GT/s × 16 lanes ≈ 64 GB/s each way (before protocol overhead)",
    },
];

#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveSpec {
    pub op: Op,
    pub gpus: u64,
    pub link: Link,
    pub alpha_us: f64,
    /// The message size the table is computed at, bytes.
    pub bytes: u64,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "op",
        doc: "all-reduce, all-gather, reduce-scatter or all-to-all",
    },
    KeyDoc {
        key: "gpus",
        doc: "GPUs in the group, 2 or more",
    },
    KeyDoc {
        key: "link",
        doc: "nvlink4, ib-ndr or pcie5 (datasheet bandwidths)",
    },
    KeyDoc {
        key: "alpha_us",
        doc: "assumed latency per step in µs, e.g. 5",
    },
    KeyDoc {
        key: "bytes",
        doc: "message size in bytes for the table (M)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

impl Op {
    pub fn label(self) -> &'static str {
        match self {
            Op::AllReduce => "all-reduce",
            Op::AllGather => "all-gather",
            Op::ReduceScatter => "reduce-scatter",
            Op::AllToAll => "all-to-all",
        }
    }
    /// Algorithms the model covers for this op.
    pub fn algos(self) -> &'static [Algo] {
        match self {
            Op::AllReduce => &[Algo::Ring, Algo::Tree],
            _ => &[Algo::Ring],
        }
    }
}

/// (steps, bytes each GPU sends) for `m` bytes on `n` GPUs.
pub fn volume(op: Op, algo: Algo, n: u64, m: f64) -> (u64, f64) {
    let nf = n as f64;
    match (op, algo) {
        (Op::AllReduce, Algo::Ring) => (2 * (n - 1), 2.0 * (nf - 1.0) / nf * m),
        (Op::AllReduce, Algo::Tree) => (2 * u64::from(n.next_power_of_two().trailing_zeros()), 2.0 * m),
        (_, _) => (n - 1, (nf - 1.0) / nf * m),
    }
}

/// α–β time in seconds.
pub fn time(op: Op, algo: Algo, n: u64, m: f64, alpha_s: f64, beta: f64) -> f64 {
    let (steps, v) = volume(op, algo, n, m);
    steps as f64 * alpha_s + v / beta
}

pub(super) fn parse(f: &Fields) -> Result<CollectiveSpec, ParseError> {
    f.only(KIND, KEYS)?;
    let need = |key: &str| -> Result<(String, usize), ParseError> {
        f.scalar(KIND, key, KEYS)?.ok_or_else(|| {
            (
                f.calc_line,
                format!("`calc: {KIND}`: missing key `{key}`"),
                super::kv::hint(KIND, KEYS),
            )
        })
    };
    let (op_s, line) = need("op")?;
    let op = match op_s.as_str() {
        "all-reduce" => Op::AllReduce,
        "all-gather" => Op::AllGather,
        "reduce-scatter" => Op::ReduceScatter,
        "all-to-all" => Op::AllToAll,
        _ => {
            return Err((
                line,
                format!("`calc: {KIND}`: unknown op `{op_s}`"),
                "op is one of: all-reduce, all-gather, reduce-scatter, all-to-all".into(),
            ))
        }
    };
    let gpus = f.positive(KIND, "gpus", 1 << 20, KEYS)?;
    if gpus < 2 {
        let line = need("gpus")?.1;
        return Err((
            line,
            format!("`calc: {KIND}`: a collective needs at least 2 GPUs"),
            "gpus: 2 or more".into(),
        ));
    }
    let (link_s, line) = need("link")?;
    let link = *LINKS.iter().find(|l| l.name == link_s).ok_or_else(|| {
        (
            line,
            format!("`calc: {KIND}`: unknown link `{link_s}`"),
            "link is one of: nvlink4, ib-ndr, pcie5".into(),
        )
    })?;
    let (a_s, line) = need("alpha_us")?;
    let alpha_us: f64 = match a_s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e6).contains(&v) => v,
        _ => {
            return Err((
                line,
                format!("`calc: {KIND}`: `alpha_us: {a_s}` is not a latency in µs"),
                "alpha_us is a number ≥ 0, e.g. `alpha_us: 5`".into(),
            ))
        }
    };
    let bytes = f.positive(KIND, "bytes", 1 << 40, KEYS)?;
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(CollectiveSpec {
        op,
        gpus,
        link,
        alpha_us,
        bytes,
        caption,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_all_reduce_by_hand() {
        // 8 GPUs, 1 GB, 450 GB/s, α 5 µs: 14 steps, 2·7/8 GB = 1.75 GB; 70 µs + 3.888… ms.
        let (steps, v) = volume(Op::AllReduce, Algo::Ring, 8, 1e9);
        assert_eq!((steps, v), (14, 1.75e9));
        let t = time(Op::AllReduce, Algo::Ring, 8, 1e9, 5e-6, 450e9);
        assert!((t - (70e-6 + 1.75e9 / 450e9)).abs() < 1e-12);
    }

    #[test]
    fn gather_scatter_and_tree() {
        assert_eq!(volume(Op::AllGather, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::ReduceScatter, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::AllToAll, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::AllReduce, Algo::Tree, 8, 1e6), (6, 2e6));
        assert_eq!(volume(Op::AllReduce, Algo::Tree, 5, 1e6).0, 6);
        // all-reduce = reduce-scatter + all-gather in volume.
        let ar = volume(Op::AllReduce, Algo::Ring, 16, 1e6).1;
        let rs = volume(Op::ReduceScatter, Algo::Ring, 16, 1e6).1;
        assert!((ar - 2.0 * rs).abs() < 1e-6);
    }

    #[test]
    fn errors_name_the_line() {
        let e = crate::calc::parse(
            "calc: collective\nop: all-reduce\ngpus: 8\nlink: nvlink5\nalpha_us: 5\nbytes: 1000\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 4);
        let e = crate::calc::parse("calc: collective\nop: broadcast\n").unwrap_err();
        assert_eq!(e.0, 2);
        let e = crate::calc::parse(
            "calc: collective\nop: all-reduce\ngpus: 8\nlink: nvlink4\nalpha_us: x\nbytes: 1000\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 5);
    }
}
