//! Regenerates every output of a run from its database alone: the CSV tables, the plots
//! and `report.md`. Same database and analysis config in, byte-identical files out.

use crate::compare::{self, fmt4, format_p, AnalysisConfig, Comparison, PairedOutcomes};
use crate::db::{ResultsDb, TrialRow};
use crate::plots::{self, BarPoint, ForestRow, HeatmapCell, PixelPoint, PlotLabels};
use crate::recovery::{self, Recovery, RecoveryCell, STOP_REASONS};
use crate::stats::Estimate;
use crate::tables::{self, CatalogueRow, DetectionRow, FalseAlarmRow, FiringRow, LayerRow};
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The files a report run wrote.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    pub detection_csv: PathBuf,
    /// Detection per catalogue layer and policy.
    pub layers_csv: PathBuf,
    pub false_alarms_csv: PathBuf,
    pub comparisons_csv: PathBuf,
    pub report_md: PathBuf,
    pub plots: Vec<PathBuf>,
    /// The recovery tables; `None` when the run has no episodes (none were written).
    pub recovery: Option<RecoveryFiles>,
}

/// The recovery experiment's tables.
#[derive(Debug, Clone)]
pub struct RecoveryFiles {
    /// One row per episode.
    pub recovery_csv: PathBuf,
    /// Success rate per task x fault x policy x agent.
    pub summary_csv: PathBuf,
    /// Detection x recovery cross-table.
    pub detection_recovery_csv: PathBuf,
    /// Paired policy comparisons on recovery success.
    pub comparisons_csv: PathBuf,
}

/// The policy order recorded with the run (falls back to the built-in order).
pub fn run_policies(db: &ResultsDb) -> Result<Vec<String>> {
    Ok(match db.meta("policies")? {
        Some(json) => serde_json::from_str(&json).context("meta.policies is not a JSON list")?,
        None => ["unverified", "generic", "pixel", "outcome"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    })
}

/// The analysis defaults for a stored run (seed derived from its root seed).
pub fn default_config(db: &ResultsDb) -> Result<AnalysisConfig> {
    let root = db
        .meta("manifest")?
        .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
        .and_then(|m| m["root_seed"].as_u64())
        .unwrap_or(0);
    Ok(AnalysisConfig::for_run(root))
}

/// Writes every table, plot and `report.md` into `out`. `screenshots` is the directory
/// the trials' screenshot paths are relative to (the run directory).
pub fn write_all(
    db: &ResultsDb,
    out: &Path,
    screenshots: &Path,
    cfg: &AnalysisConfig,
) -> Result<ReportFiles> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let trials = db.trials()?;
    let verdicts = db.verdicts()?;
    let policies = run_policies(db)?;
    let detection = tables::detection(&trials, &verdicts, &policies);
    let false_alarms = tables::false_alarms(&trials, &verdicts, &policies);
    let firing = tables::firing(&trials);
    let layers = tables::layers(&trials, &verdicts, &policies, cfg);
    let catalogue = tables::catalogue(&firing, &detection, &policies);
    // Each fault once, in report order (firing rows are sorted by layer, then fault).
    let faults = distinct(firing.iter().map(|f| f.fault.clone()));
    let comparisons = compare::comparisons(&trials, &verdicts, &policies, &faults, cfg);
    let pooled = compare::pooled_caught(&trials, &verdicts, &policies);
    let episodes = db.episodes()?;
    // None for a detection-only or older run: then nothing below differs from before.
    let recovery = Recovery::analyse(&episodes, &policies, cfg);

    let plot_dir = out.join("plots");
    let mut plot_files = Vec::new();
    let mut plot_notes = Vec::new();

    // Detection heatmap: fault x policy.
    let det_cells: Vec<HeatmapCell> = aggregate_by_fault(&detection)
        .into_iter()
        .map(|(fault, policy, caught, fired)| HeatmapCell {
            row: fault,
            column: policy.clone(),
            numerator: caught,
            denominator: fired,
        })
        .collect();
    let f = plots::detection_heatmap(
        &det_cells,
        &faults,
        &policies,
        &PlotLabels::new("Detection: caught / fired", "policy", "fault"),
        plot_dir.join("detection_heatmap"),
    )?;
    plot_files.extend([f.svg, f.png]);

    // Layer heatmap: layer x policy, every layer with faulty trials (n/a where none fired).
    let layer_rows = distinct(firing.iter().map(|f| f.layer.clone()));
    let layer_cells: Vec<HeatmapCell> = layers
        .iter()
        .map(|r| HeatmapCell {
            row: r.layer.clone(),
            column: r.policy.clone(),
            numerator: r.caught,
            denominator: r.fired,
        })
        .collect();
    let f = plots::detection_heatmap(
        &layer_cells,
        &layer_rows,
        &policies,
        &PlotLabels::new("Detection by layer: caught / fired", "policy", "layer"),
        plot_dir.join("layer_heatmap"),
    )?;
    plot_files.extend([f.svg, f.png]);

    // False-alarm heatmap: task x policy.
    let mut tasks: Vec<String> = false_alarms.iter().map(|r| r.task.clone()).collect();
    tasks.dedup();
    let fa_cells: Vec<HeatmapCell> = false_alarms
        .iter()
        .map(|r| HeatmapCell {
            row: r.task.clone(),
            column: r.policy.clone(),
            numerator: r.false_alarms,
            denominator: r.n_working - r.outcome_failed,
        })
        .collect();
    let f = plots::false_alarm_heatmap(
        &fa_cells,
        &tasks,
        &policies,
        &PlotLabels::new("False alarms on working trials", "policy", "task"),
        plot_dir.join("false_alarm_heatmap"),
    )?;
    plot_files.extend([f.svg, f.png]);

    // Forest plot of paired differences.
    let forest_rows: Vec<ForestRow> = comparisons
        .iter()
        .filter_map(|c| {
            c.paired.difference.as_ref().map(|d| ForestRow {
                label: format!("{} − {}, {}", c.policy_b, c.policy_a, short_fault(&c.fault)),
                point: d.point,
                lower: d.lower,
                upper: d.upper,
            })
        })
        .collect();
    let f = plots::forest(
        &forest_rows,
        &PlotLabels::new(
            "Paired differences in caught rate (later policy minus earlier)",
            "difference in caught rate",
            "",
        ),
        plot_dir.join("paired_differences"),
    )?;
    plot_files.extend([f.svg, f.png]);

    if let Some(r) = &recovery {
        let f = plots::recovery_bars(
            &recovery_bar_points(&r.cells),
            &PlotLabels::new(
                "Recovery: success rate on fired episodes",
                "task",
                "success rate",
            ),
            plot_dir.join("recovery_bars"),
        )?;
        plot_files.extend([f.svg, f.png]);
    }

    // Click overlay: the first grid layout whose unscaled click fired.
    match overlay_source(&trials, screenshots) {
        Some((t, png, intended, clicked)) => {
            let title = format!(
                "{}: intended point (green) vs the unscaled click (red), image coordinates",
                t.trial_key
            );
            let f = plots::click_overlay(&png, intended, clicked, &title, plot_dir.join("click_overlay"))?;
            plot_files.extend([f.svg, f.png]);
        }
        None => plot_notes.push(
            "No click overlay: no fired `execute.unscaled_coordinates` trial with its screenshot was found.".to_string(),
        ),
    }

    let files = ReportFiles {
        detection_csv: out.join("detection.csv"),
        layers_csv: out.join("layers.csv"),
        false_alarms_csv: out.join("false_alarms.csv"),
        comparisons_csv: out.join("comparisons.csv"),
        report_md: out.join("report.md"),
        plots: plot_files,
        recovery: recovery.as_ref().map(|_| RecoveryFiles {
            recovery_csv: out.join("recovery.csv"),
            summary_csv: out.join("recovery_summary.csv"),
            detection_recovery_csv: out.join("detection_recovery.csv"),
            comparisons_csv: out.join("recovery_comparisons.csv"),
        }),
    };
    write(
        &files.detection_csv,
        &tables::detection_csv(&detection, cfg),
    )?;
    write(&files.layers_csv, &tables::layers_csv(&layers))?;
    write(
        &files.false_alarms_csv,
        &tables::false_alarms_csv(&false_alarms, cfg),
    )?;
    write(
        &files.comparisons_csv,
        &compare::comparisons_csv(&comparisons, cfg),
    )?;
    if let (Some(r), Some(f)) = (&recovery, &files.recovery) {
        write(&f.recovery_csv, &recovery::recovery_csv(&r.episodes))?;
        write(&f.summary_csv, &recovery::recovery_summary_csv(&r.cells))?;
        write(
            &f.detection_recovery_csv,
            &recovery::detection_recovery_csv(&r.cells),
        )?;
        write(
            &f.comparisons_csv,
            &recovery::recovery_comparisons_csv(&r.comparisons, cfg),
        )?;
    }
    let manifest = db.meta("manifest")?;
    let md = markdown(&Sections {
        manifest: manifest.as_deref(),
        cfg,
        firing: &firing,
        detection: &detection,
        layers: &layers,
        catalogue: &catalogue,
        policies: &policies,
        false_alarms: &false_alarms,
        comparisons: &comparisons,
        pooled: &pooled,
        recovery: recovery.as_ref(),
        plots_present: files.plots.iter().any(|p| p.ends_with("click_overlay.svg")),
        plot_notes: &plot_notes,
    })?;
    let md = crate::infra::append_to_report(db, out, md)?;
    write(&files.report_md, &md)?;
    Ok(files)
}

