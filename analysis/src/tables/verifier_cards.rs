//! Verifier cards: each policy's error rates against the ledger, per task and pooled,
//! with their CSV text.

use super::{faulty_trials, policy_rank, working_trials};
use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::{TrialRow, VerdictRow};
use crate::format::fmt4;
use crate::stats::{clustered_wilson, ClusteredProportion, ClusteredSample};
use faultline_tasks::{Condition, TaskKind, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A (task name, layout index) cluster, as in the layer table: the trials of one page.
type Cluster = (&'static str, u32);

/// One rate of a card: `events` out of `n`, with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct CardRate {
    /// The numerator.
    pub events: u64,
    /// The denominator: the trials the rate is over.
    pub n: u64,
    /// `events / n` with its Wilson interval on the effective sample size, the clusters
    /// being the (task, layout) pairs; `None` when `n` is 0 (no estimate, never a 0).
    pub rate: Option<ClusteredProportion>,
}

impl CardRate {
    /// The rate of the `true` outcomes among `observations`, clustered by page.
    fn of(observations: Vec<(Cluster, bool)>, cfg: &AnalysisConfig) -> CardRate {
        let n = observations.len() as u64;
        let events = observations.iter().filter(|(_, x)| *x).count() as u64;
        let rate = ClusteredSample::from_observations(
            observations
                .into_iter()
                .map(|(c, x)| (c, f64::from(u8::from(x)))),
        )
        .ok()
        .and_then(|s| clustered_wilson(&s, cfg.level).ok());
        CardRate { events, n, rate }
    }
}

/// One row of `verifier_cards.csv`: one policy's verdicts on one task's judged trials (or,
/// with `task` `None`, on every task's) against the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifierCardRow {
    /// The policy.
    pub policy: String,
    /// The task, or `None` for the row pooled over every task.
    pub task: Option<TaskKind>,
    /// Fired faulty trials the policy judged.
    pub fired: u64,
    /// Working trials the policy judged (`outcome_failed` ones included).
    pub working: u64,
    /// Success where the ledger says the outcome happened.
    pub true_positives: u64,
    /// Success where the ledger says it did not.
    pub false_positives: u64,
    /// Anything but Success where the ledger says the outcome happened.
    pub false_negatives: u64,
    /// Anything but Success where the ledger says it did not.
    pub true_negatives: u64,
    /// Of the trials whose outcome failed, the share called Success.
    pub false_positive_rate: CardRate,
    /// Of the trials whose outcome happened, the share called anything but Success.
    pub false_negative_rate: CardRate,
    /// Of the Success verdicts, the share the ledger confirms.
    pub precision: CardRate,
    /// Of the trials whose outcome happened, the share called Success.
    pub recall: CardRate,
}

/// One judged trial under one policy.
struct Judged {
    cluster: Cluster,
    said_success: bool,
    truth: bool,
}

/// The verifier cards: per policy (every policy of the run in run order, then the
/// external ones not in it, then any other with verdicts by name), one row per task of
/// the judged trials (in report order, a task the policy judged nothing of gets a row of
/// zeros) and a pooled row last.
///
/// The judged trials are exactly those the detection and false-alarm tables count: the
/// detection experiment's faulty trials whose fault fired and its working trials, each
/// with the verdicts stored for it. A trial whose fault did not fire had nothing to
/// detect, so it is left out; a policy that could not judge a trial (an infrastructure
/// error) stored no verdict for it, so the trial is in none of that policy's counts.
pub fn verifier_cards(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
    external: &[String],
    cfg: &AnalysisConfig,
) -> Vec<VerifierCardRow> {
    // The detection table's trials, then the false-alarm table's.
    let judged: BTreeMap<&str, &TrialRow> = faulty_trials(trials)
        .filter(|(t, ..)| t.fired == Some(true))
        .map(|(t, ..)| t)
        .chain(working_trials(trials))
        .map(|t| (t.trial_key.as_str(), t))
        .collect();
    let tasks: BTreeSet<(usize, TaskKind)> =
        judged.values().map(|t| (t.task.rank(), t.task)).collect();
    // Run order, then the external policies not in it; any other name after them.
    let mut order: Vec<String> = policies.to_vec();
    for p in external {
        if !order.contains(p) {
            order.push(p.clone());
        }
    }
    let mut by_policy: BTreeMap<String, Vec<(&TrialRow, &VerdictRow)>> = BTreeMap::new();
    for v in verdicts {
        if let Some(t) = judged.get(v.trial_key.as_str()) {
            by_policy.entry(v.policy.clone()).or_default().push((t, v));
        }
    }
    let names: BTreeSet<(usize, String)> = order
        .iter()
        .chain(by_policy.keys())
        .map(|p| policy_rank(&order, p))
        .collect();
    let mut rows = Vec::new();
    for (_, policy) in names {
        let scored = by_policy.remove(&policy).unwrap_or_default();
        let scopes = tasks.iter().map(|&(_, t)| Some(t)).chain([None]);
        for task in scopes {
            let mut fired = 0;
            let mut working = 0;
            let mut obs = Vec::new();
            for (t, v) in scored
                .iter()
                .filter(|(t, _)| task.is_none_or(|k| k == t.task))
            {
                match t.condition {
                    Condition::Faulty => fired += 1,
                    Condition::Working => working += 1,
                }
                obs.push(Judged {
                    cluster: (t.task.name(), t.layout_index),
                    said_success: v.verdict == Verdict::Success,
                    truth: t.truth_achieved,
                });
            }
            rows.push(card(policy.clone(), task, fired, working, &obs, cfg));
        }
    }
    rows
}

