//! The verdict: whether the runs compare, each cell's result, each floor's, and the
//! report that holds them.

use super::cells::cell_name;
use super::rules::{Floor, Metric, Rules};
use anyhow::Result;
use serde::Serialize;

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