/// The distinct values in the order they first occur.
fn distinct(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|v| seen.insert(v.clone()))
        .collect()
}

fn short_fault(fault: &str) -> &str {
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
    let tasks: BTreeSet<&str> = fired.iter().map(|(c, _)| c.task.as_str()).collect();
    let task_faults: BTreeSet<(&str, &str)> = fired
        .iter()
        .map(|(c, _)| (c.task.as_str(), c.fault.as_str()))
        .collect();
    let agents: BTreeSet<&str> = fired.iter().map(|(c, _)| c.agent.as_str()).collect();
    let (name_fault, name_agent) = (task_faults.len() > tasks.len(), agents.len() > 1);
    fired
        .into_iter()
        .map(|(c, r)| {
            let mut group = c.task.clone();
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
fn aggregate_by_fault(rows: &[DetectionRow]) -> Vec<(String, String, u64, u64)> {
    let mut out: Vec<(String, String, u64, u64)> = Vec::new();
    for r in rows {
        match out
            .iter_mut()
            .find(|(f, p, _, _)| *f == r.fault && *p == r.policy)
        {
            Some(e) => {
                e.2 += r.caught;
                e.3 += r.fired;
            }
            None => out.push((r.fault.clone(), r.policy.clone(), r.caught, r.fired)),
        }
    }
    out
}

/// The overlay's inputs: the trial, its before screenshot, the intended and the clicked
/// point in screenshot (image) pixels.
fn overlay_source(
    trials: &[TrialRow],
    screenshots: &Path,
) -> Option<(TrialRow, Vec<u8>, PixelPoint, PixelPoint)> {
    trials
        .iter()
        .filter(|t| {
            t.fault.as_deref() == Some("execute.unscaled_coordinates") && t.fired == Some(true)
        })
        .find_map(|t| {
            let w: serde_json::Value = serde_json::from_str(t.witness.as_deref()?).ok()?;
            let png = std::fs::read(screenshots.join(t.before_png.as_deref()?)).ok()?;
            let img = w["image_point"].clone();
            let (ix, iy) = (img["x"].as_f64()?, img["y"].as_f64()?);
            let (ex, ey) = (w["executed"]["x"].as_f64()?, w["executed"]["y"].as_f64()?);
            let (vx, vy) = (w["intended"]["x"].as_f64()?, w["intended"]["y"].as_f64()?);
            // Executed is a viewport point; the screenshot is the image, scaled by ix/vx.
            let (sx, sy) = (ix / vx, iy / vy);
            Some((
                t.clone(),
                png,
                PixelPoint::new(ix, iy),
                PixelPoint::new(ex * sx, ey * sy),
            ))
        })
}

fn write(path: &Path, text: &str) -> Result<()> {
    // Write to a temporary file and rename, so a reader never sees half a table.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn rate(e: Option<&Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{:.1}% [{:.1}, {:.1}]",
            100.0 * e.point,
            100.0 * e.lower,
            100.0 * e.upper
        ),
        None => "–".into(),
    }
}

/// A paired comparison's Markdown cells: `n | mean A | mean B | difference [CI] | method |
/// correlation | McNemar b/c | p`.
fn paired_markdown_cells(p: &PairedOutcomes) -> String {
    let (diff, method) = match &p.difference {
        Some(d) => (
            format!("{:+.3} [{:+.3}, {:+.3}]", d.point, d.lower, d.upper),
            match &d.note {
                Some(n) => format!("{} ({n})", d.method),
                None => d.method.to_string(),
            },
        ),
        None => (
            format!("{:+.3}", p.mean_b - p.mean_a),
            "fewer than 2 layouts: no interval".into(),
        ),
    };
    format!(
        "{} | {} | {} | {} | {} | {} | {}/{} | {}",
        p.n,
        fmt4(p.mean_a),
        fmt4(p.mean_b),
        diff,
        method,
        p.correlation.map(fmt4).unwrap_or_else(|| "–".into()),
        p.mcnemar.b,
        p.mcnemar.c,
        format_p(p.mcnemar.p_value),
    )
}

struct Sections<'a> {
    manifest: Option<&'a str>,
    cfg: &'a AnalysisConfig,
    firing: &'a [FiringRow],
    detection: &'a [DetectionRow],
    layers: &'a [LayerRow],
    catalogue: &'a [CatalogueRow],
    policies: &'a [String],
    false_alarms: &'a [FalseAlarmRow],
    comparisons: &'a [Comparison],
    pooled: &'a [compare::PooledRate],
    recovery: Option<&'a Recovery<'a>>,
    plots_present: bool,
    plot_notes: &'a [String],
}

