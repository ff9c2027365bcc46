//! `faultline baseline export`: reduces a run to a baseline file the gate can read.

use super::BaselineExportArgs;
use crate::error::usage;
use anyhow::{Context, Result};

pub(super) fn baseline_export(args: BaselineExportArgs) -> Result<()> {
    let snapshot = faultline_analysis::gate::load_input(&args.run).map_err(usage)?;
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&args.out, snapshot.to_json())
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "baseline: {} ({} trials, {} episodes, {} policies)",
        args.out.display(),
        snapshot.trials.len(),
        snapshot.episodes.len(),
        snapshot.policies.len()
    );
    Ok(())
}
