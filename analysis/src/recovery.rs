//! Tables of the recovery experiment, computed from stored episodes.
//!
//! Scoring rules (the ledger's verdict at the end of the episode is `success`):
//!
//! - An episode **recovered** when the ledger confirms the task's outcome at the end,
//!   whatever the agent did after the replayed faulty decision.
//! - Only episodes whose fault **fired** are scored. Episodes whose fault left no witness
//!   never count as recovered or not recovered: they are reported as `not_fired`.
//! - **Detected** is `detected_at_first_step`: the policy's verdict on the replayed decision
//!   agreed with the ledger, the detection tables' "caught".
//! - The R runs of one layout under one policy are correlated (same page, same fault, often
//!   the same agent behaviour), so the layout is the cluster: success rates get a Wilson
//!   interval on the effective sample size ([`clustered_wilson`]), and paired comparisons
//!   resample whole layouts.

use crate::compare::{paired_csv_columns, paired_csv_header, paired_outcomes, PairedOutcomes};
use crate::config::AnalysisConfig;
use crate::csv_row::csv_table;
use crate::db::EpisodeRow;
use crate::format::{ci_cells, fmt4, CsvTable};
use crate::stats::{clustered_wilson, ClusteredProportion, ClusteredSample};
use crate::tables::policy_rank;
use faultline_faults::Fault;
use faultline_tasks::seed::derive_analysis;
use faultline_tasks::{StopReason, TaskKind, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Sort key of a task x fault x policy x agent cell: task rank, fault id, policy rank and
/// name, agent.
type CellKey = (usize, &'static str, (usize, String), String);

fn cell_key(e: &EpisodeRow, policies: &[String]) -> CellKey {
    (
        e.task.rank(),
        e.fault.id(),
        policy_rank(policies, &e.policy),
        e.agent.clone(),
    )
}

/// Every episode in report order: task ([`TaskKind::rank`]), fault id, policy (in `policies` order, then others alphabetically), agent,
/// run, layout; the episode key breaks any remaining tie, so the order never depends on the
/// order rows arrive in.
pub fn episodes_in_order<'a>(
    episodes: &'a [EpisodeRow],
    policies: &[String],
) -> Vec<&'a EpisodeRow> {
    let mut out: Vec<&EpisodeRow> = episodes.iter().collect();
    out.sort_by_cached_key(|e| {
        (
            cell_key(e, policies),
            e.run,
            e.layout_index,
            e.episode_key.clone(),
        )
    });
    out
}

fn bit(b: bool) -> u8 {
    u8::from(b)
}

/// `recovery.csv`: one row per episode, fired or not, in [`episodes_in_order`] order.
pub fn recovery_csv(episodes: &[&EpisodeRow]) -> String {
    csv_table(episodes.iter().map(|e| RecoveryCsv {
        task: e.task.name(),
        fault: e.fault.id(),
        policy: &e.policy,
        run: e.run,
        layout: e.layout_index,
        success: bit(e.success),
        browser_actions: e.browser_actions,
        steps: e.steps,
        stop_reason: e.stop_reason.name(),
        detected_at_first_step: bit(e.detected_at_first_step),
        agent: &e.agent,
        fired: bit(e.fired),
        first_verdict: e.first_verdict.map_or("none", Verdict::name),
        episode_seed: e.episode_seed,
    }))
}

/// A line of `recovery.csv` (the booleans as 0 or 1).
#[derive(Serialize, Default)]
struct RecoveryCsv<'a> {
    task: &'a str,
    fault: &'a str,
    policy: &'a str,
    run: u32,
    layout: u32,
    success: u8,
    browser_actions: u32,
    steps: u32,
    stop_reason: &'a str,
    detected_at_first_step: u8,
    agent: &'a str,
    fired: u8,
    first_verdict: &'a str,
    episode_seed: u64,
}

