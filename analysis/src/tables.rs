//! Tables computed from stored trials and verdicts.
//!
//! Scoring rules (the ledger's truth is `truth_achieved`, stored with every trial):
//!
//! - On a faulty trial whose fault **fired**, a verdict is *caught* when it agrees with
//!   the truth: `Success` when the intended outcome happened (e.g. the feedback fault
//!   lied about a click that worked), anything else when it did not. `alarms` counts
//!   verdicts other than `Success` regardless of truth. Trials whose fault did not fire
//!   are counted separately and never as caught or missed.
//! - On a working trial, a *false alarm* is a verdict other than `Success` on a trial
//!   where the ledger confirms the outcome.
//!
//! Rows about faults are ordered by the catalogue's layer ([`Layer::ALL`]), then the fault
//! id, then the task ([`TaskKind::rank`]), then the policy (run order, then others by
//! name). A trial's layer is [`TrialRow::fault_layer`]: the stored one, or in a version-1
//! database (which stores none) the fault's own.
//!
//! The tables are computed here; their CSV text is written by the functions at the end of
//! this file, their Markdown by [`crate::report`].

use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::{TrialRow, VerdictRow};
use crate::format::{ci_cells, fmt4};
use crate::stats::{clustered_wilson, ClusteredProportion, ClusteredSample, Estimate};
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::{Condition, Phase, TaskKind, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// One row of `false_alarms.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FalseAlarmRow {
    /// The task.
    pub task: TaskKind,
    /// The policy that judged the trials.
    pub policy: String,
    /// Working trials of the task judged by the policy (`outcome_failed` included).
    pub n_working: u64,
    /// Working trials the ledger confirmed on which the policy said anything but `success`.
    pub false_alarms: u64,
    /// Working trials whose outcome the ledger did *not* confirm (not counted above).
    pub outcome_failed: u64,
}

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

/// Policies in the order given, then any others alphabetically.
pub(crate) fn policy_rank(order: &[String], policy: &str) -> (usize, String) {
    (
        order.iter().position(|p| p == policy).unwrap_or(usize::MAX),
        policy.to_string(),
    )
}

