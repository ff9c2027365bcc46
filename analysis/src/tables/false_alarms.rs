//! False alarms: verdicts other than `Success` on working trials the ledger confirms,
//! per task and policy, with their CSV text.

use super::{index_verdicts, policy_rank, working_trials};
use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::{TrialRow, VerdictRow};
use crate::format::ci_cells;
use faultline_tasks::{TaskKind, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

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

/// The false-alarm table.
pub fn false_alarms(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<FalseAlarmRow> {
    let by_trial = index_verdicts(verdicts);
    let mut acc: BTreeMap<(usize, (usize, String)), FalseAlarmRow> = BTreeMap::new();
    for t in working_trials(trials) {
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
