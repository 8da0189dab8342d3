//! One measuring run on one GPU, step by step: plan what the cache lacks, run the kernels and
//! then the labs, merge their records into the device's results file, save it.
//!
//! Why a type: the steps share a handful of values (the device, its results file, the items to
//! run, the provenance every record gets, the input seed), and `measure` reads better as the
//! list of steps than as one long function threading them through.

use super::cache::{self, item_key, select_todo};
use super::gpu::Gpu;
use super::labs::{self, Planned};
use super::plan::Item;
use super::results::{DeviceInfo, Provenance, ResultsFile, SCHEMA_VERSION};
use super::{device, families, results_dir, run, store, MeasureOptions};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::time::Instant;

/// The state of one run.
pub(super) struct Session<'g> {
    gpu: &'g Gpu,
    /// The device's results file and where it is saved.
    pub(super) file: ResultsFile,
    path: PathBuf,
    selected: Vec<&'static str>,
    /// Kernel items to measure: (item, cache key, source hash).
    todo: Vec<(Item, String, String)>,
    labs: Vec<Planned>,
    /// Items and labs served from the cache.
    cached: usize,
    provenance: Provenance,
    seed: u64,
}

impl<'g> Session<'g> {
    /// Plan a run: the device's file (or a new one), the kernel items and labs whose cache key
    /// has no reusable record (all of them with `force`).
    pub(super) fn plan(
        opts: &MeasureOptions,
        gpu: &'g Gpu,
        files: &[(PathBuf, ResultsFile)],
        selected: Vec<&'static str>,
        notes: &mut Vec<String>,
    ) -> Result<Session<'g>> {
        let device = gpu.info().clone();
        let path = results_dir(&opts.root).join(format!("{}.json", device::slug(&device.name)));
        let mut file = files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| ResultsFile {
                schema: SCHEMA_VERSION,
                device: device.clone(),
                records: Vec::new(),
            });
        file.device = device.clone();
        let (todo, cached) = kernel_todo(gpu, &selected, &file, &device, opts.force);
        let (labs, labs_cached) = labs::planned_for(opts, &device, &file, notes);
        Ok(Session {
            gpu,
            file,
            path,
            selected,
            todo,
            labs,
            cached: cached + labs_cached,
            provenance: Provenance {
                generator_version: env!("CARGO_PKG_VERSION").to_string(),
                git_commit: super::git_commit(&opts.root),
                date: super::now_rfc3339(),
                frameworks: Default::default(),
            },
            seed: base_seed(),
        })
    }

    /// Measure what was planned and save the device's file; a note says what happened.
    pub(super) fn run(&mut self, opts: &MeasureOptions, notes: &mut Vec<String>) -> Result<()> {
        if self.todo.is_empty() && self.labs.is_empty() {
            notes.push(format!(
                "all {} item(s) cached for {}; nothing to measure",
                self.cached, self.file.device.name
            ));
            return Ok(());
        }
        notes.push(self.announce());
        let started = Instant::now();
        let bar = progress_bar(opts.progress, self.todo.len() + self.labs.len());
        let mut measured = self.run_kernels(&bar, notes)?;
        measured += self.run_labs(opts, &bar, notes);
        bar.finish_and_clear();
        store::save_atomic(&self.path, &self.file)?;
        notes.push(format!(
            "measured {measured} item(s) in {:.1} s, {} cached; wrote {}",
            started.elapsed().as_secs_f64(),
            self.cached,
            self.path.display()
        ));
        Ok(())
    }

    /// The first line of a run's log: what runs where, with which toolchain and seed.
    fn announce(&self) -> String {
        let d = &self.file.device;
        format!(
            "measuring {} item(s) and {} lab(s) on {} (CC {}, driver {}, CUDA {}, NVRTC {}{}); input seed {}; L2 flush: {}",
            self.todo.len(),
            self.labs.len(),
            d.name,
            d.compute_capability,
            d.driver_version,
            d.cuda_version,
            d.nvrtc_version,
            self.gpu
                .cublas_version()
                .map(|v| format!(", cuBLAS {v}"))
                .unwrap_or_default(),
            self.seed,
            self.gpu.flush_method()
        )
    }

    /// Run the kernel items, merge their records and drop those of items no longer planned;
    /// saved before any lab starts, so the (slower) labs cannot lose them.
    fn run_kernels(&mut self, bar: &indicatif::ProgressBar, notes: &mut Vec<String>) -> Result<usize> {
        let new = run::kernel_families(
            self.gpu,
            self.seed,
            &self.selected,
            &self.todo,
            &self.provenance,
            bar,
            notes,
        );
        let measured = new.len();
        store::merge(&mut self.file, new);
        let planned: Vec<Item> = self.selected.iter().flat_map(|f| families::items(f)).collect();
        let pruned = store::prune_unplanned(&mut self.file, &self.selected, &planned);
        if pruned > 0 {
            notes.push(format!(
                "dropped {pruned} record(s) of shapes or variants no longer planned"
            ));
        }
        if !self.labs.is_empty() {
            store::save_atomic(&self.path, &self.file)?;
        }
        Ok(measured)
    }

    /// Run the planned labs, saving the file after each one.
    fn run_labs(
        &mut self,
        opts: &MeasureOptions,
        bar: &indicatif::ProgressBar,
        notes: &mut Vec<String>,
    ) -> usize {
        let mut save_failed: Option<String> = None;
        let path = self.path.clone();
        let mut saved = |f: &ResultsFile| {
            if let Err(e) = store::save_atomic(&path, f) {
                save_failed = Some(e.to_string());
            }
        };
        let n = labs::run_planned(
            &opts.root,
            &self.labs,
            &mut self.file,
            &self.provenance,
            self.seed,
            bar,
            notes,
            &mut saved,
        );
        if let Some(e) = save_failed {
            notes.push(format!("could not save after a lab: {e}"));
        }
        n
    }

    /// `--strict`: an error naming every real failure (not a deliberate skip) of what ran.
    pub(super) fn check_strict(&self, strict: bool) -> Result<()> {
        if !strict {
            return Ok(());
        }
        let failed: Vec<String> = self
            .file
            .records
            .iter()
            .filter(|r| {
                (self.selected.contains(&r.family.as_str())
                    || self.labs.iter().any(|p| p.lab.family == r.family))
                    && store::is_real_failure(r)
            })
            .map(|r| format!("{}/{}", r.family, r.variant))
            .collect();
        if !failed.is_empty() {
            bail!(
                "{} variant(s) failed on {} (--strict): {}",
                failed.len(),
                self.file.device.name,
                failed.join(", ")
            );
        }
        Ok(())
    }

    /// Put the device's file into the list of results files (replacing or adding it).
    pub(super) fn replace_in(self, files: &mut Vec<(PathBuf, ResultsFile)>) {
        if let Some(slot) = files.iter_mut().find(|(p, _)| *p == self.path) {
            slot.1 = self.file;
        } else if !self.file.records.is_empty() {
            files.push((self.path, self.file));
            files.sort_by(|a, b| a.0.cmp(&b.0));
        }
    }
}

