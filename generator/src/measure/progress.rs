//! How a measuring run reports: on a terminal, one progress bar over the whole run with the time
//! left; otherwise (a log file, CI, a pipe), one line per kernel family and one per lab, so that
//! a reader who started a twenty-minute build can see what it is doing.
//!
//! Why apart: the kernel loop and the lab runner report the same way, and tests collect the lines
//! instead of printing them.

use indicatif::{ProgressBar, ProgressStyle};
use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Instant;

/// Where lines go.
enum Sink {
    /// Above the progress bar.
    Bar,
    /// Standard error, one line each.
    Stderr,
    /// Collected (tests).
    Lines(Rc<RefCell<Vec<String>>>),
    /// Nowhere.
    Quiet,
}

/// The run's progress: steps done, and the seconds the steps are expected to take.
pub struct Progress {
    bar: ProgressBar,
    sink: Sink,
    started: Instant,
    /// Expected seconds of the steps not yet done (from the records' own times), if known.
    expected_left: Cell<Option<f64>>,
}

impl Progress {
    /// A bar on a terminal, lines on standard error otherwise; nothing when `show` is false.
    pub fn new(show: bool, steps: usize, expected: Option<f64>) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let (bar, sink) = match (show, terminal) {
            (false, _) => (ProgressBar::hidden(), Sink::Quiet),
            (true, true) => (styled(ProgressBar::new(steps as u64)), Sink::Bar),
            (true, false) => (ProgressBar::hidden(), Sink::Stderr),
        };
        Progress {
            bar,
            sink,
            started: Instant::now(),
            expected_left: Cell::new(expected),
        }
    }

    /// Lines collected into the returned list, as a non-terminal run would print them.
    pub fn collecting() -> (Progress, Rc<RefCell<Vec<String>>>) {
        let lines = Rc::new(RefCell::new(Vec::new()));
        let p = Progress {
            bar: ProgressBar::hidden(),
            sink: Sink::Lines(Rc::clone(&lines)),
            started: Instant::now(),
            expected_left: Cell::new(None),
        };
        (p, lines)
    }

    /// Nothing shown at all.
    pub fn hidden() -> Progress {
        Progress::new(false, 0, None)
    }

    /// Whether `line` prints now (on a terminal or to stderr): then the caller need not repeat
    /// the line in its closing notes.
    pub fn prints_lines(&self) -> bool {
        matches!(self.sink, Sink::Bar | Sink::Stderr)
    }

    /// A line of the log: above the bar, on standard error, or collected.
    pub fn line(&self, text: &str) {
        match &self.sink {
            Sink::Bar => self.bar.suspend(|| eprintln!("{text}")),
            Sink::Stderr => eprintln!("{text}"),
            Sink::Lines(l) => l.borrow_mut().push(text.to_string()),
            Sink::Quiet => {}
        }
    }

    /// What is running now (the bar's message).
    pub fn doing(&self, what: &str) {
        let left = self.left_text();
        self.bar.set_message(format!("{what}{left}"));
    }

    /// One step done, which was expected to take `expected` seconds.
    pub fn step(&self, expected: Option<f64>) {
        if let (Some(left), Some(e)) = (self.expected_left.get(), expected) {
            self.expected_left.set(Some((left - e).max(0.0)));
        }
        self.bar.inc(1);
    }

    /// Seconds since the run started.
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Clear the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn left_text(&self) -> String {
        match self.expected_left.get() {
            Some(s) if s >= 1.0 => format!(" · about {} left", duration(s)),
            _ => String::new(),
        }
    }
}

fn styled(b: ProgressBar) -> ProgressBar {
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}") {
        b.set_style(style.progress_chars("=> "));
    }
    b
}

/// Seconds as a reader reads them: "45 s", "1.5 min", "20 min", "1.3 h".
pub fn duration(s: f64) -> String {
    if s < 90.0 {
        format!("{:.0} s", s.max(1.0))
    } else if s < 600.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
