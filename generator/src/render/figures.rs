//! Measured figures (placeholder until the plotters views land).
use crate::figspec::FigureSpec;
use crate::measure::results::ResultsFile;

pub fn render_figure(
    spec: &FigureSpec,
    _files: &[(std::path::PathBuf, ResultsFile)],
    _local_device: Option<&str>,
) -> Result<String, String> {
    Ok(format!(
        "<div class=\"hdlc-nodata\">측정 결과 없음: {}</div>",
        spec.bench
    ))
}