/// The kernel items of `selected` whose key has no reusable record in `file`, and how many were
/// served from the cache. A cuBLAS-backed item's key includes the cuBLAS version.
fn kernel_todo(
    gpu: &Gpu,
    selected: &[&'static str],
    file: &ResultsFile,
    device: &DeviceInfo,
    force: bool,
) -> (Vec<(Item, String, String)>, usize) {
    let cublas = gpu
        .cublas_version()
        .map(|v| format!("cublas={v}"))
        .unwrap_or_default();
    let mut todo = Vec::new();
    let mut cached = 0usize;
    for fam in selected {
        let keyed = families::items(fam).into_iter().map(|item| {
            let extra = if families::uses_cublas(&item) {
                cublas.as_str()
            } else {
                ""
            };
            let (key, hash) = item_key(&item, device, extra);
            let hit = file
                .records
                .iter()
                .any(|r| r.key == key && store::same_slot_item(r, &item) && cache::reusable(r));
            (item, key, hash, hit)
        });
        let (t, c) = select_todo(keyed.collect(), force);
        todo.extend(t);
        cached += c;
    }
    (todo, cached)
}

/// The run's input seed: `$HDLC_SEED`, else the clock (every run draws fresh inputs).
fn base_seed() -> u64 {
    std::env::var("HDLC_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// A progress bar over `n` steps, or a hidden one.
fn progress_bar(show: bool, n: usize) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(n as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
    {
        b.set_style(style.progress_chars("=> "));
    }
    b
}
