//! The CI gate: is a candidate run worse than a baseline run, cell by cell, beyond chance?
//!
//! A harness team runs the benchmark on every change and wants one bit out of it — did
//! detection, false alarms or recovery get worse — plus the numbers behind that bit. The
//! gate answers with three ideas, in this order.
//!
//! **Comparability first.** Two runs are only compared when they measured the same thing:
//! the same root seed, layouts, tasks, fault selection, recorded decisions and recovery
//! design, and therefore the same work items (trial and episode keys). When they differ
//! the gate refuses with one line naming the first difference ([`Comparability`]); a
//! different Chromium version is only a warning, since a browser upgrade is exactly the
//! kind of change a gate exists to judge. Policies may differ: only the policies both runs
//! have are compared (the others are listed as a warning).
//!
//! **Paired, per cell.** Because both runs replayed the same decisions on the same
//! layouts, every item of the baseline has a twin in the candidate, and the comparison is
//! paired: per (fault, task, policy) the caught outcome of each fired faulty trial in
//! both runs; per (task, policy) the false alarm on each working trial the ledger
//! confirmed in both; per (task, fault, policy, agent) the recovery of each episode whose
//! fault fired in both. The difference in rates (candidate minus baseline) comes with the
//! layout-cluster bootstrap interval (Tango's score interval when the bootstrap is
//! degenerate, so no interval is ever zero-width) and McNemar's test on the discordant
//! items (exact on independent pairs, Durkalski's clustered test when several items share
//! a layout) — the machinery of the report's policy comparisons
//! ([`crate::compare::paired_outcomes`]).
//!
//! **A regression is a drop beyond the margin that the paired test confirms.** A cell
//! regresses when it moved the wrong way by more than its metric's margin *and* the test
//! named in the rules says so at the rules' level ([`rules::Significance`]): McNemar's
//! p below `1 - level` (default), or the cell's interval entirely on the bad side of
//! zero, or `none` (the margin alone, for tiny smoke runs). Improvements are the mirror
//! image. Optional floors and ceilings hold a pooled rate of the candidate to an absolute
//! bound (`outcome` catches at least 95% of fired faults), whatever the baseline did.
//!
//! Inputs are run directories, `results.sqlite` files or a *baseline file*: the small JSON
//! ([`Snapshot`]) `faultline baseline export` writes, holding the run's identity and every
//! item's outcome — enough to pair, small enough to commit. A database is read into the
//! same [`Snapshot`], so both sides of a comparison always go through one code path.
//!
//! The verdict ([`GateReport`]) is written as Markdown (fit for `$GITHUB_STEP_SUMMARY`
//! or a pull-request comment: regressions and improvements first, each with both rates,
//! the difference and its interval), JUnit XML (one test case per cell, failures carrying
//! the numbers) and JSON ([`render`]).

pub mod render;
pub mod rules;
mod snapshot;

pub use rules::{Floor, Metric, MetricRule, Rules, Significance};
pub use snapshot::{
    load_input, EpisodeOutcome, Identity, Snapshot, TrialOutcome, BASELINE_FORMAT, BASELINE_VERSION,
};

use crate::compare::{paired_outcomes, PairedOutcomes};
use crate::config::AnalysisConfig;
use faultline_tasks::seed::derive_analysis;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Whether two runs may be compared, and what to say about them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparability {
    /// The first difference that makes the runs incomparable (one line), if any.
    pub refused: Option<String>,
    /// Differences worth saying that do not prevent the comparison.
    pub warnings: Vec<String>,
}

/// What happened to one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The cell moved the wrong way by more than its margin, and the rules' test confirms it.
    Regression,
    /// The cell moved the right way by more than its margin, and the rules' test confirms it.
    Improvement,
    /// Neither: within the margin, or not confirmed by the test.
    Unchanged,
    /// No paired items (e.g. the fault fired in neither run).
    NoData,
}

