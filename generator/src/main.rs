//! `hdlc`: the command-line entry point. Everything lives in the library; `main` only maps the
//! outcome to an exit code, as ripgrep does.

fn main() -> std::process::ExitCode {
    hdlc::cli::run()
}
