//! Running labs: one lab as a child process into records (its own, or one failure record that
//! says why the run was rejected), and the planned labs in order, each saved as soon as it ends
//! and logged with its name, time, status and record count.

use super::manifest::Lab;
use super::world::{self, World};
use super::{child, lab_env, python, records, replace, Planned};
use crate::measure::interrupt;
use crate::measure::progress::Progress;
use crate::measure::results::{FailStage, Outcome, Provenance, Record, ResultsFile};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What every lab of a run shares.
pub struct LabRun<'a> {
    pub root: &'a Path,
    pub provenance: &'a Provenance,
    pub seed: u64,
    pub progress: &'a Progress,
    /// Set by Ctrl-C: the lab in flight is killed and not recorded, the rest are not started.
    pub stop: &'a AtomicBool,
    /// A lab's expected seconds, for the time left.
    pub expected: &'a dyn Fn(&Planned) -> Option<f64>,
}

/// What `run_planned` did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LabsDone {
    /// Records written.
    pub records: usize,
    /// Labs run to the end (and saved).
    pub labs: usize,
    /// Stopped by Ctrl-C before the last lab.
    pub interrupted: bool,
}

/// Run one lab (at one world size, through torchrun, when `world` is given); `None` when it
/// was interrupted (nothing to record).
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    root: &Path,
    lab: &Lab,
    world: Option<&World>,
    (key, source_hash): (&str, &str),
    provenance: &Provenance,
    seed: u64,
    stop: &AtomicBool,
    on_line: &mut dyn FnMut(&str),
) -> Option<Vec<Record>> {
    let (args, env) = command(root, lab, world, seed);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let timeout = Duration::from_secs(lab.timeout_s);
    let run = child::run(&python(), &args, root, &env, timeout, stop, on_line);
    if run.exit == child::Exit::Interrupted {
        return None;
    }
    let wall = Some(run.elapsed.as_secs_f64());
    let size = world.map(|w| w.size);
    let make = |variant: String, label: String, rung, baseline, params, outcome| Record {
        family: lab.family.clone(),
        variant,
        label,
        rung,
        baseline,
        params,
        key: key.to_string(),
        source_hash: source_hash.to_string(),
        source_file: Some(lab.source_file.clone()),
        outcome,
        provenance: provenance.clone(),
        wall_s: wall,
    };
    Some(
        match outcome(&run, lab).and_then(|recs| stamp_world(recs, size)) {
            Ok(recs) => recs
                .into_iter()
                .map(|r| make(r.variant, r.label, r.rung, r.baseline, r.params, r.outcome))
                .collect(),
            Err((stage, error)) => vec![make(
                lab.id.clone(),
                format!("lab {}", lab.id),
                0,
                false,
                size.map(|w| BTreeMap::from([("world".to_string(), u64::from(w))]))
                    .unwrap_or_default(),
                Outcome::Failed {
                    stage,
                    error: format!("lab {} ({}): {error}", lab.id, lab.source_file),
                },
            )],
        },
    )
}

/// The interpreter's arguments and the environment of one run: the lab file alone, or torchrun
/// with one process per rank (or, `launch: devices`, the lab alone seeing the world's devices)
/// and the world's size and backend in the environment.
pub fn command(
    root: &Path,
    lab: &Lab,
    world: Option<&World>,
    seed: u64,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut env = lab_env(root, seed);
    match world {
        None => (vec![lab.path.to_string_lossy().into_owned()], env),
        Some(w) => {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
            env.extend(world::env(w, lab.launch, visible.as_deref()));
            (world::launch_args(w, lab.launch, &lab.path), env)
        }
    }
}

/// A world run's records carry `params.world`: added where the lab left it out; a lab that
/// names another size than it ran at is rejected (its records would be filed under the wrong
/// GPU count).
fn stamp_world(
    mut recs: Vec<records::LabRecord>,
    size: Option<u32>,
) -> Result<Vec<records::LabRecord>, (FailStage, String)> {
    let Some(size) = size else { return Ok(recs) };
    for r in &mut recs {
        let w = *r.params.entry("world".to_string()).or_insert(u64::from(size));
        if w != u64::from(size) {
            return Err((
                FailStage::Output,
                format!(
                    "record `{}` says world {w}, but the lab ran at world {size}",
                    r.variant
                ),
            ));
        }
    }
    Ok(recs)
}

