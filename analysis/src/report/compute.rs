//! The analysis of a stored run, computed once ([`Analysis::compute`]) from what the
//! database holds ([`Stored::load`]): every table, comparison and recovery table, and the
//! inputs of every plot. The writers ([`super::Report`]) only format it.

use crate::compare::{self, Comparison, PooledRate};
use crate::config::{run_policies, AnalysisConfig};
use crate::db::{EpisodeRow, Manifest, ResultsDb, TrialRow, VerdictRow};
use crate::plots::{BarPoint, ForestRow, HeatmapCell, PixelPoint};
use crate::recovery::{Recovery, RecoveryCell};
use crate::tables::{self, CatalogueRow, DetectionRow, FalseAlarmRow, FiringRow, LayerRow};
use anyhow::Result;
use faultline_faults::{Fault, UnscaledClickWitness};
use std::collections::BTreeSet;
use std::path::Path;

/// Everything the analysis reads from a results database.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The run's manifest, when recorded.
    pub manifest: Option<Manifest>,
    /// The policy order recorded with the run ([`run_policies`]).
    pub policies: Vec<String>,
    /// Every stored trial, detection and others, in stored order.
    pub trials: Vec<TrialRow>,
    /// Every stored policy verdict on a trial.
    pub verdicts: Vec<VerdictRow>,
    /// Every stored recovery episode (empty for a detection-only run).
    pub episodes: Vec<EpisodeRow>,
    /// Items an external policy could not judge (never verdicts).
    pub infra_errors: Vec<crate::db::InfraErrorRow>,
    /// The external policies the run used.
    pub external_policies: Vec<String>,
}

impl Stored {
    /// Reads everything the analysis needs from `db`.
    pub fn load(db: &ResultsDb) -> Result<Stored> {
        Ok(Stored {
            manifest: db.manifest()?,
            policies: run_policies(db)?,
            trials: db.trials()?,
            verdicts: db.verdicts()?,
            episodes: db.episodes()?,
            infra_errors: db.infra_errors()?,
            external_policies: crate::infra::external_policies(db)?,
        })
    }
}

/// One heatmap's input: its cells and its rows, in order (the columns are the policies).
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// One cell per (row, policy) that has trials.
    pub cells: Vec<HeatmapCell>,
    /// The row labels, in display order.
    pub rows: Vec<String>,
}

/// The click overlay's input: the first fired `execute.unscaled_coordinates` trial whose
/// before screenshot could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    /// The trial the overlay is drawn from.
    pub trial_key: String,
    /// The before screenshot (PNG).
    pub png: Vec<u8>,
    /// Where the model asked to click, in image pixels.
    pub intended: PixelPoint,
    /// Where the unscaled click landed, in image pixels.
    pub clicked: PixelPoint,
}

/// The whole analysis of one run.
#[derive(Debug, Clone)]
pub struct Analysis<'a> {
    /// How intervals are computed (level, method, resamples, seed).
    pub cfg: AnalysisConfig,
    /// The run's manifest, when recorded.
    pub manifest: Option<&'a Manifest>,
    /// The policy order of the run ([`Stored::policies`]).
    pub policies: &'a [String],
    /// Each fault once, in report order (layer, then fault id).
    pub faults: Vec<Fault>,
    /// `detection.csv`'s rows.
    pub detection: Vec<DetectionRow>,
    /// `false_alarms.csv`'s rows.
    pub false_alarms: Vec<FalseAlarmRow>,
    /// `verifier_cards.csv`'s rows: each policy's error rates against the ledger over the
    /// trials of the detection and false-alarm tables, per task and pooled.
    pub verifier_cards: Vec<tables::VerifierCardRow>,
    /// How often each fault fired, per task.
    pub firing: Vec<FiringRow>,
    /// `layers.csv`'s rows: detection per catalogue layer and policy.
    pub layers: Vec<LayerRow>,
    /// The catalogue view: each fault with its firing and its detection per policy.
    pub catalogue: Vec<CatalogueRow>,
    /// The paired policy comparisons (per fault and over all faults).
    pub comparisons: Vec<Comparison>,
    /// Each policy's caught rate pooled over every fired trial, with its clustered standard error.
    pub pooled: Vec<PooledRate>,
    /// Infrastructure errors per policy, phase and kind, when the run used an external
    /// policy or stored any (`None` keeps a run without plugins exactly as before).
    pub infra: Option<crate::infra::InfraReport<'a>>,
    /// Policy verdicts against an external suite's answer key (empty without one).
    pub answer_key: Vec<tables::AnswerKeyRow>,
    /// `None` for a detection-only or older run: then nothing else differs from before.
    pub recovery: Option<Recovery<'a>>,
    /// Detection, fault × policy (caught / fired, summed over tasks).
    pub detection_heatmap: Heatmap,
    /// Detection, layer × policy: every layer with faulty trials (n/a where none fired).
    pub layer_heatmap: Heatmap,
    /// False alarms, task × policy.
    pub false_alarm_heatmap: Heatmap,
    /// The paired differences' forest plot.
    pub forest: Vec<ForestRow>,
    /// The recovery bars (empty without episodes).
    pub recovery_bars: Vec<BarPoint>,
    /// The click overlay's input (`None` when no fired `execute.unscaled_coordinates` trial
    /// has a readable screenshot).
    pub overlay: Option<Overlay>,
}

