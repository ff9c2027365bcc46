//! The cells a run measured (and the cells it merely has items of), keyed by metric
//! and (fault, task, policy, agent).

use super::rules::Metric;
use super::snapshot::{Snapshot, TrialOutcome};
use std::collections::{BTreeMap, BTreeSet};

/// The cell key of every observation: (fault, task, policy, agent).
pub(super) type CellKey = (Option<String>, String, String, Option<String>);

/// One measured item of a cell: its key, layout and outcome (caught, alarm, recovered).
pub(super) struct Item<'a> {
    pub(super) key: &'a str,
    pub(super) layout: u32,
    pub(super) outcome: bool,
}

/// Every cell one run measured, by metric and key, with its items in the run's order.
pub(super) type Cells<'a> = BTreeMap<(Metric, CellKey), Vec<Item<'a>>>;

/// `fault / task / policy / agent`, as far as the cell has them (the report's cell name).
pub(super) fn cell_name((fault, task, policy, agent): &CellKey) -> String {
    [fault.as_deref(), Some(task), Some(policy), agent.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" / ")
}

/// What one run measured: per (fault, task, policy) the caught outcome of each fired
/// faulty trial the policy judged; per (task, policy) the alarm on each working trial the
/// ledger confirmed; per (task, fault, policy, agent) the recovery of each fired episode.
pub(super) fn measured_cells(s: &Snapshot) -> Cells<'_> {
    let mut out = Cells::new();
    for t in &s.trials {
        let (metric, fault) = match (&t.fault, t.fired) {
            (Some(f), Some(true)) => (Metric::Detection, Some(f.clone())),
            (None, _) if t.truth => (Metric::FalseAlarms, None),
            _ => continue,
        };
        for p in t.verdicts.keys() {
            let outcome = match metric {
                Metric::Detection => t.caught(p),
                _ => t.alarm(p),
            }
            .expect("the policy has a verdict");
            out.entry((metric, (fault.clone(), t.task.clone(), p.clone(), None)))
                .or_default()
                .push(Item {
                    key: &t.key,
                    layout: t.layout,
                    outcome,
                });
        }
    }
    // An external harness's probes: whether it showed the defect, on every probe trial.
    for t in s.trials.iter().filter(|t| is_probe(s, t)) {
        for p in t.verdicts.keys() {
            out.entry((
                Metric::Defects,
                (t.fault.clone(), t.task.clone(), p.clone(), None),
            ))
            .or_default()
            .push(Item {
                key: &t.key,
                layout: t.layout,
                outcome: t.fired == Some(true),
            });
        }
    }
    for e in s.episodes.iter().filter(|e| e.fired) {
        let key = (
            Some(e.fault.clone()),
            e.task.clone(),
            e.policy.clone(),
            Some(e.agent.clone()),
        );
        out.entry((Metric::Recovery, key)).or_default().push(Item {
            key: &e.key,
            layout: e.layout,
            outcome: e.success,
        });
    }
    out
}

/// Every cell a run has an item of, measured or not (a fault that did not fire, a
/// working trial the ledger did not confirm, an item its policy could only answer with
/// an infrastructure error): what a rule may select.
pub(super) fn known_cells(s: &Snapshot) -> BTreeSet<(Metric, CellKey)> {
    let mut infra: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in &s.infra_errors {
        infra.entry(&e.key).or_default().push(&e.policy);
    }
    let mut out = BTreeSet::new();
    for t in &s.trials {
        let metric = match t.fault {
            Some(_) => Metric::Detection,
            None => Metric::FalseAlarms,
        };
        let failed = infra.get(t.key.as_str()).into_iter().flatten().copied();
        for p in t.verdicts.keys().map(String::as_str).chain(failed) {
            out.insert((
                metric,
                (t.fault.clone(), t.task.clone(), p.to_string(), None),
            ));
            if is_probe(s, t) {
                out.insert((
                    Metric::Defects,
                    (t.fault.clone(), t.task.clone(), p.to_string(), None),
                ));
            }
        }
    }
    for e in &s.episodes {
        let key = (
            Some(e.fault.clone()),
            e.task.clone(),
            e.policy.clone(),
            Some(e.agent.clone()),
        );
        out.insert((Metric::Recovery, key));
    }
    out
}

/// A trial of an external harness whose fault is a reference stage fault: a conformance
/// probe, whose `fired` says the harness showed the defect. The iframe probe always
/// fires (its situation, not a defect): its verifier is measured by detection alone.
fn is_probe(s: &Snapshot, t: &TrialOutcome) -> bool {
    s.external
        && matches!(
            t.fault.as_deref(),
            Some(
                "parse.token_leak"
                    | "execute.unscaled_coordinates"
                    | "observe.capture_before_tooltip"
            )
        )
}

pub(super) fn by_key(s: &Snapshot) -> BTreeMap<&str, &TrialOutcome> {
    s.trials.iter().map(|t| (t.key.as_str(), t)).collect()
}
