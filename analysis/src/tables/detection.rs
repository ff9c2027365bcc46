//! The detection table (caught of fired, per fault, task and policy) and the layer
//! table (the same, pooled by the catalogue's layer), with their CSV text.

use super::{caught, fault_task_key, faulty_trials, index_verdicts, policy_rank, DetectionKey};
use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::{TrialRow, VerdictRow};
use crate::format::{ci_cells, fmt4};
use crate::stats::{clustered_wilson, ClusteredProportion, ClusteredSample};
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::{TaskKind, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One row of `detection.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectionRow {
    /// The fault injected.
    pub fault: Fault,
    /// The fault's round-trip stage.
    pub stage: Stage,
    /// The fault's catalogue layer ([`TrialRow::fault_layer`]).
    pub layer: Layer,
    /// The task.
    pub task: TaskKind,
    /// The policy that judged the trials.
    pub policy: String,
    /// Faulty trials of this (fault, task) whose fault fired, judged by the policy.
    pub fired: u64,
    /// Fired trials whose verdict agreed with the ledger.
    pub caught: u64,
    /// Fired trials whose verdict disagreed with the ledger (`fired - caught`).
    pub missed: u64,
    /// Fired trials on which the policy said anything but `success`, whatever the truth.
    pub alarms: u64,
}

/// The detection table.
pub fn detection(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<DetectionRow> {
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<DetectionKey, DetectionRow> = BTreeMap::new();
    for (t, fault, layer) in faulty_trials(trials).filter(|(t, ..)| t.fired == Some(true)) {
        let stage = t.stage.unwrap_or(fault.stage());
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (
                fault_task_key(layer, fault, t.task),
                policy_rank(policies, &v.policy),
            );
            let row = acc.entry(key).or_insert_with(|| DetectionRow {
                fault,
                stage,
                layer,
                task: t.task,
                policy: v.policy.clone(),
                fired: 0,
                caught: 0,
                missed: 0,
                alarms: 0,
            });
            row.fired += 1;
            if caught(t, v) {
                row.caught += 1;
            } else {
                row.missed += 1;
            }
            if v.verdict != Verdict::Success {
                row.alarms += 1;
            }
        }
    }
    acc.into_values().collect()
}

/// `detection.csv`; the interval is on caught/fired. `layer` comes last, so the columns
/// before it are those of earlier releases.
pub fn detection_csv(rows: &[DetectionRow], cfg: &AnalysisConfig) -> String {
    csv_table(rows.iter().map(|r| {
        let [ci_low, ci_high, ci_method] = ci_cells(cfg.proportion(r.caught, r.fired).as_ref());
        DetectionCsv {
            fault: r.fault.id(),
            stage: r.stage.name(),
            task: r.task.name(),
            policy: &r.policy,
            fired: r.fired,
            caught: r.caught,
            missed: r.missed,
            alarms: r.alarms,
            ci_low,
            ci_high,
            ci_method,
            layer: r.layer.name(),
        }
    }))
}

/// A line of `detection.csv`.
#[derive(Serialize, Default)]
struct DetectionCsv<'a> {
    fault: &'a str,
    stage: &'a str,
    task: &'a str,
    policy: &'a str,
    fired: u64,
    caught: u64,
    missed: u64,
    alarms: u64,
    ci_low: String,
    ci_high: String,
    ci_method: String,
    layer: &'a str,
}

/// One row of `layers.csv`: one layer under one policy, pooled over the layer's faults and
/// tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRow {
    /// The catalogue layer.
    pub layer: Layer,
    /// The policy that judged the trials.
    pub policy: String,
    /// Distinct faults of the layer with fired trials judged by the policy.
    pub faults: usize,
    /// Distinct tasks among those trials.
    pub tasks: usize,
    /// Fired faulty trials judged by the policy.
    pub fired: u64,
    /// Of `fired`, trials whose verdict agreed with the ledger.
    pub caught: u64,
    /// `caught / fired` with its Wilson interval on the effective sample size, the clusters
    /// being the (task, layout) pairs; `None` only if it could not be computed.
    pub rate: Option<ClusteredProportion>,
}

/// Detection per layer and policy: every fired faulty trial of the layer's faults and tasks
/// pooled. Trials on the same page are not independent (the faults of one layer are
/// injected on the same task layouts, and a policy tends to judge a layout alike whatever
/// went wrong on it), so the interval is [`clustered_wilson`] with the (task, layout index)
/// pairs as clusters, at the configured level (whatever the method for single rates).
/// Trials whose fault did not fire are not counted.
pub fn layers(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
    cfg: &AnalysisConfig,
) -> Vec<LayerRow> {
    /// A (task name, layout index) cluster: the name orders the clusters.
    type Cluster = (&'static str, u32);
    struct Acc {
        layer: Layer,
        policy: String,
        faults: BTreeSet<Fault>,
        tasks: BTreeSet<TaskKind>,
        outcomes: Vec<(Cluster, f64)>,
    }
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<(usize, (usize, String)), Acc> = BTreeMap::new();
    for (t, fault, layer) in faulty_trials(trials).filter(|(t, ..)| t.fired == Some(true)) {
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (layer.rank(), policy_rank(policies, &v.policy));
            let a = acc.entry(key).or_insert_with(|| Acc {
                layer,
                policy: v.policy.clone(),
                faults: BTreeSet::new(),
                tasks: BTreeSet::new(),
                outcomes: Vec::new(),
            });
            a.faults.insert(fault);
            a.tasks.insert(t.task);
            a.outcomes.push((
                (t.task.name(), t.layout_index),
                f64::from(u8::from(caught(t, v))),
            ));
        }
    }
    acc.into_values()
        .map(|a| {
            let caught = a.outcomes.iter().filter(|(_, x)| *x == 1.0).count() as u64;
            let fired = a.outcomes.len() as u64;
            let rate = ClusteredSample::from_observations(a.outcomes)
                .ok()
                .and_then(|s| clustered_wilson(&s, cfg.level).ok());
            LayerRow {
                layer: a.layer,
                policy: a.policy,
                faults: a.faults.len(),
                tasks: a.tasks.len(),
                fired,
                caught,
                rate,
            }
        })
        .collect()
}

/// `layers.csv`: caught/fired per layer and policy with the (task, layout)-clustered
/// Wilson interval; after it the clusters, the effective sample size, the design effect
/// applied and any note on it (when the design effect could not be estimated).
pub fn layers_csv(rows: &[LayerRow]) -> String {
    csv_table(rows.iter().map(|r| {
        let p = r.rate.as_ref();
        let e = p.map(|p| &p.estimate);
        let [ci_low, ci_high, ci_method] = ci_cells(e);
        LayersCsv {
            layer: r.layer.name(),
            policy: &r.policy,
            faults: r.faults,
            tasks: r.tasks,
            fired: r.fired,
            caught: r.caught,
            rate: e.map(|e| fmt4(e.point)).unwrap_or_default(),
            ci_low,
            ci_high,
            ci_method,
            clusters: e.and_then(|e| e.clusters).unwrap_or(0),
            n_effective: p.map(|p| fmt4(p.n_effective)).unwrap_or_default(),
            design_effect: p.map(|p| fmt4(p.design_effect)).unwrap_or_default(),
            note: e.and_then(|e| e.note.as_deref()).unwrap_or_default(),
        }
    }))
}

/// A line of `layers.csv`.
#[derive(Serialize, Default)]
struct LayersCsv<'a> {
    layer: &'a str,
    policy: &'a str,
    faults: usize,
    tasks: usize,
    fired: u64,
    caught: u64,
    rate: String,
    ci_low: String,
    ci_high: String,
    ci_method: String,
    clusters: usize,
    n_effective: String,
    design_effect: String,
    note: &'a str,
}