/// One card row from its judged trials.
fn card(
    policy: String,
    task: Option<TaskKind>,
    fired: u64,
    working: u64,
    obs: &[Judged],
    cfg: &AnalysisConfig,
) -> VerifierCardRow {
    let count = |said: bool, truth: bool| {
        obs.iter()
            .filter(|j| j.said_success == said && j.truth == truth)
            .count() as u64
    };
    // The outcome of each trial in a rate's denominator.
    let rate = |keep: fn(&Judged) -> bool, event: fn(&Judged) -> bool| {
        CardRate::of(
            obs.iter()
                .filter(|j| keep(j))
                .map(|j| (j.cluster, event(j)))
                .collect(),
            cfg,
        )
    };
    VerifierCardRow {
        policy,
        task,
        fired,
        working,
        true_positives: count(true, true),
        false_positives: count(true, false),
        false_negatives: count(false, true),
        true_negatives: count(false, false),
        false_positive_rate: rate(|j| !j.truth, |j| j.said_success),
        false_negative_rate: rate(|j| j.truth, |j| !j.said_success),
        precision: rate(|j| j.said_success, |j| j.truth),
        recall: rate(|j| j.truth, |j| j.said_success),
    }
}

/// `verifier_cards.csv`: one line per policy and task (or `pooled`), with the confusion
/// counts and, for each of the four rates, its n, point, (task, layout)-clustered Wilson
/// interval, clusters and effective sample size (every field of a rate empty when its n is
/// 0). The method and level are those of every interval on the line.
pub fn verifier_cards_csv(rows: &[VerifierCardRow]) -> String {
    // A rate's point, bounds, clusters and effective n (empty without an estimate).
    let cells = |r: &CardRate| match &r.rate {
        Some(p) => [
            fmt4(p.estimate.point),
            fmt4(p.estimate.lower),
            fmt4(p.estimate.upper),
            p.estimate.clusters.unwrap_or(0).to_string(),
            fmt4(p.n_effective),
        ],
        None => Default::default(),
    };
    csv_table(rows.iter().map(|r| {
        let [fpr, fpr_ci_low, fpr_ci_high, fpr_clusters, fpr_n_effective] =
            cells(&r.false_positive_rate);
        let [fnr, fnr_ci_low, fnr_ci_high, fnr_clusters, fnr_n_effective] =
            cells(&r.false_negative_rate);
        let [precision, precision_ci_low, precision_ci_high, precision_clusters, precision_n_effective] =
            cells(&r.precision);
        let [recall, recall_ci_low, recall_ci_high, recall_clusters, recall_n_effective] =
            cells(&r.recall);
        // Every interval on a line has the same method and level.
        let first = [
            &r.false_positive_rate,
            &r.false_negative_rate,
            &r.precision,
            &r.recall,
        ]
        .into_iter()
        .find_map(|c| c.rate.as_ref().map(|p| &p.estimate));
        VerifierCardsCsv {
            policy: &r.policy,
            task: r.task.map_or("pooled", TaskKind::name),
            fired: r.fired,
            working: r.working,
            true_positives: r.true_positives,
            false_positives: r.false_positives,
            false_negatives: r.false_negatives,
            true_negatives: r.true_negatives,
            fpr_n: r.false_positive_rate.n,
            fpr,
            fpr_ci_low,
            fpr_ci_high,
            fpr_clusters,
            fpr_n_effective,
            fnr_n: r.false_negative_rate.n,
            fnr,
            fnr_ci_low,
            fnr_ci_high,
            fnr_clusters,
            fnr_n_effective,
            precision_n: r.precision.n,
            precision,
            precision_ci_low,
            precision_ci_high,
            precision_clusters,
            precision_n_effective,
            recall_n: r.recall.n,
            recall,
            recall_ci_low,
            recall_ci_high,
            recall_clusters,
            recall_n_effective,
            ci_method: first.map(|e| e.method.to_string()).unwrap_or_default(),
            level: first.map(|e| e.level.to_string()).unwrap_or_default(),
        }
    }))
}

/// A line of `verifier_cards.csv`.
#[derive(Serialize, Default)]
struct VerifierCardsCsv<'a> {
    policy: &'a str,
    task: &'a str,
    fired: u64,
    working: u64,
    true_positives: u64,
    false_positives: u64,
    false_negatives: u64,
    true_negatives: u64,
    fpr_n: u64,
    fpr: String,
    fpr_ci_low: String,
    fpr_ci_high: String,
    fpr_clusters: String,
    fpr_n_effective: String,
    fnr_n: u64,
    fnr: String,
    fnr_ci_low: String,
    fnr_ci_high: String,
    fnr_clusters: String,
    fnr_n_effective: String,
    precision_n: u64,
    precision: String,
    precision_ci_low: String,
    precision_ci_high: String,
    precision_clusters: String,
    precision_n_effective: String,
    recall_n: u64,
    recall: String,
    recall_ci_low: String,
    recall_ci_high: String,
    recall_clusters: String,
    recall_n_effective: String,
    ci_method: String,
    level: String,
}
