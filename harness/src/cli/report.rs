//! `faultline report`: rebuilds the tables and report of a stored run from its database.

use super::ReportArgs;
use crate::error::usage;
use anyhow::{anyhow, Result};
use std::path::PathBuf;

pub(super) fn report(args: ReportArgs) -> Result<()> {
    use faultline_analysis::config::ProportionMethod;
    let db = faultline_analysis::db::ResultsDb::open_read_only(&args.database).map_err(usage)?;
    let run_dir = args
        .database
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let out = args.out.unwrap_or_else(|| run_dir.clone());
    let mut cfg = faultline_analysis::report::default_config(&db)?;
    cfg.level = faultline_analysis::stats::Level::new(args.level)
        .map_err(|e| usage(anyhow!("--level: {e}")))?;
    cfg.proportion = match args.interval.as_str() {
        "wilson" => ProportionMethod::Wilson,
        "clopper-pearson" => ProportionMethod::ClopperPearson,
        other => {
            return Err(usage(anyhow!(
                "--interval: unknown method `{other}` (expected wilson or clopper-pearson)"
            )))
        }
    };
    if args.resamples < 100 {
        return Err(usage(anyhow!(
            "--resamples: expected at least 100, found {}",
            args.resamples
        )));
    }
    cfg.resamples = args.resamples;
    if let Some(seed) = args.seed {
        cfg.seed = seed;
    }
    let files = faultline_analysis::report::write_all(&db, &out, &run_dir, &cfg)?;
    println!("report: {}", files.report_md.display());
    Ok(())
}