/// Sort key of a fault x task row: layer rank, fault id, task rank.
pub(crate) type FaultTaskKey = (usize, &'static str, usize);

pub(crate) fn fault_task_key(layer: Layer, fault: Fault, task: TaskKind) -> FaultTaskKey {
    (layer.rank(), fault.id(), task.rank())
}

/// Sort key of a detection row: the fault x task key, then the policy rank and name.
type DetectionKey = (FaultTaskKey, (usize, String));

/// Verdicts indexed by trial key.
pub fn index_verdicts(verdicts: &[VerdictRow]) -> HashMap<&str, Vec<&VerdictRow>> {
    let mut by_trial: HashMap<&str, Vec<&VerdictRow>> = HashMap::new();
    for v in verdicts {
        by_trial.entry(v.trial_key.as_str()).or_default().push(v);
    }
    by_trial
}

/// The faulty trials of the detection experiment with their fault and its layer (a faulty
/// row without a fault, which the harness never writes, is skipped).
fn faulty_trials(trials: &[TrialRow]) -> impl Iterator<Item = (&TrialRow, Fault, Layer)> {
    trials
        .iter()
        .filter(|t| t.experiment == Phase::Detection && t.condition == Condition::Faulty)
        .filter_map(|t| {
            let fault = t.fault?;
            Some((t, fault, t.fault_layer()?))
        })
}

/// The fired faulty trials of the detection experiment, each with its verdicts (in stored
/// order): the trials every detection table and comparison is computed on.
pub(crate) fn detected_fired<'a>(
    trials: &'a [TrialRow],
    verdicts: &'a [VerdictRow],
) -> impl Iterator<Item = (&'a TrialRow, std::vec::IntoIter<&'a VerdictRow>)> {
    let by_trial = index_verdicts(verdicts);
    trials
        .iter()
        .filter(|t| {
            t.experiment == Phase::Detection
                && t.condition == Condition::Faulty
                && t.fired == Some(true)
        })
        .map(move |t| {
            let vs: Vec<&'a VerdictRow> = by_trial
                .get(t.trial_key.as_str())
                .cloned()
                .unwrap_or_default();
            (t, vs.into_iter())
        })
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

/// Whether a verdict on a fired faulty trial agrees with the ledger (see the module docs).
pub(crate) fn caught(t: &TrialRow, v: &VerdictRow) -> bool {
    (v.verdict == Verdict::Success) == t.truth_achieved
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

/// The false-alarm table.
pub fn false_alarms(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<FalseAlarmRow> {
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<(usize, (usize, String)), FalseAlarmRow> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.experiment == Phase::Detection && t.condition == Condition::Working)
    {
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (t.task.rank(), policy_rank(policies, &v.policy));
            let row = acc.entry(key).or_insert_with(|| FalseAlarmRow {
                task: t.task,
                policy: v.policy.clone(),
                n_working: 0,
                false_alarms: 0,
                outcome_failed: 0,
            });
            row.n_working += 1;
            if !t.truth_achieved {
                row.outcome_failed += 1;
            } else if v.verdict != Verdict::Success {
                row.false_alarms += 1;
            }
        }
    }
    acc.into_values().collect()
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

/// `false_alarms.csv`; the interval is on false alarms out of the working trials the
/// ledger confirmed (the only ones that can be false alarms).
pub fn false_alarms_csv(rows: &[FalseAlarmRow], cfg: &AnalysisConfig) -> String {
    csv_table(rows.iter().map(|r| {
        let [ci_low, ci_high, ci_method] = ci_cells(
            cfg.proportion(r.false_alarms, r.n_working - r.outcome_failed)
                .as_ref(),
        );
        FalseAlarmsCsv {
            task: r.task.name(),
            policy: &r.policy,
            n_working: r.n_working,
            false_alarms: r.false_alarms,
            ci_low,
            ci_high,
            ci_method,
        }
    }))
}

/// A line of `false_alarms.csv`.
#[derive(Serialize, Default)]
struct FalseAlarmsCsv<'a> {
    task: &'a str,
    policy: &'a str,
    n_working: u64,
    false_alarms: u64,
    ci_low: String,
    ci_high: String,
    ci_method: String,
}

/// The answer key a policy's verdicts are compared with in the answer-key section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AnswerKey {
    /// An external suite's own reward (MiniWoB++'s in-page reward), which nobody here
    /// wrote, on that suite's tasks.
    SuiteReward,
    /// faultline's own ledgers, on faultline's own tasks.
    OwnLedger,
}

impl AnswerKey {
    /// The key a task's trials are judged by: the suite's reward on a MiniWoB++ task,
    /// faultline's ledger on every other.
    pub fn of(task: TaskKind) -> AnswerKey {
        if task.miniwob_name().is_some() {
            AnswerKey::SuiteReward
        } else {
            AnswerKey::OwnLedger
        }
    }

    /// The stable name, as written in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            AnswerKey::SuiteReward => "miniwob_reward",
            AnswerKey::OwnLedger => "own_ledger",
        }
    }

    /// The label the report shows.
    pub fn label(self) -> &'static str {
        match self {
            AnswerKey::SuiteReward => "MiniWoB++ reward",
            AnswerKey::OwnLedger => "faultline ledger",
        }
    }
}

/// One row of the policy-vs-answer-key table: a policy's verdicts on the trials of one
/// task family against that family's answer key (MiniWoB++'s own reward on the external
/// suite, faultline's ledgers on its own tasks). `task` is `None` for the row pooled over
/// the family's tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerKeyRow {
    /// The answer key the verdicts are compared with.
    pub key: AnswerKey,
    /// The task, or `None` for the row pooled over the family's tasks.
    pub task: Option<TaskKind>,
    /// The verification policy whose verdicts are compared with the answer key.
    pub policy: String,
    /// Trials judged: working trials and fired faulty trials.
    pub n: u64,
    /// Verdict Success exactly when the answer key says success.
    pub agree: u64,
    /// Verdicts Success.
    pub said_success: u64,
    /// Answer-key successes.
    pub key_success: u64,
    /// Both.
    pub both: u64,
}