/// One compared cell: a detection, false-alarm or recovery rate in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellResult {
    /// What the cell measures (detection, false alarms or recovery).
    pub metric: Metric,
    /// `fault`, `task`, `policy` and (recovery) `agent`, as far as the metric has them.
    pub fault: Option<String>,
    /// The task.
    pub task: String,
    /// The policy judged (detection, false alarms) or whose messages the agent got (recovery).
    pub policy: String,
    /// The agent (recovery cells only).
    pub agent: Option<String>,
    /// Paired items.
    pub n: usize,
    /// Distinct layouts among them.
    pub clusters: usize,
    /// Successes (caught, false alarms, recovered) out of `n`, in each run.
    pub baseline_count: usize,
    /// Successes out of `n` in the candidate run.
    pub candidate_count: usize,
    /// `baseline_count / n` (0 without paired items).
    pub baseline_rate: f64,
    /// `candidate_count / n` (0 without paired items).
    pub candidate_rate: f64,
    /// Candidate minus baseline.
    pub difference: f64,
    /// The interval of the difference: the layout-cluster bootstrap's, or Tango's score
    /// interval when the bootstrap is degenerate (`None` only without paired items).
    pub ci_low: Option<f64>,
    /// The upper end of the interval of the difference (see `ci_low`).
    pub ci_high: Option<f64>,
    /// How the interval was computed (`bca-cluster-bootstrap`, `tango-paired`, ...).
    pub interval_method: Option<String>,
    /// The paired test's two-sided p on the discordant items (McNemar's exact test, or
    /// Durkalski's clustered test when items share a layout), and their counts (`worse`:
    /// items only the baseline got right, `better`: only the candidate).
    pub mcnemar_p: f64,
    /// Which paired test gave `mcnemar_p` (`mcnemar-exact` or `mcnemar-clustered`).
    pub test_method: Option<String>,
    /// Discordant items the candidate got wrong and the baseline right.
    pub worse: u64,
    /// Discordant items the candidate got right and the baseline wrong.
    pub better: u64,
    /// The metric's margin from the rules (a fraction of 1).
    pub margin: f64,
    /// What the gate concluded for this cell.
    pub status: Status,
}

impl CellResult {
    /// `detection execute.unscaled_coordinates / grid / outcome`, for test names.
    pub fn name(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(f) = &self.fault {
            parts.push(f);
        }
        parts.push(&self.task);
        parts.push(&self.policy);
        if let Some(a) = &self.agent {
            parts.push(a);
        }
        parts.join(" / ")
    }
}

/// One absolute bound checked on the candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloorResult {
    /// The bound as the rules state it.
    pub floor: Floor,
    /// Pooled over the matching cells.
    pub count: usize,
    /// Matching items (the denominator of `rate`).
    pub n: usize,
    /// `count / n`; `None` when no item matched.
    pub rate: Option<f64>,
    /// Whether the rate is within the bound (a bound with no matching items passes).
    pub passed: bool,
}

impl FloorResult {
    /// The bound as one line, e.g. `detection policy=outcome >= 0.95` (for test names).
    pub fn name(&self) -> String {
        self.floor.describe()
    }
}

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateReport {
    /// Always `faultline-gate` (the JSON output's format tag).
    pub format: &'static str,
    /// The gate report format version (1).
    pub version: u32,
    /// The baseline input's name, as given on the command line.
    pub baseline: String,
    /// The candidate input's name, as given on the command line.
    pub candidate: String,
    /// Whether the runs were comparable, and the warnings.
    pub comparability: Comparability,
    /// The rules the cells were judged by.
    pub rules: Rules,
    /// Every cell: regressions first, then improvements, then the rest, each in key order.
    pub cells: Vec<CellResult>,
    /// Every absolute bound of the rules, checked on the candidate.
    pub floors: Vec<FloorResult>,
}

impl GateReport {
    /// The cells that regressed.
    pub fn regressions(&self) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(|c| c.status == Status::Regression)
    }
    /// The cells that improved.
    pub fn improvements(&self) -> impl Iterator<Item = &CellResult> {
        self.cells
            .iter()
            .filter(|c| c.status == Status::Improvement)
    }
    /// The bounds the candidate did not meet.
    pub fn failed_floors(&self) -> impl Iterator<Item = &FloorResult> {
        self.floors.iter().filter(|f| !f.passed)
    }
    /// Whether the candidate failed the gate (a regression or a bound not met).
    pub fn failed(&self) -> bool {
        self.regressions().next().is_some() || self.failed_floors().next().is_some()
    }
}