fn markdown(s: &Sections<'_>) -> Result<String> {
    let cfg = s.cfg;
    let level = format!("{:.0}%", cfg.level.get() * 100.0);
    let method = match cfg.proportion {
        compare::ProportionMethod::Wilson => "Wilson score",
        compare::ProportionMethod::ClopperPearson => "Clopper-Pearson",
    };
    let mut md = String::new();
    md.push_str("# faultline report\n\n");
    if let Some(m) = s.manifest {
        let v: serde_json::Value = serde_json::from_str(m).context("meta.manifest is not JSON")?;
        md.push_str("## Run\n\n| field | value |\n|---|---|\n");
        for key in [
            "faultline_version",
            "git_commit",
            "chromium_version",
            "root_seed",
            "layouts",
            "tasks",
            "policies",
            "decisions",
        ] {
            if let Some(x) = v.get(key) {
                let text = match x {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = writeln!(md, "| {key} | `{}` |", text.replace('|', "\\|"));
            }
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "Intervals: {level} {method} intervals for single rates; paired differences use a cluster bootstrap over layouts ({} resamples, BCa unless noted, seeds derived from {}); McNemar's exact test on discordant trials.\n",
        cfg.resamples, cfg.seed
    );

    md.push_str("## Fault firing\n\n");
    md.push_str("| layer | fault | stage | task | faulty trials | fired | not fired |\n|---|---|---|---|---:|---:|---:|\n");
    for r in s.firing {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} |",
            r.layer, r.fault, r.stage, r.task, r.faulty_trials, r.fired, r.not_fired
        );
    }
    md.push_str("\nHow to read it: a faulty trial *fired* when its fault left the witness its catalogue entry names (the corrupted text, the unscaled point, the held response, the rewritten message, the early capture, ...); trials whose fault did not fire are excluded from every detection table, never counted as caught or missed.\n\n");
    let not_fired: u64 = s.firing.iter().map(|r| r.not_fired).sum();
    if not_fired > 0 {
        let _ = writeln!(md, "**{not_fired} faulty trial(s) did not fire** (`fired = 0` in `results.sqlite`, no witness): [Faults that did not fire](#faults-that-did-not-fire) lists them with the catalogue's reason.\n");
    }

    md.push_str("## Detection\n\n");
    let _ = writeln!(md, "| layer | fault | task | policy | n (fired) | caught | missed | caught rate [{level} CI] | alarms |\n|---|---|---|---|---:|---:|---:|---:|---:|");
    for r in s.detection {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.layer,
            r.fault,
            r.task,
            r.policy,
            r.fired,
            r.caught,
            r.missed,
            rate(cfg.proportion(r.caught, r.fired).as_ref()),
            r.alarms
        );
    }
    md.push_str("\nHow to read it: *caught* counts fired faulty trials on which the policy's verdict agreed with the ledger (not Success when the intended outcome failed; Success when it happened despite a lying tool message); *alarms* counts verdicts other than Success whatever the truth, so a policy that alarms on everything shows many alarms but misses the feedback fault.\n\n");

    layers_markdown(&mut md, s.layers, &level);
    catalogue_markdown(&mut md, s.catalogue, s.policies);
    not_fired_markdown(&mut md, s.firing);

    md.push_str("## False alarms\n\n");
    let _ = writeln!(md, "| task | policy | n (working) | false alarms | rate [{level} CI] | outcome failed |\n|---|---|---:|---:|---:|---:|");
    for r in s.false_alarms {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            r.task,
            r.policy,
            r.n_working,
            r.false_alarms,
            rate(
                cfg.proportion(r.false_alarms, r.n_working - r.outcome_failed)
                    .as_ref()
            ),
            r.outcome_failed
        );
    }
    md.push_str("\nHow to read it: on working trials (no fault) whose outcome the ledger confirms, a false alarm is any verdict other than Success; *outcome failed* counts working trials the ledger did not confirm, which are excluded from the rate.\n\n");

    md.push_str("## Paired comparisons\n\n");
    let _ = writeln!(md, "| scope | policies (B − A) | n | caught A | caught B | difference [{level} CI] | method | correlation | McNemar b/c | p |\n|---|---|---:|---:|---:|---:|---|---:|---:|---:|");
    for c in s.comparisons {
        let _ = writeln!(
            md,
            "| {} | {} − {} | {} |",
            short_fault(&c.fault),
            c.policy_b,
            c.policy_a,
            paired_markdown_cells(&c.paired),
        );
    }
    md.push_str("\nHow to read it: each row compares two policies on the same fired faulty trials; the difference is B's caught rate minus A's, its interval resamples whole layouts so both policies see the same resample; b counts trials only B caught, c trials only A caught, and p is McNemar's exact two-sided test on them.\n\n");

    md.push_str("## Pooled caught rate per policy\n\n");
    md.push_str("| policy | n (fired) | layouts | caught rate | naive SE | clustered SE | design effect |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for p in s.pooled {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.policy,
            p.se.n,
            p.se.clusters,
            fmt4(p.se.mean),
            fmt4(p.se.naive_se),
            fmt4(p.se.clustered_se),
            p.se.design_effect().map(fmt4).unwrap_or_else(|| "–".into())
        );
    }
    md.push_str("\nHow to read it: every fired faulty trial pooled across faults; the clustered standard error treats each layout as a cluster (with the C/(C-1) correction), so it exceeds the naive one when trials on the same layout succeed or fail together.\n\n");

    if let Some(r) = s.recovery {
        recovery_markdown(&mut md, r, &level);
    }

    md.push_str("## Plots\n\n");
    md.push_str("![Detection heatmap](plots/detection_heatmap.svg)\n\nHow to read it: each cell is caught/fired for one fault and policy, summed over tasks; darker is better.\n\n");
    md.push_str("![False-alarm heatmap](plots/false_alarm_heatmap.svg)\n\nHow to read it: each cell is false alarms out of confirmed working trials; darker red is worse.\n\n");
    md.push_str("![Paired differences](plots/paired_differences.svg)\n\nHow to read it: one row per policy pair and scope; an interval that excludes zero is a difference the layouts support.\n\n");
    if s.plots_present {
        md.push_str("![Click overlay](plots/click_overlay.svg)\n\nHow to read it: the screenshot the model saw; green is where it asked to click, red is where the executor clicked when it skipped coordinate scaling.\n\n");
    }
    for n in s.plot_notes {
        let _ = writeln!(md, "{n}\n");
    }
    md.push_str("Every plot is also written as PNG beside its SVG.\n");
    Ok(md)
}

