//! Intervals for the tables and paired comparisons between policies.
//!
//! Single rates (caught/fired, false alarms/working) get a Wilson interval (or
//! Clopper-Pearson). Policies are compared on the *same* fired faulty trials: for each pair
//! the difference in caught rate comes with a cluster-bootstrap interval that resamples
//! layouts (every trial of a layout stays together, and both policies are measured on the
//! same resample), the correlation of the two policies' outcomes, and McNemar's exact test
//! on the discordant trials.
//!
//! Every paired difference also carries a score interval, which keeps a width where the
//! bootstrap has none (0% against 100% on every layout makes every resample +1): Tango's
//! interval on independent pairs, or on the effective sample size `n / DEFF` of the
//! per-pair difference when a layout holds several pairs. The test follows the same
//! line: McNemar's exact test when every pair is its own layout (detection per fault: one
//! trial per layout), Durkalski's clustered McNemar test otherwise (recovery runs, or
//! detection pooled over faults). `results/README.md` says why these methods.

use crate::config::AnalysisConfig;
use crate::db::{TrialRow, VerdictRow};
use crate::format::{fmt4, format_p, CsvTable};
use crate::stats::{
    clustered_mcnemar, clustered_paired_difference_from_tables, clustered_standard_error,
    mcnemar_from_outcomes, paired_difference, tango_paired, BootstrapConfig, ClusteredSample,
    ClusteredStandardError, Estimate, McNemar, PairedCounts, PairedSample, PairedTest,
};
use crate::tables::{caught, detected_fired};
use faultline_faults::Fault;
use faultline_tasks::seed::derive_analysis;
use std::collections::BTreeMap;

/// One paired comparison row of the detection experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `fault` for one fault, `all` for every fired faulty trial.
    pub scope: String,
    /// The fault's id, or `*` for scope `all`.
    pub fault: String,
    /// Policy A, the earlier of the two in the run's policy order.
    pub policy_a: String,
    /// Policy B, the later of the two in the run's policy order.
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
    /// Paired observations (trials or episodes both policies were judged on).
    pub n: usize,
    /// Distinct cluster keys (layouts) among the pairs.
    pub clusters: usize,
    /// Policy A's mean outcome over the pairs (its caught rate or success rate).
    pub mean_a: f64,
    /// Policy B's mean outcome over the pairs.
    pub mean_b: f64,
    /// `mean_b - mean_a` with its cluster-bootstrap interval; `None` with fewer than two
    /// clusters.
    pub difference: Option<Estimate>,
    /// `mean_b - mean_a` with Tango's score interval: on the pairs themselves when every
    /// pair is its own cluster ([`Method::TangoPaired`](crate::stats::Method)), else on the
    /// effective sample size ([`Method::TangoPairedClustered`](crate::stats::Method)).
    pub score: Estimate,
    /// The effective number of pairs the score interval used: `n / design_effect`.
    pub n_effective: f64,
    /// The design effect of the per-pair difference (1 for independent pairs).
    pub design_effect: f64,
    /// The correlation of A's and B's outcomes across the pairs; `None` when undefined (an
    /// outcome constant over the pairs).
    pub correlation: Option<f64>,
    /// The discordant counts: `b` pairs only B got right, `c` pairs only A got right (and
    /// McNemar's exact p, the test when pairs are independent).
    pub mcnemar: McNemar,
    /// The paired test reported: McNemar's exact test when every pair is its own cluster,
    /// else Durkalski's clustered McNemar test.
    pub test: PairedTestResult,
}

impl PairedOutcomes {
    /// Whether the bootstrap gives no usable interval: none (fewer than two clusters) or
    /// one of zero width (every resample equal).
    pub fn bootstrap_degenerate(&self) -> bool {
        self.difference.as_ref().is_none_or(|d| d.width() == 0.0)
    }

