//! `faultline costs`: prints what a stored run cost.

use super::CostsArgs;
use crate::error::usage;
use anyhow::Result;

pub(super) fn costs(args: CostsArgs) -> Result<()> {
    super::settle::settle_report(&args.run)?;
    let path = if args.run.is_dir() {
        args.run.join("results.sqlite")
    } else {
        args.run
    };
    let db = faultline_analysis::db::ResultsDb::open_read_only(&path).map_err(usage)?;
    print!("{}", faultline_analysis::costs::summary(&db)?);
    Ok(())
}
