//! Infrastructure errors: the (trial or episode, policy) pairs an external policy could
//! not judge, counted and listed apart from the verdicts.
//!
//! An infrastructure error is not a verdict. A trial judged by an external verifier that
//! crashed, hung, answered garbage, answered an unknown verdict or spoke another protocol
//! version has no verdict row for that policy, so the detection and false-alarm tables
//! leave it out of that policy's denominators (fired, working) by construction; the other
//! policies' verdicts on the same trial count as usual. An episode whose policy could not
//! judge is not stored at all (a resumed run tries it again). Nothing is dropped silently:
//! every such pair is counted in `infra_errors.csv` and listed in the report's section.
//!
//! The section and the CSV appear when the run configured an external policy (the
//! `external_policies` meta key) or stored any infrastructure error; a run with built-in
//! policies only produces exactly the report it produced before.

use crate::db::{InfraErrorRow, ResultsDb};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Infrastructure errors of one policy in one phase, of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraCount {
    /// The policy that could not judge.
    pub policy: String,
    /// `detection` or `recovery` (from the item key).
    pub phase: String,
    /// What went wrong: `spawn`, `crash`, `timeout`, `malformed`, `unknown_verdict` or `protocol`.
    pub kind: String,
    /// (item, policy) pairs with at least one error of this kind.
    pub items: u64,
    /// Errors in all (an episode retried on resume may fail again).
    pub errors: u64,
}

/// The phase an item key belongs to.
fn phase(item_key: &str) -> &str {
    item_key.split('/').next().unwrap_or("")
}

/// Counts per (policy, phase, kind), in that order.
pub fn counts(rows: &[InfraErrorRow]) -> Vec<InfraCount> {
    type Key = (String, String, String);
    let mut acc: BTreeMap<Key, (BTreeSet<&str>, u64)> = BTreeMap::new();
    for r in rows {
        let e = acc
            .entry((
                r.policy.clone(),
                phase(&r.item_key).to_string(),
                r.kind.clone(),
            ))
            .or_default();
        e.0.insert(r.item_key.as_str());
        e.1 += 1;
    }
    acc.into_iter()
        .map(|((policy, phase, kind), (items, errors))| InfraCount {
            policy,
            phase,
            kind,
            items: items.len() as u64,
            errors,
        })
        .collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `infra_errors.csv`: one line per (policy, phase, kind).
pub fn infra_errors_csv(counts: &[InfraCount]) -> String {
    let mut out = String::from("policy,phase,kind,items,errors\n");
    for c in counts {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            csv_field(&c.policy),
            c.phase,
            c.kind,
            c.items,
            c.errors
        );
    }
    out
}

/// The report section: the counts, then every error (item, policy, kind, reason and the
/// last line of the process's stderr). `external` are the run's external policies.
pub fn section(rows: &[InfraErrorRow], external: &[String]) -> String {
    let mut md = String::from("## Infrastructure errors\n\n");
    md.push_str(
        "A (trial or episode, policy) whose external policy could not judge (crash, hang past \
         its timeout, malformed JSON, unknown verdict, protocol version mismatch). These are \
         not verdicts: such a trial is left out of that policy's caught/fired and false-alarm \
         counts above (the other policies count it as usual), and such an episode is not \
         stored (a resumed run tries it again).\n\n",
    );
    if !external.is_empty() {
        let _ = writeln!(md, "External policies: {}.\n", external.join(", "));
    }
    if rows.is_empty() {
        md.push_str("No infrastructure errors.\n");
        return md;
    }
    md.push_str("| policy | phase | kind | items | errors |\n|---|---|---|---:|---:|\n");
    for c in counts(rows) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            c.policy, c.phase, c.kind, c.items, c.errors
        );
    }
    md.push_str("\n| item | policy | attempt | kind | reason | stderr (last line) |\n|---|---|---:|---|---|---|\n");
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    for r in rows {
        let last = r.stderr_tail.lines().rev().find(|l| !l.trim().is_empty());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            r.item_key,
            r.policy,
            r.attempt,
            r.kind,
            cell(&r.reason),
            cell(last.unwrap_or(""))
        );
    }
    md
}

/// The run's external policies, as the harness stored them.
pub fn external_policies(db: &ResultsDb) -> Result<Vec<String>> {
    Ok(match db.meta("external_policies")? {
        Some(json) => serde_json::from_str(&json).unwrap_or_default(),
        None => Vec::new(),
    })
}

/// What the report shows of infrastructure errors: the counts (`infra_errors.csv`) and
/// every error (the report section).
#[derive(Debug, Clone)]
pub struct InfraReport<'a> {
    /// Error counts per policy, phase and kind (`infra_errors.csv`).
    pub counts: Vec<InfraCount>,
    /// Every stored infrastructure error.
    pub rows: &'a [InfraErrorRow],
    /// The external policies the run used.
    pub external: &'a [String],
}

impl<'a> InfraReport<'a> {
    /// The report's part, when the run had an external policy or any infrastructure
    /// error; `None` otherwise, so a run without plugins reports exactly as before.
    pub fn new(rows: &'a [InfraErrorRow], external: &'a [String]) -> Option<InfraReport<'a>> {
        (!rows.is_empty() || !external.is_empty()).then(|| InfraReport {
            counts: counts(rows),
            rows,
            external,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: &str, policy: &str, kind: &str, attempt: u32) -> InfraErrorRow {
        InfraErrorRow {
            item_key: key.into(),
            policy: policy.into(),
            kind: kind.into(),
            reason: "it | broke".into(),
            stderr_tail: "line 1\nValueError: boom\n".into(),
            attempt,
        }
    }

    #[test]
    fn counts_group_by_policy_phase_and_kind_and_the_section_lists_every_error() {
        let rows = vec![
            e("detection/grid/000/working", "mine", "crash", 1),
            e("detection/grid/001/working", "mine", "crash", 2),
            e("recovery/grid/x/mine/scripted/r0/000", "mine", "timeout", 1),
            e("recovery/grid/x/mine/scripted/r0/000", "mine", "timeout", 2),
        ];
        let c = counts(&rows);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].phase.as_str(), c[0].items, c[0].errors),
            ("detection", 2, 2)
        );
        assert_eq!(
            (c[1].phase.as_str(), c[1].items, c[1].errors),
            ("recovery", 1, 2)
        );
        let csv = infra_errors_csv(&c);
        assert!(csv.starts_with("policy,phase,kind,items,errors\nmine,detection,crash,2,2\n"));
        let md = section(&rows, &["mine".into()]);
        assert!(md.contains("| mine | detection | crash | 2 | 2 |"), "{md}");
        assert!(md.contains("it \\| broke | ValueError: boom |"), "{md}");
        assert_eq!(md.matches("detection/grid/").count(), 2);
        assert!(section(&[], &["mine".into()]).contains("No infrastructure errors."));
    }
}