/// The lab's records, or why its whole run is rejected.
fn outcome(run: &child::Run, lab: &Lab) -> Result<Vec<records::LabRecord>, (FailStage, String)> {
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    };
    match &run.exit {
        child::Exit::NotStarted(e) => Err((FailStage::Crash, e.clone())),
        child::Exit::TimedOut => Err((
            FailStage::Timeout,
            format!("killed after its time-out of {} s", lab.timeout_s),
        )),
        child::Exit::Interrupted => Err((FailStage::Crash, "interrupted".into())),
        child::Exit::Code(c) if *c != Some(0) => Err((
            FailStage::Crash,
            format!(
                "exited with {}: {}",
                c.map_or("a signal".to_string(), |c| format!("status {c}")),
                tail(&run.stderr_tail)
            ),
        )),
        child::Exit::Code(_) if run.stdout_truncated => {
            Err((FailStage::Output, "printed more than 64 MiB on stdout".into()))
        }
        child::Exit::Code(_) => records::parse(&run.stdout).map_err(|e| (FailStage::Output, e)),
    }
}

/// Run the planned labs in order, replacing their records in `file` and calling `saved` after
/// each (labs take minutes: what is measured is kept even if a later lab hangs the machine).
/// Each lab gets one log line; a stop request kills the lab in flight and starts no other.
pub fn run_planned(
    run: &LabRun,
    planned: &[Planned],
    file: &mut ResultsFile,
    notes: &mut Vec<String>,
    saved: &mut dyn FnMut(&ResultsFile),
) -> LabsDone {
    let mut done = LabsDone::default();
    for p in planned {
        if interrupt::requested(run.stop) {
            done.interrupted = true;
            break;
        }
        let id = match &p.world {
            Some(w) => format!("{} (world {})", p.lab.id, w.size),
            None => p.lab.id.clone(),
        };
        run.progress.doing(&format!("lab {id}"));
        let mut prov = run.provenance.clone();
        prov.frameworks = p.frameworks.clone();
        if let Some(w) = &p.world {
            prov.gpus = Some(w.gpus);
            prov.interconnect = w.interconnect.clone();
        }
        let mut on_line = |l: &str| {
            let short: String = l.chars().take(60).collect();
            run.progress.doing(&format!("lab {id}: {short}"));
        };
        let keys = (p.key.as_str(), p.source_hash.as_str());
        let w = p.world.as_ref();
        let Some(recs) = run_one(run.root, &p.lab, w, keys, &prov, run.seed, run.stop, &mut on_line) else {
            run.progress.line(&format!(
                "lab {id}: interrupted; not saved (the next run measures it)"
            ));
            done.interrupted = true;
            break;
        };
        run.progress.line(&lab_line(&id, &p.lab, &recs));
        note_failures(&recs, notes);
        done.records += recs.len();
        done.labs += 1;
        replace(file, &p.lab, w.map(|w| w.size), recs);
        saved(file);
        run.progress.step((run.expected)(p));
    }
    done
}

/// "lab pt_train (pt_train): ok · 3 record(s) · 1.2 min" or its failure; `id` is the lab's id
/// with its world size, if it has one.
fn lab_line(id: &str, lab: &Lab, recs: &[Record]) -> String {
    let secs = recs.first().and_then(|r| r.wall_s).unwrap_or(0.0);
    let time = crate::measure::progress::duration(secs);
    let failed: Vec<&Record> = recs
        .iter()
        .filter(|r| crate::measure::store::is_real_failure(r))
        .collect();
    let status = match failed.first().map(|r| &r.outcome) {
        None => "ok".to_string(),
        Some(Outcome::Failed { stage, error }) => {
            let first = error
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(120)
                .collect::<String>();
            format!("{} of {} failed ({stage:?}: {first})", failed.len(), recs.len())
        }
        Some(Outcome::Ok(_)) => "ok".to_string(),
    };
    format!(
        "lab {id} ({}): {status} · {} record(s) · {time}",
        lab.family,
        recs.len()
    )
}

/// Failures that are not deliberate skips, for the build log.
fn note_failures(recs: &[Record], notes: &mut Vec<String>) {
    for r in recs {
        if let Outcome::Failed { stage, error } = &r.outcome {
            if *stage != FailStage::Unsupported {
                notes.push(format!("{}/{}: {stage:?} failed: {error}", r.family, r.variant));
            }
        }
    }
}
