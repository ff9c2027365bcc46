//! Settling a run directory before it is read (shared by `gate` and `costs`).

use crate::error::usage;
use anyhow::Result;
use std::path::Path;

/// Before a run directory (or a file in one) is read: finishes a report swap a kill
/// interrupted there, or refuses to read it half swapped (see `report::swap::settle`).
/// Anything that is not in a run directory (a baseline file) is left alone.
pub(super) fn settle_report(path: &Path) -> Result<()> {
    let dir = if path.is_dir() {
        path
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    };
    if !dir.join("results.sqlite").is_file() {
        return Ok(());
    }
    faultline_analysis::report::swap::settle(dir).map_err(usage)
}
