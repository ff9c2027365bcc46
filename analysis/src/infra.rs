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
use crate::format::{csv_field, md_literal};

/// The `policy` of an infrastructure error of the harness itself (the browser died, a
/// renderer crashed, a page hung, a navigation or the model endpoint failed), as opposed
/// to an external policy that could not judge.
pub const HARNESS: &str = "harness";
use anyhow::Result;
use faultline_tasks::InfraErrorKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Infrastructure errors of one policy in one phase, of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraCount {
    /// The policy that could not judge.
    pub policy: String,
    /// `detection` or `recovery` (from the item key).
    pub phase: String,
    /// What went wrong (an external process's `spawn`, `crash`, `timeout`, ..., or the
    /// harness's own `browser_died`, ...).
    pub kind: InfraErrorKind,
    /// (item, policy) pairs with at least one error of this kind.
    pub items: u64,
    /// Errors in all (an episode retried on resume may fail again).
    pub errors: u64,
}

/// The phase an item key belongs to.
fn phase(item_key: &str) -> &str {
    item_key.split('/').next().unwrap_or("")
}

/// Counts per (policy, phase, kind), in that order (kinds by name, as the CSV has
/// always listed them).
pub fn counts(rows: &[InfraErrorRow]) -> Vec<InfraCount> {
    type Key = (String, String, &'static str);
    let mut acc: BTreeMap<Key, (InfraErrorKind, BTreeSet<&str>, u64)> = BTreeMap::new();
    for r in rows {
        let e = acc
            .entry((
                r.policy.clone(),
                phase(&r.item_key).to_string(),
                r.kind.name(),
            ))
            .or_insert_with(|| (r.kind, BTreeSet::new(), 0));
        e.1.insert(r.item_key.as_str());
        e.2 += 1;
    }
    acc.into_iter()
        .map(|((policy, phase, _), (kind, items, errors))| InfraCount {
            policy,
            phase,
            kind,
            items: items.len() as u64,
            errors,
        })
        .collect()
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
    for r in rows {
        let last = r.stderr_tail.lines().rev().find(|l| !l.trim().is_empty());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            r.item_key,
            r.policy,
            r.attempt,
            r.kind,
            md_literal(&r.reason),
            md_literal(last.unwrap_or(""))
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

/// What the report shows of infrastructure errors: the counts (`infra_errors.csv`),
/// every policy's error (the policies' section) and the harness's own failures with
/// their retries (`infra_retries.csv` and its own section).
#[derive(Debug, Clone)]
pub struct InfraReport<'a> {
    /// Error counts per policy, phase and kind (`infra_errors.csv`).
    pub counts: Vec<InfraCount>,
    /// The errors of policies that could not judge (not the harness's).
    pub rows: Vec<InfraErrorRow>,
    /// The external policies the run used.
    pub external: &'a [String],
    /// The harness's own failures, per item; empty when there were none.
    pub harness: Vec<HarnessItem>,
}

impl<'a> InfraReport<'a> {
    /// The report's part, when the run had an external policy or any infrastructure
    /// error; `None` otherwise, so a run without plugins or failures reports exactly as
    /// before. `stored` are the keys of the trials and episodes the run stored.
    pub fn new(
        rows: &'a [InfraErrorRow],
        external: &'a [String],
        stored: &BTreeSet<&str>,
    ) -> Option<InfraReport<'a>> {
        (!rows.is_empty() || !external.is_empty()).then(|| InfraReport {
            counts: counts(rows),
            rows: rows
                .iter()
                .filter(|r| r.policy != HARNESS)
                .cloned()
                .collect(),
            external,
            harness: harness_items(rows, stored),
        })
    }
}

/// One item the harness failed on at least once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessItem {
    /// The trial or episode key.
    pub item_key: String,
    /// Its failed attempts, in order: (attempt, kind, reason).
    pub failures: Vec<(u32, InfraErrorKind, String)>,
    /// Whether a later attempt (or a resumed run) stored it: `false` is a final
    /// infrastructure failure, listed and in no denominator.
    pub completed: bool,
}

