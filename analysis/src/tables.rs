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
//! Rows about faults are ordered by the catalogue's layer ([`LAYERS`], unknown layers
//! last), then the fault id, then the task ([`task_rank`]), then the policy (run order).
//! A trial's layer is the stored one; version-1 databases store none, and their four
//! reference faults get theirs from the stage ([`trial_layer`]).

use crate::compare::{ci_columns, fmt4, AnalysisConfig};
use crate::db::{TrialRow, VerdictRow};
use crate::stats::{clustered_wilson, ClusteredProportion, ClusteredSample};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// One row of `detection.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectionRow {
    pub fault: String,
    pub stage: String,
    /// The fault's catalogue layer ([`trial_layer`]).
    pub layer: String,
    pub task: String,
    pub policy: String,
    pub fired: u64,
    pub caught: u64,
    pub missed: u64,
    pub alarms: u64,
}

/// One row of `false_alarms.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FalseAlarmRow {
    pub task: String,
    pub policy: String,
    pub n_working: u64,
    pub false_alarms: u64,
    /// Working trials whose outcome the ledger did *not* confirm (not counted above).
    pub outcome_failed: u64,
}

/// Firing statistics per fault and task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiringRow {
    pub fault: String,
    pub stage: String,
    /// The fault's catalogue layer ([`trial_layer`]).
    pub layer: String,
    pub task: String,
    pub faulty_trials: u64,
    pub fired: u64,
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
    pub layer: String,
    pub policy: String,
    /// Distinct faults of the layer with fired trials judged by the policy.
    pub faults: usize,
    /// Distinct tasks among those trials.
    pub tasks: usize,
    /// Fired faulty trials judged by the policy.
    pub fired: u64,
    pub caught: u64,
    /// `caught / fired` with its Wilson interval on the effective sample size, the clusters
    /// being the (task, layout) pairs; `None` only if it could not be computed.
    pub rate: Option<ClusteredProportion>,
}

/// One fault of the report's catalogue view: what it ran on, how often it fired, and how
/// each policy did on the trials where it fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogueRow {
    pub layer: String,
    pub fault: String,
    /// The tasks it had faulty trials on, in task order.
    pub tasks: Vec<String>,
    pub faulty_trials: u64,
    pub fired: u64,
    /// `(caught, fired)` for each policy, in the order the policies were given; `fired`
    /// counts the fired trials the policy judged.
    pub by_policy: Vec<(u64, u64)>,
}

/// The catalogue's ten layers, in report order.
pub const LAYERS: [&str; 10] = [
    "transport",
    "http",
    "resource",
    "overlay",
    "layout",
    "dom",
    "execution",
    "semantic",
    "tool",
    "self_report",
];

/// The layer of a faulty trial whose row stores none and whose stage is not one of the
/// four reference stages.
pub const UNKNOWN_LAYER: &str = "unknown";

/// A layer's place in [`LAYERS`]; unknown layers last.
pub(crate) fn layer_rank(layer: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == layer)
        .unwrap_or(usize::MAX)
}

/// A trial's catalogue layer: the stored one, or, in a version-1 database (no layer
/// column values), the reference mapping of the four stage faults' stages (`parse`,
/// `feedback`, `observe` are the harness's own tool, `execute` is execution), else
/// [`UNKNOWN_LAYER`].
pub fn trial_layer(t: &TrialRow) -> String {
    match (t.layer.as_deref(), t.stage.as_deref()) {
        (Some(layer), _) => layer.to_string(),
        (None, Some("parse" | "feedback" | "observe")) => "tool".into(),
        (None, Some("execute")) => "execution".into(),
        (None, _) => UNKNOWN_LAYER.into(),
    }
}

/// Tasks in the order of the task catalogue, then any others alphabetically (with the
/// name as the second key).
pub(crate) fn task_rank(task: &str) -> usize {
    ["search", "grid", "frame", "chart", "form", "select"]
        .iter()
        .position(|s| *s == task)
        .unwrap_or(usize::MAX)
}

/// Policies in the order given, then any others alphabetically.
pub(crate) fn policy_rank(order: &[String], policy: &str) -> (usize, String) {
    (
        order.iter().position(|p| p == policy).unwrap_or(usize::MAX),
        policy.to_string(),
    )
}

/// Sort key of a fault x task row: layer rank and name, fault, task rank and name.
pub(crate) type FaultTaskKey = (usize, String, String, usize, String);

