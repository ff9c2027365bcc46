//! `faultline gate`: compares a candidate run with a baseline and fails on regressions.

use super::GateArgs;
use crate::error::usage;
use anyhow::{anyhow, Context, Result};
use std::io::Write as _;

pub(super) fn gate(args: GateArgs) -> Result<()> {
    use crate::error::{NotComparable, Regressed};
    use faultline_analysis::gate::{self, render, Rules};
    let rules = match &args.rules {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(anyhow!("{}: cannot read: {e}", path.display())))?;
            Rules::parse(&path.display().to_string(), &text).map_err(usage)?
        }
        None => Rules::default(),
    };
    super::settle::settle_report(&args.baseline)?;
    super::settle::settle_report(&args.candidate)?;
    let baseline = gate::load_input(&args.baseline).map_err(usage)?;
    let candidate = gate::load_input(&args.candidate).map_err(usage)?;
    let names = (
        args.baseline.display().to_string(),
        args.candidate.display().to_string(),
    );
    // Rules that select no cell of either run are a bad rules file (exit 2).
    let report = gate::gate(
        &baseline,
        &candidate,
        (&names.0, &names.1),
        &rules,
        args.allow_incomparable,
    )
    .map_err(usage)?;
    let markdown = render::markdown(&report);
    for (path, text) in [
        (&args.markdown, &markdown),
        (&args.junit, &render::junit(&report)),
        (&args.json, &render::json(&report)),
    ] {
        if let Some(path) = path {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    print!("{markdown}");
    std::io::stdout().flush()?;
    for w in &report.comparability.warnings {
        eprintln!("faultline: warning: {w}");
    }
    match &report.comparability.refused {
        Some(why) if !args.allow_incomparable => {
            return Err(anyhow!(NotComparable(format!(
                "not comparable: {why} (--allow-incomparable compares anyway)"
            ))))
        }
        _ => {}
    }
    if report.failed() {
        // Missing cells come in whole policies: one entry per policy and reason.
        let mut missing: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for c in report.missing() {
            let reason = c.missing.as_ref().map_or("unpaired", |m| m.reason.name());
            *missing.entry((c.policy.as_str(), reason)).or_default() += 1;
        }
        let names: Vec<String> = report
            .regressions()
            .map(|c| format!("{} {}", c.metric, c.name()))
            .chain(missing.iter().map(|((policy, reason), n)| {
                format!(
                    "{n} cell{} of `{policy}` missing from the candidate ({reason})",
                    if *n == 1 { "" } else { "s" }
                )
            }))
            .chain(report.failed_floors().map(|f| f.name()))
            .collect();
        return Err(anyhow!(Regressed(format!(
            "gate failed: {}",
            names.join("; ")
        ))));
    }
    Ok(())
}
