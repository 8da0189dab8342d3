//! Stage 3's inner loop: run the kernel families' items on the GPU, family by family, and turn
//! each outcome into a record with provenance; log where each family's wall time went.
//!
//! Why apart: `measure` decides what to measure (cache keys, labs, results files); this file only
//! runs it, so each stays one screenful.

use super::gpu::Gpu;
use super::results::{self, Outcome, Provenance, Record};
use super::{families, harness, plan, report};
use std::time::Instant;

/// Measure `todo` (item, cache key, source hash), in the order of `selected` families, and
/// return one record per item. Skipped items become `Unsupported` records without running; a
/// panic inside a family fails its remaining items instead of the run.
pub(super) fn kernel_families(
    gpu: &Gpu,
    base_seed: u64,
    selected: &[&'static str],
    todo: &[(plan::Item, String, String)],
    provenance: &Provenance,
    bar: &indicatif::ProgressBar,
    notes: &mut Vec<String>,
) -> Vec<Record> {
    let mut new_records: Vec<Record> = Vec::new();
    let mut ctx = harness::Ctx::new(gpu, base_seed, families::sources());
    // Every kernel file the items use (each item names its file) starts compiling now, in
    // parallel and beside the first families; a file only some family's code names is
    // compiled when asked.
    ctx.precompile(
        todo.iter()
            .filter(|(i, _, _)| i.skip.is_none())
            .filter_map(|(i, _, _)| i.source_file),
    );
    let mut family_times: Vec<String> = Vec::new();
    // HDLC_BENCH_TRACE=1: one line per item with where its wall time went.
    let trace = std::env::var_os("HDLC_BENCH_TRACE").is_some_and(|v| v != "0");
    for fam in selected {
        let batch: Vec<&(plan::Item, String, String)> =
            todo.iter().filter(|(i, _, _)| i.family == *fam).collect();
        if batch.is_empty() {
            continue;
        }
        let family_started = Instant::now();
        let family_ops = super::prof::snapshot();
        let mut item_ops = family_ops;
        let mut item_secs: Vec<(String, f64)> = Vec::new();
        let mut phases = (0.0, 0.0);
        let mut outcomes: Vec<(plan::Item, Outcome)> = Vec::new();
        let (skipped, runnable): (Vec<_>, Vec<_>) = batch
            .iter()
            .map(|(i, _, _)| i.clone())
            .partition(|i| i.skip.is_some());
        for i in skipped {
            let reason = i.skip.unwrap_or("skipped").to_string();
            outcomes.push((
                i,
                Outcome::Failed {
                    stage: results::FailStage::Unsupported,
                    error: reason,
                },
            ));
            bar.inc(1);
        }
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            families::run(&mut ctx, fam, &runnable, &mut |item, outcome, t| {
                bar.set_message(item.describe());
                bar.inc(1);
                if trace {
                    let (d, c, tm) = (item.describe(), t.check, t.timed);
                    let ops = super::prof::line_since(&item_ops);
                    item_ops = super::prof::snapshot();
                    bar.suspend(|| {
                        eprintln!(
                            "item {d}: {:.2} s (checks {c:.2} s, timed {tm:.2} s) {ops}",
                            t.total
                        )
                    });
                }
                phases.0 += t.check;
                phases.1 += t.timed;
                item_secs.push((item.describe(), t.total));
                outcomes.push((item.clone(), outcome));
            });
        }));
        if run.is_err() {
            for i in &runnable {
                if !outcomes.iter().any(|(o, _)| o == i) {
                    outcomes.push((
                        i.clone(),
                        Outcome::Failed {
                            stage: results::FailStage::Launch,
                            error: "harness panicked".into(),
                        },
                    ));
                }
            }
        }
        // Where the suite's wall time goes, for the log (the 90-second budget is per suite).
        let mut line = report::family_time_line(
            fam,
            outcomes.len(),
            family_started.elapsed().as_secs_f64(),
            phases,
            &mut item_secs,
        );
        let host = super::prof::line_since(&family_ops);
        if !host.is_empty() {
            line.push_str(&format!("; host: {host}"));
        }
        // Printed as it happens too, so a run stopped by a time-out still says where it was.
        bar.suspend(|| eprintln!("family {line}"));
        family_times.push(line);
        for (item, outcome) in outcomes {
            let (key, hash) = batch
                .iter()
                .find(|(i, _, _)| *i == item)
                .map(|(_, k, h)| (k.clone(), h.clone()))
                .unwrap_or_default();
            match &outcome {
                Outcome::Failed {
                    stage: results::FailStage::Unsupported,
                    error,
                } => notes.push(format!("{}: not measured ({error})", item.describe())),
                Outcome::Failed { stage, error } => {
                    notes.push(format!("{}: {stage:?} failed: {error}", item.describe()))
                }
                Outcome::Ok(_) => {}
            }
            new_records.push(Record {
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
            });
        }
    }
    notes.append(&mut ctx.notes);
    if !family_times.is_empty() {
        notes.push(format!("wall time per family: {}", family_times.join("; ")));
    }
    new_records
}
