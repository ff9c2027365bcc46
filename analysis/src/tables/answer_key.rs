//! The policy against an independent answer key (MiniWoB++'s own reward), with its CSV
//! text.

use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::{TrialRow, VerdictRow};
use crate::format::fmt4;
use crate::stats::Estimate;
use faultline_tasks::{TaskKind, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

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