impl<'a> Analysis<'a> {
    /// Computes everything once. `screenshots` is the directory the trials' screenshot
    /// paths are relative to (the run directory).
    pub fn compute(stored: &'a Stored, screenshots: &Path, cfg: &AnalysisConfig) -> Analysis<'a> {
        let (trials, verdicts, policies) = (&stored.trials, &stored.verdicts, &stored.policies);
        let detection = tables::detection(trials, verdicts, policies);
        let false_alarms = tables::false_alarms(trials, verdicts, policies);
        let verifier_cards =
            tables::verifier_cards(trials, verdicts, policies, &stored.external_policies, cfg);
        let firing = tables::firing(trials);
        let layers = tables::layers(trials, verdicts, policies, cfg);
        let catalogue = tables::catalogue(&firing, &detection, policies);
        // Each fault once, in report order (firing rows are sorted by layer, then fault).
        let faults = distinct(firing.iter().map(|f| f.fault));
        let comparisons = compare::comparisons(trials, verdicts, policies, &faults, cfg);
        let pooled = compare::pooled_caught(trials, verdicts, policies);
        let answer_key = tables::answer_key(trials, verdicts, policies);
        let recovery = Recovery::analyse(&stored.episodes, policies, cfg);

        let detection_heatmap = Heatmap {
            cells: aggregate_by_fault(&detection)
                .into_iter()
                .map(|(fault, policy, caught, fired)| HeatmapCell {
                    row: fault.id().to_string(),
                    column: policy,
                    numerator: caught,
                    denominator: fired,
                })
                .collect(),
            rows: faults.iter().map(|f| f.id().to_string()).collect(),
        };
        let layer_heatmap = Heatmap {
            cells: layers
                .iter()
                .map(|r| HeatmapCell {
                    row: r.layer.to_string(),
                    column: r.policy.clone(),
                    numerator: r.caught,
                    denominator: r.fired,
                })
                .collect(),
            rows: distinct(firing.iter().map(|f| f.layer))
                .iter()
                .map(|l| l.to_string())
                .collect(),
        };
        let mut tasks: Vec<String> = false_alarms.iter().map(|r| r.task.to_string()).collect();
        tasks.dedup();
        let false_alarm_heatmap = Heatmap {
            cells: false_alarms
                .iter()
                .map(|r| HeatmapCell {
                    row: r.task.to_string(),
                    column: r.policy.clone(),
                    numerator: r.false_alarms,
                    denominator: r.n_working - r.outcome_failed,
                })
                .collect(),
            rows: tasks,
        };
        let forest = comparisons
            .iter()
            .map(|c| {
                // The bootstrap interval, or the score interval where it has no width.
                let d = c.paired.main_interval();
                ForestRow {
                    label: format!("{} − {}, {}", c.policy_b, c.policy_a, short_fault(&c.fault)),
                    point: d.point,
                    lower: d.lower,
                    upper: d.upper,
                }
            })
            .collect();
        let recovery_bars = recovery
            .as_ref()
            .map(|r| recovery_bar_points(&r.cells))
            .unwrap_or_default();
        Analysis {
            cfg: *cfg,
            manifest: stored.manifest.as_ref(),
            policies,
            overlay: overlay_source(trials, screenshots),
            faults,
            detection,
            false_alarms,
            verifier_cards,
            firing,
            layers,
            catalogue,
            comparisons,
            pooled,
            infra: crate::infra::InfraReport::new(
                &stored.infra_errors,
                &stored.external_policies,
                &stored
                    .trials
                    .iter()
                    .map(|t| t.trial_key.as_str())
                    .chain(stored.episodes.iter().map(|e| e.episode_key.as_str()))
                    .collect(),
            ),
            answer_key,
            recovery,
            detection_heatmap,
            layer_heatmap,
            false_alarm_heatmap,
            forest,
            recovery_bars,
        }
    }
}

/// The distinct values in the order they first occur.
fn distinct<T: Ord + Clone>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|v| seen.insert(v.clone()))
        .collect()
}