/// A Markdown table cell from free text: pipes escaped, line breaks folded.
fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// The `n_eff` cell of a clustered rate, marked † (and `fallback` set) when the design
/// effect could not be estimated.
fn n_eff_cell(rate: Option<&crate::stats::ClusteredProportion>, fallback: &mut bool) -> String {
    match rate {
        Some(p) if p.estimate.note.is_some() => {
            *fallback = true;
            format!("{:.1}†", p.n_effective)
        }
        Some(p) => format!("{:.1}", p.n_effective),
        None => "–".into(),
    }
}

/// The `## Detection by layer` section: the layers table and the layer heatmap.
fn layers_markdown(md: &mut String, layers: &[LayerRow], level: &str) {
    md.push_str("## Detection by layer\n\n");
    let _ = writeln!(md, "| layer | policy | faults | tasks | n (fired) | caught | caught rate [{level} CI] | clusters | n_eff |\n|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut fallback = false;
    for r in layers {
        let e = r.rate.as_ref().map(|p| &p.estimate);
        let n_eff = n_eff_cell(r.rate.as_ref(), &mut fallback);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.layer,
            r.policy,
            r.faults,
            r.tasks,
            r.fired,
            r.caught,
            rate(e),
            e.and_then(|e| e.clusters).unwrap_or(0),
            n_eff,
        );
    }
    md.push_str("\nHow to read it: each row pools every fired faulty trial of one layer's faults, over all their tasks, under one policy (*faults* and *tasks* count what was pooled). Trials on the same page are not independent, since the layer's faults are injected on the same task layouts and a policy tends to judge a layout alike, so each (task, layout) pair is a cluster and the interval is a Wilson score interval on the effective sample size *n_eff* = n / DEFF, the design effect DEFF = (clustered SE / naive SE)² floored at 1 and capped at the trials per cluster, so *n_eff* lies between the clusters and n (whatever the method for single rates above).");
    if fallback {
        md.push_str(" † marks rows where DEFF could not be estimated (all outcomes equal, or a single cluster): *n_eff* then counts clusters, the conservative choice.");
    }
    md.push_str("\n\n");
    md.push_str("![Detection by layer](plots/layer_heatmap.svg)\n\nHow to read it: each cell is caught/fired for one layer and policy, pooled over the layer's faults and tasks; darker is better; n/a marks a layer none of whose faults fired.\n\n");
}

/// The `## Catalogue` section: one row per fault, caught/fired under each policy.
fn catalogue_markdown(md: &mut String, catalogue: &[CatalogueRow], policies: &[String]) {
    md.push_str("## Catalogue\n\n");
    let mut header = String::from("| layer | fault | tasks | faulty trials | fired |");
    let mut align = String::from("|---|---|---|---:|---:|");
    for p in policies {
        let _ = write!(header, " {} |", md_cell(p));
        align.push_str("---:|");
    }
    let _ = writeln!(md, "{header}\n{align}");
    for r in catalogue {
        let _ = write!(
            md,
            "| {} | `{}` | {} | {} | {} |",
            r.layer,
            r.fault,
            r.tasks.join(", "),
            r.faulty_trials,
            r.fired
        );
        for (caught, fired) in &r.by_policy {
            if *fired == 0 {
                md.push_str(" – |");
            } else {
                let _ = write!(md, " {caught}/{fired} |");
            }
        }
        md.push('\n');
    }
    md.push_str("\nHow to read it: one row per fault of the run, by layer; each policy's column is caught/fired over the fault's tasks (the fired trials it judged right out of those it judged), – where the fault never fired. Trials whose fault did not fire count in *faulty trials* only.\n\n");
}

/// The `## Faults that did not fire` section: every (fault, task) with trials that did
/// not fire, with the reasons stored with them.
fn not_fired_markdown(md: &mut String, firing: &[FiringRow]) {
    md.push_str("## Faults that did not fire\n\n");
    let rows: Vec<&FiringRow> = firing.iter().filter(|r| r.not_fired > 0).collect();
    if rows.is_empty() {
        md.push_str("Every faulty trial's fault fired.\n\n");
        return;
    }
    md.push_str(
        "| layer | fault | task | not fired | faulty trials | why |\n|---|---|---|---:|---:|---|\n",
    );
    for r in rows {
        let mut reasons: Vec<String> = r.not_fired_reasons.iter().map(|x| md_cell(x)).collect();
        if r.not_fired_unexplained > 0 {
            reasons.push("no reason stored".into());
        }
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} |",
            r.layer,
            r.fault,
            r.task,
            r.not_fired,
            r.faulty_trials,
            reasons.join("; "),
        );
    }
    md.push_str("\nHow to read it: a fault that did not fire left no witness, so there was nothing to detect: these trials are in no caught, missed or alarm count above. *why* is the catalogue's explanation of when the fault cannot fire, stored with each trial (distinct reasons joined); *no reason stored* marks trials from a database written before schema version 2.\n\n");
}

