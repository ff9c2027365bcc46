//! Intervals for the tables and paired comparisons between policies.
//!
//! Single rates (caught/fired, false alarms/working) get a Wilson interval (or
//! Clopper-Pearson). Policies are compared on the *same* fired faulty trials: for each pair
//! the difference in caught rate comes with a cluster-bootstrap interval that resamples
//! layouts (every trial of a layout stays together, and both policies are measured on the
//! same resample), the correlation of the two policies' outcomes, and McNemar's exact test
//! on the discordant trials.

use crate::config::AnalysisConfig;
use crate::db::{TrialRow, VerdictRow};
use crate::format::{ci_columns, csv_field, fmt4, format_p};
use crate::stats::{
    clustered_standard_error, mcnemar_from_outcomes, paired_difference, BootstrapConfig,
    ClusteredSample, ClusteredStandardError, Estimate, McNemar, PairedSample,
};
use crate::tables::{caught, detected_fired};
use faultline_faults::Fault;
use faultline_tasks::seed::derive_analysis;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One paired comparison row of the detection experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `fault` for one fault, `all` for every fired faulty trial.
    pub scope: String,
    /// The fault's id, or `*` for scope `all`.
    pub fault: String,
    pub policy_a: String,
    pub policy_b: String,
    /// Caught rates of A and B on the same trials, B minus A.
    pub paired: PairedOutcomes,
}

/// Per-trial caught outcome of each policy on fired faulty trials, keyed by trial.
fn caught_outcomes<'a>(
    trials: &'a [TrialRow],
    verdicts: &'a [VerdictRow],
) -> Vec<(&'a TrialRow, BTreeMap<&'a str, bool>)> {
    detected_fired(trials, verdicts)
        .map(|(t, vs)| {
            let caught = vs.map(|v| (v.policy.as_str(), caught(t, v))).collect();
            (t, caught)
        })
        .collect()
}

/// Every pair of policies (later minus earlier in `policies` order), per fault and over
/// all faults.
pub fn comparisons(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
    faults: &[Fault],
    cfg: &AnalysisConfig,
) -> Vec<Comparison> {
    let outcomes = caught_outcomes(trials, verdicts);
    let mut scopes: Vec<(String, String)> = faults
        .iter()
        .map(|f| ("fault".to_string(), f.id().to_string()))
        .collect();
    scopes.push(("all".into(), "*".into()));
    let mut out = Vec::new();
    for (scope, fault) in &scopes {
        for (i, a) in policies.iter().enumerate() {
            for b in &policies[i + 1..] {
                let rows: Vec<((&str, u32), bool, bool)> = outcomes
                    .iter()
                    .filter(|(t, _)| scope != "fault" || t.fault.map(Fault::id) == Some(fault))
                    .filter_map(|(t, caught)| {
                        let (&ca, &cb) = (caught.get(a.as_str())?, caught.get(b.as_str())?);
                        // The task's name orders the clusters, as it always has.
                        Some(((t.task.name(), t.layout_index), ca, cb))
                    })
                    .collect();
                let seed = derive_analysis(cfg.seed, &format!("{scope}/{fault}/{a}/{b}"));
                let Some(paired) = paired_outcomes(&rows, cfg, seed) else {
                    continue;
                };
                out.push(Comparison {
                    scope: scope.clone(),
                    fault: fault.clone(),
                    policy_a: a.clone(),
                    policy_b: b.clone(),
                    paired,
                });
            }
        }
    }
    out
}

/// Policy B against policy A on the same observations: the shared part of every paired
/// comparison table (caught rate here, recovery success in `recovery`).
#[derive(Debug, Clone, PartialEq)]
pub struct PairedOutcomes {
    pub n: usize,
    /// Distinct cluster keys (layouts) among the pairs.
    pub clusters: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    /// `mean_b - mean_a` with its cluster-bootstrap interval; `None` with fewer than two
    /// clusters.
    pub difference: Option<Estimate>,
    pub correlation: Option<f64>,
    /// `b` counts pairs only B got right, `c` pairs only A got right.
    pub mcnemar: McNemar,
}

/// Compares B with A on `(cluster, a, b)` pairs: the difference in means, B minus A, with
/// a cluster bootstrap that resamples whole clusters (both policies on the same resample,
/// seeded with `seed`), their correlation, and McNemar's exact test on the discordant
/// pairs. `None` when there are no pairs.
pub fn paired_outcomes<K: Ord + Clone>(
    rows: &[(K, bool, bool)],
    cfg: &AnalysisConfig,
    seed: u64,
) -> Option<PairedOutcomes> {
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let xs: Vec<bool> = rows.iter().map(|r| r.1).collect();
    let ys: Vec<bool> = rows.iter().map(|r| r.2).collect();
    let mean_a = xs.iter().filter(|c| **c).count() as f64 / n as f64;
    let mean_b = ys.iter().filter(|c| **c).count() as f64 / n as f64;
    // B minus A: the later policy's gain over the earlier one.
    let swapped = rows
        .iter()
        .map(|(k, x, y)| (k.clone(), f64::from(u8::from(*y)), f64::from(u8::from(*x))));
    let sample = PairedSample::from_observations(swapped).ok();
    let clusters = sample.as_ref().map_or(0, |s| s.num_clusters());
    let boot = BootstrapConfig {
        resamples: cfg.resamples,
        level: cfg.level,
        seed,
    };
    let paired = sample.and_then(|s| paired_difference(&s, &boot).ok());
    let mcnemar = mcnemar_from_outcomes(&ys, &xs).expect("aligned outcomes");
    Some(PairedOutcomes {
        n,
        clusters,
        mean_a,
        mean_b,
        correlation: paired.as_ref().and_then(|p| p.correlation),
        difference: paired.map(|p| p.estimate),
        mcnemar,
    })
}