    /// The interval to show first: the bootstrap's, or the score interval when the
    /// bootstrap is degenerate.
    pub fn main_interval(&self) -> &Estimate {
        match &self.difference {
            Some(d) if !self.bootstrap_degenerate() => d,
            _ => &self.score,
        }
    }
}

/// The paired test of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedTestResult {
    /// Which paired test was run.
    pub method: PairedTest,
    /// Durkalski's `X²`; `None` for the exact test, which has no statistic beyond `b` and
    /// `c`.
    pub statistic: Option<f64>,
    /// The test's two-sided p-value.
    pub p_value: f64,
    /// Clusters whose discordant pairs do not cancel out (for independent pairs: the
    /// discordant pairs), the ones that carry evidence.
    pub informative_clusters: usize,
}

/// Compares B with A on `(cluster, a, b)` pairs: the difference in means, B minus A, with
/// a cluster bootstrap that resamples whole clusters (both policies on the same resample,
/// seeded with `seed`) and Tango's score interval (on the effective sample size when a
/// cluster holds several pairs), their correlation, and a paired test on the discordant
/// pairs: McNemar's exact test when every pair is its own cluster, Durkalski's clustered
/// McNemar test otherwise. `None` when there are no pairs.
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
    let sample = PairedSample::from_observations(swapped).expect("0/1 outcomes, some pairs");
    let clusters = sample.num_clusters();
    let boot = BootstrapConfig {
        resamples: cfg.resamples,
        level: cfg.level,
        seed,
    };
    let paired = paired_difference(&sample, &boot).ok();
    let mcnemar = mcnemar_from_outcomes(&ys, &xs).expect("aligned outcomes");
    // B's outcome first in every table: the intervals and the test are of B minus A.
    let tables = PairedCounts::per_cluster(&sample).expect("0/1 outcomes");
    let (score, n_effective, design_effect, test) = if clusters == n {
        let counts = PairedCounts::total(&tables).expect("some pairs");
        let test = PairedTestResult {
            method: PairedTest::McnemarExact,
            statistic: None,
            p_value: mcnemar.p_value,
            informative_clusters: usize::try_from(mcnemar.b + mcnemar.c).unwrap_or(usize::MAX),
        };
        (tango_paired(counts, cfg.level), n as f64, 1.0, test)
    } else {
        let d = clustered_paired_difference_from_tables(&tables, cfg.level).expect("some clusters");
        let t = clustered_mcnemar(&tables).expect("some clusters");
        let test = PairedTestResult {
            method: t.method,
            statistic: Some(t.statistic),
            p_value: t.p_value,
            informative_clusters: t.informative_clusters,
        };
        (d.tango, d.n_effective, d.design_effect, test)
    };
    Some(PairedOutcomes {
        n,
        clusters,
        mean_a,
        mean_b,
        correlation: paired.as_ref().and_then(|p| p.correlation),
        difference: paired.map(|p| p.estimate),
        score,
        n_effective,
        design_effect,
        mcnemar,
        test,
    })
}

/// A policy's caught rate pooled over every fired faulty trial, with the naive and the
/// layout-clustered standard error side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct PooledRate {
    /// The policy.
    pub policy: String,
    /// Its caught rate's standard error, naive and layout-clustered.
    pub se: ClusteredStandardError,
}

/// Each policy's caught rate pooled over every fired faulty trial, clustered by (task,
/// layout index); a policy with no judged fired trial is left out.
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

