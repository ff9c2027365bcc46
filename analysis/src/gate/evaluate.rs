//! Running the gate: the rules checked against both runs, then every baseline cell
//! compared with the candidate's, then the floors.

use super::cells::{by_key, cell_name, known_cells, measured_cells, CellKey, Cells, Item};
use super::comparable::{comparability, shared_policies};
use super::rules::{self, Floor, Metric, MetricRule, Rules, Significance};
use super::snapshot::Snapshot;
use super::verdict::{CellResult, FloorResult, GateReport, MissingCell, MissingReason, Status};
use crate::compare::{paired_outcomes, PairedOutcomes};
use crate::config::AnalysisConfig;
use anyhow::{bail, Result};
use faultline_tasks::seed::derive_analysis;
use faultline_tasks::InfraErrorKind;
use std::collections::{BTreeMap, BTreeSet};

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
        let infra: BTreeMap<&str, InfraErrorKind> = candidate
            .infra_errors
            .iter()
            .filter(|e| e.policy == policy)
            .map(|e| (e.key.as_str(), e.kind))
            .collect();
        let trials = by_key(candidate);
        let episodes: BTreeSet<&str> = candidate.episodes.iter().map(|e| e.key.as_str()).collect();
        // By name: the detail lists the kinds alphabetically.
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        let (mut unmeasured, mut no_verdict, mut absent) = (0, 0, 0);
        for item in ours {
            if let Some(kind) = infra.get(item.key) {
                *kinds.entry(kind.name()).or_default() += 1;
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
                Metric::Defects => "not a probe of this run",
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