impl AnswerKeyRow {
    /// Agreement: `agree` of `n`, with its interval.
    pub fn agreement(&self, cfg: &AnalysisConfig) -> Option<Estimate> {
        cfg.proportion(self.agree, self.n)
    }

    /// Precision of Success: of the Success verdicts, the share the answer key confirms.
    pub fn precision(&self, cfg: &AnalysisConfig) -> Option<Estimate> {
        cfg.proportion(self.both, self.said_success)
    }

    /// Recall of Success: of the answer key's successes, the share called Success.
    pub fn recall(&self, cfg: &AnalysisConfig) -> Option<Estimate> {
        cfg.proportion(self.both, self.key_success)
    }
}

/// Every policy's verdicts against each task family's answer key, per task and pooled:
/// the external suite's (MiniWoB++'s reward) first, then faultline's own ledgers on its
/// own tasks; within a family, tasks in report order, then the pooled row; policies in
/// run order. Faulty trials whose fault did not fire are left out, as everywhere else.
/// Empty when the run has no external-suite task (the section is about the external key;
/// the own-ledger rows stand beside it).
pub fn answer_key(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<AnswerKeyRow> {
    if !trials.iter().any(|t| t.task.miniwob_name().is_some()) {
        return Vec::new();
    }
    let judged: HashMap<&str, &TrialRow> = trials
        .iter()
        .filter(|t| t.fired != Some(false))
        .map(|t| (t.trial_key.as_str(), t))
        .collect();
    type Cell = (AnswerKey, bool, Option<usize>, usize, String);
    let mut cells: BTreeMap<Cell, AnswerKeyRow> = BTreeMap::new();
    for v in verdicts {
        let Some(t) = judged.get(v.trial_key.as_str()) else {
            continue;
        };
        let prank = policies
            .iter()
            .position(|p| *p == v.policy)
            .unwrap_or(usize::MAX);
        let said = v.verdict == Verdict::Success;
        let key = AnswerKey::of(t.task);
        for task in [Some(t.task), None] {
            // Tasks first, the pooled row (`None`) last, within each key.
            let row = cells
                .entry((
                    key,
                    task.is_none(),
                    task.map(TaskKind::rank),
                    prank,
                    v.policy.clone(),
                ))
                .or_insert_with(|| AnswerKeyRow {
                    key,
                    task,
                    policy: v.policy.clone(),
                    n: 0,
                    agree: 0,
                    said_success: 0,
                    key_success: 0,
                    both: 0,
                });
            row.n += 1;
            row.agree += u64::from(said == t.truth_achieved);
            row.said_success += u64::from(said);
            row.key_success += u64::from(t.truth_achieved);
            row.both += u64::from(said && t.truth_achieved);
        }
    }
    cells.into_values().collect()
}

/// `answer_key.csv`: one line per answer key, task (or `pooled`) and policy, with the
/// counts and each rate's point and interval.
pub fn answer_key_csv(rows: &[AnswerKeyRow], cfg: &AnalysisConfig) -> String {
    // A rate's point, lower and upper bound (empty without an estimate).
    let rate = |e: Option<Estimate>| match e {
        Some(e) => [fmt4(e.point), fmt4(e.lower), fmt4(e.upper)],
        None => Default::default(),
    };
    csv_table(rows.iter().map(|r| {
        let [agreement, agreement_ci_low, agreement_ci_high] = rate(r.agreement(cfg));
        let [precision, precision_ci_low, precision_ci_high] = rate(r.precision(cfg));
        let [recall, recall_ci_low, recall_ci_high] = rate(r.recall(cfg));
        AnswerKeyCsv {
            answer_key: r.key.name(),
            task: r.task.map_or("pooled", TaskKind::name),
            policy: &r.policy,
            n: r.n,
            agree: r.agree,
            said_success: r.said_success,
            key_success: r.key_success,
            both: r.both,
            agreement,
            agreement_ci_low,
            agreement_ci_high,
            precision,
            precision_ci_low,
            precision_ci_high,
            recall,
            recall_ci_low,
            recall_ci_high,
            ci_method: r
                .agreement(cfg)
                .map_or_else(String::new, |e| e.method.to_string()),
        }
    }))
}

/// A line of `answer_key.csv`.
#[derive(Serialize, Default)]
struct AnswerKeyCsv<'a> {
    answer_key: &'a str,
    task: &'a str,
    policy: &'a str,
    n: u64,
    agree: u64,
    said_success: u64,
    key_success: u64,
    both: u64,
    agreement: String,
    agreement_ci_low: String,
    agreement_ci_high: String,
    precision: String,
    precision_ci_low: String,
    precision_ci_high: String,
    recall: String,
    recall_ci_low: String,
    recall_ci_high: String,
    ci_method: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::db::tests::{row, verdict};
    use crate::format::csv_field;

    /// A trial of `task` whose answer key says `achieved`.
    fn keyed(key: &str, task: TaskKind, achieved: bool) -> TrialRow {
        let mut t = row(key);
        t.task = task;
        t.truth_achieved = achieved;
        t
    }

    #[test]
    fn answer_key_rows_count_agreement_precision_and_recall_per_key() {
        use faultline_tasks::MiniwobTask;
        use TaskKind::{Grid, Search};
        const TAB: TaskKind = TaskKind::Miniwob(MiniwobTask::ClickTab);
        const ENTER: TaskKind = TaskKind::Miniwob(MiniwobTask::EnterText);
        // MiniWoB++: 3 rewarded trials, 2 not; the policy says Success on 2 rewarded
        // trials and on both unrewarded ones: precision 2/4, recall 2/3, agreement 2/5
        // (the rewarded trial called No change and the two unrewarded ones called
        // Success disagree).
        let mut trials = vec![
            keyed("m1", TAB, true),
            keyed("m2", TAB, true),
            keyed("m3", ENTER, true),
            keyed("m4", ENTER, false),
            keyed("m5", ENTER, false),
            // Own ledgers: 1 achieved, 3 not; Success only on the achieved one.
            keyed("o1", Grid, true),
            keyed("o2", Grid, false),
            keyed("o3", Search, false),
            keyed("o4", Search, false),
        ];
        // A faulty trial whose fault did not fire is never counted.
        let mut quiet = keyed("q", TAB, false);
        quiet.fired = Some(false);
        trials.push(quiet);
        let v = |k: &str, verdict: &str| super::super::db::tests::verdict(k, "outcome", verdict);
        let verdicts = vec![
            v("m1", "success"),
            v("m2", "success"),
            v("m3", "no_change"),
            v("m4", "success"),
            v("m5", "success"),
            v("o1", "success"),
            v("o2", "fail"),
            v("o3", "no_change"),
            v("o4", "fail"),
            v("q", "success"),
        ];
        let rows = answer_key(&trials, &verdicts, &["outcome".to_string()]);
        let find = |key: AnswerKey, task: Option<TaskKind>| {
            rows.iter()
                .find(|r| r.key == key && r.task == task)
                .unwrap_or_else(|| panic!("no row for {key:?} {task:?}"))
        };
        let pooled = find(AnswerKey::SuiteReward, None);
        assert_eq!(
            (
                pooled.n,
                pooled.agree,
                pooled.said_success,
                pooled.key_success,
                pooled.both
            ),
            (5, 2, 4, 3, 2)
        );
        let cfg = AnalysisConfig::for_run(1);
        let (precision, recall) = (
            pooled.precision(&cfg).unwrap(),
            pooled.recall(&cfg).unwrap(),
        );
        // Swapped precision and recall would read 2/3 and 2/4.
        assert!((precision.point - 0.5).abs() < 1e-12, "{precision:?}");
        assert!((recall.point - 2.0 / 3.0).abs() < 1e-12, "{recall:?}");
        assert_eq!((precision.n, recall.n), (4, 3));
        let agreement = pooled.agreement(&cfg).unwrap();
        assert!((agreement.point - 0.4).abs() < 1e-12);
        for e in [agreement, precision, recall] {
            assert!(e.lower < e.point && e.point < e.upper, "no width: {e:?}");
        }
        let tab = find(AnswerKey::SuiteReward, Some(TAB));
        assert_eq!((tab.n, tab.agree, tab.both), (2, 2, 2));
        let own = find(AnswerKey::OwnLedger, None);
        assert_eq!(
            (
                own.n,
                own.agree,
                own.said_success,
                own.key_success,
                own.both
            ),
            (4, 4, 1, 1, 1)
        );
        let own_agreement = own.agreement(&cfg).unwrap();
        assert_eq!(own_agreement.n, 4);
        assert!(own_agreement.lower < own_agreement.upper);
        // The suite's rows first (tasks, then pooled), then the own ledgers'.
        let order: Vec<(AnswerKey, Option<TaskKind>)> =
            rows.iter().map(|r| (r.key, r.task)).collect();
        assert_eq!(
            order,
            vec![
                (AnswerKey::SuiteReward, Some(TAB)),
                (AnswerKey::SuiteReward, Some(ENTER)),
                (AnswerKey::SuiteReward, None),
                (AnswerKey::OwnLedger, Some(Search)),
                (AnswerKey::OwnLedger, Some(Grid)),
                (AnswerKey::OwnLedger, None),
            ]
        );
        // The CSV carries both keys, counts and intervals.
        let csv = answer_key_csv(&rows, &cfg);
        let pooled_line = csv
            .lines()
            .find(|l| l.starts_with("miniwob_reward,pooled,outcome,"))
            .unwrap();
        assert!(
            pooled_line.starts_with("miniwob_reward,pooled,outcome,5,2,4,3,2,0.4000,"),
            "{pooled_line}"
        );
        assert!(csv
            .lines()
            .any(|l| l.starts_with("own_ledger,pooled,outcome,4,4,1,1,1,1.0000,")));
        // No external-suite trial, no section.
        assert!(answer_key(&trials[5..9], &verdicts, &["outcome".to_string()]).is_empty());
    }

    #[test]
    fn caught_means_agreeing_with_the_ledger() {
        let mut not_happened = row("a");
        not_happened.truth_achieved = false;
        // A feedback fault: the click worked, the tool lied.
        let mut happened = row("b");
        happened.truth_achieved = true;
        let mut not_fired = row("c");
        not_fired.fired = Some(false);
        let trials = vec![not_happened, happened, not_fired];
        let verdicts = vec![
            verdict("a", "pixel", "no_change"),
            verdict("b", "pixel", "no_change"),
            verdict("c", "pixel", "no_change"),
            verdict("a", "outcome", "fail"),
            verdict("b", "outcome", "success"),
            verdict("c", "outcome", "success"),
        ];
        let policies = vec!["pixel".to_string(), "outcome".to_string()];
        let rows = detection(&trials, &verdicts, &policies);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].policy, "pixel");
        assert_eq!(
            (
                rows[0].fired,
                rows[0].caught,
                rows[0].missed,
                rows[0].alarms
            ),
            (2, 1, 1, 2)
        );
        assert_eq!(
            (
                rows[1].fired,
                rows[1].caught,
                rows[1].missed,
                rows[1].alarms
            ),
            (2, 2, 0, 1)
        );
        let f = firing(&trials);
        assert_eq!((f[0].faulty_trials, f[0].fired, f[0].not_fired), (3, 2, 1));
    }

    #[test]
    fn false_alarms_count_only_confirmed_outcomes() {
        let mut ok = row("w1");
        ok.condition = Condition::Working;
        ok.fired = None;
        ok.truth_achieved = true;
        let mut broken = row("w2");
        broken.condition = Condition::Working;
        broken.fired = None;
        broken.truth_achieved = false;
        let verdicts = vec![
            verdict("w1", "generic", "no_change"),
            verdict("w2", "generic", "no_change"),
        ];
        let rows = false_alarms(&[ok, broken], &verdicts, &["generic".to_string()]);
        assert_eq!(
            (
                rows[0].n_working,
                rows[0].false_alarms,
                rows[0].outcome_failed
            ),
            (2, 1, 1)
        );
        assert_eq!(
            false_alarms_csv(&rows, &AnalysisConfig::for_run(1)),
            "task,policy,n_working,false_alarms,ci_low,ci_high,ci_method\ngrid,generic,2,1,0.2065,1.0000,wilson\n"
        );
    }

    /// A fired faulty trial of `fault` on `task` with the given stored layer and stage.
    pub(crate) fn faulty(
        key: &str,
        fault: &str,
        stage: &str,
        layer: Option<&str>,
        task: &str,
    ) -> TrialRow {
        let mut t = row(key);
        t.fault = Some(fault.parse().unwrap());
        t.stage = Some(stage.parse().unwrap());
        t.layer = layer.map(|l| l.parse().unwrap());
        t.task = task.parse().unwrap();
        t
    }

    #[test]
    fn rows_are_ordered_by_layer_fault_task_and_policy() {
        let trials = vec![
            faulty("b", "tool.wrong_feedback", "feedback", Some("tool"), "form"),
            faulty("d", "dom.stale_element", "execute", Some("dom"), "select"),
            faulty("e", "dom.stale_element", "execute", Some("dom"), "form"),
            faulty("f", "dom.stale_element", "execute", Some("dom"), "search"),
            // A version-1 row: no layer stored, the stage says `tool`.
            faulty("g", "parse.token_leak", "parse", None, "search"),
            faulty("h", "execute.unscaled_coordinates", "execute", None, "grid"),
            faulty(
                "i",
                "transport.slow_response",
                "observe",
                Some("transport"),
                "form",
            ),
            faulty("j", "dom.duplicate_label", "execute", Some("dom"), "grid"),
        ];
        let mut verdicts = Vec::new();
        for t in &trials {
            // Arrival order is the reverse of the run's policy order.
            verdicts.push(verdict(&t.trial_key, "outcome", "fail"));
            verdicts.push(verdict(&t.trial_key, "unverified", "success"));
        }
        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let expected = [
            ("transport", "transport.slow_response", "form"),
            ("dom", "dom.duplicate_label", "grid"),
            ("dom", "dom.stale_element", "search"),
            ("dom", "dom.stale_element", "form"),
            ("dom", "dom.stale_element", "select"),
            ("execution", "execute.unscaled_coordinates", "grid"),
            ("tool", "parse.token_leak", "search"),
            ("tool", "tool.wrong_feedback", "form"),
        ];
        let rows = detection(&trials, &verdicts, &policies);
        let got: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.layer.name(),
                    r.fault.id(),
                    r.task.name(),
                    r.policy.as_str(),
                )
            })
            .collect();
        let want: Vec<_> = expected
            .iter()
            .flat_map(|&(l, f, t)| [(l, f, t, "unverified"), (l, f, t, "outcome")])
            .collect();
        assert_eq!(got, want);
        let fired: Vec<_> = firing(&trials)
            .iter()
            .map(|r| (r.layer.to_string(), r.fault.to_string(), r.task.to_string()))
            .collect();
        let want: Vec<_> = expected
            .iter()
            .map(|&(l, f, t)| (l.to_string(), f.to_string(), t.to_string()))
            .collect();
        assert_eq!(fired, want);
    }

    #[test]
    fn a_trial_without_a_stored_layer_takes_its_fault_s_layer() {
        let mut t = row("v1");
        t.layer = None;
        // The four reference faults of version 1: their stage's reference layer.
        for (fault, layer) in [
            (Fault::TokenLeak, Layer::Tool),
            (Fault::IframeNoChange, Layer::Tool),
            (Fault::CaptureBeforeTooltip, Layer::Tool),
            (Fault::UnscaledCoordinates, Layer::Execution),
        ] {
            t.fault = Some(fault);
            assert_eq!(t.fault_layer(), Some(layer), "{fault}");
        }
        // A stored layer wins; a working trial has none.
        t.layer = Some(Layer::SelfReport);
        assert_eq!(t.fault_layer(), Some(Layer::SelfReport));
        (t.fault, t.layer) = (None, None);
        assert_eq!(t.fault_layer(), None);
    }

    #[test]
    fn detection_csv_keeps_its_columns_and_appends_the_layer() {
        let mut v1 = row("a");
        v1.layer = None;
        let trials = vec![v1];
        let verdicts = vec![verdict("a", "outcome", "fail")];
        let rows = detection(&trials, &verdicts, &["outcome".to_string()]);
        assert_eq!(
            detection_csv(&rows, &AnalysisConfig::for_run(1)),
            "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method,layer\n\
             execute.unscaled_coordinates,execute,grid,outcome,1,1,0,1,0.2065,1.0000,wilson,execution\n"
        );
    }

    #[test]
    fn firing_collects_the_distinct_reasons_a_fault_did_not_fire() {
        let mut trials = Vec::new();
        for (key, fired, reason) in [
            ("a", true, None),
            ("b", false, Some("the page sent no save request")),
            ("c", false, Some("the page sent no save request")),
            ("d", false, Some("another reason")),
            ("e", false, None),
        ] {
            let mut t = faulty(
                key,
                "transport.slow_response",
                "observe",
                Some("transport"),
                "form",
            );
            t.fired = Some(fired);
            t.not_fired_reason = reason.map(str::to_string);
            trials.push(t);
        }
        let f = firing(&trials);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].faulty_trials, f[0].fired, f[0].not_fired), (5, 1, 4));
        assert_eq!(
            f[0].not_fired_reasons,
            vec!["another reason", "the page sent no save request"]
        );
        assert_eq!(f[0].not_fired_unexplained, 1);
    }

    #[test]
    fn layers_pool_faults_and_tasks_with_task_layout_clusters() {
        // Layer dom: two faults on grid and form, layouts 0 and 1 of each task; the same
        // layout index on two tasks is two pages, so four clusters.
        let mut trials = Vec::new();
        let mut verdicts = Vec::new();
        for (key, fault, task, layout, outcome_caught) in [
            ("g0a", "dom.stale_element", "grid", 0, true),
            ("g0b", "dom.duplicate_label", "grid", 0, true),
            ("g1a", "dom.stale_element", "grid", 1, false),
            ("g1b", "dom.duplicate_label", "grid", 1, false),
            ("f0a", "dom.stale_element", "form", 0, true),
            ("f0b", "dom.duplicate_label", "form", 0, true),
            ("f1a", "dom.stale_element", "form", 1, true),
        ] {
            let mut t = faulty(key, fault, "execute", Some("dom"), task);
            t.layout_index = layout;
            t.truth_achieved = false;
            trials.push(t);
            let v = if outcome_caught { "fail" } else { "success" };
            verdicts.push(verdict(key, "outcome", v));
            verdicts.push(verdict(key, "unverified", "success"));
        }
        // Neither a fault that did not fire nor a working trial counts, whatever their
        // verdicts say.
        let mut quiet = faulty("q", "dom.shadow_root", "execute", Some("dom"), "select");
        quiet.fired = Some(false);
        trials.push(quiet);
        verdicts.push(verdict("q", "outcome", "fail"));
        let mut working = faulty("w", "dom.stale_element", "execute", Some("dom"), "grid");
        (working.condition, working.fired) = (Condition::Working, None);
        trials.push(working);
        verdicts.push(verdict("w", "outcome", "fail"));
        // A second layer, from a version-1 row.
        let mut v1 = faulty("t", "parse.token_leak", "parse", None, "search");
        v1.truth_achieved = false;
        trials.push(v1);
        verdicts.push(verdict("t", "outcome", "fail"));

        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let cfg = AnalysisConfig::for_run(1);
        let rows = layers(&trials, &verdicts, &policies, &cfg);
        let keys: Vec<_> = rows
            .iter()
            .map(|r| (r.layer.name(), r.policy.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("dom", "unverified"),
                ("dom", "outcome"),
                ("tool", "outcome")
            ]
        );
        let dom = &rows[1];
        assert_eq!((dom.faults, dom.tasks, dom.fired, dom.caught), (2, 2, 7, 5));
        // The interval is clustered_wilson on exactly these clusters, in key order:
        // (form, 0), (form, 1), (grid, 0), (grid, 1).
        let expected = clustered_wilson(
            &ClusteredSample::from_binary(vec![
                vec![true, true],
                vec![true],
                vec![true, true],
                vec![false, false],
            ])
            .unwrap(),
            cfg.level,
        )
        .unwrap();
        let got = dom.rate.as_ref().unwrap();
        assert_eq!(*got, expected);
        assert_eq!(got.estimate.clusters, Some(4));
        assert!(got.n_effective >= 4.0 && got.n_effective < 7.0);
        // Wider than a Wilson interval that took the 7 trials as independent.
        let naive = cfg.proportion(5, 7).unwrap();
        assert!(got.estimate.lower < naive.lower && got.estimate.upper > naive.upper);
        // Unverified says success on every trial whose outcome failed: caught nothing.
        assert_eq!((rows[0].fired, rows[0].caught), (7, 0));

        let csv = layers_csv(&rows);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "layer,policy,faults,tasks,fired,caught,rate,ci_low,ci_high,ci_method,clusters,n_effective,design_effect,note"
        );
        assert_eq!(
            lines.nth(1).unwrap(),
            format!(
                "dom,outcome,2,2,7,5,0.7143,{},{},wilson-clustered,4,{},{},",
                fmt4(expected.estimate.lower),
                fmt4(expected.estimate.upper),
                fmt4(expected.n_effective),
                fmt4(expected.design_effect),
            )
        );
        // Unanimous outcomes: the design effect falls back to its cap and the note (with
        // a comma in it) is quoted.
        assert!(csv.lines().nth(1).unwrap().ends_with(&format!(
            ",wilson-clustered,4,4.0000,1.7500,{}",
            csv_field(crate::stats::NOTE_CONSTANT_OUTCOMES)
        )));
        assert!(csv_field(crate::stats::NOTE_CONSTANT_OUTCOMES).starts_with('"'));
        // One trial, one cluster of size 1: plain Wilson, nothing assumed, no note.
        assert_eq!(
            lines.next().unwrap(),
            "tool,outcome,1,1,1,1,1.0000,0.2065,1.0000,wilson-clustered,1,1.0000,1.0000,"
        );
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn the_catalogue_is_a_fault_by_policy_matrix_of_caught_over_fired() {
        let mut trials = Vec::new();
        let mut verdicts = Vec::new();
        for (key, fault, layer, task, fired, truth, outcome) in [
            // Fires on both tasks; outcome catches all but one, unverified none.
            (
                "a",
                "dom.stale_element",
                "dom",
                "select",
                true,
                false,
                "fail",
            ),
            ("b", "dom.stale_element", "dom", "form", true, false, "fail"),
            (
                "c",
                "dom.stale_element",
                "dom",
                "form",
                true,
                false,
                "success",
            ),
            // Did not fire: in the faulty trials, in no caught/fired count.
            (
                "d",
                "dom.stale_element",
                "dom",
                "form",
                false,
                false,
                "fail",
            ),
            // Never fired at all.
            (
                "e",
                "transport.slow_response",
                "transport",
                "form",
                false,
                true,
                "fail",
            ),
        ] {
            let mut t = faulty(key, fault, "execute", Some(layer), task);
            (t.fired, t.truth_achieved) = (Some(fired), truth);
            trials.push(t);
            verdicts.push(verdict(key, "unverified", "success"));
            verdicts.push(verdict(key, "outcome", outcome));
        }
        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let rows = catalogue(
            &firing(&trials),
            &detection(&trials, &verdicts, &policies),
            &policies,
        );
        assert_eq!(
            rows,
            vec![
                CatalogueRow {
                    layer: Layer::Transport,
                    fault: Fault::SlowResponse,
                    tasks: vec![TaskKind::Form],
                    faulty_trials: 1,
                    fired: 0,
                    by_policy: vec![(0, 0), (0, 0)],
                },
                CatalogueRow {
                    layer: Layer::Dom,
                    fault: Fault::StaleElement,
                    tasks: vec![TaskKind::Form, TaskKind::Select],
                    faulty_trials: 4,
                    fired: 3,
                    by_policy: vec![(0, 3), (2, 3)],
                },
            ]
        );
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
