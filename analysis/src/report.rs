//! Regenerates every output of a run from its database alone: the CSV tables, the plots
//! and `report.md`. Same database and analysis config in, byte-identical files out.

use crate::compare::{self, fmt4, format_p, AnalysisConfig, Comparison, PairedOutcomes};
use crate::db::{ResultsDb, TrialRow};
use crate::plots::{self, ForestRow, HeatmapCell, PixelPoint, PlotLabels};
use crate::stats::Estimate;
use crate::tables::{self, DetectionRow, FalseAlarmRow, FiringRow};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The files a report run wrote.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    pub detection_csv: PathBuf,
    pub false_alarms_csv: PathBuf,
    pub comparisons_csv: PathBuf,
    pub report_md: PathBuf,
    pub plots: Vec<PathBuf>,
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
    // Firing rows are sorted by fault, so dedup leaves each fault once, in report order.
    let mut faults: Vec<String> = firing.iter().map(|f| f.fault.clone()).collect();
    faults.dedup();
    let comparisons = compare::comparisons(&trials, &verdicts, &policies, &faults, cfg);
    let pooled = compare::pooled_caught(&trials, &verdicts, &policies);

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
        false_alarms_csv: out.join("false_alarms.csv"),
        comparisons_csv: out.join("comparisons.csv"),
        report_md: out.join("report.md"),
        plots: plot_files,
    };
    write(
        &files.detection_csv,
        &tables::detection_csv(&detection, cfg),
    )?;
    write(
        &files.false_alarms_csv,
        &tables::false_alarms_csv(&false_alarms, cfg),
    )?;
    write(
        &files.comparisons_csv,
        &compare::comparisons_csv(&comparisons, cfg),
    )?;
    let manifest = db.meta("manifest")?;
    let md = markdown(&Sections {
        manifest: manifest.as_deref(),
        cfg,
        firing: &firing,
        detection: &detection,
        false_alarms: &false_alarms,
        comparisons: &comparisons,
        pooled: &pooled,
        plots_present: files.plots.iter().any(|p| p.ends_with("click_overlay.svg")),
        plot_notes: &plot_notes,
    })?;
    write(&files.report_md, &md)?;
    Ok(files)
}

fn short_fault(fault: &str) -> &str {
    if fault == "*" {
        "all faults"
    } else {
        fault
    }
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
    false_alarms: &'a [FalseAlarmRow],
    comparisons: &'a [Comparison],
    pooled: &'a [compare::PooledRate],
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
    md.push_str("| fault | stage | task | faulty trials | fired | not fired |\n|---|---|---|---:|---:|---:|\n");
    for r in s.firing {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.fault, r.stage, r.task, r.faulty_trials, r.fired, r.not_fired
        );
    }
    md.push_str("\nHow to read it: a faulty trial *fired* when its fault left a witness (the corrupted text, the unscaled point, the rewritten message, the early capture); trials whose fault did not fire are excluded from the detection table, never counted as caught or missed.\n\n");
    let not_fired: u64 = s.firing.iter().map(|r| r.not_fired).sum();
    if not_fired > 0 {
        let _ = writeln!(md, "**{not_fired} faulty trial(s) did not fire.** Their witnesses are absent in `results.sqlite` (`fired = 0`); for the observe fault this means the early capture still ended after the tooltip appeared (a heavily loaded machine), for the feedback fault that the click did not land in the iframe.\n");
    }

    md.push_str("## Detection\n\n");
    let _ = writeln!(md, "| fault | task | policy | n (fired) | caught | missed | caught rate [{level} CI] | alarms |\n|---|---|---|---:|---:|---:|---:|---:|");
    for r in s.detection {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
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
