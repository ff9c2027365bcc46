//! `faultline view`: writes the trace viewer of a stored run.

use super::ViewArgs;
use crate::error::usage;
use anyhow::{anyhow, Result};
use std::path::PathBuf;

pub(super) fn view(args: ViewArgs) -> Result<()> {
    let run_dir = if args.run.is_file() {
        args.run
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        args.run.clone()
    };
    if !run_dir.join("results.sqlite").is_file() {
        return Err(usage(anyhow!(
            "{}: not a run directory (no results.sqlite)",
            args.run.display()
        )));
    }
    let out = args.out.unwrap_or_else(|| run_dir.join("view"));
    let summary = faultline_viewer::generate(&run_dir, &out)?;
    println!(
        "view: {} ({} trials, {} episodes)",
        summary.index.display(),
        summary.trials,
        summary.episodes
    );
    Ok(())
}