/// One task x fault x policy x agent cell: the success rate and the detection x recovery
/// cross-table over its fired episodes, and how many did not fire.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryCell {
    /// The task.
    pub task: TaskKind,
    /// The fault armed in the episodes.
    pub fault: Fault,
    /// The policy whose messages the agent was given.
    pub policy: String,
    /// The agent.
    pub agent: String,
    /// Episodes whose fault fired: the only ones scored.
    pub n: u64,
    /// Fired episodes the ledger confirmed at the end.
    pub successes: u64,
    /// Episodes whose fault did not fire; in no other count.
    pub not_fired: u64,
    /// Detected at the first step and recovered.
    pub detected_recovered: u64,
    /// Detected at the first step, yet not recovered.
    pub detected_not_recovered: u64,
    /// Recovered although the policy's first verdict disagreed with the ledger.
    pub recovered_undetected: u64,
    /// Neither detected nor recovered.
    pub neither: u64,
    /// `successes / n` with its layout-clustered Wilson interval; `None` when nothing fired.
    pub rate: Option<ClusteredProportion>,
}

/// The cells in report order (task, fault, policy, agent). A cell whose episodes all failed
/// to fire is kept, with `n = 0` and no rate, so its not-fired count stays visible.
pub fn recovery_cells(
    episodes: &[EpisodeRow],
    policies: &[String],
    cfg: &AnalysisConfig,
) -> Vec<RecoveryCell> {
    let mut acc: BTreeMap<CellKey, (RecoveryCell, Vec<(u32, f64)>)> = BTreeMap::new();
    for e in episodes {
        let (cell, outcomes) = acc.entry(cell_key(e, policies)).or_insert_with(|| {
            let cell = RecoveryCell {
                task: e.task,
                fault: e.fault,
                policy: e.policy.clone(),
                agent: e.agent.clone(),
                n: 0,
                successes: 0,
                not_fired: 0,
                detected_recovered: 0,
                detected_not_recovered: 0,
                recovered_undetected: 0,
                neither: 0,
                rate: None,
            };
            (cell, Vec::new())
        });
        if !e.fired {
            cell.not_fired += 1;
            continue;
        }
        cell.n += 1;
        cell.successes += u64::from(e.success);
        *match (e.detected_at_first_step, e.success) {
            (true, true) => &mut cell.detected_recovered,
            (true, false) => &mut cell.detected_not_recovered,
            (false, true) => &mut cell.recovered_undetected,
            (false, false) => &mut cell.neither,
        } += 1;
        // Within a cell task, fault, policy and agent are fixed: the layout is the cluster.
        outcomes.push((e.layout_index, f64::from(bit(e.success))));
    }
    acc.into_values()
        .map(|(mut cell, outcomes)| {
            cell.rate = ClusteredSample::from_observations(outcomes)
                .ok()
                .and_then(|s| clustered_wilson(&s, cfg.level).ok());
            cell
        })
        .collect()
}

/// `recovery_summary.csv`: the success rate per cell with its clustered interval. After
/// the interval come the clusters (layouts), the effective sample size, the not-fired
/// count, then the level, the design effect applied and any note on it.
pub fn recovery_summary_csv(cells: &[RecoveryCell]) -> String {
    csv_table(cells.iter().map(|c| {
        let r = c.rate.as_ref();
        let e = r.map(|r| &r.estimate);
        let [ci_low, ci_high, ci_method] = ci_cells(e);
        RecoverySummaryCsv {
            task: c.task.name(),
            fault: c.fault.id(),
            policy: &c.policy,
            agent: &c.agent,
            n: c.n,
            successes: c.successes,
            rate: e.map(|e| fmt4(e.point)).unwrap_or_default(),
            ci_low,
            ci_high,
            ci_method,
            clusters: e.and_then(|e| e.clusters).unwrap_or(0),
            n_effective: r.map(|r| fmt4(r.n_effective)).unwrap_or_default(),
            not_fired: c.not_fired,
            level: e.map(|e| e.level.to_string()).unwrap_or_default(),
            design_effect: r.map(|r| fmt4(r.design_effect)).unwrap_or_default(),
            note: e.and_then(|e| e.note.as_deref()).unwrap_or_default(),
        }
    }))
}

/// A line of `recovery_summary.csv`.
#[derive(Serialize, Default)]
struct RecoverySummaryCsv<'a> {
    task: &'a str,
    fault: &'a str,
    policy: &'a str,
    agent: &'a str,
    n: u64,
    successes: u64,
    rate: String,
    ci_low: String,
    ci_high: String,
    ci_method: String,
    clusters: usize,
    n_effective: String,
    not_fired: u64,
    level: String,
    design_effect: String,
    note: &'a str,
}