/// The harness's failures (rows whose policy is [`HARNESS`]) per item, in key order.
pub fn harness_items(rows: &[InfraErrorRow], stored: &BTreeSet<&str>) -> Vec<HarnessItem> {
    let mut acc: BTreeMap<&str, Vec<(u32, InfraErrorKind, String)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.policy == HARNESS) {
        acc.entry(&r.item_key)
            .or_default()
            .push((r.attempt, r.kind, r.reason.clone()));
    }
    acc.into_iter()
        .map(|(key, mut failures)| {
            // Kinds by name, as when they were strings.
            failures.sort_by(|a, b| (a.0, a.1.name(), &a.2).cmp(&(b.0, b.1.name(), &b.2)));
            HarnessItem {
                item_key: key.to_string(),
                failures,
                completed: stored.contains(key),
            }
        })
        .collect()
}

/// Per (phase, kind): failed attempts, the items they hit, how many of those were then
/// stored (retried successfully) and how many failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryCount {
    /// `detection` or `recovery`.
    pub phase: String,
    /// The failure kind (`browser_died`, `renderer_crashed`, `unresponsive`, ...).
    pub kind: InfraErrorKind,
    /// Failed attempts of this kind.
    pub attempts: u64,
    /// Distinct items those attempts hit.
    pub items: u64,
    /// Of those items, how many a later attempt stored.
    pub completed: u64,
    /// Of those items, how many failed every attempt (listed, in no denominator).
    pub failed: u64,
}

/// The harness's failures counted per (phase, kind), kinds by name.
pub fn retry_counts(items: &[HarnessItem]) -> Vec<RetryCount> {
    let mut acc: BTreeMap<(String, &'static str), RetryCount> = BTreeMap::new();
    for item in items {
        let mut kinds = BTreeSet::new();
        for &(_, kind, _) in &item.failures {
            let c = acc
                .entry((phase(&item.item_key).to_string(), kind.name()))
                .or_insert_with(|| RetryCount {
                    phase: phase(&item.item_key).to_string(),
                    kind,
                    attempts: 0,
                    items: 0,
                    completed: 0,
                    failed: 0,
                });
            c.attempts += 1;
            if kinds.insert(kind) {
                c.items += 1;
                if item.completed {
                    c.completed += 1;
                } else {
                    c.failed += 1;
                }
            }
        }
    }
    acc.into_values().collect()
}

/// `infra_retries.csv`: one line per (phase, kind) of the harness's own failures.
pub fn infra_retries_csv(items: &[HarnessItem]) -> String {
    let mut out = String::from("phase,kind,failed_attempts,items,completed_after_retry,failed\n");
    for c in retry_counts(items) {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{}",
            c.phase, c.kind, c.attempts, c.items, c.completed, c.failed
        );
    }
    out
}