/// Checks whether `candidate` measured the same thing as `baseline`.
pub fn comparability(baseline: &Snapshot, candidate: &Snapshot) -> Comparability {
    let (a, b) = (&baseline.identity, &candidate.identity);
    let mut warnings = Vec::new();
    let differs = |what: &str, x: &serde_json::Value, y: &serde_json::Value| {
        (x != y).then(|| format!("{what} differ (baseline {x}, candidate {y})"))
    };
    let refused = differs("root seeds", &a.root_seed, &b.root_seed)
        .or_else(|| differs("layouts", &a.layouts, &b.layouts))
        .or_else(|| differs("tasks", &a.tasks, &b.tasks))
        .or_else(|| differs("fault selections", &a.faults, &b.faults))
        .or_else(|| differs("decisions", &a.decisions, &b.decisions))
        .or_else(|| differs("recovery designs", &a.recovery, &b.recovery))
        .or_else(|| {
            let ka: BTreeSet<&str> = baseline.trials.iter().map(|t| t.key.as_str()).collect();
            let kb: BTreeSet<&str> = candidate.trials.iter().map(|t| t.key.as_str()).collect();
            first_difference("trial", &ka, &kb)
        })
        .or_else(|| {
            let shared = shared_policies(baseline, candidate);
            let keys = |s: &Snapshot| -> BTreeSet<String> {
                s.episodes
                    .iter()
                    .filter(|e| shared.contains(&e.policy))
                    .map(|e| e.key.clone())
                    .collect()
            };
            let (ka, kb) = (keys(baseline), keys(candidate));
            let ka: BTreeSet<&str> = ka.iter().map(String::as_str).collect();
            let kb: BTreeSet<&str> = kb.iter().map(String::as_str).collect();
            first_difference("episode", &ka, &kb)
        });
    if a.chromium_version != b.chromium_version {
        warnings.push(format!(
            "Chromium versions differ (baseline {}, candidate {})",
            a.chromium_version.as_deref().unwrap_or("unknown"),
            b.chromium_version.as_deref().unwrap_or("unknown")
        ));
    }
    let shared = shared_policies(baseline, candidate);
    for (side, s) in [("baseline", baseline), ("candidate", candidate)] {
        let only: Vec<&str> = s
            .policies
            .iter()
            .filter(|p| !shared.contains(*p))
            .map(String::as_str)
            .collect();
        if !only.is_empty() {
            warnings.push(format!(
                "policies only in the {side} are not compared: {}",
                only.join(", ")
            ));
        }
    }
    Comparability { refused, warnings }
}