/// A policy's caught rate pooled over every fired faulty trial, with the naive and the
/// layout-clustered standard error side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct PooledRate {
    pub policy: String,
    pub se: ClusteredStandardError,
}

pub fn pooled_caught(
    trials: &[TrialRow],
    verdicts: &[VerdictRow],
    policies: &[String],
) -> Vec<PooledRate> {
    let outcomes = caught_outcomes(trials, verdicts);
    policies
        .iter()
        .filter_map(|p| {
            let rows = outcomes.iter().filter_map(|(t, caught)| {
                caught
                    .get(p.as_str())
                    .map(|c| ((t.task.name(), t.layout_index), f64::from(u8::from(*c))))
            });
            let sample = ClusteredSample::from_observations(rows).ok()?;
            let se = clustered_standard_error(&sample).ok()?;
            Some(PooledRate {
                policy: p.clone(),
                se,
            })
        })
        .collect()
}

/// The header of the columns [`paired_csv_columns`] fills, after a table's own key columns;
/// `mean_a` and `mean_b` name the two means (e.g. `caught_a`).
pub fn paired_csv_header(mean_a: &str, mean_b: &str) -> String {
    format!("n,clusters,{mean_a},{mean_b},difference,ci_low,ci_high,ci_method,level,resamples,seed,correlation,mcnemar_b,mcnemar_c,mcnemar_p,note")
}

/// A paired comparison's CSV columns (see [`paired_csv_header`]): counts, both means, the
/// difference with its interval and provenance, the correlation and McNemar's test.
pub fn paired_csv_columns(p: &PairedOutcomes, cfg: &AnalysisConfig) -> String {
    let d = p.difference.as_ref();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        p.n,
        p.clusters,
        fmt4(p.mean_a),
        fmt4(p.mean_b),
        fmt4(p.mean_b - p.mean_a),
        ci_columns(d),
        cfg.level.get(),
        d.and_then(|e| e.resamples)
            .map(|x| x.to_string())
            .unwrap_or_default(),
        d.and_then(|e| e.seed)
            .map(|x| x.to_string())
            .unwrap_or_default(),
        p.correlation.map(fmt4).unwrap_or_default(),
        p.mcnemar.b,
        p.mcnemar.c,
        format_p(p.mcnemar.p_value),
        csv_field(d.and_then(|e| e.note.as_deref()).unwrap_or_default()),
    )
}

pub fn comparisons_csv(rows: &[Comparison], cfg: &AnalysisConfig) -> String {
    let mut out = format!(
        "scope,fault,policy_a,policy_b,{}\n",
        paired_csv_header("caught_a", "caught_b")
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            r.scope,
            csv_field(&r.fault),
            csv_field(&r.policy_a),
            csv_field(&r.policy_b),
            paired_csv_columns(&r.paired, cfg),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProportionMethod;
    use crate::db::tests::{row, verdict};

    #[test]
    fn paired_comparison_counts_discordant_trials_and_is_seeded() {
        // Four layouts; outcome catches all, unverified none.
        let mut trials = Vec::new();
        let mut verdicts = Vec::new();
        for i in 0..4 {
            let key = format!("t{i}");
            let mut t = row(&key);
            t.layout_index = i;
            t.truth_achieved = false;
            trials.push(t);
            verdicts.push(verdict(&key, "unverified", "success"));
            verdicts.push(verdict(&key, "outcome", "fail"));
        }
        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let faults = vec![Fault::UnscaledCoordinates];
        let cfg = AnalysisConfig::for_run(1);
        let rows = comparisons(&trials, &verdicts, &policies, &faults, &cfg);
        assert_eq!(rows.len(), 2, "one fault row and one overall row");
        let r = &rows[0].paired;
        assert_eq!((r.n, r.clusters), (4, 4));
        assert_eq!((r.mean_a, r.mean_b), (0.0, 1.0));
        // Outcome right and unverified wrong on all four: b = 4, c = 0, p = 2 * 0.5^4.
        assert_eq!((r.mcnemar.b, r.mcnemar.c), (4, 0));
        assert!((r.mcnemar.p_value - 0.125).abs() < 1e-12);
        let d = r.difference.as_ref().unwrap();
        assert_eq!(d.point, 1.0);
        assert_eq!(
            comparisons(&trials, &verdicts, &policies, &faults, &cfg),
            rows
        );
        let csv = comparisons_csv(&rows, &cfg);
        assert!(csv.lines().nth(1).unwrap().starts_with(
            "fault,execute.unscaled_coordinates,unverified,outcome,4,4,0.0000,1.0000,1.0000,"
        ));
    }

    #[test]
    fn intervals_follow_the_configured_method() {
        let mut cfg = AnalysisConfig::for_run(1);
        let w = cfg.proportion(56, 60).unwrap();
        assert!((w.lower - 0.840746).abs() < 1e-5);
        cfg.proportion = ProportionMethod::ClopperPearson;
        let cp = cfg.proportion(56, 60).unwrap();
        assert!((cp.lower - 0.838013).abs() < 1e-5);
        assert!(cfg.proportion(0, 0).is_none());
        assert_eq!(ci_columns(None), ",,");
    }
}
