//! Regenerates every output of a run from its database alone: the CSV tables, the plots
//! and `report.md`. Same database and analysis config in, byte-identical files out.

use crate::compare::{self, fmt4, format_p, AnalysisConfig, Comparison, PairedOutcomes};
use crate::db::{ResultsDb, TrialRow};
use crate::plots::{self, BarPoint, ForestRow, HeatmapCell, PixelPoint, PlotLabels};
use crate::recovery::{self, Recovery, RecoveryCell, STOP_REASONS};
use crate::stats::Estimate;
use crate::tables::{self, DetectionRow, FalseAlarmRow, FiringRow};
use anyhow::{Context, Result};
use std::collections::BTreeSet;
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
        false_alarms: &false_alarms,
        comparisons: &comparisons,
        pooled: &pooled,
        recovery: recovery.as_ref(),
        plots_present: files.plots.iter().any(|p| p.ends_with("click_overlay.svg")),
        plot_notes: &plot_notes,
    })?;
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
    md.push_str("\nHow to read it: a faulty trial *fired* when its fault left a witness (the corrupted text, the unscaled point, the rewritten message, the early capture); trials whose fault did not fire are excluded from the detection table, never counted as caught or missed.\n\n");
    let not_fired: u64 = s.firing.iter().map(|r| r.not_fired).sum();
    if not_fired > 0 {
        let _ = writeln!(md, "**{not_fired} faulty trial(s) did not fire.** Their witnesses are absent in `results.sqlite` (`fired = 0`); for the observe fault this means the early capture still ended after the tooltip appeared (a heavily loaded machine), for the feedback fault that the click did not land in the iframe.\n");
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
        let n_eff = match &c.rate {
            Some(p) if p.estimate.note.is_some() => {
                fallback = true;
                format!("{:.1}†", p.n_effective)
            }
            Some(p) => format!("{:.1}", p.n_effective),
            None => "–".into(),
        };
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
