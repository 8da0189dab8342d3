//! The command layer: parse arguments, run one command, map the outcome to an exit code.
//!
//! Why thin: every command is a few calls into `site` (or `measure`), so the library can be tested
//! without a process. Nothing below depends on this module: diagnostics are printed by
//! `Diagnostics::report`, which `serve`'s rebuild loop shares, so `serve` never imports `cli`.

use crate::site::{find_root, BuildOptions, Site};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hdlc",
    version,
    about = "Builds the course book How Deep Learning Computes"
)]
struct Cli {
    /// Book root (the folder with paths.yaml); default: the current folder or the nearest parent with one.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load, validate, measure what is missing, render and write the book into book/html.
    Build {
        /// Never use the GPU, even if one is present: draw from kernels/results/.
        #[arg(long)]
        no_gpu: bool,
        /// Write the book here instead of book/html.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Skip this machine's CPU roofline (otherwise measured once and cached in target/).
        #[arg(long)]
        no_cpu_bench: bool,
        /// Never run labs (Python), even with a GPU and the frameworks present.
        #[arg(long)]
        no_labs: bool,
    },
    /// Load and validate only: every problem with file:line and a hint.
    Check,
    /// Build, serve the book on localhost and rebuild with live reload when sources change.
    Serve {
        #[arg(long, default_value_t = 3000)]
        port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
    },
    /// The concept graph: counts, or DOT with --dot, or the subway map's measures with --map-stats.
    Graph {
        #[arg(long)]
        dot: bool,
        /// Lay the subway map out and print its measures (overlaps, crossings, bends, size).
        #[arg(long, conflicts_with = "dot")]
        map_stats: bool,
    },
    /// What a ```figure block may ask for: benchmark families, views and keys.
    Figspec,
    /// Collectives through NCCL from Rust on every visible GPU, printed as lab records (the
    /// `dist_collectives_rust` lab runs this; see kernels/labs/distributed/nccl_rust.py).
    #[command(hide = true)]
    NcclBench {
        /// Small sizes only (a smoke test).
        #[arg(long)]
        quick: bool,
    },
    /// Evaluate a measured value or claim (the text between `{{` and `}}`) on every results file:
    /// `hdlc eval 'tp_gemm/cublas where proj=1, tp=8 by tflops'` or `hdlc eval 'claim a > b …'`.
    Eval {
        /// The value or claim, as written between the braces.
        expr: String,
    },
    /// Run the GPU benchmarks and labs and update kernels/results/.
    Bench {
        /// Kernel families to run (comma-separated); default: all (none when only --labs is given).
        #[arg(long, value_delimiter = ',')]
        families: Vec<String>,
        /// Labs to run, by id or family (comma-separated), or `all`; default: all labs when no
        /// --families are given.
        #[arg(long, value_delimiter = ',')]
        labs: Vec<String>,
        /// Run no labs.
        #[arg(long, conflicts_with = "labs")]
        no_labs: bool,
        /// List the kernel families and labs, then exit.
        #[arg(long)]
        list: bool,
        /// Re-measure even when results for the same cache key exist.
        #[arg(long)]
        force: bool,
        /// Fail when any variant fails to compile or verify.
        #[arg(long)]
        strict: bool,
    },
}