/// `detection_recovery.csv`: the detection x recovery cross-table per cell, over fired
/// episodes (the four counts sum to `n`).
pub fn detection_recovery_csv(cells: &[RecoveryCell]) -> String {
    csv_table(cells.iter().map(|c| DetectionRecoveryCsv {
        task: c.task.name(),
        fault: c.fault.id(),
        policy: &c.policy,
        agent: &c.agent,
        n: c.n,
        detected_recovered: c.detected_recovered,
        detected_not_recovered: c.detected_not_recovered,
        recovered_undetected: c.recovered_undetected,
        neither: c.neither,
    }))
}

/// A line of `detection_recovery.csv`.
#[derive(Serialize, Default)]
struct DetectionRecoveryCsv<'a> {
    task: &'a str,
    fault: &'a str,
    policy: &'a str,
    agent: &'a str,
    n: u64,
    detected_recovered: u64,
    detected_not_recovered: u64,
    recovered_undetected: u64,
    neither: u64,
}

/// How fired episodes ended, per task x policy x agent (summed over faults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReasonRow {
    /// The task.
    pub task: TaskKind,
    /// The policy whose messages the agent was given.
    pub policy: String,
    /// The agent.
    pub agent: String,
    /// Fired episodes.
    pub n: u64,
    /// Counts in [`StopReason::ALL`] order.
    pub counts: [u64; StopReason::ALL.len()],
}

/// How fired episodes ended, per task x policy x agent (in task, policy, agent order);
/// episodes whose fault did not fire are left out.
pub fn stop_reasons(episodes: &[EpisodeRow], policies: &[String]) -> Vec<StopReasonRow> {
    let mut acc: BTreeMap<(usize, (usize, String), String), StopReasonRow> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.fired) {
        let key = (
            e.task.rank(),
            policy_rank(policies, &e.policy),
            e.agent.clone(),
        );
        let row = acc.entry(key).or_insert_with(|| StopReasonRow {
            task: e.task,
            policy: e.policy.clone(),
            agent: e.agent.clone(),
            n: 0,
            counts: [0; StopReason::ALL.len()],
        });
        row.n += 1;
        let i = StopReason::ALL
            .iter()
            .position(|r| *r == e.stop_reason)
            .expect("every stop reason is in ALL");
        row.counts[i] += 1;
    }
    acc.into_values().collect()
}

/// One paired comparison of two policies' recovery success.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryComparison {
    /// `cell` for one task, fault and agent; `all` for every task and fault of one agent.
    pub scope: String,
    /// The task, or `*` for scope `all`.
    pub task: String,
    /// The fault, or `*` for scope `all`.
    pub fault: String,
    /// The agent (never pooled across agents).
    pub agent: String,
    /// Policy A, the earlier of the two in the run's policy order.
    pub policy_a: String,
    /// Policy B, the later of the two in the run's policy order.
    pub policy_b: String,
    /// Success rates of A and B on the same episodes, B minus A.
    pub paired: PairedOutcomes,
}

/// What a pair of episodes shares: task (rank, name), fault id, agent, layout and run. Two
/// policies' episodes with the same key saw the same page with the same fault.
type PairKey = (usize, &'static str, &'static str, String, u32, u32);

/// Each episode pair's success per policy: fired episodes keyed by task, fault, agent,
/// layout and run.
fn pairs_by_key(episodes: &[EpisodeRow]) -> BTreeMap<PairKey, BTreeMap<&str, bool>> {
    let mut by_pair: BTreeMap<PairKey, BTreeMap<&str, bool>> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.fired) {
        let key = (
            e.task.rank(),
            e.task.name(),
            e.fault.id(),
            e.agent.clone(),
            e.layout_index,
            e.run,
        );
        by_pair
            .entry(key)
            .or_default()
            .insert(e.policy.as_str(), e.success);
    }
    by_pair
}