/// The columns [`paired_csv_columns`] fills, after a table's own key columns; `mean_a`
/// and `mean_b` name the two means (e.g. `caught_a`), `difference` their difference.
///
/// `ci_low,ci_high,ci_method` are the main interval, the one `report.md` shows
/// ([`PairedOutcomes::main_interval`]): the bootstrap's, or the score interval when the
/// bootstrap's is degenerate, so a reader of these columns never gets a zero-width
/// interval. The bootstrap's own interval stays in `bootstrap_low,bootstrap_high,
/// bootstrap_method` (with its `resamples` and `seed`), the score interval in `score_*`.
pub fn paired_csv_header(mean_a: &str, mean_b: &str, difference: &str) -> Vec<String> {
    [
        "n",
        "clusters",
        mean_a,
        mean_b,
        difference,
        "ci_low",
        "ci_high",
        "ci_method",
        "level",
        "bootstrap_low",
        "bootstrap_high",
        "bootstrap_method",
        "resamples",
        "seed",
        "score_low",
        "score_high",
        "score_method",
        "n_eff",
        "design_effect",
        "correlation",
        "mcnemar_b",
        "mcnemar_c",
        "test",
        "test_statistic",
        "test_p",
        "informative_clusters",
        "note",
    ]
    .map(str::to_string)
    .to_vec()
}

/// An interval's `low, high, method` fields, empty without an estimate.
fn interval_fields(e: Option<&Estimate>) -> [String; 3] {
    match e {
        Some(e) => [fmt4(e.lower), fmt4(e.upper), e.method.to_string()],
        None => Default::default(),
    }
}

/// A paired comparison's CSV fields (see [`paired_csv_header`]): counts, both means, the
/// difference with its main interval, the bootstrap's interval and provenance, the score
/// interval with the effective sample size it used, the correlation, the discordant
/// counts and the paired test.
pub fn paired_csv_columns(p: &PairedOutcomes, cfg: &AnalysisConfig) -> Vec<String> {
    let boot = p.difference.as_ref();
    let mut fields = vec![
        p.n.to_string(),
        p.clusters.to_string(),
        fmt4(p.mean_a),
        fmt4(p.mean_b),
        fmt4(p.mean_b - p.mean_a),
    ];
    fields.extend(interval_fields(Some(p.main_interval())));
    fields.push(cfg.level.get().to_string());
    fields.extend(interval_fields(boot));
    fields.extend([
        boot.and_then(|e| e.resamples)
            .map(|x| x.to_string())
            .unwrap_or_default(),
        boot.and_then(|e| e.seed)
            .map(|x| x.to_string())
            .unwrap_or_default(),
    ]);
    fields.extend(interval_fields(Some(&p.score)));
    fields.extend([
        fmt4(p.n_effective),
        fmt4(p.design_effect),
        p.correlation.map(fmt4).unwrap_or_default(),
        p.mcnemar.b.to_string(),
        p.mcnemar.c.to_string(),
        p.test.method.to_string(),
        p.test.statistic.map(fmt4).unwrap_or_default(),
        format_p(p.test.p_value),
        p.test.informative_clusters.to_string(),
        notes(p),
    ]);
    fields
}

/// Why the main interval is the score interval (when it is), then the bootstrap's note
/// and the score interval's, joined.
fn notes(p: &PairedOutcomes) -> String {
    let main = match &p.difference {
        None => Some(
            "fewer than 2 layouts: no bootstrap, the main interval is the score interval"
                .to_string(),
        ),
        Some(_) if p.bootstrap_degenerate() => Some(
            "bootstrap degenerate (zero width): the main interval is the score interval"
                .to_string(),
        ),
        Some(_) => None,
    };
    let boot = p.difference.as_ref().and_then(|e| e.note.clone());
    let score = p.score.note.as_deref().map(|n| format!("score: {n}"));
    [main, boot, score]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ")
}

