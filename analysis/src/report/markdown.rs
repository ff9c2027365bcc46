//! The Markdown writer: `report.md`, every table of the [`Analysis`] with how to read it,
//! and the plots it links to.

use super::compute::{short_fault, Analysis};
use super::{write_file, Report, ReportFiles};
use crate::compare::PairedOutcomes;
use crate::config::ProportionMethod;
use crate::db::manifest::RecoveryDesign;
use crate::format::{fmt4, format_p, md_cell, n_eff_cell, rate_cell};
use crate::recovery::{Recovery, RecoveryComparison};
use crate::stats::Estimate;
use crate::tables::{CardRate, CatalogueRow, FiringRow, LayerRow, VerifierCardRow};
use anyhow::Result;
use faultline_tasks::StopReason;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The note in place of the click overlay when the run has none to draw.
pub(crate) const NO_OVERLAY: &str = "No click overlay: no fired `execute.unscaled_coordinates` trial with its screenshot was found.";

/// Writes `report.md`.
pub struct Markdown;

impl Report for Markdown {
    fn write(&self, analysis: &Analysis<'_>, out: &Path, files: &mut ReportFiles) -> Result<()> {
        files.report_md = out.join("report.md");
        write_file(&files.report_md, &markdown(analysis)?)
    }
}

/// The header cells [`paired_markdown_cells`] fills, after a table's own key columns.
fn paired_markdown_header(mean_a: &str, mean_b: &str, level: &str) -> String {
    format!("n | {mean_a} | {mean_b} | difference [{level} CI] | method | score interval [n_eff] | correlation | b/c | test | p |\n|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|")
}

/// `+0.250 [-0.100, +0.600]`.
fn interval_cell(e: &Estimate) -> String {
    format!("{:+.3} [{:+.3}, {:+.3}]", e.point, e.lower, e.upper)
}

/// A paired comparison's Markdown cells: `n | mean A | mean B | difference [CI] | method |
/// score interval [n_eff] | correlation | b/c | test | p`. The difference shows the
/// bootstrap interval, or the score interval when the bootstrap is degenerate.
fn paired_markdown_cells(p: &PairedOutcomes) -> String {
    let main = p.main_interval();
    let method = match (&p.difference, p.bootstrap_degenerate()) {
        (None, _) => format!("{} (fewer than 2 layouts: no bootstrap)", main.method),
        (Some(d), true) => format!(
            "{} (bootstrap degenerate: {} [{:+.3}, {:+.3}])",
            main.method, d.method, d.lower, d.upper
        ),
        (Some(_), false) => match &main.note {
            Some(n) => format!("{} ({n})", main.method),
            None => main.method.to_string(),
        },
    };
    format!(
        "{} | {} | {} | {} | {} | [{:+.3}, {:+.3}] ({}) | {} | {}/{} | {} | {}",
        p.n,
        fmt4(p.mean_a),
        fmt4(p.mean_b),
        interval_cell(main),
        method,
        p.score.lower,
        p.score.upper,
        n_eff_text(p.n_effective),
        p.correlation.map(fmt4).unwrap_or_else(|| "–".into()),
        p.mcnemar.b,
        p.mcnemar.c,
        p.test.method,
        format_p(p.test.p_value),
    )
}