/// The `(layout, a, b)` rows of the pairs `in_scope` where both policies ran.
fn paired_rows<'k>(
    by_pair: &'k BTreeMap<PairKey, BTreeMap<&str, bool>>,
    in_scope: impl Fn(&PairKey) -> bool,
    a: &str,
    b: &str,
) -> Vec<((&'k str, u32), bool, bool)> {
    by_pair
        .iter()
        .filter(|(k, _)| in_scope(k))
        .filter_map(|(k, success)| Some(((k.1, k.4), *success.get(a)?, *success.get(b)?)))
        .collect()
}

/// Every pair of policies (later minus earlier in `policies` order), per task x fault x
/// agent and then over all tasks and faults of each agent (agents are never pooled: they
/// are what is being evaluated).
///
/// Episodes pair on the same task, fault, agent, layout and run, and only when the fault
/// fired in both. The cluster is the layout (task and layout index), so the bootstrap
/// resamples layouts with every run of both policies kept together. Seeds derive from the
/// analysis seed and `recovery/<scope>/<task>/<fault>/<agent>/<a>/<b>`.
pub fn recovery_comparisons(
    episodes: &[EpisodeRow],
    policies: &[String],
    cfg: &AnalysisConfig,
) -> Vec<RecoveryComparison> {
    let by_pair = pairs_by_key(episodes);
    let mut present: Vec<&str> = episodes.iter().map(|e| e.policy.as_str()).collect();
    present.sort_by_key(|p| policy_rank(policies, p));
    present.dedup();
    let cells: BTreeSet<(usize, &str, &str, String)> = by_pair
        .keys()
        .map(|k| (k.0, k.1, k.2, k.3.clone()))
        .collect();
    let agents: BTreeSet<&str> = by_pair.keys().map(|k| k.3.as_str()).collect();
    let mut scopes: Vec<(&str, String, String, String)> = cells
        .into_iter()
        .map(|(_, task, fault, agent)| ("cell", task.to_string(), fault.to_string(), agent))
        .collect();
    scopes.extend(
        agents
            .into_iter()
            .map(|a| ("all", "*".to_string(), "*".to_string(), a.to_string())),
    );
    let mut out = Vec::new();
    for (scope, task, fault, agent) in &scopes {
        let in_scope =
            |k: &PairKey| k.3 == *agent && (*scope == "all" || (k.1 == *task && k.2 == *fault));
        for (i, a) in present.iter().enumerate() {
            for b in &present[i + 1..] {
                let rows = paired_rows(&by_pair, in_scope, a, b);
                let seed = derive_analysis(
                    cfg.seed,
                    &format!("recovery/{scope}/{task}/{fault}/{agent}/{a}/{b}"),
                );
                if let Some(paired) = paired_outcomes(&rows, cfg, seed) {
                    out.push(RecoveryComparison {
                        scope: scope.to_string(),
                        task: task.clone(),
                        fault: fault.clone(),
                        agent: agent.clone(),
                        policy_a: a.to_string(),
                        policy_b: b.to_string(),
                        paired,
                    });
                }
            }
        }
    }
    out
}

/// `recovery_comparisons.csv`, in the style of `comparisons.csv`.
pub fn recovery_comparisons_csv(rows: &[RecoveryComparison], cfg: &AnalysisConfig) -> String {
    let mut columns: Vec<String> = ["scope", "task", "fault", "agent", "policy_a", "policy_b"]
        .map(str::to_string)
        .to_vec();
    columns.extend(paired_csv_header("success_a", "success_b", "difference"));
    let mut table = CsvTable::new(&columns);
    for r in rows {
        let mut fields = vec![
            r.scope.clone(),
            r.task.clone(),
            r.fault.clone(),
            r.agent.clone(),
            r.policy_a.clone(),
            r.policy_b.clone(),
        ];
        fields.extend(paired_csv_columns(&r.paired, cfg));
        table.row(&fields);
    }
    table.finish()
}

/// The policy whose recovery gain [`recovery_gain`] measures, and its baseline.
pub const GAIN_POLICIES: (&str, &str) = ("unverified", "outcome");

/// The recovery gain of `outcome` over `unverified` (success rate of `outcome` minus that
/// of `unverified` on the same episodes), per agent: per task (pooled over its faults) and
/// over every task and fault. Rows are [`RecoveryComparison`]s with scope `task` (fault
/// `*`) or `all`; the `all` row is the `all` row of [`recovery_comparisons`] for the two
/// policies, seed included. Empty when the episodes lack either policy.
pub fn recovery_gain(episodes: &[EpisodeRow], cfg: &AnalysisConfig) -> Vec<RecoveryComparison> {
    let (a, b) = GAIN_POLICIES;
    let by_pair = pairs_by_key(episodes);
    let tasks: BTreeSet<(usize, &str)> = by_pair.keys().map(|k| (k.0, k.1)).collect();
    let agents: BTreeSet<&str> = by_pair.keys().map(|k| k.3.as_str()).collect();
    let mut out = Vec::new();
    for agent in agents {
        let scopes = tasks
            .iter()
            .map(|(_, t)| ("task", *t))
            .chain(std::iter::once(("all", "*")));
        for (scope, task) in scopes {
            let in_scope = |k: &PairKey| k.3 == agent && (scope == "all" || k.1 == task);
            let rows = paired_rows(&by_pair, in_scope, a, b);
            let seed = derive_analysis(
                cfg.seed,
                &format!("recovery/{scope}/{task}/*/{agent}/{a}/{b}"),
            );
            if let Some(paired) = paired_outcomes(&rows, cfg, seed) {
                out.push(RecoveryComparison {
                    scope: scope.to_string(),
                    task: task.to_string(),
                    fault: "*".to_string(),
                    agent: agent.to_string(),
                    policy_a: a.to_string(),
                    policy_b: b.to_string(),
                    paired,
                });
            }
        }
    }
    out
}

/// `recovery_gain.csv`: [`recovery_gain`]'s rows, `gain` = success of `outcome` minus
/// success of `unverified`.
pub fn recovery_gain_csv(rows: &[RecoveryComparison], cfg: &AnalysisConfig) -> String {
    let mut columns: Vec<String> = ["scope", "task", "agent"].map(str::to_string).to_vec();
    columns.extend(paired_csv_header(
        "success_unverified",
        "success_outcome",
        "gain",
    ));
    let mut table = CsvTable::new(&columns);
    for r in rows {
        let mut fields = vec![r.scope.clone(), r.task.clone(), r.agent.clone()];
        fields.extend(paired_csv_columns(&r.paired, cfg));
        table.row(&fields);
    }
    table.finish()
}

/// Everything the report needs from the episodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery<'a> {
    /// Every episode, in report order.
    pub episodes: Vec<&'a EpisodeRow>,
    /// One row per task x fault x policy x agent cell ([`recovery_cells`]).
    pub cells: Vec<RecoveryCell>,
    /// How fired episodes ended ([`stop_reasons`]).
    pub stop_reasons: Vec<StopReasonRow>,
    /// The paired policy comparisons on recovery success ([`recovery_comparisons`]).
    pub comparisons: Vec<RecoveryComparison>,
    /// The recovery gain of `outcome` over `unverified` ([`recovery_gain`]).
    pub gain: Vec<RecoveryComparison>,
}