/// A comparison's scope as the report names it: the fault id, or `all faults` for `*`.
pub(crate) fn short_fault(fault: &str) -> &str {
    if fault == "*" {
        "all faults"
    } else {
        fault
    }
}

/// One bar per cell with fired episodes: group = task, series = policy. When a task has
/// several faults, or there are several agents, the group names them too, so that no two
/// cells compete for one bar.
fn recovery_bar_points(cells: &[RecoveryCell]) -> Vec<BarPoint> {
    let fired: Vec<_> = cells
        .iter()
        .filter_map(|c| c.rate.as_ref().map(|r| (c, r)))
        .collect();
    let tasks: BTreeSet<&str> = fired.iter().map(|(c, _)| c.task.name()).collect();
    let task_faults: BTreeSet<(&str, &str)> = fired
        .iter()
        .map(|(c, _)| (c.task.name(), c.fault.id()))
        .collect();
    let agents: BTreeSet<&str> = fired.iter().map(|(c, _)| c.agent.as_str()).collect();
    let (name_fault, name_agent) = (task_faults.len() > tasks.len(), agents.len() > 1);
    fired
        .into_iter()
        .map(|(c, r)| {
            let mut group = c.task.to_string();
            if name_fault {
                group = format!("{group} · {}", c.fault);
            }
            if name_agent {
                group = format!("{group} · {}", c.agent);
            }
            BarPoint {
                group,
                series: c.policy.clone(),
                point: r.estimate.point,
                lower: r.estimate.lower,
                upper: r.estimate.upper,
                n: c.n,
            }
        })
        .collect()
}

/// Caught and fired per fault and policy, summed over tasks.
fn aggregate_by_fault(rows: &[DetectionRow]) -> Vec<(Fault, String, u64, u64)> {
    let mut out: Vec<(Fault, String, u64, u64)> = Vec::new();
    for r in rows {
        match out
            .iter_mut()
            .find(|(f, p, _, _)| *f == r.fault && *p == r.policy)
        {
            Some(e) => {
                e.2 += r.caught;
                e.3 += r.fired;
            }
            None => out.push((r.fault, r.policy.clone(), r.caught, r.fired)),
        }
    }
    out
}

/// The overlay's inputs (see [`Overlay`]): the intended and the clicked point in
/// screenshot (image) pixels, from the fault's witness.
fn overlay_source(trials: &[TrialRow], screenshots: &Path) -> Option<Overlay> {
    trials
        .iter()
        .filter(|t| t.fault == Some(Fault::UnscaledCoordinates) && t.fired == Some(true))
        .find_map(|t| {
            let w: UnscaledClickWitness = serde_json::from_str(t.witness.as_deref()?).ok()?;
            let png = std::fs::read(screenshots.join(t.before_png.as_deref()?)).ok()?;
            let (ix, iy) = (w.image_point.x, w.image_point.y);
            let (ex, ey) = (w.executed.x, w.executed.y);
            let (vx, vy) = (w.intended.x, w.intended.y);
            // Executed is a viewport point; the screenshot is the image, scaled by ix/vx.
            let (sx, sy) = (ix / vx, iy / vy);
            Some(Overlay {
                trial_key: t.trial_key.clone(),
                png,
                intended: PixelPoint::new(ix, iy),
                clicked: PixelPoint::new(ex * sx, ey * sy),
            })
        })
}
