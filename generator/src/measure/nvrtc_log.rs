//! Turning NVRTC's compile log into `file:line: message` diagnostics.
//!
//! NVRTC names locations as `NAME(LINE): error: MESSAGE`, where NAME is the program name the
//! harness passes (the kernel file name, e.g. `sgemm.cu`). Errors in the book's build log must
//! name the kernel file and line like every other error, so the log is parsed rather than pasted.

/// One diagnostic from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    /// "error" or "warning" (NVRTC's "warning #177-D" is reported as "warning").
    pub severity: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file, self.line, self.severity, self.message
        )
    }
}

/// Parse every `NAME(LINE): severity: message` line of an NVRTC log.
pub fn parse(log: &str) -> Vec<Diagnostic> {
    log.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Diagnostic> {
    let line = line.trim_end();
    // Find "(digits): " — the file name itself may contain parentheses, so take the last match.
    let mut found = None;
    for (open, _) in line.match_indices('(') {
        let rest = &line[open + 1..];
        let Some(close) = rest.find(')') else { continue };
        let digits = &rest[..close];
        if !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && rest[close + 1..].starts_with(": ")
        {
            if let Ok(n) = digits.parse::<u32>() {
                found = Some((open, n, open + 1 + close + 3));
            }
        }
    }
    let (open, line_no, body_start) = found?;
    let file = line[..open].trim().to_string();
    let body = &line[body_start..];
    let (sev, message) = body.split_once(": ")?;
    let severity = sev.split_whitespace().next()?.to_ascii_lowercase();
    if severity != "error" && severity != "warning" && severity != "remark" {
        return None;
    }
    if file.is_empty() {
        return None;
    }
    Some(Diagnostic {
        file,
        line: line_no,
        severity,
        message: message.trim().to_string(),
    })
}

/// A one-paragraph description of a failed compile of `file`: its errors as `file:line:` lines,
/// or (when the log has none in that form) the start of the raw log.
pub fn describe_failure(file: &str, log: &str) -> String {
    let errors: Vec<String> = parse(log)
        .into_iter()
        .filter(|d| d.severity == "error")
        .map(|d| d.to_string())
        .collect();
    if errors.is_empty() {
        let head: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).take(5).collect();
        format!(
            "{file}: compile failed: {}",
            if head.is_empty() {
                "no compiler log".to_string()
            } else {
                head.join(" | ")
            }
        )
    } else {
        errors.join("\n")
    }
}
