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

use crate::compare::{ci_columns, AnalysisConfig};
use crate::db::{TrialRow, VerdictRow};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// One row of `detection.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectionRow {
    pub fault: String,
    pub stage: String,
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
    pub task: String,
    pub faulty_trials: u64,
    pub fired: u64,
    pub not_fired: u64,
}

/// Orders for stable output: stage order, then the names as given.
fn stage_rank(stage: &str) -> usize {
    ["parse", "execute", "feedback", "observe"]
        .iter()
        .position(|s| *s == stage)
        .unwrap_or(usize::MAX)
}

pub(crate) fn task_rank(task: &str) -> usize {
    ["search", "grid", "frame", "chart"]
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

/// Sort key of a detection row: stage, fault, task and policy ranks with their names.
type DetectionKey = (usize, String, usize, String, (usize, String));

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
        for v in by_trial.get(t.trial_key.as_str()).into_iter().flatten() {
            let key = (
                stage_rank(&stage),
                fault.clone(),
                task_rank(&t.task),
                t.task.clone(),
                policy_rank(policies, &v.policy),
            );
            let row = acc.entry(key).or_insert_with(|| DetectionRow {
                fault: fault.clone(),
                stage: stage.clone(),
                task: t.task.clone(),
                policy: v.policy.clone(),
                fired: 0,
                caught: 0,
                missed: 0,
                alarms: 0,
            });
            let success = v.verdict == "success";
            row.fired += 1;
            if success == t.truth_achieved {
                row.caught += 1;
            } else {
                row.missed += 1;
            }
            if !success {
                row.alarms += 1;
            }
        }
    }
    acc.into_values().collect()
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

/// How often each fault fired.
pub fn firing(trials: &[TrialRow]) -> Vec<FiringRow> {
    let mut acc: BTreeMap<(usize, String, usize, String), FiringRow> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.experiment == "detection" && t.condition == "faulty")
    {
        let fault = t.fault.clone().unwrap_or_default();
        let stage = t.stage.clone().unwrap_or_default();
        let row = acc
            .entry((
                stage_rank(&stage),
                fault.clone(),
                task_rank(&t.task),
                t.task.clone(),
            ))
            .or_insert_with(|| FiringRow {
                fault: fault.clone(),
                stage: stage.clone(),
                task: t.task.clone(),
                faulty_trials: 0,
                fired: 0,
                not_fired: 0,
            });
        row.faulty_trials += 1;
        if t.fired == Some(true) {
            row.fired += 1;
        } else {
            row.not_fired += 1;
        }
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

/// `detection.csv`; the interval is on caught/fired.
pub fn detection_csv(rows: &[DetectionRow], cfg: &AnalysisConfig) -> String {
    let mut out = String::from(
        "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            csv_field(&r.fault),
            csv_field(&r.stage),
            csv_field(&r.task),
            csv_field(&r.policy),
            r.fired,
            r.caught,
            r.missed,
            r.alarms,
            ci_columns(cfg.proportion(r.caught, r.fired).as_ref())
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

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
