//! Stage 3's inner loop: run the kernel families' items on the GPU, family by family, and turn
//! each outcome into a record with provenance and its wall time; log where each family's time
//! went, one line per family.
//!
//! Why apart: `session` decides what to measure (cache keys, labs, results files); this file only
//! runs it, so each stays one screenful.

use super::gpu::Gpu;
use super::harness::Ctx;
use super::plan::Item;
use super::progress::Progress;
use super::results::{self, FailStage, Outcome, Provenance, Record};
use super::{families, interrupt, report};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// An item to measure: (item, cache key, source hash).
pub(super) type Todo = (Item, String, String);

/// What the kernel loop shares with every family.
pub(super) struct KernelRun<'a> {
    pub gpu: &'a Gpu,
    pub base_seed: u64,
    pub provenance: &'a Provenance,
    pub progress: &'a Progress,
    /// Set by Ctrl-C: stop before the next item.
    pub stop: &'a AtomicBool,
    /// Expected seconds of an item, for the time left.
    pub expected: &'a dyn Fn(&Item) -> Option<f64>,
}

/// Measure `todo` in the order of `selected` families and return one record per item measured
/// (none for items an interrupt left undone). Skipped items become `Unsupported` records without
/// running; a panic inside a family fails its remaining items instead of the run.
pub(super) fn kernel_families(
    run: &KernelRun,
    selected: &[&'static str],
    todo: &[Todo],
    notes: &mut Vec<String>,
) -> Vec<Record> {
    let mut ctx = Ctx::new(run.gpu, run.base_seed, families::sources());
    // Every kernel file the items use starts compiling now, in parallel and beside the first
    // families; a file only some family's code names is compiled when asked.
    ctx.precompile(
        todo.iter()
            .filter(|(i, ..)| i.skip.is_none())
            .filter_map(|(i, ..)| i.source_file),
    );
    let mut records = Vec::new();
    let mut family_times = Vec::new();
    for fam in selected {
        let batch: Vec<&Todo> = todo.iter().filter(|(i, ..)| i.family == *fam).collect();
        if batch.is_empty() || interrupt::requested(run.stop) {
            continue;
        }
        let (recs, line) = run_family(run, &mut ctx, fam, &batch);
        // Printed as it happens too, so a run stopped by a time-out still says where it was.
        run.progress.line(&format!("family {line}"));
        family_times.push(line);
        for r in &recs {
            note_failure(r, notes);
        }
        records.extend(recs);
    }
    notes.append(&mut ctx.notes);
    if !family_times.is_empty() {
        notes.push(format!("wall time per family: {}", family_times.join("; ")));
    }
    records
}

/// One family's batch: its skipped items as `Unsupported` records, its runnable ones measured;
/// returns the records and the family's time line for the log.
fn run_family(run: &KernelRun, ctx: &mut Ctx, fam: &str, batch: &[&Todo]) -> (Vec<Record>, String) {
    let started = Instant::now();
    let family_ops = super::prof::snapshot();
    let record = |i: &Item, outcome: Outcome, wall: Option<f64>| {
        let (key, hash) = batch
            .iter()
            .find(|(b, ..)| b == i)
            .map(|(_, k, h)| (k.clone(), h.clone()))
            .unwrap_or_default();
        record_of(i, key, hash, outcome, run.provenance, wall)
    };
    let mut records = Vec::new();
    let (skipped, runnable): (Vec<Item>, Vec<Item>) = batch
        .iter()
        .map(|(i, ..)| i.clone())
        .partition(|i| i.skip.is_some());
    for i in skipped {
        let error = i.skip.unwrap_or("skipped").to_string();
        let outcome = Outcome::Failed {
            stage: FailStage::Unsupported,
            error,
        };
        records.push(record(&i, outcome, None));
        run.progress.step(Some(0.0));
    }
    let mut timing = Timing::default();
    let ran = measure_items(run, ctx, fam, &runnable, &mut timing, &mut |i, o, wall| {
        records.push(record(i, o, wall))
    });
    if !ran {
        let reached: Vec<(String, _)> = records
            .iter()
            .map(|r| (r.variant.clone(), r.params.clone()))
            .collect();
        for i in runnable
            .iter()
            .filter(|i| !reached.iter().any(|(v, p)| v == i.variant && *p == i.params))
        {
            let outcome = Outcome::Failed {
                stage: FailStage::Launch,
                error: "harness panicked".into(),
            };
            records.push(record(i, outcome, None));
        }
    }
    let mut line = report::family_time_line(
        fam,
        records.len(),
        started.elapsed().as_secs_f64(),
        timing.phases,
        &mut timing.items,
    );
    let host = super::prof::line_since(&family_ops);
    if !host.is_empty() {
        line.push_str(&format!("; host: {host}"));
    }
    (records, line)
}

/// Where a family's time went: checks and timed runs, and each item's total.
#[derive(Default)]
struct Timing {
    phases: (f64, f64),
    items: Vec<(String, f64)>,
}

/// Measure `items` through the family's code, one callback per outcome; false when the family
/// panicked (the items it did not reach get no callback).
fn measure_items(
    run: &KernelRun,
    ctx: &mut Ctx,
    fam: &str,
    items: &[Item],
    timing: &mut Timing,
    done: &mut dyn FnMut(&Item, Outcome, Option<f64>),
) -> bool {
    // HDLC_BENCH_TRACE=1: one line per item with where its wall time went.
    let trace = std::env::var_os("HDLC_BENCH_TRACE").is_some_and(|v| v != "0");
    let mut item_ops = super::prof::snapshot();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        families::run(ctx, fam, items, run.stop, &mut |item, outcome, t| {
            run.progress.doing(&item.describe());
            run.progress.step((run.expected)(item));
            if trace {
                let ops = super::prof::line_since(&item_ops);
                item_ops = super::prof::snapshot();
                run.progress.line(&format!(
                    "item {}: {:.2} s (checks {:.2} s, timed {:.2} s) {ops}",
                    item.describe(),
                    t.total,
                    t.check,
                    t.timed
                ));
            }
            timing.phases.0 += t.check;
            timing.phases.1 += t.timed;
            timing.items.push((item.describe(), t.total));
            done(item, outcome, Some(t.total));
        });
    }))
    .is_ok()
}

/// The record of one item.
fn record_of(
    item: &Item,
    key: String,
    hash: String,
    outcome: Outcome,
    provenance: &Provenance,
    wall_s: Option<f64>,
) -> Record {
    Record {
        family: item.family.to_string(),
        variant: item.variant.to_string(),
        label: item.label.to_string(),
        rung: item.rung,
        baseline: item.baseline,
        params: item.params.clone(),
        key,
        source_hash: hash,
        source_file: item.source_file.map(str::to_string),
        outcome,
        provenance: provenance.clone(),
        wall_s,
    }
}

/// A line in the build log for a record that is not a number.
fn note_failure(r: &Record, notes: &mut Vec<String>) {
    let what = format!("{}/{} {}", r.family, r.variant, show(&r.params));
    match &r.outcome {
        Outcome::Failed {
            stage: results::FailStage::Unsupported,
            error,
        } => notes.push(format!("{what}: not measured ({error})")),
        Outcome::Failed { stage, error } => notes.push(format!("{what}: {stage:?} failed: {error}")),
        Outcome::Ok(_) => {}
    }
}

/// "m=1024 n=1024", as `Item::describe` writes parameters.
fn show(params: &std::collections::BTreeMap<String, u64>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