fn first_difference(what: &str, a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> Option<String> {
    if let Some(k) = a.difference(b).next() {
        return Some(format!(
            "{what} items differ: `{k}` is in the baseline only ({} vs {} items)",
            a.len(),
            b.len()
        ));
    }
    b.difference(a).next().map(|k| {
        format!(
            "{what} items differ: `{k}` is in the candidate only ({} vs {} items)",
            a.len(),
            b.len()
        )
    })
}

/// Policies both runs have, in the baseline's order.
fn shared_policies(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    a.policies
        .iter()
        .filter(|p| b.policies.contains(p))
        .cloned()
        .collect()
}

/// The cell key of every paired observation: (fault, task, policy, agent).
type CellKey = (Option<String>, String, String, Option<String>);
/// Per cell: (layout, baseline outcome, candidate outcome).
type Pairs = BTreeMap<CellKey, Vec<(u32, bool, bool)>>;

/// Runs the gate: comparability, then every cell, then the floors. When the runs are not
/// comparable and `force` is false, no cell is compared.
pub fn gate(
    baseline: &Snapshot,
    candidate: &Snapshot,
    names: (&str, &str),
    rules: &Rules,
    force: bool,
) -> GateReport {
    let comparability = comparability(baseline, candidate);
    let mut report = GateReport {
        format: "faultline-gate",
        version: 1,
        baseline: names.0.to_string(),
        candidate: names.1.to_string(),
        comparability,
        rules: rules.clone(),
        cells: Vec::new(),
        floors: Vec::new(),
    };
    if report.comparability.refused.is_some() && !force {
        return report;
    }
    let policies = shared_policies(baseline, candidate);
    let cfg = AnalysisConfig {
        level: rules.level,
        resamples: rules.resamples,
        ..AnalysisConfig::for_run(baseline.identity.root_seed.as_u64().unwrap_or(0))
    };
    let mut cells = Vec::new();
    for (metric, pairs) in [
        (
            Metric::Detection,
            detection_pairs(baseline, candidate, &policies),
        ),
        (
            Metric::FalseAlarms,
            false_alarm_pairs(baseline, candidate, &policies),
        ),
        (
            Metric::Recovery,
            recovery_pairs(baseline, candidate, &policies),
        ),
    ] {
        let rule = rules.rule(metric);
        for (key, rows) in pairs {
            cells.push(cell(metric, key, &rows, rule, rules, &cfg));
        }
    }
    // Regressions, then improvements, then the rest; each group in key order (stable).
    cells.sort_by_key(|c| c.status);
    report.floors = rules
        .floors
        .iter()
        .map(|f| floor(f, baseline, candidate, &policies))
        .collect();
    report.cells = cells;
    report
}

fn cell(
    metric: Metric,
    (fault, task, policy, agent): CellKey,
    rows: &[(u32, bool, bool)],
    rule: &MetricRule,
    rules: &Rules,
    cfg: &AnalysisConfig,
) -> CellResult {
    let seed = derive_analysis(
        cfg.seed,
        &format!(
            "gate/{}/{}/{task}/{policy}/{}",
            metric.name(),
            fault.as_deref().unwrap_or("*"),
            agent.as_deref().unwrap_or("*")
        ),
    );
    let paired: Option<PairedOutcomes> = paired_outcomes(rows, cfg, seed);
    let n = rows.len();
    let baseline_count = rows.iter().filter(|r| r.1).count();
    let candidate_count = rows.iter().filter(|r| r.2).count();
    let (mut status, mut ci, mut p, mut worse, mut better, mut clusters) =
        (Status::NoData, None, 1.0, 0, 0, 0);
    let (mut interval_method, mut test_method) = (None, None);
    if let Some(paired) = &paired {
        let d = paired.mean_b - paired.mean_a;
        let interval = paired.main_interval();
        ci = Some((interval.lower, interval.upper));
        interval_method = Some(interval.method.as_str().to_string());
        p = paired.test.p_value;
        test_method = Some(paired.test.method.as_str().to_string());
        // `b` counts items only the candidate (B) had, `c` only the baseline (A).
        let (only_candidate, only_baseline) = (paired.mcnemar.b, paired.mcnemar.c);
        // For false alarms a rise is bad: "worse" is an alarm only the candidate raised.
        (worse, better) = match metric.higher_is_better() {
            true => (only_baseline, only_candidate),
            false => (only_candidate, only_baseline),
        };
        clusters = paired.clusters;
        // The change in the direction that matters: positive is worse.
        let drop = if metric.higher_is_better() { -d } else { d };
        let alpha = 1.0 - rules.level.get();
        let confirmed = |bad: bool| match rules.significance {
            Significance::None => true,
            Significance::Mcnemar => p < alpha,
            Significance::Bootstrap => ci.is_some_and(|(lo, hi)| {
                // Bad for a rate that should rise is an interval below zero.
                if metric.higher_is_better() == bad {
                    hi < 0.0
                } else {
                    lo > 0.0
                }
            }),
        };
        status = if drop > rule.margin + 1e-12 && confirmed(true) {
            Status::Regression
        } else if -drop > rule.margin + 1e-12 && confirmed(false) {
            Status::Improvement
        } else {
            Status::Unchanged
        };
    }
    CellResult {
        metric,
        fault,
        task,
        policy,
        agent,
        n,
        clusters,
        baseline_count,
        candidate_count,
        baseline_rate: rate(baseline_count, n),
        candidate_rate: rate(candidate_count, n),
        difference: rate(candidate_count, n) - rate(baseline_count, n),
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        interval_method,
        mcnemar_p: p,
        test_method,
        worse,
        better,
        margin: rule.margin,
        status,
    }
}

fn rate(k: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        k as f64 / n as f64
    }
}

fn by_key(s: &Snapshot) -> BTreeMap<&str, &TrialOutcome> {
    s.trials.iter().map(|t| (t.key.as_str(), t)).collect()
}