pub(crate) fn fault_task_key(layer: &str, fault: &str, task: &str) -> FaultTaskKey {
    (
        layer_rank(layer),
        layer.to_string(),
        fault.to_string(),
        task_rank(task),
        task.to_string(),
    )
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

/// The detection table.
pub fn detection(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<DetectionRow> {
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<DetectionKey, DetectionRow> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.experiment == "detection" && t.condition == "faulty" && t.fired == Some(true))
    {
        let fault = t.fault.clone().unwrap_or_default();
        let stage = t.stage.clone().unwrap_or_default();
        let layer = trial_layer(t);
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (
                fault_task_key(&layer, &fault, &t.task),
                policy_rank(policies, &v.policy),
            );
            let row = acc.entry(key).or_insert_with(|| DetectionRow {
                fault: fault.clone(),
                stage: stage.clone(),
                layer: layer.clone(),
                task: t.task.clone(),
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
            if v.verdict != "success" {
                row.alarms += 1;
            }
        }
    }
    acc.into_values().collect()
}

/// Whether a verdict on a fired faulty trial agrees with the ledger (see the module docs).
fn caught(t: &TrialRow, v: &VerdictRow) -> bool {
    (v.verdict == "success") == t.truth_achieved
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
    type Cluster = (String, u32);
    struct Acc {
        layer: String,
        policy: String,
        faults: BTreeSet<String>,
        tasks: BTreeSet<String>,
        outcomes: Vec<(Cluster, f64)>,
    }
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<(usize, String, (usize, String)), Acc> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.experiment == "detection" && t.condition == "faulty" && t.fired == Some(true))
    {
        let layer = trial_layer(t);
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (
                layer_rank(&layer),
                layer.clone(),
                policy_rank(policies, &v.policy),
            );
            let a = acc.entry(key).or_insert_with(|| Acc {
                layer: layer.clone(),
                policy: v.policy.clone(),
                faults: BTreeSet::new(),
                tasks: BTreeSet::new(),
                outcomes: Vec::new(),
            });
            a.faults.insert(t.fault.clone().unwrap_or_default());
            a.tasks.insert(t.task.clone());
            a.outcomes.push((
                (t.task.clone(), t.layout_index),
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
    let mut acc: BTreeMap<(usize, String, (usize, String)), FalseAlarmRow> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.experiment == "detection" && t.condition == "working")
    {
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (
                task_rank(&t.task),
                t.task.clone(),
                policy_rank(policies, &v.policy),
            );
            let row = acc.entry(key).or_insert_with(|| FalseAlarmRow {
                task: t.task.clone(),
                policy: v.policy.clone(),
                n_working: 0,
                false_alarms: 0,
                outcome_failed: 0,
            });
            row.n_working += 1;
            if !t.truth_achieved {
                row.outcome_failed += 1;
            } else if v.verdict != "success" {
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
    for t in trials
        .iter()
        .filter(|t| t.experiment == "detection" && t.condition == "faulty")
    {
        let fault = t.fault.clone().unwrap_or_default();
        let stage = t.stage.clone().unwrap_or_default();
        let layer = trial_layer(t);
        let (row, reasons) = acc
            .entry(fault_task_key(&layer, &fault, &t.task))
            .or_insert_with(|| {
                let row = FiringRow {
                    fault: fault.clone(),
                    stage: stage.clone(),
                    layer: layer.clone(),
                    task: t.task.clone(),
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
    let key = |layer: &str, fault: &str| (layer_rank(layer), layer.to_string(), fault.to_string());
    let mut acc: BTreeMap<(usize, String, String), CatalogueRow> = BTreeMap::new();
    for f in firing {
        let row = acc
            .entry(key(&f.layer, &f.fault))
            .or_insert_with(|| CatalogueRow {
                layer: f.layer.clone(),
                fault: f.fault.clone(),
                tasks: Vec::new(),
                faulty_trials: 0,
                fired: 0,
                by_policy: vec![(0, 0); policies.len()],
            });
        // Firing rows come in task order within a fault.
        if !row.tasks.contains(&f.task) {
            row.tasks.push(f.task.clone());
        }
        row.faulty_trials += f.faulty_trials;
        row.fired += f.fired;
    }
    for d in detection {
        let (Some(row), Some(i)) = (
            acc.get_mut(&key(&d.layer, &d.fault)),
            policies.iter().position(|p| *p == d.policy),
        ) else {
            continue;
        };
        row.by_policy[i].0 += d.caught;
        row.by_policy[i].1 += d.fired;
    }
    acc.into_values().collect()
}

/// Quotes a CSV field when needed (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `detection.csv`; the interval is on caught/fired. `layer` comes last, so the columns
/// before it are those of earlier releases.
pub fn detection_csv(rows: &[DetectionRow], cfg: &AnalysisConfig) -> String {
    let mut out = String::from(
        "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method,layer\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.fault),
            csv_field(&r.stage),
            csv_field(&r.task),
            csv_field(&r.policy),
            r.fired,
            r.caught,
            r.missed,
            r.alarms,
            ci_columns(cfg.proportion(r.caught, r.fired).as_ref()),
            csv_field(&r.layer),
        );
    }
    out
}

/// `layers.csv`: caught/fired per layer and policy with the (task, layout)-clustered
/// Wilson interval; after it the clusters, the effective sample size, the design effect
/// applied and any note on it (when the design effect could not be estimated).
pub fn layers_csv(rows: &[LayerRow]) -> String {
    let mut out = String::from(
        "layer,policy,faults,tasks,fired,caught,rate,ci_low,ci_high,ci_method,clusters,n_effective,design_effect,note\n",
    );
    for r in rows {
        let p = r.rate.as_ref();
        let e = p.map(|p| &p.estimate);
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.layer),
            csv_field(&r.policy),
            r.faults,
            r.tasks,
            r.fired,
            r.caught,
            e.map(|e| fmt4(e.point)).unwrap_or_default(),
            ci_columns(e),
            e.and_then(|e| e.clusters).unwrap_or(0),
            p.map(|p| fmt4(p.n_effective)).unwrap_or_default(),
            p.map(|p| fmt4(p.design_effect)).unwrap_or_default(),
            csv_field(e.and_then(|e| e.note.as_deref()).unwrap_or_default()),
        );
    }
    out
}

/// `false_alarms.csv`; the interval is on false alarms out of the working trials the
/// ledger confirmed (the only ones that can be false alarms).
pub fn false_alarms_csv(rows: &[FalseAlarmRow], cfg: &AnalysisConfig) -> String {
    let mut out = String::from("task,policy,n_working,false_alarms,ci_low,ci_high,ci_method\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            csv_field(&r.task),
            csv_field(&r.policy),
            r.n_working,
            r.false_alarms,
            ci_columns(
                cfg.proportion(r.false_alarms, r.n_working - r.outcome_failed)
                    .as_ref()
            )
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tests::{row, verdict};

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
        ok.condition = "working".into();
        ok.fired = None;
        ok.truth_achieved = true;
        let mut broken = row("w2");
        broken.condition = "working".into();
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
    fn faulty(key: &str, fault: &str, stage: &str, layer: Option<&str>, task: &str) -> TrialRow {
        let mut t = row(key);
        t.fault = Some(fault.into());
        t.stage = Some(stage.into());
        t.layer = layer.map(str::to_string);
        t.task = task.into();
        t
    }

    #[test]
    fn rows_are_ordered_by_layer_fault_task_and_policy() {
        let trials = vec![
            faulty("a", "zz.mystery", "observe", Some("quantum"), "grid"),
            faulty("b", "tool.wrong_feedback", "feedback", Some("tool"), "form"),
            faulty("c", "dom.stale_element", "execute", Some("dom"), "other"),
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
            ("dom", "dom.stale_element", "other"),
            ("execution", "execute.unscaled_coordinates", "grid"),
            ("tool", "parse.token_leak", "search"),
            ("tool", "tool.wrong_feedback", "form"),
            ("quantum", "zz.mystery", "grid"),
        ];
        let rows = detection(&trials, &verdicts, &policies);
        let got: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.layer.as_str(),
                    r.fault.as_str(),
                    r.task.as_str(),
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
            .map(|r| (r.layer.clone(), r.fault.clone(), r.task.clone()))
            .collect();
        let want: Vec<_> = expected
            .iter()
            .map(|&(l, f, t)| (l.to_string(), f.to_string(), t.to_string()))
            .collect();
        assert_eq!(fired, want);
        // Tasks: the catalogue's six in order, then others.
        let ranks: Vec<_> = ["search", "grid", "frame", "chart", "form", "select", "x"]
            .iter()
            .map(|t| task_rank(t))
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
    }

    #[test]
    fn a_trial_without_a_stored_layer_takes_its_stage_s_reference_layer() {
        let mut t = row("v1");
        t.layer = None;
        for (stage, layer) in [
            ("parse", "tool"),
            ("feedback", "tool"),
            ("observe", "tool"),
            ("execute", "execution"),
            ("dispatch", UNKNOWN_LAYER),
        ] {
            t.stage = Some(stage.into());
            assert_eq!(trial_layer(&t), layer, "stage {stage}");
        }
        t.stage = None;
        assert_eq!(trial_layer(&t), UNKNOWN_LAYER);
        // A stored layer wins over the stage.
        t.stage = Some("parse".into());
        t.layer = Some("self_report".into());
        assert_eq!(trial_layer(&t), "self_report");
        assert_eq!(layer_rank("transport"), 0);
        assert_eq!(layer_rank("self_report"), 9);
        assert_eq!(layer_rank(UNKNOWN_LAYER), usize::MAX);
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
            ("g0a", "dom.a", "grid", 0, true),
            ("g0b", "dom.b", "grid", 0, true),
            ("g1a", "dom.a", "grid", 1, false),
            ("g1b", "dom.b", "grid", 1, false),
            ("f0a", "dom.a", "form", 0, true),
            ("f0b", "dom.b", "form", 0, true),
            ("f1a", "dom.a", "form", 1, true),
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
        let mut quiet = faulty("q", "dom.c", "execute", Some("dom"), "select");
        quiet.fired = Some(false);
        trials.push(quiet);
        verdicts.push(verdict("q", "outcome", "fail"));
        let mut working = faulty("w", "dom.a", "execute", Some("dom"), "grid");
        (working.condition, working.fired) = ("working".into(), None);
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
            .map(|r| (r.layer.as_str(), r.policy.as_str()))
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
                    layer: "transport".into(),
                    fault: "transport.slow_response".into(),
                    tasks: vec!["form".into()],
                    faulty_trials: 1,
                    fired: 0,
                    by_policy: vec![(0, 0), (0, 0)],
                },
                CatalogueRow {
                    layer: "dom".into(),
                    fault: "dom.stale_element".into(),
                    tasks: vec!["form".into(), "select".into()],
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