/// The report section on the harness's own failures: counts, then every item.
pub fn harness_section(items: &[HarnessItem]) -> String {
    let mut md = String::from("## Harness infrastructure failures\n\n");
    md.push_str(
        "Attempts the harness itself could not complete: the browser died, a renderer crashed \
         when no fault crashed it, a page stopped answering within its deadline, the fixture \
         page did not load, or the model endpoint could not be reached. None of them is a \
         verdict, a detection, a recovery or a false alarm. An item retried successfully is \
         stored and counted as usual (a fresh page, the same seed); an item that failed every \
         attempt is not stored, so it is in no denominator above, and is listed here as \
         *failed*; `faultline run --resume` tries it again.\n\n",
    );
    md.push_str("| phase | kind | failed attempts | items | completed after retry | failed |\n|---|---|---:|---:|---:|---:|\n");
    for c in retry_counts(items) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            c.phase, c.kind, c.attempts, c.items, c.completed, c.failed
        );
    }
    md.push_str("\n| item | outcome | attempt | kind | reason |\n|---|---|---:|---|---|\n");
    for item in items {
        for (attempt, kind, reason) in &item.failures {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                item.item_key,
                if item.completed {
                    "completed"
                } else {
                    "failed"
                },
                attempt,
                kind,
                md_literal(reason)
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_tasks::{InfraKind, PluginFailure};

    fn e(key: &str, policy: &str, kind: PluginFailure, attempt: u32) -> InfraErrorRow {
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
            e(
                "detection/grid/000/working",
                "mine",
                PluginFailure::Crash,
                1,
            ),
            e(
                "detection/grid/001/working",
                "mine",
                PluginFailure::Crash,
                2,
            ),
            e(
                "recovery/grid/x/mine/scripted/r0/000",
                "mine",
                PluginFailure::Timeout,
                1,
            ),
            e(
                "recovery/grid/x/mine/scripted/r0/000",
                "mine",
                PluginFailure::Timeout,
                2,
            ),
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

    /// The tables list kinds by name, as when kinds were strings, not in the kinds'
    /// declaration order (which puts the harness's before the plugins').
    #[test]
    fn kinds_are_listed_by_name() {
        let harness = |key: &str, kind: InfraKind, attempt: u32| InfraErrorRow {
            policy: HARNESS.into(),
            kind: kind.into(),
            ..e(key, HARNESS, PluginFailure::Crash, attempt)
        };
        let rows = vec![
            e(
                "detection/grid/000/working",
                "mine",
                PluginFailure::Timeout,
                1,
            ),
            e(
                "detection/grid/001/working",
                "mine",
                PluginFailure::Crash,
                1,
            ),
            harness("detection/grid/002/working", InfraKind::Unresponsive, 1),
            harness("detection/grid/003/working", InfraKind::AgentEndpoint, 1),
            e(
                "detection/grid/004/working",
                "mine",
                PluginFailure::Spawn,
                1,
            ),
            harness("detection/grid/004/working", InfraKind::Unresponsive, 1),
        ];
        let kinds: Vec<String> = counts(&rows)
            .iter()
            .map(|c| format!("{} {}", c.policy, c.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                "harness agent_endpoint",
                "harness unresponsive",
                "mine crash",
                "mine spawn",
                "mine timeout"
            ]
        );
        let items = harness_items(&rows, &BTreeSet::new());
        let csv = infra_retries_csv(&items);
        assert_eq!(
            csv,
            "phase,kind,failed_attempts,items,completed_after_retry,failed\n\
             detection,agent_endpoint,1,1,0,1\n\
             detection,unresponsive,2,2,0,2\n"
        );
    }

    /// A plugin's stderr and the reasons built from its output are its text, not the
    /// report's: they reach `report.md` as literal text, never as HTML or table syntax.
    #[test]
    fn plugin_text_in_report_md_is_escaped_not_raw_html() {
        let mut row = e(
            "detection/grid/000/working",
            "mine",
            PluginFailure::Crash,
            1,
        );
        row.reason = "malformed JSON: <img src=x onerror=alert(1)> & *bold*".into();
        row.stderr_tail = "ok\n<script>alert('x')</script> | [link](http://x) `tick`\n".into();
        let md = section(&[row], &["mine".into()]);
        let line = md
            .lines()
            .find(|l| l.starts_with("| detection/grid/000/working"))
            .unwrap();
        for raw in [
            "<script>",
            "</script>",
            "<img",
            " & ",
            "*bold*",
            "[link]",
            "`tick`",
        ] {
            assert!(!line.contains(raw), "`{raw}` reached report.md raw: {line}");
        }
        assert!(
            line.contains("&lt;script&gt;alert('x')&lt;/script&gt;"),
            "{line}"
        );
        // Six cells: the stderr's pipe does not open a seventh.
        let unescaped_pipes =
            line.len() - line.replace('|', "").len() - line.matches("\\|").count();
        assert_eq!(unescaped_pipes, 7, "{line}");
        let failed = HarnessItem {
            item_key: "recovery/grid/x/outcome/mine/r0/000".into(),
            completed: false,
            failures: vec![(1, InfraKind::AgentProcess.into(), "said <b>|</b>".into())],
        };
        let md = harness_section(&[failed]);
        assert!(md.contains("said &lt;b&gt;\\|&lt;/b&gt;"), "{md}");
    }
}