/// An effective sample size: whole numbers as such, others to one decimal.
fn n_eff_text(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

/// `report.md`'s text.
pub(crate) fn markdown(s: &Analysis<'_>) -> Result<String> {
    let cfg = &s.cfg;
    let level = format!("{:.0}%", cfg.level.get() * 100.0);
    let method = match cfg.proportion {
        ProportionMethod::Wilson => "Wilson score",
        ProportionMethod::ClopperPearson => "Clopper-Pearson",
    };
    let mut md = String::new();
    md.push_str("# faultline report\n\n");
    if let Some(m) = s.manifest {
        md.push_str("## Run\n\n| field | value |\n|---|---|\n");
        let rows: [(&str, String); 8] = [
            ("faultline_version", m.faultline_version.clone()),
            ("git_commit", m.git_commit.clone()),
            ("chromium_version", m.chromium_version.clone()),
            ("root_seed", m.root_seed.to_string()),
            ("layouts", m.layouts.to_string()),
            ("tasks", serde_json::to_string(&m.tasks)?),
            ("policies", serde_json::to_string(&m.policies)?),
            ("decisions", m.decisions.clone()),
        ];
        for (key, text) in rows {
            let _ = writeln!(md, "| {key} | `{}` |", text.replace('|', "\\|"));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "Intervals: {level} {method} intervals for single rates; paired differences use a cluster bootstrap over layouts ({} resamples, BCa unless noted, seeds derived from {}) beside Tango's score interval (on the effective sample size when a layout holds several pairs; the main interval when the bootstrap is degenerate); McNemar's exact test where pairs are independent, Durkalski's clustered McNemar test where they are not.\n",
        cfg.resamples, cfg.seed
    );

    md.push_str("## Fault firing\n\n");
    md.push_str("| layer | fault | stage | task | faulty trials | fired | not fired |\n|---|---|---|---|---:|---:|---:|\n");
    for r in &s.firing {
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
    for r in &s.detection {
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
            rate_cell(cfg.proportion(r.caught, r.fired).as_ref()),
            r.alarms
        );
    }
    md.push_str("\nHow to read it: *caught* counts fired faulty trials on which the policy's verdict agreed with the ledger (not Success when the intended outcome failed; Success when it happened despite a lying tool message); *alarms* counts verdicts other than Success whatever the truth, so a policy that alarms on everything shows many alarms but misses the feedback fault.\n\n");

    layers_markdown(&mut md, &s.layers, &level);
    catalogue_markdown(&mut md, &s.catalogue, s.policies);
    not_fired_markdown(&mut md, &s.firing);

    md.push_str("## False alarms\n\n");
    let _ = writeln!(md, "| task | policy | n (working) | false alarms | rate [{level} CI] | outcome failed |\n|---|---|---:|---:|---:|---:|");
    for r in &s.false_alarms {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            r.task,
            r.policy,
            r.n_working,
            r.false_alarms,
            rate_cell(
                cfg.proportion(r.false_alarms, r.n_working - r.outcome_failed)
                    .as_ref()
            ),
            r.outcome_failed
        );
    }
    md.push_str("\nHow to read it: on working trials (no fault) whose outcome the ledger confirms, a false alarm is any verdict other than Success; *outcome failed* counts working trials the ledger did not confirm, which are excluded from the rate.\n\n");

    md.push_str("## Paired comparisons\n\n");
    let _ = writeln!(
        md,
        "| scope | policies (B − A) | {}",
        paired_markdown_header("caught A", "caught B", &level)
    );
    for c in &s.comparisons {
        let _ = writeln!(
            md,
            "| {} | {} − {} | {} |",
            short_fault(&c.fault),
            c.policy_b,
            c.policy_a,
            paired_markdown_cells(&c.paired),
        );
    }
    md.push_str("\nHow to read it: each row compares two policies on the same fired faulty trials; the difference is B's caught rate minus A's, its interval resamples whole layouts so both policies see the same resample. The score interval is Tango's, on the trials themselves for one fault (one trial per layout) and on the effective sample size n_eff = n / DEFF when the row pools faults (several trials per layout); it replaces the bootstrap interval in the difference column when every resample gives the same value (e.g. 0% against 100%), where the bootstrap's interval has no width. b counts trials only B caught, c trials only A caught; the test is McNemar's exact two-sided test on them for one fault, and Durkalski's clustered McNemar test (layouts as clusters) for the pooled row.\n\n");

    md.push_str("## Pooled caught rate per policy\n\n");
    md.push_str("| policy | n (fired) | layouts | caught rate | naive SE | clustered SE | design effect |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for p in &s.pooled {
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

    verifier_cards_markdown(&mut md, &s.verifier_cards, &level);

    if !s.answer_key.is_empty() {
        answer_key_markdown(&mut md, s, &level);
    }

    if let Some(r) = &s.recovery {
        let design = s.manifest.and_then(|m| m.recovery.as_ref());
        recovery_markdown(&mut md, r, design, &level);
    }

    md.push_str("## Plots\n\n");
    md.push_str("![Detection heatmap](plots/detection_heatmap.svg)\n\nHow to read it: each cell is caught/fired for one fault and policy, summed over tasks; darker is better.\n\n");
    md.push_str("![False-alarm heatmap](plots/false_alarm_heatmap.svg)\n\nHow to read it: each cell is false alarms out of confirmed working trials; darker red is worse.\n\n");
    md.push_str("![Paired differences](plots/paired_differences.svg)\n\nHow to read it: one row per policy pair and scope; an interval that excludes zero is a difference the layouts support.\n\n");
    if s.overlay.is_some() {
        md.push_str("![Click overlay](plots/click_overlay.svg)\n\nHow to read it: the screenshot the model saw; green is where it asked to click, red is where the executor clicked when it skipped coordinate scaling.\n\n");
    }
    if s.overlay.is_none() {
        let _ = writeln!(md, "{NO_OVERLAY}\n");
    }
    md.push_str("Every plot is also written as PNG beside its SVG.\n");
    if let Some(infra) = &s.infra {
        if !infra.rows.is_empty() || !infra.external.is_empty() {
            md.push('\n');
            md.push_str(&crate::infra::section(&infra.rows, infra.external));
        }
        if !infra.harness.is_empty() {
            md.push('\n');
            md.push_str(&crate::infra::harness_section(&infra.harness));
        }
    }
    Ok(md)
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
            rate_cell(e),
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

/// The `## Verifier cards` section: per policy, its false-positive and false-negative
/// rates and the precision and recall of its Success verdicts, per task and pooled.
fn verifier_cards_markdown(md: &mut String, cards: &[VerifierCardRow], level: &str) {
    md.push_str("## Verifier cards\n\n");
    let _ = writeln!(md, "| policy | task | n (fired) | n (working) | false-positive rate [{level} CI] | false-negative rate [{level} CI] | precision of Success [{level} CI] | recall of Success [{level} CI] |\n|---|---|---:|---:|---:|---:|---:|---:|");
    for r in cards {
        let task = r
            .task
            .map_or_else(|| "**pooled**".to_string(), |t| t.to_string());
        let _ = writeln!(
            md,
            "| {} | {task} | {} | {} | {} | {} | {} | {} |",
            md_cell(&r.policy),
            r.fired,
            r.working,
            card_cell(&r.false_positive_rate),
            card_cell(&r.false_negative_rate),
            card_cell(&r.precision),
            card_cell(&r.recall),
        );
    }
    md.push_str("\nHow to read it: one card per policy of the run, over the trials the detection and false-alarm tables count (faulty trials whose fault fired and working trials), judged against the ledger: the *false-positive rate* is the share of trials whose outcome failed that the policy called Success, the *false-negative rate* the share of trials whose outcome happened that it called anything else, *precision* the share of its Success verdicts the ledger confirms, *recall* the share of the ledger's successes it called Success. Each cell is events/n, n the rate's own denominator; – marks a rate with n = 0 (nothing to estimate). Trials of one page (task and layout: its working trial and its faults' trials) are judged alike, so each (task, layout) pair is a cluster and the interval is a Wilson score interval on the effective sample size, as in the layer table. A trial whose fault did not fire, or that a policy could not judge (an infrastructure error), is in none of that policy's counts. `verifier_cards.csv` has the confusion counts and each rate's clusters and effective n.\n\n");
}

/// A card's rate: `events/n point% [lower, upper]`, or – when n is 0.
fn card_cell(r: &CardRate) -> String {
    match &r.rate {
        Some(p) => format!("{}/{} {}", r.events, r.n, rate_cell(Some(&p.estimate))),
        None => "–".into(),
    }
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
            r.tasks
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
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

/// The `### Recovery gain of outcome over unverified` table (nothing when the episodes
/// lack either policy).
fn gain_markdown(md: &mut String, gain: &[RecoveryComparison], level: &str) {
    if gain.is_empty() {
        return;
    }
    md.push_str("### Recovery gain of outcome over unverified\n\n");
    let _ = writeln!(md, "| task | agent | episode pairs | layouts | unverified | outcome | gain [{level} CI] | method | score interval [n_eff] |\n|---|---|---:|---:|---:|---:|---:|---|---:|");
    for g in gain {
        let p = &g.paired;
        let main = p.main_interval();
        let method = if p.bootstrap_degenerate() {
            format!("{} (bootstrap degenerate)", main.method)
        } else {
            main.method.to_string()
        };
        let task = if g.scope == "all" {
            "**all tasks**"
        } else {
            g.task.as_str()
        };
        let _ = writeln!(
            md,
            "| {task} | {} | {} | {} | {} | {} | {} | {method} | [{:+.3}, {:+.3}] ({}) |",
            g.agent,
            p.n,
            p.clusters,
            fmt4(p.mean_a),
            fmt4(p.mean_b),
            interval_cell(main),
            p.score.lower,
            p.score.upper,
            n_eff_text(p.n_effective),
        );
    }
    md.push_str("\nHow to read it: the headline figure: how much more often the agent recovers when the harness verifies the outcome than when it takes the tool's word, on the same episodes (task, fault, layout and run, the fault fired under both). The gain is outcome's success rate minus unverified's over every fault of the task (and of every task in the last row); its interval is a cluster bootstrap over layouts, every run and fault of a layout kept together, and the score interval is Tango's on the effective sample size n_eff (`recovery_gain.csv` has both, with the clustered McNemar test).\n\n");
}

/// How many runs each item (task, fault, policy, layout) of `agent` had, and why.
fn runs_of_agent(d: &RecoveryDesign, agent: &str) -> String {
    let plural = |n: u32| if n == 1 { "run" } else { "runs" };
    if !d.is_deterministic(agent) {
        return format!("{agent}: {} {} per item", d.runs, plural(d.runs));
    }
    let drawing: Vec<&str> = d
        .faults
        .iter()
        .filter(|f| f.draws_parameters())
        .map(|f| f.id())
        .collect();
    let mut text = format!("{agent}: deterministic, 1 run per item");
    if d.runs > 1 && !drawing.is_empty() {
        let _ = write!(
            text,
            " ({} under a fault that draws parameters from the episode's seed: {})",
            d.runs,
            drawing.join(", ")
        );
    }
    text
}

/// The `## Recovery` section: success rates, the detection x recovery cross-table, stop
/// reasons, paired comparisons and the bar plot, each with how to read it.
fn recovery_markdown(
    md: &mut String,
    r: &Recovery<'_>,
    design: Option<&RecoveryDesign>,
    level: &str,
) {
    let total = r.episodes.len();
    let fired = r.episodes.iter().filter(|e| e.fired).count();
    let agents: BTreeSet<&str> = r.episodes.iter().map(|e| e.agent.as_str()).collect();
    md.push_str("## Recovery\n\n");
    let runs = match design {
        Some(d) => agents
            .iter()
            .map(|a| runs_of_agent(d, a))
            .collect::<Vec<_>>()
            .join("; "),
        // A run without its manifest: what the stored episodes show.
        None => {
            let runs: BTreeSet<u32> = r.episodes.iter().map(|e| e.run).collect();
            format!(
                "{}; {} run(s) per layout and policy",
                agents.iter().copied().collect::<Vec<_>>().join(", "),
                runs.len()
            )
        }
    };
    let _ = writeln!(
        md,
        "{total} episode(s): {fired} with the fault fired, {} not fired (counted only in the *not fired* column below, never as recovered or not); agent(s): {runs}.\n",
        total - fired,
    );
    md.push_str("An episode replays a recorded decision with its fault on; the agent then sees the observation and the policy's message and may stop, answer, wait, retry or act again within its budget of browser actions. It *recovered* when the ledger confirms the task's outcome at the end.\n\n");

    gain_markdown(md, &r.gain, level);

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
            rate_cell(e),
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
    let mut header = String::from("| task | policy | agent | n (fired) |");
    let mut align = String::from("|---|---|---|---:|");
    // The time limit's column only when an episode hit it (runs without it report as
    // they always did).
    let shown: Vec<usize> = (0..StopReason::ALL.len())
        .filter(|&i| {
            StopReason::ALL[i] != StopReason::TimeLimit
                || r.stop_reasons.iter().any(|s| s.counts[i] > 0)
        })
        .collect();
    for &i in &shown {
        let _ = write!(header, " {} |", StopReason::ALL[i].name().replace('_', " "));
        align.push_str("---:|");
    }
    let _ = writeln!(md, "{header}\n{align}");
    for s in &r.stop_reasons {
        let _ = write!(md, "| {} | {} | {} | {} |", s.task, s.policy, s.agent, s.n);
        for &i in &shown {
            let _ = write!(md, " {} |", s.counts[i]);
        }
        md.push('\n');
    }
    md.push_str("\nHow to read it: how the fired episodes ended, summed over faults: *stopped* and *answered* are the agent ending the episode itself, *over budget* and *step cap* the harness cutting it off, *parse error* and *agent error* a reply that could not be used.\n\n");

    md.push_str("### Paired comparisons on recovery\n\n");
    let _ = writeln!(
        md,
        "| scope | policies (B − A) | {}",
        paired_markdown_header("success A", "success B", level)
    );
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
    md.push_str("\nHow to read it: each row compares two policies on the same episodes (same task, fault, agent, layout and run, with the fault fired under both); the difference is B's success rate minus A's, and its interval resamples whole layouts, every run of both policies together. The score interval is Tango's on the effective sample size n_eff = n / DEFF (DEFF the design effect of the per-episode difference, so n_eff lies between the layouts and the episodes), and stands in for the bootstrap interval when that one has no width. b counts episodes only B recovered, c those only A recovered; with several runs per layout the test is Durkalski's clustered McNemar test, which counts each layout once (McNemar's exact test, used only when every layout has a single episode, would count every run as independent evidence).\n\n");

    md.push_str("![Recovery success rates](plots/recovery_bars.svg)\n\nHow to read it: one bar per policy within each task, its height the success rate over fired episodes, the whisker its clustered Wilson interval and n the fired episodes.\n\n");
}

/// The policy vs independent answer key section: each policy's verdicts on the external
/// suite's trials against that suite's own reward, beside the same figures against
/// faultline's own ledgers on its own tasks.
fn answer_key_markdown(md: &mut String, s: &Analysis<'_>, level: &str) {
    use crate::tables::AnswerKey;
    let cfg = &s.cfg;
    md.push_str("## Policy vs independent answer key\n\n");
    let pooled = |key: AnswerKey, policy: &str| {
        s.answer_key
            .iter()
            .find(|r| r.key == key && r.task.is_none() && r.policy == policy)
    };
    let mut policies: Vec<&str> = Vec::new();
    for r in &s.answer_key {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    let _ = writeln!(
        md,
        "Pooled, side by side: each policy against MiniWoB++'s reward on the suite's tasks and against faultline's own ledgers on its own tasks ([{level} CI]).\n"
    );
    let _ = writeln!(md, "| policy | answer key | n | agreement | precision of Success | recall of Success |\n|---|---|---:|---:|---:|---:|");
    for policy in &policies {
        for key in [AnswerKey::SuiteReward, AnswerKey::OwnLedger] {
            match pooled(key, policy) {
                Some(r) => {
                    let _ = writeln!(
                        md,
                        "| {policy} | {} | {} | {} |",
                        key.label(),
                        r.n,
                        answer_key_cells(r, cfg)
                    );
                }
                None => {
                    let _ = writeln!(md, "| {policy} | {} | 0 | – | – | – |", key.label());
                }
            }
        }
    }
    if !s.answer_key.iter().any(|r| r.key == AnswerKey::OwnLedger) {
        md.push_str("\nThis run has no trial of faultline's own tasks, so there is nothing to set beside the suite's figures; the `miniwob` config runs the four reference tasks with the suite.\n");
    }
    let _ = writeln!(md, "\nPer task:\n\n| answer key | task | policy | n | agreement [{level} CI] | precision of Success [{level} CI] | recall of Success [{level} CI] |\n|---|---|---|---:|---:|---:|---:|");
    for r in &s.answer_key {
        let task = r
            .task
            .map_or_else(|| "pooled".to_string(), |t| t.to_string());
        let _ = writeln!(
            md,
            "| {} | {task} | {} | {} | {} |",
            r.key.label(),
            r.policy,
            r.n,
            answer_key_cells(r, cfg),
        );
    }
    md.push_str("\nHow to read it: the independent answer key is MiniWoB++'s own in-page reward (success when the episode is done with raw reward 1), which nobody here wrote; the policies never read it. Beside it, the same figures on faultline's own tasks, where the answer key is the task's ledger (written by the fixture server, read only by scoring). Over working trials and fired faulty trials, *agreement* counts verdicts that are Success exactly when the answer key says success, *precision* is the share of Success verdicts the answer key confirms, *recall* the share of the answer key's successes the policy called Success. Pooled rows pool a family's tasks; `answer_key.csv` has every row.\n\n");
    md.push_str("Faults of the catalogue with no analogue on the suite's pages (not applicable, not run):\n\n");
    for f in faultline_faults::Fault::ALL {
        if let Some(why) = f.miniwob_not_applicable() {
            let _ = writeln!(md, "- `{f}`: {why}.");
        }
    }
    md.push('\n');
}

/// The agreement, precision and recall cells of an answer-key row: each `k/n` with its
/// rate and interval.
fn answer_key_cells(
    r: &crate::tables::AnswerKeyRow,
    cfg: &crate::config::AnalysisConfig,
) -> String {
    format!(
        "{}/{} {} | {}/{} {} | {}/{} {}",
        r.agree,
        r.n,
        rate_cell(r.agreement(cfg).as_ref()),
        r.both,
        r.said_success,
        rate_cell(r.precision(cfg).as_ref()),
        r.both,
        r.key_success,
        rate_cell(r.recall(cfg).as_ref()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_faults::Fault;

    #[test]
    fn the_recovery_header_says_each_agents_runs_per_item_and_why() {
        let mut d = RecoveryDesign {
            agents: vec!["trusting".into(), "exec".into()],
            budget: 3,
            deterministic: vec!["trusting".into()],
            faults: vec![Fault::TokenLeak],
            layouts: 20,
            max_steps: 8,
            policies: vec!["outcome".into()],
            runs: 3,
        };
        assert_eq!(
            runs_of_agent(&d, "trusting"),
            "trusting: deterministic, 1 run per item"
        );
        assert_eq!(runs_of_agent(&d, "exec"), "exec: 3 runs per item");
        d.faults.push(Fault::TargetShift);
        assert_eq!(
            runs_of_agent(&d, "trusting"),
            "trusting: deterministic, 1 run per item (3 under a fault that draws parameters from the episode's seed: layout.target_shift)"
        );
        assert_eq!(d.runs_for("trusting", Fault::TargetShift), 3);
        assert_eq!(d.runs_for("trusting", Fault::TokenLeak), 1);
        assert_eq!(d.runs_for("exec", Fault::TokenLeak), 3);
    }
}