/// The `## Recovery` section: success rates, the detection x recovery cross-table, stop
/// reasons, paired comparisons and the bar plot, each with how to read it.
fn recovery_markdown(md: &mut String, r: &Recovery<'_>, level: &str) {
    let total = r.episodes.len();
    let fired = r.episodes.iter().filter(|e| e.fired).count();
    let agents: BTreeSet<&str> = r.episodes.iter().map(|e| e.agent.as_str()).collect();
    let runs: BTreeSet<u32> = r.episodes.iter().map(|e| e.run).collect();
    md.push_str("## Recovery\n\n");
    let _ = writeln!(
        md,
        "{total} episode(s): {fired} with the fault fired, {} not fired (counted only in the *not fired* column below, never as recovered or not); agent(s): {}; {} run(s) per layout and policy.\n",
        total - fired,
        agents.into_iter().collect::<Vec<_>>().join(", "),
        runs.len(),
    );
    md.push_str("An episode replays a recorded decision with its fault on; the agent then sees the observation and the policy's message and may stop, answer, wait, retry or act again within its budget of browser actions. It *recovered* when the ledger confirms the task's outcome at the end.\n\n");

    md.push_str("### Success rate\n\n");
    let _ = writeln!(md, "| task | fault | policy | agent | n (fired) | successes | success rate [{level} CI] | layouts | n_eff | not fired |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|");
    let mut fallback = false;
    for c in &r.cells {
        let e = c.rate.as_ref().map(|p| &p.estimate);
        let n_eff = n_eff_cell(c.rate.as_ref(), &mut fallback);
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.task,
            c.fault,
            c.policy,
            c.agent,
            c.n,
            c.successes,
            rate(e),
            e.and_then(|e| e.clusters).unwrap_or(0),
            n_eff,
            c.not_fired,
        );
    }
    md.push_str("\nHow to read it: the success rate is over episodes whose fault fired; *not fired* episodes are counted apart, never as recovered or not. The runs of one layout are correlated (same page, same fault, an agent that tends to act alike), so the layout is the cluster: the interval is a Wilson score interval on the effective sample size *n_eff* = n / DEFF, with the design effect DEFF = (clustered SE / naive SE)² floored at 1 and capped at the runs per layout, so *n_eff* lies between the number of layouts and n (whatever the method for single rates above).");
    if fallback {
        md.push_str(" † marks cells where DEFF could not be estimated (all outcomes equal, or a single layout): *n_eff* then counts layouts, the conservative choice.");
    }
    md.push_str("\n\n");

    md.push_str("### Detection and recovery\n\n");
    md.push_str("| task | fault | policy | agent | n (fired) | detected, recovered | detected, not recovered | recovered, undetected | neither |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for c in &r.cells {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            c.task,
            c.fault,
            c.policy,
            c.agent,
            c.n,
            c.detected_recovered,
            c.detected_not_recovered,
            c.recovered_undetected,
            c.neither,
        );
    }
    md.push_str("\nHow to read it: *detected* means the policy's verdict on the replayed decision agreed with the ledger (the detection tables' *caught*); the four counts split the fired episodes. *Detected, not recovered* are agents told the truth that still failed; *recovered, undetected* are agents that recovered although the policy's first verdict was wrong.\n\n");

    md.push_str("### How episodes ended\n\n");
    let other = r.stop_reasons.iter().any(|s| s.other > 0);
    let mut header = String::from("| task | policy | agent | n (fired) |");
    let mut align = String::from("|---|---|---|---:|");
    for reason in STOP_REASONS {
        let _ = write!(header, " {} |", reason.replace('_', " "));
        align.push_str("---:|");
    }
    if other {
        header.push_str(" other |");
        align.push_str("---:|");
    }
    let _ = writeln!(md, "{header}\n{align}");
    for s in &r.stop_reasons {
        let _ = write!(md, "| {} | {} | {} | {} |", s.task, s.policy, s.agent, s.n);
        for count in s.counts {
            let _ = write!(md, " {count} |");
        }
        if other {
            let _ = write!(md, " {} |", s.other);
        }
        md.push('\n');
    }
    md.push_str("\nHow to read it: how the fired episodes ended, summed over faults: *stopped* and *answered* are the agent ending the episode itself, *over budget* and *step cap* the harness cutting it off, *parse error* and *agent error* a reply that could not be used.\n\n");

    md.push_str("### Paired comparisons on recovery\n\n");
    let _ = writeln!(md, "| scope | policies (B − A) | n | success A | success B | difference [{level} CI] | method | correlation | McNemar b/c | p |\n|---|---|---:|---:|---:|---:|---|---:|---:|---:|");
    for c in &r.comparisons {
        let scope = if c.scope == "all" {
            format!("all tasks and faults · {}", c.agent)
        } else {
            format!("{} · `{}` · {}", c.task, c.fault, c.agent)
        };
        let _ = writeln!(
            md,
            "| {scope} | {} − {} | {} |",
            c.policy_b,
            c.policy_a,
            paired_markdown_cells(&c.paired),
        );
    }
    md.push_str("\nHow to read it: each row compares two policies on the same episodes (same task, fault, agent, layout and run, with the fault fired under both); the difference is B's success rate minus A's, and its interval resamples whole layouts, every run of both policies together; b counts episodes only B recovered, c those only A recovered, and p is McNemar's exact two-sided test on them. McNemar counts every run as an independent pair, so with several runs per layout its p is optimistic; the layout-resampled interval is the one to trust.\n\n");

    md.push_str("![Recovery success rates](plots/recovery_bars.svg)\n\nHow to read it: one bar per policy within each task, its height the success rate over fired episodes, the whisker its clustered Wilson interval and n the fired episodes.\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tests::{row, step, verdict};

    const UNSCALED_NOT_FIRED: &str =
        "the image and the viewport have the same size (there is nothing to scale)";

    /// A detection-only database: four layouts of one fault, a working trial per layout,
    /// verdicts from every built-in policy.
    fn detection_only_db(path: &Path) -> ResultsDb {
        let mut db = ResultsDb::open(path).unwrap();
        for layout in 0..4u32 {
            for condition in ["faulty", "working"] {
                let key = format!("detection/grid/{layout:03}/{condition}");
                let mut t = row(&key);
                t.layout_index = layout;
                t.condition = condition.into();
                if condition == "working" {
                    (t.fault, t.stage, t.fired, t.layer) = (None, None, None, None);
                    t.truth_achieved = true;
                } else {
                    t.fired = Some(layout != 3);
                    t.not_fired_reason = (layout == 3).then(|| UNSCALED_NOT_FIRED.to_string());
                }
                let verdicts: Vec<_> = [
                    ("unverified", "success"),
                    ("generic", "no_change"),
                    ("pixel", if layout % 2 == 0 { "fail" } else { "success" }),
                    (
                        "outcome",
                        if condition == "faulty" {
                            "fail"
                        } else {
                            "success"
                        },
                    ),
                ]
                .into_iter()
                .map(|(p, v)| verdict(&key, p, v))
                .collect();
                db.insert_trial(&t, &verdicts).unwrap();
            }
        }
        db
    }

    /// Every file under `dir`, by relative path, with its bytes.
    fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    const POLICIES: [&str; 2] = ["unverified", "outcome"];

    /// A database of three catalogue layers, with the run's policies recorded: per task
    /// layout, `transport.slow_response` on form (the outcome holds; on layout 2 it does
    /// not fire unless `all_fired`), `dom.stale_element` on form and select and
    /// `dom.duplicate_label` on form (outcome catches them except on select layout 0, so
    /// form's layouts are clusters of two trials), `parse.token_leak` stored without a layer
    /// as a version-1 row would be, and a working trial per task.
    fn catalogue_db(path: &Path, all_fired: bool) -> ResultsDb {
        let mut db = ResultsDb::open(path).unwrap();
        db.set_meta("policies", &serde_json::to_string(&POLICIES).unwrap())
            .unwrap();
        for layout in 0..3u32 {
            let faulty = [
                (
                    "transport.slow_response",
                    "observe",
                    Some("transport"),
                    "form",
                    true,
                ),
                ("dom.stale_element", "execute", Some("dom"), "form", false),
                ("dom.duplicate_label", "execute", Some("dom"), "form", false),
                ("dom.stale_element", "execute", Some("dom"), "select", false),
                ("parse.token_leak", "parse", None, "search", false),
            ];
            for (fault, stage, layer, task, holds) in faulty {
                let key = format!("detection/{task}/{layout:03}/{fault}");
                let mut t = row(&key);
                (t.task, t.layout_index, t.truth_achieved) = (task.into(), layout, holds);
                (t.fault, t.stage) = (Some(fault.into()), Some(stage.into()));
                t.layer = layer.map(str::to_string);
                if fault == "transport.slow_response" && layout == 2 && !all_fired {
                    t.fired = Some(false);
                    t.not_fired_reason = Some("the page sent no save request".into());
                }
                let outcome_right = !(task == "select" && layout == 0);
                let outcome = if holds == outcome_right {
                    "success"
                } else {
                    "fail"
                };
                let verdicts = [
                    verdict(&key, "unverified", "success"),
                    verdict(&key, "outcome", outcome),
                ];
                db.insert_trial(&t, &verdicts).unwrap();
            }
            for task in ["search", "form", "select"] {
                let key = format!("detection/{task}/{layout:03}/working");
                let mut t = row(&key);
                (t.task, t.layout_index, t.condition) = (task.into(), layout, "working".into());
                (t.fault, t.stage, t.fired, t.layer) = (None, None, None, None);
                t.truth_achieved = true;
                let verdicts = POLICIES.map(|p| verdict(&key, p, "success"));
                db.insert_trial(&t, &verdicts).unwrap();
            }
        }
        db
    }

    #[test]
    fn the_report_covers_layers_the_catalogue_and_faults_that_did_not_fire() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalogue_db(&dir.path().join("results.sqlite"), false);
        let cfg = AnalysisConfig::for_run(5);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let files = write_all(&db, &a, dir.path(), &cfg).unwrap();
        write_all(&db, &b, dir.path(), &cfg).unwrap();
        let (ta, tb) = (tree(&a), tree(&b));
        assert_eq!(ta, tb, "a rebuild from the same database differs");
        assert_eq!(files.layers_csv, a.join("layers.csv"));
        for f in [
            "layers.csv",
            "plots/layer_heatmap.svg",
            "plots/layer_heatmap.png",
        ] {
            assert!(ta.contains_key(Path::new(f)), "{f} missing");
        }
        assert!(files.plots.contains(&a.join("plots/layer_heatmap.svg")));
        assert!(files.plots.contains(&a.join("plots/layer_heatmap.png")));
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();

        let layers = text(&files.layers_csv);
        let lines: Vec<&str> = layers.lines().collect();
        assert_eq!(lines[0], "layer,policy,faults,tasks,fired,caught,rate,ci_low,ci_high,ci_method,clusters,n_effective,design_effect,note");
        let keys: Vec<String> = lines[1..]
            .iter()
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(","))
            .collect();
        assert_eq!(
            keys,
            [
                "transport,unverified,1,1,2,2",
                "transport,outcome,1,1,2,2",
                "dom,unverified,2,2,9,0",
                "dom,outcome,2,2,9,8",
                "tool,unverified,1,1,3,0",
                "tool,outcome,1,1,3,3",
            ]
        );
        // The dom rows pool two faults on two tasks' three layouts: nine trials in six
        // (task, layout) clusters.
        assert!(lines[4].contains(",wilson-clustered,6,"), "{}", lines[4]);
        // Unverified never catches: the design effect is undefined, n_eff = clusters.
        assert!(lines[3].contains(",wilson-clustered,6,6.0000,1.5000,\"all outcomes equal"));
        let detection = text(&files.detection_csv);
        assert!(detection.starts_with(
            "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method,layer\n\
             transport.slow_response,observe,form,unverified,2,2,0,0,"
        ));
        assert!(detection.contains(",wilson,tool\n"), "the v1 row's layer");

        let md = text(&files.report_md);
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{md}"))
        };
        assert!(at("## Fault firing") < at("## Detection\n"));
        assert!(at("## Detection\n") < at("## Detection by layer"));
        assert!(at("## Detection by layer") < at("## Catalogue"));
        assert!(at("## Catalogue") < at("## Faults that did not fire"));
        assert!(at("## Faults that did not fire") < at("## False alarms"));
        for needle in [
            "| layer | fault | stage | task | faulty trials | fired | not fired |",
            "| transport | `transport.slow_response` | observe | form | 3 | 2 | 1 |",
            "| tool | `parse.token_leak` | parse | search | 3 | 3 | 0 |",
            "**1 faulty trial(s) did not fire**",
            "(#faults-that-did-not-fire)",
            "| dom | outcome | 2 | 2 | 9 | 8 | 88.9% [",
            "| dom | unverified | 2 | 2 | 9 | 0 | 0.0% [0.0, 39.0] | 6 | 6.0† |",
            "† marks rows where DEFF could not be estimated",
            "| dom | `dom.duplicate_label` | form | 3 | 3 | 0/3 | 3/3 |",
            "![Detection by layer](plots/layer_heatmap.svg)",
            "| layer | fault | tasks | faulty trials | fired | unverified | outcome |\n|---|---|---|---:|---:|---:|---:|\n",
            "| transport | `transport.slow_response` | form | 3 | 2 | 2/2 | 2/2 |",
            "| dom | `dom.stale_element` | form, select | 6 | 6 | 0/6 | 5/6 |\n| tool |",
            "| tool | `parse.token_leak` | search | 3 | 3 | 0/3 | 3/3 |",
            "| transport | `transport.slow_response` | form | 1 | 3 | the page sent no save request |",
        ] {
            at(needle);
        }
        assert!(!md.contains("Every faulty trial's fault fired."));
        // The layer heatmap has a row per layer, in layer order.
        let svg = text(&a.join("plots/layer_heatmap.svg"));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let labels: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(str::trim))
            .filter(|t| ["transport", "dom", "tool"].contains(t))
            .collect();
        assert_eq!(labels, ["transport", "dom", "tool"]);
    }

    #[test]
    fn a_trial_whose_fault_did_not_fire_is_never_caught_or_missed() {
        let dir = tempfile::tempdir().unwrap();
        let fired = catalogue_db(&dir.path().join("fired.sqlite"), true);
        let quiet = catalogue_db(&dir.path().join("quiet.sqlite"), false);
        let policies: Vec<String> = POLICIES.map(String::from).to_vec();
        let cfg = AnalysisConfig::for_run(5);
        let tables_of = |db: &ResultsDb| {
            let (t, v) = (db.trials().unwrap(), db.verdicts().unwrap());
            (
                tables::detection(&t, &v, &policies),
                tables::layers(&t, &v, &policies, &cfg),
                compare::pooled_caught(&t, &v, &policies),
            )
        };
        let (det_all, layers_all, pooled_all) = tables_of(&fired);
        let (det, layers, pooled) = tables_of(&quiet);
        // One transport trial did not fire: one fewer fired trial per policy, and it is
        // neither caught nor missed.
        for (all, some) in det_all.iter().zip(&det).take(2) {
            assert_eq!(all.fault, "transport.slow_response");
            assert_eq!((all.fired, all.caught, all.missed), (3, 3, 0));
            assert_eq!((some.fired, some.caught, some.missed), (2, 2, 0));
        }
        assert_eq!(det_all[2..], det[2..]);
        assert_eq!((layers_all[0].fired, layers[0].fired), (3, 2));
        assert_eq!((layers_all[0].caught, layers[0].caught), (3, 2));
        assert_eq!(layers_all[2..], layers[2..]);
        assert_eq!(pooled_all[0].se.n, pooled[0].se.n + 1);
        let firing = tables::firing(&quiet.trials().unwrap());
        let catalogue = tables::catalogue(&firing, &det, &policies);
        assert_eq!((catalogue[0].faulty_trials, catalogue[0].fired), (3, 2));
        assert_eq!(catalogue[0].by_policy, vec![(2, 2), (2, 2)]);
    }

    #[test]
    fn when_every_fault_fired_the_report_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalogue_db(&dir.path().join("results.sqlite"), true);
        let files = write_all(
            &db,
            &dir.path().join("out"),
            dir.path(),
            &AnalysisConfig::for_run(5),
        )
        .unwrap();
        let md = std::fs::read_to_string(&files.report_md).unwrap();
        assert!(
            md.contains("## Faults that did not fire\n\nEvery faulty trial's fault fired.\n\n## False alarms"),
            "{md}"
        );
        assert!(!md.contains("did not fire**"));
    }

    #[test]
    fn a_version_1_database_still_reports_with_reference_layers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE trials (trial_key TEXT PRIMARY KEY, experiment TEXT NOT NULL, task TEXT NOT NULL, layout_index INTEGER NOT NULL, layout_seed TEXT NOT NULL, trial_seed TEXT NOT NULL, condition TEXT NOT NULL, fault TEXT, stage TEXT, fired INTEGER, witness TEXT, decision_source TEXT NOT NULL, reply TEXT NOT NULL, actions TEXT NOT NULL, executed TEXT NOT NULL, tool_message TEXT NOT NULL, observation_text TEXT NOT NULL, before_png TEXT, after_png TEXT, evidence TEXT NOT NULL, truth_achieved INTEGER NOT NULL, truth_detail TEXT NOT NULL, ledger TEXT NOT NULL, duration_ms REAL NOT NULL);
             CREATE TABLE verdicts (trial_key TEXT NOT NULL, policy TEXT NOT NULL, verdict TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (trial_key, policy));
             INSERT INTO trials VALUES ('g0', 'detection', 'grid', 0, '5', '6', 'faulty', 'execute.unscaled_coordinates', 'execute', 1, '{}', 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);
             INSERT INTO trials VALUES ('g1', 'detection', 'grid', 1, '5', '7', 'faulty', 'execute.unscaled_coordinates', 'execute', 0, NULL, 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);
             INSERT INTO trials VALUES ('s0', 'detection', 'search', 0, '5', '8', 'faulty', 'parse.token_leak', 'parse', 1, '{}', 'oracle', 'type(x)', '[]', '[]', 'Typed.', '', NULL, NULL, '{}', 0, 'wrong query', '{}', 1.0);
             INSERT INTO verdicts VALUES ('g0', 'outcome', 'fail', ''), ('g1', 'outcome', 'fail', ''), ('s0', 'outcome', 'success', '');",
        )
        .unwrap();
        drop(conn);
        let db = ResultsDb::open_read_only(&path).unwrap();
        let out = dir.path().join("out");
        let files = write_all(&db, &out, dir.path(), &AnalysisConfig::for_run(1)).unwrap();
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        let layers = text(&files.layers_csv);
        let keys: Vec<String> = layers
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(","))
            .collect();
        // Built-in policy order; only outcome judged. execution comes before tool.
        assert_eq!(keys, ["execution,outcome,1,1,1,1", "tool,outcome,1,1,1,0"]);
        let md = text(&files.report_md);
        for needle in [
            "| execution | `execute.unscaled_coordinates` | execute | grid | 2 | 1 | 1 |",
            "| execution | `execute.unscaled_coordinates` | grid | 1 | 2 | no reason stored |",
            "| tool | `parse.token_leak` | search | 1 | 1 | – | – | – | 0/1 |",
        ] {
            assert!(md.contains(needle), "no {needle:?} in\n{md}");
        }
        assert!(out.join("plots/layer_heatmap.png").is_file());
    }

    const RECOVERY_FILES: [&str; 6] = [
        "recovery.csv",
        "recovery_summary.csv",
        "detection_recovery.csv",
        "recovery_comparisons.csv",
        "plots/recovery_bars.svg",
        "plots/recovery_bars.png",
    ];

    #[test]
    fn a_detection_only_run_writes_no_recovery_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = detection_only_db(&dir.path().join("results.sqlite"));
        let out = dir.path().join("report");
        let cfg = AnalysisConfig::for_run(3);
        let files = write_all(&db, &out, dir.path(), &cfg).unwrap();
        assert!(files.recovery.is_none());
        for f in RECOVERY_FILES {
            assert!(
                !out.join(f).exists(),
                "{f} written for a run without episodes"
            );
        }
        assert!(!files.plots.iter().any(|p| p.ends_with("recovery_bars.svg")));
        let md = std::fs::read_to_string(&files.report_md).unwrap();
        assert!(md.contains("## Pooled caught rate per policy"));
        assert!(!md.contains("Recovery"), "{md}");
        assert!(md.contains(&format!(
            "| execution | `execute.unscaled_coordinates` | grid | 1 | 4 | {UNSCALED_NOT_FIRED} |"
        )));
        assert!(md.contains("| execution | `execute.unscaled_coordinates` | grid | 4 | 3 | 0/3 | 3/3 | 2/3 | 3/3 |"), "{md}");
        assert!(std::fs::read_to_string(&files.layers_csv)
            .unwrap()
            .lines()
            .skip(1)
            .all(|l| l.starts_with("execution,")));
    }

    #[test]
    fn a_run_with_episodes_writes_the_recovery_tables_and_section_reproducibly() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = detection_only_db(&dir.path().join("results.sqlite"));
        for e in crate::recovery::tests::experiment() {
            db.insert_episode(&e, &[step(&e.episode_key, 0)]).unwrap();
        }
        let cfg = AnalysisConfig::for_run(3);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let files = write_all(&db, &a, dir.path(), &cfg).unwrap();
        write_all(&db, &b, dir.path(), &cfg).unwrap();
        let (ta, tb) = (tree(&a), tree(&b));
        assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
        for (path, bytes) in &ta {
            assert!(
                tb[path] == *bytes,
                "{} differs between rebuilds",
                path.display()
            );
        }
        for f in RECOVERY_FILES {
            assert!(ta.contains_key(Path::new(f)), "{f} missing");
        }
        let r = files.recovery.expect("recovery files");
        assert_eq!(r.summary_csv, a.join("recovery_summary.csv"));
        assert!(files.plots.contains(&a.join("plots/recovery_bars.svg")));
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(
            text(&r.recovery_csv).lines().count(),
            1 + crate::recovery::tests::experiment().len()
        );
        assert!(text(&r.summary_csv).starts_with(
            "task,fault,policy,agent,n,successes,rate,ci_low,ci_high,ci_method,clusters,n_effective,not_fired,"
        ));
        assert!(text(&r.detection_recovery_csv)
            .ends_with("frame,feedback.iframe_no_change,outcome,scripted,12,9,3,0,0\n"));
        assert!(text(&r.comparisons_csv).starts_with("scope,task,fault,agent,policy_a,policy_b,n,"));

        let md = text(&files.report_md);
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{md}"))
        };
        // After the detection sections, before the plots.
        assert!(at("## Pooled caught rate per policy") < at("## Recovery"));
        assert!(at("## Recovery") < at("## Plots"));
        for needle in [
            "### Success rate",
            "| frame | `feedback.iframe_no_change` | outcome | scripted | 12 | 9 | 75.0% [",
            "### Detection and recovery",
            "### How episodes ended",
            "| frame | outcome | scripted | 12 | 9 | 0 | 0 | 3 | 0 | 0 |",
            "### Paired comparisons on recovery",
            "| frame · `feedback.iframe_no_change` · scripted | outcome − unverified | 12 |",
            "| all tasks and faults · scripted | outcome − unverified | 12 |",
            "![Recovery success rates](plots/recovery_bars.svg)",
            "26 episode(s): 24 with the fault fired, 2 not fired",
            "† marks cells",
        ] {
            at(needle);
        }
        // The detection part is the same as without episodes.
        let detection_only = dir.path().join("c");
        let plain_dir = tempfile::tempdir().unwrap();
        let plain = detection_only_db(&plain_dir.path().join("results.sqlite"));
        let plain_md = text(
            &write_all(&plain, &detection_only, dir.path(), &cfg)
                .unwrap()
                .report_md,
        );
        let cut = at("## Recovery");
        assert_eq!(md[..cut], plain_md[..cut]);
        assert_eq!(
            md[at("## Plots")..].replace("![Recovery", ""),
            plain_md[cut..]
        );
    }
}