/// Fired in both runs: per (fault, task, policy), caught in each.
fn detection_pairs(a: &Snapshot, b: &Snapshot, policies: &[String]) -> Pairs {
    let bk = by_key(b);
    let mut out = Pairs::new();
    for ta in &a.trials {
        let Some(tb) = bk.get(ta.key.as_str()) else {
            continue;
        };
        let (Some(fault), Some(true), Some(true)) = (&ta.fault, ta.fired, tb.fired) else {
            continue;
        };
        for p in policies {
            let (Some(ca), Some(cb)) = (ta.caught(p), tb.caught(p)) else {
                continue;
            };
            out.entry((Some(fault.clone()), ta.task.clone(), p.clone(), None))
                .or_default()
                .push((ta.layout, ca, cb));
        }
    }
    out
}

/// Working trials the ledger confirmed in both runs: per (task, policy), alarm in each.
fn false_alarm_pairs(a: &Snapshot, b: &Snapshot, policies: &[String]) -> Pairs {
    let bk = by_key(b);
    let mut out = Pairs::new();
    for ta in &a.trials {
        let Some(tb) = bk.get(ta.key.as_str()) else {
            continue;
        };
        if ta.fault.is_some() || !ta.truth || !tb.truth {
            continue;
        }
        for p in policies {
            let (Some(aa), Some(ab)) = (ta.alarm(p), tb.alarm(p)) else {
                continue;
            };
            out.entry((None, ta.task.clone(), p.clone(), None))
                .or_default()
                .push((ta.layout, aa, ab));
        }
    }
    out
}

/// Episodes whose fault fired in both runs: per (task, fault, policy, agent), recovered.
fn recovery_pairs(a: &Snapshot, b: &Snapshot, policies: &[String]) -> Pairs {
    let bk: BTreeMap<&str, &EpisodeOutcome> =
        b.episodes.iter().map(|e| (e.key.as_str(), e)).collect();
    let mut out = Pairs::new();
    for ea in a.episodes.iter().filter(|e| policies.contains(&e.policy)) {
        let Some(eb) = bk.get(ea.key.as_str()) else {
            continue;
        };
        if !ea.fired || !eb.fired {
            continue;
        }
        out.entry((
            Some(ea.fault.clone()),
            ea.task.clone(),
            ea.policy.clone(),
            Some(ea.agent.clone()),
        ))
        .or_default()
        .push((ea.layout, ea.success, eb.success));
    }
    out
}

/// A floor or ceiling on the candidate's pooled rate over the matching items (fired
/// faulty trials, confirmed working trials or fired episodes).
fn floor(
    f: &Floor,
    _baseline: &Snapshot,
    candidate: &Snapshot,
    policies: &[String],
) -> FloorResult {
    let matches = |task: &str, fault: Option<&str>, policy: &str| {
        f.policy.as_deref().is_none_or(|p| p == policy)
            && f.task.as_deref().is_none_or(|t| t == task)
            && f.fault.as_deref().is_none_or(|x| Some(x) == fault)
            && policies.iter().any(|p| p == policy)
    };
    let (mut count, mut n) = (0usize, 0usize);
    match f.metric {
        Metric::Detection => {
            for t in candidate.trials.iter().filter(|t| t.fired == Some(true)) {
                for p in t.verdicts.keys() {
                    if matches(&t.task, t.fault.as_deref(), p) {
                        n += 1;
                        count += usize::from(t.caught(p) == Some(true));
                    }
                }
            }
        }
        Metric::FalseAlarms => {
            for t in candidate
                .trials
                .iter()
                .filter(|t| t.fault.is_none() && t.truth)
            {
                for p in t.verdicts.keys() {
                    if matches(&t.task, None, p) {
                        n += 1;
                        count += usize::from(t.alarm(p) == Some(true));
                    }
                }
            }
        }
        Metric::Recovery => {
            for e in candidate.episodes.iter().filter(|e| e.fired) {
                if matches(&e.task, Some(&e.fault), &e.policy)
                    && f.agent.as_deref().is_none_or(|a| a == e.agent)
                {
                    n += 1;
                    count += usize::from(e.success);
                }
            }
        }
    }
    let rate = (n > 0).then(|| count as f64 / n as f64);
    let passed = match rate {
        None => true,
        Some(r) => f.min.is_none_or(|m| r >= m - 1e-12) && f.max.is_none_or(|m| r <= m + 1e-12),
    };
    FloorResult {
        floor: f.clone(),
        count,
        n,
        rate,
        passed,
    }
}

#[cfg(test)]
mod tests;
