//! Running one lab as a child process: its own process group, a time-out, both pipes drained.
//!
//! Why a process group: a lab may start processes of its own (torch.compile's compile workers,
//! torchrun's ranks). Killing only the Python we started would leave them holding the GPU and
//! our pipes. On a time-out the whole group is asked to stop (SIGTERM), then killed. Pipes are drained on threads so a lab
//! that writes a lot to one of them can never block on the other.

use std::io::Read;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most bytes of standard output kept (records are small; more means a runaway lab).
const STDOUT_CAP: usize = 64 << 20;
/// Bytes of standard error kept (the end, for the error message).
const STDERR_TAIL: usize = 16 << 10;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    /// Exited with this status code (None: killed by a signal).
    Code(Option<i32>),
    /// Outlived the time-out and was killed.
    TimedOut,
    /// Could not be started at all.
    NotStarted(String),
    /// Stopped by Ctrl-C (its group was killed).
    Interrupted,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Run {
    pub exit: Exit,
    pub stdout: String,
    /// The last `STDERR_TAIL` bytes of standard error.
    pub stderr_tail: String,
    pub elapsed: Duration,
    /// Standard output exceeded its cap and was cut.
    pub stdout_truncated: bool,
}

/// Run `program args…` in `cwd` with extra environment variables; `on_line` gets each complete
/// line of standard error as it arrives (for a progress bar). Once `stop` is set (Ctrl-C) the
/// child's whole group is killed and the run ends as [`Exit::Interrupted`].
pub fn run(
    program: &str,
    args: &[&str],
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    stop: &AtomicBool,
    on_line: &mut dyn FnMut(&str),
) -> Run {
    let started = Instant::now();
    let mut child = match spawn(program, args, cwd, env) {
        Ok(c) => c,
        Err(e) => {
            return Run {
                exit: Exit::NotStarted(format!("cannot start `{program}`: {e}")),
                stdout: String::new(),
                stderr_tail: String::new(),
                elapsed: started.elapsed(),
                stdout_truncated: false,
            }
        }
    };
    let out_rx = drain_stdout(child.stdout.take());
    let lines: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let err_rx = drain_stderr(child.stderr.take(), Arc::clone(&lines));
    let drain_lines = |on_line: &mut dyn FnMut(&str)| {
        let taken: Vec<String> = lines
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        for l in taken {
            on_line(&l);
        }
    };
    let exit = wait(&mut child, started, timeout, stop, &mut || drain_lines(on_line));
    // After a kill, a grandchild outside the group could still hold a pipe: wait a bounded time.
    let grace = Duration::from_secs(5);
    let (stdout, stdout_truncated) = out_rx.recv_timeout(grace).unwrap_or_default();
    let tail = err_rx.recv_timeout(grace).unwrap_or_default();
    drain_lines(on_line);
    Run {
        exit,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr_tail: String::from_utf8_lossy(&tail).into_owned(),
        elapsed: started.elapsed(),
        stdout_truncated,
    }
}

/// Start the child in a process group of its own, pipes for its output.
fn spawn(program: &str, args: &[&str], cwd: &Path, env: &[(String, String)]) -> std::io::Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn()
}

/// Poll the child until it exits, times out or is interrupted, passing on stderr lines.
fn wait(
    child: &mut Child,
    started: Instant,
    timeout: Duration,
    stop: &AtomicBool,
    lines: &mut dyn FnMut(),
) -> Exit {
    loop {
        lines();
        match child.try_wait() {
            Ok(Some(status)) => return Exit::Code(status.code()),
            Ok(None) => {}
            Err(e) => return Exit::NotStarted(format!("waiting for the lab failed: {e}")),
        }
        let interrupted = crate::measure::interrupt::requested(stop);
        if interrupted || started.elapsed() >= timeout {
            kill_group(child);
            let _ = child.wait();
            return if interrupted {
                Exit::Interrupted
            } else {
                Exit::TimedOut
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Read standard output on a thread, up to `STDOUT_CAP` bytes (whether it was cut comes back too).
fn drain_stdout(stdout: Option<ChildStdout>) -> mpsc::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut truncated = false;
        if let Some(mut s) = stdout {
            let mut chunk = [0u8; 65536];
            while let Ok(n) = s.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if buf.len() + n <= STDOUT_CAP {
                    buf.extend_from_slice(&chunk[..n]);
                } else {
                    truncated = true;
                }
            }
        }
        let _ = tx.send((buf, truncated));
    });
    rx
}

/// Read standard error on a thread: complete lines go to `lines` as they come, and the last
/// `STDERR_TAIL` bytes come back at the end (for the error message).
fn drain_stderr(stderr: Option<ChildStderr>, lines: Arc<Mutex<Vec<String>>>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tail: Vec<u8> = Vec::new();
        let mut partial: Vec<u8> = Vec::new();
        if let Some(mut s) = stderr {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = s.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
                partial.extend_from_slice(&chunk[..n]);
                split_lines(&mut partial, &lines);
            }
        }
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
        let _ = tx.send(tail);
    });
    rx
}

/// Move the complete lines at the front of `partial` into `lines`.
fn split_lines(partial: &mut Vec<u8>, lines: &Mutex<Vec<String>>) {
    while let Some(p) = partial.iter().position(|&b| b == b'\n' || b == b'\r') {
        let line: Vec<u8> = partial.drain(..=p).collect();
        let text = String::from_utf8_lossy(&line).trim().to_string();
        if !text.is_empty() {
            if let Ok(mut l) = lines.lock() {
                l.push(text);
            }
        }
    }
    if partial.len() > STDERR_TAIL {
        partial.clear();
    }
}

/// How long a lab's group has to end after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(10);

/// SIGTERM to the group, then SIGKILL after a grace period. Why not SIGKILL at once: torchrun
/// starts each rank in a session of its own (out of our group's reach) and stops them itself
/// when it receives SIGTERM; killed outright, it would leave its ranks holding the GPUs.
#[cfg(unix)]
fn kill_group(child: &mut Child) {
    let group = child.id() as libc::pid_t;
    // SAFETY: sends a signal to the process group the child leads (created with
    // process_group(0) above, so its id is the group id).
    unsafe {
        libc::killpg(group, libc::SIGTERM);
    }
    let asked = Instant::now();
    while asked.elapsed() < TERM_GRACE && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above; whatever is left of the group is killed.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
    let _ = child.kill();
}

#[cfg(not(unix))]
fn kill_group(child: &mut Child) {
    let _ = child.kill();
}
