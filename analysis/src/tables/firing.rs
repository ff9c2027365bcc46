//! Whether each fault fired (per fault and task) and the catalogue table built on it.

use super::{fault_task_key, faulty_trials, DetectionRow, FaultTaskKey};
use crate::db::TrialRow;
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::TaskKind;
use std::collections::{BTreeMap, BTreeSet};

/// Firing statistics per fault and task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiringRow {
    /// The fault.
    pub fault: Fault,
    /// The fault's round-trip stage.
    pub stage: Stage,
    /// The fault's catalogue layer ([`TrialRow::fault_layer`]).
    pub layer: Layer,
    /// The task.
    pub task: TaskKind,
    /// Faulty trials of this (fault, task).
    pub faulty_trials: u64,
    /// Of those, trials where the fault left its witness.
    pub fired: u64,
    /// Of those, trials where it left none (`faulty_trials - fired`).
    pub not_fired: u64,
    /// The distinct `not_fired_reason`s stored with the trials that did not fire, sorted.
    pub not_fired_reasons: Vec<String>,
    /// Trials that did not fire and store no reason (version-1 databases).
    pub not_fired_unexplained: u64,
}

/// How often each fault fired per task, and why it did not when it did not: the distinct
/// stored reasons (the catalogue's explanation of when the fault cannot fire).
pub fn firing(trials: &[TrialRow]) -> Vec<FiringRow> {
    let mut acc: BTreeMap<FaultTaskKey, (FiringRow, BTreeSet<String>)> = BTreeMap::new();
    for (t, fault, layer) in faulty_trials(trials) {
        let stage = t.stage.unwrap_or(fault.stage());
        let (row, reasons) = acc
            .entry(fault_task_key(layer, fault, t.task))
            .or_insert_with(|| {
                let row = FiringRow {
                    fault,
                    stage,
                    layer,
                    task: t.task,
                    faulty_trials: 0,
                    fired: 0,
                    not_fired: 0,
                    not_fired_reasons: Vec::new(),
                    not_fired_unexplained: 0,
                };
                (row, BTreeSet::new())
            });
        row.faulty_trials += 1;
        if t.fired == Some(true) {
            row.fired += 1;
        } else {
            row.not_fired += 1;
            match &t.not_fired_reason {
                Some(reason) => {
                    reasons.insert(reason.clone());
                }
                None => row.not_fired_unexplained += 1,
            }
        }
    }
    acc.into_values()
        .map(|(mut row, reasons)| {
            row.not_fired_reasons = reasons.into_iter().collect();
            row
        })
        .collect()
}

/// One fault of the report's catalogue view: what it ran on, how often it fired, and how
/// each policy did on the trials where it fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogueRow {
    /// The fault's catalogue layer.
    pub layer: Layer,
    /// The fault.
    pub fault: Fault,
    /// The tasks it had faulty trials on, in task order.
    pub tasks: Vec<TaskKind>,
    /// Faulty trials of the fault, over all its tasks.
    pub faulty_trials: u64,
    /// Of those, trials where the fault left its witness.
    pub fired: u64,
    /// `(caught, fired)` for each policy, in the order the policies were given; `fired`
    /// counts the fired trials the policy judged.
    pub by_policy: Vec<(u64, u64)>,
}

/// One row per fault (in layer, then fault order) from the firing and detection tables:
/// its tasks, faulty and fired trials, and caught/fired under each of `policies` summed
/// over its tasks. Trials whose fault did not fire are in `faulty_trials` only.
pub fn catalogue(
    firing: &[FiringRow],
    detection: &[DetectionRow],
    policies: &[String],
) -> Vec<CatalogueRow> {
    let key = |layer: Layer, fault: Fault| (layer.rank(), fault.id());
    let mut acc: BTreeMap<(usize, &str), CatalogueRow> = BTreeMap::new();
    for f in firing {
        let row = acc
            .entry(key(f.layer, f.fault))
            .or_insert_with(|| CatalogueRow {
                layer: f.layer,
                fault: f.fault,
                tasks: Vec::new(),
                faulty_trials: 0,
                fired: 0,
                by_policy: vec![(0, 0); policies.len()],
            });
        // Firing rows come in task order within a fault.
        if !row.tasks.contains(&f.task) {
            row.tasks.push(f.task);
        }
        row.faulty_trials += f.faulty_trials;
        row.fired += f.fired;
    }
    for d in detection {
        let (Some(row), Some(i)) = (
            acc.get_mut(&key(d.layer, d.fault)),
            policies.iter().position(|p| *p == d.policy),
        ) else {
            continue;
        };
        row.by_policy[i].0 += d.caught;
        row.by_policy[i].1 += d.fired;
    }
    acc.into_values().collect()
}