/// `comparisons.csv`: one row per [`Comparison`], key columns then the paired columns.
pub fn comparisons_csv(rows: &[Comparison], cfg: &AnalysisConfig) -> String {
    let mut columns: Vec<String> = ["scope", "fault", "policy_a", "policy_b"]
        .map(str::to_string)
        .to_vec();
    columns.extend(paired_csv_header("caught_a", "caught_b", "difference"));
    let mut table = CsvTable::new(&columns);
    for r in rows {
        let mut fields = vec![
            r.scope.clone(),
            r.fault.clone(),
            r.policy_a.clone(),
            r.policy_b.clone(),
        ];
        fields.extend(paired_csv_columns(&r.paired, cfg));
        table.row(&fields);
    }
    table.finish()
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

    /// Detection of one fault on 40 layouts, one trial each: A catches none, B all. The
    /// bootstrap's interval is `[+1.000, +1.000]` (every resample is +1); the score
    /// interval keeps a width, the test is McNemar's exact test, and the report and the
    /// CSV's main columns show the score interval in its place.
    #[test]
    fn csv_main_interval_is_the_score_interval_when_the_bootstrap_is_zero_width() {
        let (mut trials, mut verdicts) = (Vec::new(), Vec::new());
        for i in 0..40 {
            let key = format!("t{i}");
            let mut t = row(&key);
            t.layout_index = i;
            trials.push(t);
            verdicts.push(verdict(&key, "unverified", "success"));
            verdicts.push(verdict(&key, "outcome", "fail"));
        }
        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let cfg = AnalysisConfig::for_run(1);
        let rows = comparisons(
            &trials,
            &verdicts,
            &policies,
            &[Fault::UnscaledCoordinates],
            &cfg,
        );
        let header = "scope,fault,policy_a,policy_b,n,clusters,caught_a,caught_b,difference,ci_low,ci_high,ci_method,level,bootstrap_low,bootstrap_high,bootstrap_method,resamples,seed,score_low,score_high,score_method,n_eff,design_effect,correlation,mcnemar_b,mcnemar_c,test,test_statistic,test_p,informative_clusters,note";
        let csv = comparisons_csv(&rows, &cfg);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], header);
        let fields: BTreeMap<&str, &str> = header.split(',').zip(lines[1].split(',')).collect();
        assert_eq!(
            (fields["caught_a"], fields["caught_b"]),
            ("0.0000", "1.0000")
        );
        // The bootstrap's own columns keep its degenerate interval; the main columns carry
        // the report's main interval, the score interval.
        assert_eq!(
            (fields["bootstrap_low"], fields["bootstrap_high"]),
            ("1.0000", "1.0000")
        );
        assert_eq!(fields["bootstrap_method"], "bootstrap-percentile");
        let (low, high): (f64, f64) = (
            fields["score_low"].parse().unwrap(),
            fields["score_high"].parse().unwrap(),
        );
        assert!(low < 0.95 && low > 0.8 && high == 1.0, "[{low}, {high}]");
        assert_eq!(fields["score_method"], "tango-paired");
        assert_eq!(
            (fields["ci_low"], fields["ci_high"], fields["ci_method"]),
            (fields["score_low"], fields["score_high"], "tango-paired")
        );
        assert!(
            fields["note"].contains("bootstrap degenerate"),
            "{}",
            lines[1]
        );
        assert_eq!(
            (fields["n_eff"], fields["design_effect"]),
            ("40.0000", "1.0000")
        );
        assert_eq!((fields["mcnemar_b"], fields["mcnemar_c"]), ("40", "0"));
        assert_eq!(fields["test"], "mcnemar-exact");
        assert_eq!(fields["test_statistic"], "");
        assert_eq!(fields["informative_clusters"], "40");
        let p = &rows[0].paired;
        assert!(p.bootstrap_degenerate());
        assert_eq!(p.main_interval(), &p.score);
    }

    /// Pooled over faults, a layout holds several trials: the score interval is on the
    /// effective sample size and the test is the clustered McNemar test.
    #[test]
    fn pooled_rows_are_clustered() {
        let (mut trials, mut verdicts) = (Vec::new(), Vec::new());
        for i in 0..6 {
            for (f, fault) in [Fault::UnscaledCoordinates, Fault::CookieBanner]
                .into_iter()
                .enumerate()
            {
                let key = format!("t{i}/{f}");
                let mut t = row(&key);
                t.layout_index = i;
                t.fault = Some(fault);
                trials.push(t);
                verdicts.push(verdict(&key, "unverified", "success"));
                let caught = i < 4 || f == 0;
                verdicts.push(verdict(
                    &key,
                    "outcome",
                    if caught { "fail" } else { "success" },
                ));
            }
        }
        let policies = vec!["unverified".to_string(), "outcome".to_string()];
        let cfg = AnalysisConfig::for_run(1);
        let faults = [Fault::UnscaledCoordinates, Fault::CookieBanner];
        let rows = comparisons(&trials, &verdicts, &policies, &faults, &cfg);
        let all = rows.iter().find(|r| r.scope == "all").unwrap();
        let p = &all.paired;
        assert_eq!((p.n, p.clusters), (12, 6));
        assert_eq!(p.test.method, PairedTest::McnemarClustered);
        assert!(p.test.statistic.is_some());
        assert_eq!(p.test.informative_clusters, 6);
        assert!(p.n_effective >= 6.0 && p.n_effective <= 12.0);
        assert_eq!(p.score.method.as_str(), "tango-paired-clustered");
        assert!((p.score.point - 10.0 / 12.0).abs() < 1e-12);
        let one = rows.iter().find(|r| r.scope == "fault").unwrap();
        assert_eq!(one.paired.test.method, PairedTest::McnemarExact);
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
        assert_eq!(crate::format::ci_columns(None), ",,");
    }

    /// The rule every table keeps: a rate over n > 0 observations has an interval, and
    /// the interval in the main columns is never zero-width, whatever the outcomes (all
    /// equal, all discordant, one layout, many pairs per layout).
    mod main_interval_property {
        use super::*;
        use crate::recovery::{recovery_comparisons_csv, RecoveryComparison};
        use proptest::prelude::*;

        /// `ci_low`, `ci_high` and `n` of every row of a paired CSV.
        fn main_intervals(csv: &str) -> Vec<(usize, f64, f64)> {
            let mut lines = csv.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
            let (n, low, high) = (col("n"), col("ci_low"), col("ci_high"));
            lines
                .map(|l| {
                    // The note (last) is the only field that may be quoted.
                    let f: Vec<&str> = l.split(',').collect();
                    (
                        f[n].parse().unwrap(),
                        f[low].parse().unwrap_or(f64::NAN),
                        f[high].parse().unwrap_or(f64::NAN),
                    )
                })
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

            #[test]
            fn no_main_interval_in_the_comparison_csvs_is_zero_width(
                pairs in proptest::collection::vec((0u32..6, any::<bool>(), any::<bool>()), 1..40),
                all_equal in any::<bool>(),
            ) {
                // Half the cases: every pair concordant, where the bootstrap is [0, 0].
                let rows: Vec<(u32, bool, bool)> = pairs
                    .into_iter()
                    .map(|(k, a, b)| (k, a, if all_equal { a } else { b }))
                    .collect();
                let mut cfg = AnalysisConfig::for_run(3);
                cfg.resamples = 200;
                let paired = paired_outcomes(&rows, &cfg, 7).unwrap();
                let detection = comparisons_csv(
                    &[Comparison {
                        scope: "all".into(),
                        fault: "*".into(),
                        policy_a: "a".into(),
                        policy_b: "b".into(),
                        paired: paired.clone(),
                    }],
                    &cfg,
                );
                let recovery = recovery_comparisons_csv(
                    &[RecoveryComparison {
                        scope: "all".into(),
                        task: "*".into(),
                        fault: "*".into(),
                        agent: "scripted".into(),
                        policy_a: "a".into(),
                        policy_b: "b".into(),
                        paired,
                    }],
                    &cfg,
                );
                for csv in [detection, recovery] {
                    for (n, low, high) in main_intervals(&csv) {
                        prop_assert!(n > 0);
                        prop_assert!(low < high, "zero-width main interval [{low}, {high}] in\n{csv}");
                    }
                }
            }
        }
    }
}
