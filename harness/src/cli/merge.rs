//! `faultline merge`: merges the shard directories of one run into a run directory.

use super::MergeArgs;
use crate::experiment;
use anyhow::Result;

pub(super) fn merge(args: MergeArgs) -> Result<()> {
    let summary = experiment::shard::merge(&args.shards, &args.out)?;
    println!(
        "merged {} shards: {} trials, {} episodes into {}",
        summary.shards,
        summary.trials,
        summary.episodes,
        args.out.join("results.sqlite").display()
    );
    if !summary.failed_items.is_empty() {
        println!(
            "infra:     {} item(s) failed for infrastructure reasons in their shard and are listed, not merged as results: {}",
            summary.failed_items.len(),
            summary.failed_items.join(", ")
        );
    }
    println!("report:    {}", summary.report.display());
    println!("view:      {}", summary.view.display());
    Ok(())
}
