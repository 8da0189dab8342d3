//! One measuring run on one GPU, step by step: plan what the cache lacks, run the kernels and
//! then the labs, merge their records into the device's results file, save it.
//!
//! Why a type: the steps share a handful of values (the device, its results file, the items to
//! run, the provenance every record gets, the input seed), and `measure` reads better as the
//! list of steps than as one long function threading them through.

use super::cache::{self, item_key, select_todo};
use super::estimate::{self, Estimate};
use super::gpu::Gpu;
use super::labs::{self, LabRun, LabsDone, Planned};
use super::plan::Item;
use super::progress::Progress;
use super::results::{DeviceInfo, Provenance, ResultsFile, SCHEMA_VERSION};
use super::run::{KernelRun, Todo};
use super::{device, families, interrupt, results_dir, run, store, MeasureOptions};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// The state of one run.
pub(super) struct Session<'g> {
    gpu: &'g Gpu,
    /// The device's results file and where it is saved.
    pub(super) file: ResultsFile,
    path: PathBuf,
    selected: Vec<&'static str>,
    /// Kernel items to measure: (item, cache key, source hash).
    todo: Vec<Todo>,
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
                gpus: None,
                interconnect: None,
            },
            seed: crate::measure::reference::base_seed(),
        })
    }

    /// Measure what was planned and save the device's file; a note says what happened. Returns
    /// whether Ctrl-C (`stop`) cut the run short.
    pub(super) fn run(
        &mut self,
        opts: &MeasureOptions,
        files: &[(PathBuf, ResultsFile)],
        stop: &AtomicBool,
        notes: &mut Vec<String>,
    ) -> Result<bool> {
        if self.todo.is_empty() && self.labs.is_empty() {
            notes.push(format!(
                "all {} item(s) cached for {}; nothing to measure",
                self.cached, self.file.device.name
            ));
            return Ok(false);
        }
        interrupt::install();
        let reader_gbs = memcpy_probe(self.gpu);
        let (kern, labs) = (
            estimate::kernels(&self.todo, files, reader_gbs),
            estimate::labs(&self.labs, files, reader_gbs),
        );
        let expected = (kern.known + labs.known > 0).then_some(kern.seconds + labs.seconds);
        let progress = Progress::new(opts.progress, self.todo.len() + self.labs.len(), expected);
        for line in self.announce(&kern, &labs) {
            progress.line(&line);
            if !progress.prints_lines() {
                notes.push(line); // shown once: live, or with the closing notes
            }
        }
        let mut measured = self.run_kernels(&progress, stop, files, reader_gbs, notes)?;
        let done = self.run_labs(opts, &progress, stop, files, reader_gbs, notes);
        measured += done.records;
        progress.finish();
        store::save_atomic(&self.path, &self.file)?;
        let interrupted = interrupt::requested(stop);
        notes.push(format!(
            "measured {measured} item(s) in {:.1} s, {} cached; wrote {}",
            progress.elapsed(),
            self.cached,
            self.path.display()
        ));
        if interrupted {
            notes.push(
                "interrupted: what was measured is saved; run the same command again to resume (saved items are cached)"
                    .into(),
            );
        }
        Ok(interrupted)
    }

    /// What a reader sees first: what will run, about how long it takes (from the records' own
    /// times), how to skip the labs and that stopping keeps what is done; then the toolchain.
    fn announce(&self, kern: &Estimate, labs: &Estimate) -> Vec<String> {
        let d = &self.file.device;
        let kernels = self.todo.iter().filter(|(i, ..)| i.skip.is_none()).count();
        let mut first = format!("measuring {kernels} kernel item(s) ({}) ", kern.text());
        first.push_str(&format!(
            "and {} lab(s) ({}) on {}",
            self.labs.len(),
            labs.text(),
            d.name
        ));
        if !self.labs.is_empty() {
            first.push_str("; `--no-labs` skips the labs");
        }
        first.push_str("; Ctrl-C stops after the item in flight and keeps what is done");
        let second = format!(
            "device: CC {}, driver {}, CUDA {}, NVRTC {}{}; input seed {}; L2 flush: {}",
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
        );
        vec![first, second]
    }

    /// Run the kernel items, merge their records and drop those of items no longer planned;
    /// saved before any lab starts, so the (slower) labs cannot lose them.
    fn run_kernels(
        &mut self,
        progress: &Progress,
        stop: &AtomicBool,
        files: &[(PathBuf, ResultsFile)],
        reader_gbs: Option<f64>,
        notes: &mut Vec<String>,
    ) -> Result<usize> {
        let expected = |i: &Item| estimate::item_seconds(i, files, reader_gbs);
        let run = KernelRun {
            gpu: self.gpu,
            base_seed: self.seed,
            provenance: &self.provenance,
            progress,
            stop,
            expected: &expected,
        };
        let new = run::kernel_families(&run, &self.selected, &self.todo, notes);
        let measured = new.len();
        store::merge(&mut self.file, new);
        if !interrupt::requested(stop) {
            let planned: Vec<Item> = self.selected.iter().flat_map(|f| families::items(f)).collect();
            let pruned = store::prune_unplanned(&mut self.file, &self.selected, &planned);
            if pruned > 0 {
                notes.push(format!(
                    "dropped {pruned} record(s) of shapes or variants no longer planned"
                ));
            }
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
        progress: &Progress,
        stop: &AtomicBool,
        files: &[(PathBuf, ResultsFile)],
        reader_gbs: Option<f64>,
        notes: &mut Vec<String>,
    ) -> LabsDone {
        let mut save_failed: Option<String> = None;
        let path = self.path.clone();
        let mut saved = |f: &ResultsFile| {
            if let Err(e) = store::save_atomic(&path, f) {
                save_failed = Some(e.to_string());
            }
        };
        let expected = |p: &Planned| estimate::lab_seconds(p, files, reader_gbs);
        let run = LabRun {
            root: &opts.root,
            provenance: &self.provenance,
            seed: self.seed,
            progress,
            stop,
            expected: &expected,
        };
        let done = labs::run_planned(&run, &self.labs, &mut self.file, notes, &mut saved);
        if let Some(e) = save_failed {
            notes.push(format!("could not save after a lab: {e}"));
        }
        done
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

/// This GPU's device-to-device copy bandwidth (GB/s, read + write), from a few copies of 256 MiB:
/// what the time estimates are scaled by. `None` if the copy cannot be made.
fn memcpy_probe(gpu: &Gpu) -> Option<f64> {
    const N: usize = 64 << 20;
    let (a, b) = (gpu.alloc_f32(N).ok()?, gpu.alloc_f32(N).ok()?);
    let mut samples = gpu.time_runs(5, &mut || gpu.memcpy_dtod(&b, &a, N * 4)).ok()?;
    samples.sort_by(f64::total_cmp);
    let ms = *samples.get(samples.len() / 2)?;
    (ms > 0.0).then(|| 2.0 * (N * 4) as f64 / (ms * 1e-3) / 1e9)
}
