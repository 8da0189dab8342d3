//! A clean stop on Ctrl-C: the first press asks the run to stop after (kernels) or instead of
//! (a lab, which is killed) the item in flight, so that what is measured is saved and the next
//! run resumes from the cache; a second press exits at once.
//!
//! Why a flag the loops poll rather than dying: results are saved per family and per lab, so the
//! only thing lost by stopping between items is the item itself.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// The process-wide stop flag that Ctrl-C sets.
pub fn flag() -> &'static AtomicBool {
    &STOP
}

/// Install the Ctrl-C handler (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::SeqCst) {
                eprintln!("\ninterrupted twice: exiting now");
                std::process::exit(130);
            }
            eprintln!("\ninterrupted: stopping after the item in flight and saving what is measured (Ctrl-C again to quit at once)");
        });
    });
}

/// Whether a stop was asked for on `flag`.
pub fn requested(flag: &AtomicBool) -> bool {
    flag.load(Ordering::SeqCst)
}
