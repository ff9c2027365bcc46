//! What a run cost: the phases' wall time, throughput, CPU per item (faultline and
//! Chromium), peak memory, isolation, and where each item's time went, stage by stage.
//!
//! Read from the `phase_costs` and `stage_costs` tables (schema version 4). These are
//! costs, not results: nothing here enters a table, a CSV or the report, and two runs
//! with the same seed differ only here.
//!
//! What the figures mean:
//!
//! - a stage's wall time is the item's own; the stages [`Stage::within_attempt`] sum to
//!   at most the item's stored duration (the rest is bookkeeping between stages: parsing,
//!   the feedback stage, the harness's own code);
//! - a stage's CPU time is what faultline (its fixture server included) and every
//!   Chromium process used while the stage ran. With one item at a time (`--jobs 1`) it is
//!   the item's own; with more, it also counts what the other items did meanwhile, and
//!   only a phase's CPU per item (its CPU over its items) is a fair per-item figure.

pub use crate::db::CostStage as Stage;
use crate::db::{PhaseCostRow, ResultsDb, StageCostRow};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The phase an item key belongs to (`detection/...` -> `detection`).
fn phase_of(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// A plain-text summary of a run's costs: one block per phase run, then per phase the
/// per-stage breakdown (mean wall and CPU milliseconds per item).
pub fn summary(db: &ResultsDb) -> Result<String> {
    let mut walls = BTreeMap::new();
    for t in db.trials()? {
        walls.insert(t.trial_key, t.duration_ms);
    }
    for e in db.episodes()? {
        walls.insert(e.episode_key, e.duration_ms);
    }
    Ok(render(&db.phase_costs()?, &db.stage_costs()?, &walls))
}

/// [`summary`] from rows; `walls` holds each stored item's duration in milliseconds.
pub fn render(
    phases: &[PhaseCostRow],
    stages: &[StageCostRow],
    walls: &BTreeMap<String, f64>,
) -> String {
    let mut out = String::new();
    if phases.is_empty() && stages.is_empty() {
        out.push_str("no costs stored (a database older than schema version 4, or nothing ran)\n");
        return out;
    }
    for p in phases {
        let secs = p.wall_ms / 1000.0;
        let n = p.items.max(1) as f64;
        let cpu = p.cpu_ours_ms + p.cpu_browser_ms;
        let _ = writeln!(
            out,
            "{:<10} {} items in {:.1} s wall ({:.2} items/s), jobs {}, isolation {}",
            p.phase.name(),
            p.items,
            secs,
            p.items as f64 / secs.max(1e-9),
            p.jobs,
            p.isolation
        );
        let _ = writeln!(
            out,
            "{:<10} CPU per item {:.3} s (faultline {:.3} s + Chromium {:.3} s); CPU in all {:.1} s = {:.2} cores busy",
            "",
            cpu / 1000.0 / n,
            p.cpu_ours_ms / 1000.0 / n,
            p.cpu_browser_ms / 1000.0 / n,
            cpu / 1000.0,
            cpu / p.wall_ms.max(1e-9)
        );
        let _ = writeln!(
            out,
            "{:<10} peak RSS faultline {:.0} MiB (since it started), Chromium {:.0} MiB (its processes' resident sets summed, shared pages counted in each)",
            "",
            p.peak_rss_ours_kib as f64 / 1024.0,
            p.peak_rss_browser_kib as f64 / 1024.0,
        );
    }
    // phase -> stage -> (wall, cpu); phase -> items.
    // Stages order as a trial runs them (their declaration order).
    let mut sums: BTreeMap<&str, BTreeMap<Stage, (f64, f64)>> = BTreeMap::new();
    // An item with no stage of its own within an attempt ran on another item's page (a
    // recovery episode under another policy, sharing the page while the agent's replies
    // agreed): its cost is that item's, so the means are over the items that had a page.
    let mut items: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut every_item: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in stages {
        let phase = phase_of(&s.item_key);
        let e = sums.entry(phase).or_default().entry(s.stage).or_default();
        e.0 += s.wall_ms;
        e.1 += s.cpu_ms;
        every_item.entry(phase).or_default().insert(&s.item_key);
        if s.stage.within_attempt() {
            items.entry(phase).or_default().insert(&s.item_key);
        }
    }
    let none = BTreeSet::new();
    for (phase, by_stage) in &sums {
        let keys = items.get(phase).unwrap_or(&none);
        let shared = every_item[phase].difference(keys).count();
        let n = keys.len().max(1) as f64;
        let on_others = match shared {
            0 => String::new(),
            k => format!(", and {k} that ran on one of their pages, their cost counted there"),
        };
        let _ = writeln!(
            out,
            "\n{phase}: mean per item, by stage ({} items{on_others}; CPU is faultline + Chromium during the stage: the item's own only when one item runs at a time)",
            keys.len()
        );
        let _ = writeln!(out, "  {:<24} {:>9} {:>9}", "stage", "wall ms", "CPU ms");
        let (mut w, mut c) = (0.0, 0.0);
        for (stage, (wall, cpu)) in by_stage.iter().filter(|(s, _)| s.within_attempt()) {
            w += wall;
            c += cpu;
            let name = stage.name();
            let _ = writeln!(out, "  {:<24} {:>9.1} {:>9.1}", name, wall / n, cpu / n);
        }
        let _ = writeln!(
            out,
            "  {:<24} {:>9.1} {:>9.1}",
            "sum of the stages",
            w / n,
            c / n
        );
        let stored: Vec<f64> = keys.iter().filter_map(|k| walls.get(*k).copied()).collect();
        if !stored.is_empty() {
            let mean = stored.iter().sum::<f64>() / stored.len() as f64;
            let _ = writeln!(
                out,
                "  {:<24} {:>9.1}           ({:.1} ms between stages: parsing, feedback, bookkeeping)",
                "item wall (stored)",
                mean,
                mean - w / n
            );
        }
        let outside: Vec<(&Stage, &(f64, f64))> = by_stage
            .iter()
            .filter(|(s, _)| !s.within_attempt())
            .collect();
        if !outside.is_empty() {
            let _ = writeln!(out, "  outside the item's wall:");
            for (stage, (wall, cpu)) in outside {
                let name = stage.name();
                let _ = writeln!(out, "  {:<24} {:>9.1} {:>9.1}", name, wall / n, cpu / n);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_tasks::Phase;

    #[test]
    fn every_stage_name_reads_back_and_only_three_are_outside_the_item() {
        for s in Stage::ALL {
            assert_eq!(Stage::from_name(s.name()), Some(s));
        }
        let outside: Vec<&str> = Stage::ALL
            .into_iter()
            .filter(|s| !s.within_attempt())
            .map(Stage::name)
            .collect();
        assert_eq!(outside, ["setup_ahead", "storage", "retried"]);
        assert_eq!(Stage::from_name("nonsense"), None);
    }

    #[test]
    fn a_summary_names_every_phase_and_stage() {
        let phases = vec![PhaseCostRow {
            phase: Phase::Detection,
            started_at: "1.000".into(),
            items: 2,
            jobs: 4,
            isolation: "fresh_context".into(),
            wall_ms: 2000.0,
            cpu_ours_ms: 200.0,
            cpu_browser_ms: 600.0,
            peak_rss_ours_kib: 51200,
            peak_rss_browser_kib: 409600,
        }];
        let stage = |key: &str, stage: &str, wall: f64| StageCostRow {
            item_key: key.into(),
            stage: stage.parse().unwrap(),
            wall_ms: wall,
            cpu_ms: wall / 2.0,
        };
        let (a, b) = ("detection/grid/000/working", "detection/grid/001/working");
        let stages = vec![
            stage(a, "settle", 120.0),
            stage(a, "capture", 40.0),
            stage(a, "storage", 10.0),
            stage(b, "capture", 60.0),
            stage(b, "setup_ahead", 300.0),
        ];
        let walls = BTreeMap::from([(a.to_string(), 200.0), (b.to_string(), 100.0)]);
        let text = render(&phases, &stages, &walls);
        assert!(
            text.contains("2 items in 2.0 s wall (1.00 items/s), jobs 4, isolation fresh_context"),
            "{text}"
        );
        assert!(
            text.contains("CPU per item 0.400 s (faultline 0.100 s + Chromium 0.300 s)"),
            "{text}"
        );
        assert!(text.contains("0.40 cores busy"), "{text}");
        assert!(text.contains("Chromium 400 MiB"), "{text}");
        // Stages in trial order: settle before capture.
        let settle = text.find("settle").unwrap();
        let capture = text.find("capture").unwrap();
        assert!(settle < capture, "{text}");
        // Means over the 2 items: capture (40 + 60) / 2, CPU half of it.
        assert!(
            text.contains("capture                       50.0      25.0"),
            "{text}"
        );
        // Within the item: settle 60 + capture 50 = 110 of a 150 ms mean wall.
        assert!(
            text.contains("sum of the stages            110.0"),
            "{text}"
        );
        assert!(text.contains("(40.0 ms between stages"), "{text}");
        // Storage and the page opened ahead are listed apart, after the sum.
        let outside = text.find("outside the item's wall").unwrap();
        assert!(text.find("setup_ahead").unwrap() > outside, "{text}");
        assert!(text.find("storage").unwrap() > outside, "{text}");
        assert!(render(&[], &[], &BTreeMap::new()).starts_with("no costs stored"));
    }

    #[test]
    fn episodes_that_ran_on_another_policys_page_do_not_dilute_the_stage_means() {
        let stage = |key: &str, stage: &str, wall: f64| StageCostRow {
            item_key: key.into(),
            stage: stage.parse().unwrap(),
            wall_ms: wall,
            cpu_ms: wall,
        };
        let lead = "recovery/grid/f/unverified/trusting/r0/000";
        let (b, c) = (
            "recovery/grid/f/generic/trusting/r0/000",
            "recovery/grid/f/outcome/trusting/r0/000",
        );
        let stages = vec![
            stage(lead, "capture", 40.0),
            stage(lead, "storage", 6.0),
            stage(b, "storage", 3.0),
            stage(c, "storage", 3.0),
        ];
        let walls = BTreeMap::from([
            (lead.to_string(), 50.0),
            (b.to_string(), 50.0),
            (c.to_string(), 50.0),
        ]);
        let text = render(&[], &stages, &walls);
        assert!(
            text.contains(
                "(1 items, and 2 that ran on one of their pages, their cost counted there;"
            ),
            "{text}"
        );
        // The page's own mean, not a third of it; its wall is the one page's.
        assert!(
            text.contains("capture                       40.0      40.0"),
            "{text}"
        );
        assert!(text.contains("(10.0 ms between stages"), "{text}");
    }
}
