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
//! different Chromium version or settle mode is only a warning, since a browser upgrade or
//! a change of timing is exactly the kind of change a gate exists to judge. What counts is
//! the run record's gate identity ([`crate::db::GateIdentity`]), one of the three "same
//! run" rules written together in [`crate::db::manifest`]. Policies may differ, but see
//! below: a policy the candidate dropped is a failure, one it added is only a warning.
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
//! **It fails closed.** Silence is never a pass. Every cell of the baseline must reappear
//! in the candidate with at least one paired item: a cell the candidate lacks — a policy
//! it did not run, items its external verifier could only answer with infrastructure
//! errors, a fault that no longer fires — is [`Status::Missing`] ([`MissingReason`] says
//! which) and fails the gate like a regression, unless the rules' `allow_missing` names
//! its policy or the cell. A floor without a single matching candidate item is not met. A
//! rule that selects no cell of either run (a floor on a policy, task or fault neither
//! has, an `allow_missing` entry naming nothing) is a bad rules file, an error before
//! anything is judged; a baseline file holding one item twice is refused when read.
//!
//! Inputs are run directories, `results.sqlite` files or a *baseline file*: the small JSON
//! ([`Snapshot`]) `faultline baseline export` writes, holding the run's identity and every
//! item's outcome — enough to pair, small enough to commit. A database is read into the
//! same [`Snapshot`], so both sides of a comparison always go through one code path.
//!
//! The verdict ([`GateReport`]) is written as Markdown (fit for `$GITHUB_STEP_SUMMARY`
//! or a pull-request comment: regressions and improvements first, each with both rates,
//! the difference and its interval), JUnit XML (one test case per cell, failures carrying
//! the numbers; missing cells fail as `missing`) and JSON ([`render`]).

pub mod render;
pub mod rules;
mod snapshot;

pub use rules::{Floor, Metric, MetricRule, Rules, Significance};
pub use snapshot::{
    load_input, EpisodeOutcome, InfraError, Snapshot, TrialOutcome, BASELINE_FORMAT,
    BASELINE_VERSION,
};

use crate::compare::{paired_outcomes, PairedOutcomes};
use crate::config::AnalysisConfig;
use anyhow::{bail, Result};
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
    /// A cell of the baseline without a single paired item in the candidate (see
    /// [`MissingCell`]): a failure, since the gate cannot say it did not get worse.
    Missing,
    /// The cell moved the right way by more than its margin, and the rules' test confirms it.
    Improvement,
    /// Neither: within the margin, or not confirmed by the test.
    Unchanged,
    /// A missing cell the rules' `allow_missing` names: reported, not a failure.
    AllowedMissing,
}

faultline_tasks::named_enum! {
    /// Why a cell of the baseline has no paired item in the candidate.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "snake_case")]
    pub enum MissingReason: "missing reason" {
        /// The candidate did not run the cell's policy.
        PolicyMissing = "policy_missing",
        /// The candidate has the cell's items, but its policy answered every one with an
        /// infrastructure error (a crashed, hung or garbled external verifier).
        InfraErrors = "infra_errors",
        /// No item pairs for another reason: the fault did not fire, the ledger confirmed
        /// no working trial, the items are absent or carry no verdict.
        Unpaired = "unpaired",
    }
}

/// What the candidate lacks of a baseline cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingCell {
    /// Why nothing paired.
    pub reason: MissingReason,
    /// The baseline's items in the cell.
    pub baseline_items: usize,
    /// What happened to those items in the candidate, in words (one line).
    pub detail: String,
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
    /// Why the candidate has no paired item (`Missing` and `AllowedMissing` cells only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<MissingCell>,
}