impl<'a> Recovery<'a> {
    /// `None` when there are no episodes (a detection-only or older run).
    pub fn analyse(
        episodes: &'a [EpisodeRow],
        policies: &[String],
        cfg: &AnalysisConfig,
    ) -> Option<Recovery<'a>> {
        (!episodes.is_empty()).then(|| Recovery {
            episodes: episodes_in_order(episodes, policies),
            cells: recovery_cells(episodes, policies, cfg),
            stop_reasons: stop_reasons(episodes, policies),
            comparisons: recovery_comparisons(episodes, policies, cfg),
            gain: recovery_gain(episodes, cfg),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::db::tests::episode;
    use crate::stats::Method;

    pub(crate) fn policies() -> Vec<String> {
        ["unverified", "generic", "pixel", "outcome"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// A fired episode of the `frame` task's feedback fault.
    pub(crate) fn ep(policy: &str, layout: u32, run: u32, success: bool) -> EpisodeRow {
        let mut e = episode(&format!(
            "recovery/frame/feedback.iframe_no_change/{policy}/scripted/r{run}/{layout:03}"
        ));
        e.policy = policy.into();
        e.layout_index = layout;
        e.run = run;
        e.success = success;
        e.episode_seed = u64::from(layout * 10 + run);
        e
    }

    /// Four layouts x three runs under `unverified` (never recovers) and `outcome`
    /// (recovers except on layout 3, detects every time), plus one not-fired episode of
    /// each.
    pub(crate) fn experiment() -> Vec<EpisodeRow> {
        let mut out = Vec::new();
        for layout in 0..4 {
            for run in 0..3 {
                out.push(ep("unverified", layout, run, false));
                let mut o = ep("outcome", layout, run, layout != 3);
                o.detected_at_first_step = true;
                o.first_verdict = Some(Verdict::Success);
                o.stop_reason = if layout == 3 {
                    StopReason::OverBudget
                } else {
                    StopReason::Stopped
                };
                out.push(o);
            }
        }
        for policy in ["unverified", "outcome"] {
            let mut nf = ep(policy, 4, 0, true);
            nf.fired = false;
            out.push(nf);
        }
        out
    }

    #[test]
    fn episodes_are_ordered_by_task_fault_policy_agent_run_layout() {
        let mut grid = ep("outcome", 0, 0, true);
        grid.task = TaskKind::Grid;
        let mut other = ep("unverified", 0, 0, true);
        other.task = TaskKind::Select;
        let episodes = vec![
            other,
            ep("outcome", 1, 0, true),
            ep("outcome", 0, 1, true),
            ep("unverified", 2, 0, true),
            grid,
            ep("outcome", 0, 0, true),
        ];
        let order: Vec<(String, String, u32, u32)> = episodes_in_order(&episodes, &policies())
            .iter()
            .map(|e| (e.task.to_string(), e.policy.clone(), e.run, e.layout_index))
            .collect();
        let want = [
            ("grid", "outcome", 0, 0),
            ("frame", "unverified", 0, 2),
            ("frame", "outcome", 0, 0),
            ("frame", "outcome", 0, 1),
            ("frame", "outcome", 1, 0),
            ("select", "unverified", 0, 0),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|&(t, p, r, l)| (t.to_string(), p.to_string(), r, l))
            .collect();
        assert_eq!(order, want);
    }

    #[test]
    fn recovery_csv_has_the_documented_columns_and_rows() {
        let mut e = ep("outcome", 2, 1, true);
        e.detected_at_first_step = true;
        e.first_verdict = Some(Verdict::Success);
        let mut nf = ep("unverified", 0, 0, false);
        nf.fired = false;
        nf.stop_reason = StopReason::ParseError;
        let episodes = vec![e, nf];
        assert_eq!(
            recovery_csv(&episodes_in_order(&episodes, &policies())),
            "task,fault,policy,run,layout,success,browser_actions,steps,stop_reason,detected_at_first_step,agent,fired,first_verdict,episode_seed\n\
             frame,feedback.iframe_no_change,unverified,0,0,0,1,3,parse_error,0,scripted,0,no_change,0\n\
             frame,feedback.iframe_no_change,outcome,1,2,1,1,3,stopped,1,scripted,1,success,21\n"
        );
    }

    #[test]
    fn cross_table_counts_fired_episodes_only() {
        let mut episodes = Vec::new();
        for (detected, success, copies) in [(true, true, 3), (true, false, 2), (false, true, 1)] {
            for i in 0..copies {
                let mut e = ep(
                    "pixel",
                    i,
                    u32::from(detected) * 2 + u32::from(success),
                    success,
                );
                e.detected_at_first_step = detected;
                episodes.push(e);
            }
        }
        for i in 0..4 {
            episodes.push(ep("pixel", i, 9, false));
        }
        // Not fired: never in the cross-table or the rate, whatever its outcome says.
        let mut nf = ep("pixel", 7, 0, true);
        (nf.fired, nf.detected_at_first_step) = (false, true);
        episodes.push(nf);
        let cells = recovery_cells(&episodes, &policies(), &AnalysisConfig::for_run(1));
        assert_eq!(cells.len(), 1);
        let c = &cells[0];
        assert_eq!(
            (
                c.n,
                c.successes,
                c.not_fired,
                c.detected_recovered,
                c.detected_not_recovered,
                c.recovered_undetected,
                c.neither
            ),
            (10, 4, 1, 3, 2, 1, 4)
        );
        assert_eq!(c.rate.as_ref().unwrap().estimate.n, 10);
        assert_eq!(
            detection_recovery_csv(&cells),
            "task,fault,policy,agent,n,detected_recovered,detected_not_recovered,recovered_undetected,neither\n\
             frame,feedback.iframe_no_change,pixel,scripted,10,3,2,1,4\n"
        );
    }

    #[test]
    fn summary_rows_carry_the_clustered_interval() {
        let cells = recovery_cells(&experiment(), &policies(), &AnalysisConfig::for_run(1));
        assert_eq!(cells.len(), 2);
        assert_eq!(
            (cells[0].policy.as_str(), cells[1].policy.as_str()),
            ("unverified", "outcome")
        );
        // Outcome: 9 of 12, each layout all-or-nothing, so n_eff is the 4 layouts.
        let r = cells[1].rate.as_ref().unwrap();
        assert_eq!(
            (r.n_effective, r.estimate.method),
            (4.0, Method::WilsonClustered)
        );
        assert_eq!(
            (cells[1].n, cells[1].successes, cells[1].not_fired),
            (12, 9, 1)
        );
        let csv = recovery_summary_csv(&cells);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "task,fault,policy,agent,n,successes,rate,ci_low,ci_high,ci_method,clusters,n_effective,not_fired,level,design_effect,note"
        );
        // Unverified never recovers: all outcomes equal, so the clusters are counted.
        assert_eq!(
            lines[1],
            format!(
                "frame,feedback.iframe_no_change,unverified,scripted,12,0,0.0000,0.0000,0.4899,wilson-clustered,4,4.0000,1,0.95,3.0000,\"{}\"",
                crate::stats::NOTE_CONSTANT_OUTCOMES
            )
        );
        assert!(
            lines[2].starts_with("frame,feedback.iframe_no_change,outcome,scripted,12,9,0.7500,"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].ends_with(",wilson-clustered,4,4.0000,1,0.95,3.0000,"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn a_cell_with_nothing_fired_has_no_rate_but_keeps_its_count() {
        let mut nf = ep("generic", 0, 0, true);
        nf.fired = false;
        let cells = recovery_cells(&[nf], &policies(), &AnalysisConfig::for_run(1));
        assert_eq!(
            (cells[0].n, cells[0].not_fired, cells[0].rate.is_none()),
            (0, 1, true)
        );
        assert_eq!(
            recovery_summary_csv(&cells).lines().nth(1).unwrap(),
            "frame,feedback.iframe_no_change,generic,scripted,0,0,,,,,0,,1,,,"
        );
        assert!(stop_reasons(&[], &policies()).is_empty());
    }

    #[test]
    fn stop_reasons_count_fired_episodes_per_task_and_policy() {
        let rows = stop_reasons(&experiment(), &policies());
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].policy, "outcome");
        assert_eq!((rows[1].n, rows[1].counts), (12, [9, 0, 0, 3, 0, 0, 0]));
        assert_eq!((rows[0].n, rows[0].counts[0]), (12, 12));
    }

    #[test]
    fn comparisons_pair_the_same_layout_and_run_and_are_seeded() {
        let mut episodes = experiment();
        // An outcome episode without an unverified partner is left out of the pairs.
        episodes.push(ep("outcome", 0, 7, true));
        let cfg = AnalysisConfig::for_run(1);
        let rows = recovery_comparisons(&episodes, &policies(), &cfg);
        assert_eq!(rows.len(), 2, "one cell row and one overall row");
        let (cell, all) = (&rows[0], &rows[1]);
        assert_eq!(
            (cell.scope.as_str(), cell.task.as_str(), cell.agent.as_str()),
            ("cell", "frame", "scripted")
        );
        assert_eq!(
            (all.scope.as_str(), all.task.as_str(), all.fault.as_str()),
            ("all", "*", "*")
        );
        let p = &cell.paired;
        assert_eq!((p.n, p.clusters), (12, 4));
        assert_eq!((p.mean_a, p.mean_b), (0.0, 0.75));
        // Outcome recovered and unverified did not on nine pairs: b = 9, c = 0.
        assert_eq!((p.mcnemar.b, p.mcnemar.c), (9, 0));
        let d = p.difference.as_ref().unwrap();
        assert_eq!((d.point, d.clusters), (0.75, Some(4)));
        assert_eq!(
            d.seed,
            Some(derive_analysis(
                cfg.seed,
                "recovery/cell/frame/feedback.iframe_no_change/scripted/unverified/outcome"
            ))
        );
        assert_eq!(recovery_comparisons(&episodes, &policies(), &cfg), rows);
        let csv = recovery_comparisons_csv(&rows, &cfg);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "scope,task,fault,agent,policy_a,policy_b,n,clusters,success_a,success_b,difference,ci_low,ci_high,ci_method,level,bootstrap_low,bootstrap_high,bootstrap_method,resamples,seed,score_low,score_high,score_method,n_eff,design_effect,correlation,mcnemar_b,mcnemar_c,test,test_statistic,test_p,informative_clusters,note");
        assert!(lines[1].starts_with(
            "cell,frame,feedback.iframe_no_change,scripted,unverified,outcome,12,4,0.0000,0.7500,0.7500,"
        ));
        assert!(lines[2].starts_with("all,*,*,scripted,unverified,outcome,12,4,"));
    }

    #[test]
    fn the_gain_pairs_outcome_with_unverified_per_task_and_pooled() {
        let cfg = AnalysisConfig::for_run(1);
        let mut episodes = experiment();
        // A second agent on the same layouts: its own rows, never pooled with the first.
        for e in experiment() {
            let mut e = e;
            e.agent = "observant".into();
            e.success = e.policy == "outcome" || e.layout_index == 0;
            episodes.push(e);
        }
        // A policy outside the pair changes nothing.
        episodes.push(ep("generic", 0, 0, true));
        let gain = recovery_gain(&episodes, &cfg);
        let keys: Vec<(&str, &str, &str)> = gain
            .iter()
            .map(|g| (g.scope.as_str(), g.task.as_str(), g.agent.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("task", "frame", "observant"),
                ("all", "*", "observant"),
                ("task", "frame", "scripted"),
                ("all", "*", "scripted"),
            ]
        );
        let s = &gain[3].paired;
        assert_eq!((s.n, s.clusters), (12, 4));
        assert_eq!((s.mean_a, s.mean_b), (0.0, 0.75));
        assert_eq!(s.test.method, crate::stats::PairedTest::McnemarClustered);
        // Three of four layouts recover on every run: the clustered test counts layouts.
        assert_eq!(s.test.informative_clusters, 3);
        assert!(s.n_effective >= 4.0 && s.n_effective <= 12.0);
        assert!(s.score.lower < 0.75 && 0.75 < s.score.upper);
        // Observant: outcome always, unverified on layout 0 only.
        let o = &gain[1].paired;
        assert_eq!((o.mean_a, o.mean_b), (0.25, 1.0));
        // The pooled row is the `all` row of the comparisons, seed and all.
        let all = recovery_comparisons(&episodes, &policies(), &cfg)
            .into_iter()
            .find(|c| {
                c.scope == "all"
                    && c.agent == "scripted"
                    && c.policy_a == "unverified"
                    && c.policy_b == "outcome"
            })
            .unwrap();
        assert_eq!(all.paired, gain[3].paired);
        let csv = recovery_gain_csv(&gain, &cfg);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with(
            "scope,task,agent,n,clusters,success_unverified,success_outcome,gain,ci_low,ci_high,"
        ));
        assert!(lines[3].starts_with("task,frame,scripted,12,4,0.0000,0.7500,0.7500,"));
        assert!(lines[4].contains(",mcnemar-clustered,"), "{}", lines[4]);
        // Without both policies there is no gain.
        let only: Vec<EpisodeRow> = experiment()
            .into_iter()
            .filter(|e| e.policy == "outcome")
            .collect();
        assert!(recovery_gain(&only, &cfg).is_empty());
    }

    #[test]
    fn the_analysis_is_deterministic_and_independent_of_row_order() {
        let cfg = AnalysisConfig::for_run(5);
        let episodes = experiment();
        let mut reversed = episodes.clone();
        reversed.reverse();
        let a = Recovery::analyse(&episodes, &policies(), &cfg).unwrap();
        let b = Recovery::analyse(&reversed, &policies(), &cfg).unwrap();
        assert_eq!(recovery_csv(&a.episodes), recovery_csv(&b.episodes));
        assert_eq!(
            recovery_summary_csv(&a.cells),
            recovery_summary_csv(&b.cells)
        );
        assert_eq!(a.cells, b.cells);
        assert_eq!(a.stop_reasons, b.stop_reasons);
        assert_eq!(
            recovery_comparisons_csv(&a.comparisons, &cfg),
            recovery_comparisons_csv(&b.comparisons, &cfg)
        );
        assert!(Recovery::analyse(&[], &policies(), &cfg).is_none());
    }
}