/// Entry point used by `main`.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let root = match cli
        .root
        .clone()
        .or_else(|| std::env::current_dir().ok().and_then(|d| find_root(&d)))
    {
        Some(r) => r,
        None => {
            eprintln!(
                "error: no paths.yaml in this folder or any parent; run from the book's root or pass --root"
            );
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Check => check(&root),
        Command::NcclBench { quick } => nccl_bench(quick),
        Command::Figspec => {
            print!(
                "{}",
                crate::figspec::describe(&crate::render::figures::known(&[]))
            );
            ExitCode::SUCCESS
        }
        Command::Eval { expr } => {
            match crate::measure::store::load_dir(&crate::measure::results_dir(&root)) {
                Ok(files) => match crate::prose::explain(&expr, &crate::records::display_order(&files, None))
                {
                    Ok(text) => {
                        print!("{text}");
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        ExitCode::FAILURE
                    }
                },
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Build {
            no_gpu,
            out,
            no_cpu_bench,
            no_labs,
        } => build(
            &root,
            BuildOptions {
                use_gpu: !no_gpu,
                out_dir: out,
                cpu_bench: !no_cpu_bench,
                labs: !no_labs,
                ..BuildOptions::default()
            },
        ),
        Command::Serve { port, host } => crate::serve::serve(&root, &host, port),
        Command::Graph {
            dot: _,
            map_stats: true,
        } => map_stats(&root),
        Command::Graph {
            dot,
            map_stats: false,
        } => graph(&root, dot),
        Command::Bench { list: true, .. } => list_benches(&root),
        Command::Bench {
            families,
            labs,
            no_labs,
            force,
            strict,
            list: false,
        } => {
            let labs = if no_labs {
                crate::measure::LabSelection::None
            } else if labs.iter().any(|l| l == "all") {
                crate::measure::LabSelection::All
            } else if !labs.is_empty() {
                crate::measure::LabSelection::Only(labs)
            } else if families.is_empty() {
                crate::measure::LabSelection::All
            } else {
                crate::measure::LabSelection::None
            };
            bench(&root, families, labs, force, strict)
        }
    }
}

fn check(root: &std::path::Path) -> ExitCode {
    let site = Site::load(root);
    if site.diags.report() {
        return ExitCode::FAILURE;
    }
    println!(
        "ok: {} cards, {} paths ({})",
        site.book.cards.len(),
        site.book.paths.len(),
        site.timing_line()
    );
    ExitCode::SUCCESS
}

fn build(root: &std::path::Path, opts: BuildOptions) -> ExitCode {
    let mut site = Site::load(root);
    if site.diags.report() {
        eprintln!("build stopped: fix the errors above (the previous book was left in place)");
        return ExitCode::FAILURE;
    }
    match site.build(&opts) {
        Ok(rep) => {
            for n in &rep.notes {
                println!("{n}");
            }
            println!(
                "built {} pages into {} ({})",
                rep.pages,
                rep.out_dir.display(),
                site.timing_line()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            site.diags.report();
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn graph(root: &std::path::Path, dot: bool) -> ExitCode {
    let site = Site::load(root);
    if site.diags.report() {
        return ExitCode::FAILURE;
    }
    let g = &site.graph.graph;
    if dot {
        println!("digraph cards {{\n  rankdir=LR;");
        for n in g.node_indices() {
            let id = &g[n];
            let title = site
                .book
                .card(id)
                .map(|c| c.title.replace('"', "'"))
                .unwrap_or_default();
            println!("  \"{id}\" [label=\"{title}\"];");
        }
        for e in g.edge_indices() {
            let (a, b) = g.edge_endpoints(e).expect("edge has endpoints");
            println!("  \"{}\" -> \"{}\";", g[a], g[b]);
        }
        for p in &site.book.paths {
            for w in p.stations.windows(2) {
                println!(
                    "  \"{}\" -> \"{}\" [color=\"{}\", style=dashed, constraint=false];",
                    w[0], w[1], p.color
                );
            }
        }
        println!("}}");
    } else {
        let on_paths = site.book.paths.iter().filter(|p| !p.stations.is_empty()).count();
        let interchanges = site
            .book
            .cards
            .iter()
            .filter(|c| crate::graph::stops(&site.book, &c.id).len() > 1)
            .count();
        println!("cards: {}", g.node_count());
        println!("requires edges: {}", g.edge_count());
        println!(
            "paths: {} ({} with stations, {} planned)",
            site.book.paths.len(),
            on_paths,
            site.book.paths.iter().filter(|p| p.planned).count()
        );
        println!("interchange stations: {interchanges}");
        println!(
            "roots (no prerequisites): {}",
            g.node_indices()
                .filter(|&n| g.neighbors_directed(n, petgraph::Direction::Incoming).count() == 0)
                .count()
        );
    }
    ExitCode::SUCCESS
}

fn map_stats(root: &std::path::Path) -> ExitCode {
    let site = Site::load(root);
    if site.diags.report() {
        return ExitCode::FAILURE;
    }
    let t = std::time::Instant::now();
    let layout = crate::render::map::layout(&site.book, &site.graph);
    let stats = layout.stats();
    println!("{stats}");
    println!(
        "layout: {} round(s), {:.0} ms",
        layout.rounds,
        t.elapsed().as_secs_f64() * 1000.0
    );
    if stats.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `bench --list`: the kernel families and the labs with their summaries and requirements.
fn list_benches(root: &std::path::Path) -> ExitCode {
    println!("kernel families (CUDA, measured by the Rust harness):");
    for f in crate::measure::families() {
        println!("  {f}");
    }
    let mut diags = crate::diag::Diagnostics::new();
    let labs = crate::measure::labs::load_manifests(root, &crate::measure::families(), &mut diags);
    println!("\nlabs (Python; run one by hand with `python3 kernels/<file>`):");
    for l in &labs {
        println!(
            "  {:<24} family {:<22} needs {:<22} kernels/{}\n      {}",
            l.id,
            l.family,
            l.requires.join(","),
            l.source_file,
            l.summary
        );
        if !l.world.is_empty() {
            println!(
                "      world {:?} (torchrun, one process per GPU; gloo CPU processes without a GPU: {:?})",
                l.world, l.cpu_world
            );
        }
    }
    for d in diags.sorted() {
        eprintln!("{d}");
    }
    if diags.error_count() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn bench(
    root: &std::path::Path,
    families: Vec<String>,
    labs: crate::measure::LabSelection,
    force: bool,
    strict: bool,
) -> ExitCode {
    let started = std::time::Instant::now();
    let opts = crate::measure::MeasureOptions {
        root: root.to_path_buf(),
        families: families.clone(),
        force,
        strict,
        progress: true,
        use_gpu: true,
        labs,
    };
    match crate::measure::measure(&opts) {
        Ok(m) => {
            for n in &m.notes {
                println!("{n}");
            }
            let Some(device) = m.local_device.clone() else {
                eprintln!("error: no GPU found; nothing was measured");
                return ExitCode::FAILURE;
            };
            if let Some((path, file)) = m.files.iter().find(|(_, f)| f.device.name == device) {
                println!("\n# {device} — {}", path.display());
                print!("{}", crate::measure::report::summary(file, &families));
            }
            println!("\nsuite wall time: {:.1} s", started.elapsed().as_secs_f64());
            if m.interrupted {
                // The shell's convention for a command stopped by SIGINT.
                return ExitCode::from(130);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `nccl-bench`: records on stdout, errors on stderr; the seed is the lab runner's.
fn nccl_bench(quick: bool) -> ExitCode {
    let seed = std::env::var("HDLC_LAB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1234);
    match crate::measure::collectives::bench(quick, seed, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nccl-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}