impl CellResult {
    /// `detection execute.unscaled_coordinates / grid / outcome`, for test names.
    pub fn name(&self) -> String {
        let key = (
            self.fault.clone(),
            self.task.clone(),
            self.policy.clone(),
            self.agent.clone(),
        );
        cell_name(&key)
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
    /// Whether the rate is within the bound (a bound without a matching candidate item
    /// is not met: nothing shows the candidate meets it).
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
    /// Every cell of the baseline: regressions first, then missing cells, improvements,
    /// the unchanged and the allowed missing, each in key order.
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
    /// The baseline's cells the candidate lacks, not allowed by the rules.
    pub fn missing(&self) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(|c| c.status == Status::Missing)
    }
    /// The baseline's cells the candidate lacks that the rules' `allow_missing` names.
    pub fn allowed_missing(&self) -> impl Iterator<Item = &CellResult> {
        self.cells
            .iter()
            .filter(|c| c.status == Status::AllowedMissing)
    }
    /// The bounds the candidate did not meet.
    pub fn failed_floors(&self) -> impl Iterator<Item = &FloorResult> {
        self.floors.iter().filter(|f| !f.passed)
    }
    /// Whether the candidate failed the gate (a regression, a missing cell or a bound not
    /// met).
    pub fn failed(&self) -> bool {
        self.regressions().next().is_some()
            || self.missing().next().is_some()
            || self.failed_floors().next().is_some()
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
    // The settle mode is the harness's timing, a change a gate exists to judge: reported,
    // never a refusal, and only when both runs recorded one (older runs and baseline
    // files did not).
    if let (Some(x), Some(y)) = (&a.settle, &b.settle) {
        if x != y {
            warnings.push(format!("settle modes differ (baseline {x}, candidate {y})"));
        }
    }
    let shared = shared_policies(baseline, candidate);
    for (side, s) in [("baseline", baseline), ("candidate", candidate)] {
        let only: Vec<&str> = s
            .policies
            .iter()
            .filter(|p| !shared.contains(*p))
            .map(String::as_str)
            .collect();
        if only.is_empty() {
            continue;
        }
        warnings.push(match side {
            "baseline" => format!(
                "policies only in the baseline: {} (their cells are missing from the candidate)",
                only.join(", ")
            ),
            _ => format!(
                "policies only in the candidate are not compared: {}",
                only.join(", ")
            ),
        });
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

/// The cell key of every observation: (fault, task, policy, agent).
type CellKey = (Option<String>, String, String, Option<String>);

/// One measured item of a cell: its key, layout and outcome (caught, alarm, recovered).
struct Item<'a> {
    key: &'a str,
    layout: u32,
    outcome: bool,
}

/// Every cell one run measured, by metric and key, with its items in the run's order.
type Cells<'a> = BTreeMap<(Metric, CellKey), Vec<Item<'a>>>;

/// `fault / task / policy / agent`, as far as the cell has them (the report's cell name).
fn cell_name((fault, task, policy, agent): &CellKey) -> String {
    [fault.as_deref(), Some(task), Some(policy), agent.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" / ")
}

/// What one run measured: per (fault, task, policy) the caught outcome of each fired
/// faulty trial the policy judged; per (task, policy) the alarm on each working trial the
/// ledger confirmed; per (task, fault, policy, agent) the recovery of each fired episode.
fn measured_cells(s: &Snapshot) -> Cells<'_> {
    let mut out = Cells::new();
    for t in &s.trials {
        let (metric, fault) = match (&t.fault, t.fired) {
            (Some(f), Some(true)) => (Metric::Detection, Some(f.clone())),
            (None, _) if t.truth => (Metric::FalseAlarms, None),
            _ => continue,
        };
        for p in t.verdicts.keys() {
            let outcome = match metric {
                Metric::Detection => t.caught(p),
                _ => t.alarm(p),
            }
            .expect("the policy has a verdict");
            out.entry((metric, (fault.clone(), t.task.clone(), p.clone(), None)))
                .or_default()
                .push(Item {
                    key: &t.key,
                    layout: t.layout,
                    outcome,
                });
        }
    }
    for e in s.episodes.iter().filter(|e| e.fired) {
        let key = (
            Some(e.fault.clone()),
            e.task.clone(),
            e.policy.clone(),
            Some(e.agent.clone()),
        );
        out.entry((Metric::Recovery, key)).or_default().push(Item {
            key: &e.key,
            layout: e.layout,
            outcome: e.success,
        });
    }
    out
}

/// Every cell a run has an item of, measured or not (a fault that did not fire, a
/// working trial the ledger did not confirm, an item its policy could only answer with
/// an infrastructure error): what a rule may select.
fn known_cells(s: &Snapshot) -> BTreeSet<(Metric, CellKey)> {
    let mut infra: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in &s.infra_errors {
        infra.entry(&e.key).or_default().push(&e.policy);
    }
    let mut out = BTreeSet::new();
    for t in &s.trials {
        let metric = match t.fault {
            Some(_) => Metric::Detection,
            None => Metric::FalseAlarms,
        };
        let failed = infra.get(t.key.as_str()).into_iter().flatten().copied();
        for p in t.verdicts.keys().map(String::as_str).chain(failed) {
            out.insert((
                metric,
                (t.fault.clone(), t.task.clone(), p.to_string(), None),
            ));
        }
    }
    for e in &s.episodes {
        let key = (
            Some(e.fault.clone()),
            e.task.clone(),
            e.policy.clone(),
            Some(e.agent.clone()),
        );
        out.insert((Metric::Recovery, key));
    }
    out
}

/// Refuses rules that select nothing: a floor whose filters, or an `allow_missing` entry
/// whose name, match no cell of either run (a typo, or a policy neither run has, would
/// otherwise pass in silence). One line naming the file, the line, the field and what
/// was expected.
fn check_rules(rules: &Rules, baseline: &Snapshot, candidate: &Snapshot) -> Result<()> {
    let known: BTreeSet<(Metric, CellKey)> = known_cells(baseline)
        .into_iter()
        .chain(known_cells(candidate))
        .collect();
    let src = &rules.source;
    let list = |values: BTreeSet<&str>| values.into_iter().collect::<Vec<_>>().join(", ");
    for (i, f) in rules.floors.iter().enumerate() {
        let at = |field: &str| {
            let lines = src.floor_lines.get(i);
            src.at(lines.and_then(|l| l.get(field).or_else(|| l.get("metric")).copied()))
        };
        let cells: Vec<&CellKey> = known
            .iter()
            .filter(|(m, _)| *m == f.metric)
            .map(|(_, k)| k)
            .collect();
        if cells.is_empty() {
            let measured: BTreeSet<&str> = known.iter().map(|(m, _)| m.name()).collect();
            bail!(
                "{}: floor.metric: neither run has a {} cell (expected a metric the runs measured: {})",
                at("metric"),
                f.metric,
                list(measured)
            );
        }
        type Field = fn(&CellKey) -> Option<&str>;
        let fields: [(&str, &Option<String>, Field); 4] = [
            ("policy", &f.policy, |k| Some(&k.2)),
            ("task", &f.task, |k| Some(&k.1)),
            ("fault", &f.fault, |k| k.0.as_deref()),
            ("agent", &f.agent, |k| k.3.as_deref()),
        ];
        for (field, want, of) in fields {
            let Some(want) = want else { continue };
            let values: BTreeSet<&str> = cells.iter().filter_map(|k| of(k)).collect();
            if !values.contains(want.as_str()) {
                let expected = match values.is_empty() {
                    true => format!("{} cells have no {field}", f.metric),
                    false => format!("expected one of: {}", list(values)),
                };
                bail!(
                    "{}: floor.{field}: `{want}` is no {field} of a {} cell of the baseline or candidate ({expected})",
                    at(field),
                    f.metric
                );
            }
        }
        if !cells
            .iter()
            .any(|k| f.selects(k.0.as_deref(), &k.1, &k.2, k.3.as_deref()))
        {
            bail!(
                "{}: floor: `{}` matches no cell of the baseline or candidate (expected filters that select at least one {} cell together)",
                at("metric"),
                f.describe(),
                f.metric
            );
        }
    }
    for (i, entry) in rules.allow_missing.iter().enumerate() {
        let selects = known
            .iter()
            .any(|(_, k)| rules::names_cell(entry, &k.2, &cell_name(k)));
        if !selects {
            let policies: BTreeSet<&str> = known.iter().map(|(_, k)| k.2.as_str()).collect();
            let example = known
                .iter()
                .next()
                .map_or("fault / task / policy".into(), |(_, k)| cell_name(k));
            bail!(
                "{}: allow_missing: `{entry}` matches no policy or cell of the baseline or candidate (expected a policy name, one of: {}, or a cell name as the report prints it, e.g. `{example}`)",
                src.at(src.allow_missing_lines.get(i).copied()),
                list(policies)
            );
        }
    }
    Ok(())
}

/// Runs the gate: checks the rules select something (an error otherwise: a bad rules
/// file), then comparability, then every cell of the baseline, then the floors. When the
/// runs are not comparable and `force` is false, no cell is compared.
pub fn gate(
    baseline: &Snapshot,
    candidate: &Snapshot,
    names: (&str, &str),
    rules: &Rules,
    force: bool,
) -> Result<GateReport> {
    check_rules(rules, baseline, candidate)?;
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
        return Ok(report);
    }
    let policies = shared_policies(baseline, candidate);
    let cfg = AnalysisConfig {
        level: rules.level,
        resamples: rules.resamples,
        ..AnalysisConfig::for_run(baseline.identity.root_seed.as_u64().unwrap_or(0))
    };
    let theirs = measured_cells(candidate);
    let mut cells = Vec::new();
    // Every cell of the baseline, paired item by item with its twin in the candidate.
    for ((metric, key), ours) in measured_cells(baseline) {
        let twins: BTreeMap<&str, bool> = theirs
            .get(&(metric, key.clone()))
            .into_iter()
            .flatten()
            .map(|i| (i.key, i.outcome))
            .collect();
        let rows: Vec<(u32, bool, bool)> = ours
            .iter()
            .filter_map(|i| twins.get(i.key).map(|b| (i.layout, i.outcome, *b)))
            .collect();
        cells.push(match rows.is_empty() {
            false => cell(metric, key, &rows, rules.rule(metric), rules, &cfg),
            true => missing_cell(metric, key, &ours, candidate, rules),
        });
    }
    // Regressions, then missing cells, improvements and the rest; each group in key
    // order (stable).
    cells.sort_by_key(|c| c.status);
    report.floors = rules
        .floors
        .iter()
        .map(|f| floor(f, &theirs, &policies))
        .collect();
    report.cells = cells;
    Ok(report)
}

/// A baseline cell without a single paired item in the candidate: why, in words.
fn missing_cell(
    metric: Metric,
    key: CellKey,
    ours: &[Item],
    candidate: &Snapshot,
    rules: &Rules,
) -> CellResult {
    let policy = key.2.as_str();
    let n = ours.len();
    let missing = if !candidate.policies.iter().any(|p| p == policy) {
        MissingCell {
            reason: MissingReason::PolicyMissing,
            baseline_items: n,
            detail: format!("the candidate did not run policy `{policy}`"),
        }
    } else {
        let infra: BTreeMap<&str, &str> = candidate
            .infra_errors
            .iter()
            .filter(|e| e.policy == policy)
            .map(|e| (e.key.as_str(), e.kind.as_str()))
            .collect();
        let trials = by_key(candidate);
        let episodes: BTreeSet<&str> = candidate.episodes.iter().map(|e| e.key.as_str()).collect();
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        let (mut unmeasured, mut no_verdict, mut absent) = (0, 0, 0);
        for item in ours {
            if let Some(kind) = infra.get(item.key) {
                *kinds.entry(kind).or_default() += 1;
                continue;
            }
            let (present, judged) = match metric {
                Metric::Recovery => (episodes.contains(item.key), true),
                _ => trials
                    .get(item.key)
                    .map_or((false, false), |t| (true, t.verdicts.contains_key(policy))),
            };
            match (present, judged) {
                (false, _) => absent += 1,
                (true, false) => no_verdict += 1,
                (true, true) => unmeasured += 1,
            }
        }
        let errors: usize = kinds.values().sum();
        let kinds = kinds
            .iter()
            .map(|(k, c)| format!("{c} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        if errors == n {
            MissingCell {
                reason: MissingReason::InfraErrors,
                baseline_items: n,
                detail: format!(
                    "all {n} candidate items are infrastructure errors of `{policy}` ({kinds})"
                ),
            }
        } else {
            let not_measured = match metric {
                Metric::FalseAlarms => "not confirmed by the ledger",
                _ => "the fault did not fire",
            };
            let parts: Vec<String> = [
                (errors, format!("infrastructure errors ({kinds})")),
                (unmeasured, not_measured.to_string()),
                (no_verdict, format!("no verdict of `{policy}`")),
                (absent, "absent".to_string()),
            ]
            .into_iter()
            .filter(|(c, _)| *c > 0)
            .map(|(c, what)| format!("{c} {what}"))
            .collect();
            MissingCell {
                reason: MissingReason::Unpaired,
                baseline_items: n,
                detail: format!(
                    "none of the {n} baseline items pairs in the candidate: {}",
                    parts.join(", ")
                ),
            }
        }
    };
    let status = match rules.allows_missing(policy, &cell_name(&key)) {
        true => Status::AllowedMissing,
        false => Status::Missing,
    };
    let (fault, task, policy, agent) = key;
    CellResult {
        metric,
        fault,
        task,
        policy,
        agent,
        n: 0,
        clusters: 0,
        baseline_count: 0,
        candidate_count: 0,
        baseline_rate: 0.0,
        candidate_rate: 0.0,
        difference: 0.0,
        ci_low: None,
        ci_high: None,
        interval_method: None,
        mcnemar_p: 1.0,
        test_method: None,
        worse: 0,
        better: 0,
        margin: rules.rule(metric).margin,
        status,
        missing: Some(missing),
    }
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
    // Only cells with paired items are compared; the others are missing.
    let paired: PairedOutcomes =
        paired_outcomes(rows, cfg, seed).expect("a compared cell has paired items");
    let n = rows.len();
    let baseline_count = rows.iter().filter(|r| r.1).count();
    let candidate_count = rows.iter().filter(|r| r.2).count();
    let d = paired.mean_b - paired.mean_a;
    let interval = paired.main_interval();
    let ci = Some((interval.lower, interval.upper));
    let interval_method = Some(interval.method.as_str().to_string());
    let p = paired.test.p_value;
    let test_method = Some(paired.test.method.as_str().to_string());
    // `b` counts items only the candidate (B) had, `c` only the baseline (A).
    let (only_candidate, only_baseline) = (paired.mcnemar.b, paired.mcnemar.c);
    // For false alarms a rise is bad: "worse" is an alarm only the candidate raised.
    let (worse, better) = match metric.higher_is_better() {
        true => (only_baseline, only_candidate),
        false => (only_candidate, only_baseline),
    };
    let clusters = paired.clusters;
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
    let status = if drop > rule.margin + 1e-12 && confirmed(true) {
        Status::Regression
    } else if -drop > rule.margin + 1e-12 && confirmed(false) {
        Status::Improvement
    } else {
        Status::Unchanged
    };
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
        missing: None,
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

/// A floor or ceiling on the candidate's pooled rate over the matching items (fired
/// faulty trials, confirmed working trials or fired episodes) of the policies both runs
/// have. Without a matching item it is not met.
fn floor(f: &Floor, candidate: &Cells, policies: &[String]) -> FloorResult {
    let (mut count, mut n) = (0usize, 0usize);
    for ((metric, (fault, task, policy, agent)), items) in candidate {
        if *metric == f.metric
            && policies.contains(policy)
            && f.selects(fault.as_deref(), task, policy, agent.as_deref())
        {
            n += items.len();
            count += items.iter().filter(|i| i.outcome).count();
        }
    }
    let rate = (n > 0).then(|| count as f64 / n as f64);
    let passed = rate.is_some_and(|r| {
        f.min.is_none_or(|m| r >= m - 1e-12) && f.max.is_none_or(|m| r <= m + 1e-12)
    });
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
