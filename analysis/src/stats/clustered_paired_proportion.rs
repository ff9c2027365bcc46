//! The difference of two paired success rates over clustered pairs: Tango's and Newcombe's
//! score intervals ([`tango_paired`](super::tango_paired),
//! [`newcombe_paired`](super::newcombe_paired)) on the effective sample size.
//!
//! Recovery episodes come as layouts × runs, and runs of one layout are not independent:
//! a policy that recovers on a layout tends to recover on every run of it, and so does the
//! difference between two policies. Treating 60 episodes from 20 layouts as 60 independent
//! pairs would claim the precision of 60 while the data hold something between 20 and 60.
//!
//! **Choice: score intervals on the effective sample size, not a cluster bootstrap.** The
//! paired table is rescaled to `n_eff = n / DEFF` pairs (every cell multiplied by
//! `n_eff / n`, so both rates and the difference are unchanged) and Tango's and Newcombe's
//! intervals are computed on it, exactly as [`clustered_wilson`](super::clustered_wilson)
//! does for single rates. The design effect is that *of the difference*:
//! `DEFF = (clustered SE / naive SE)²` of the per-pair differences `a - b ∈ {-1, 0, 1}`
//! ([`clustered_standard_error`](super::clustered_standard_error), CR1, layouts as
//! clusters), floored at 1 and capped at the mean cluster size, and the cap (`n_eff` = the
//! number of clusters) when it is undefined: every difference equal (e.g. 0% against 100%,
//! or the two policies agreeing on every episode) or a single cluster. A cluster bootstrap
//! with a small-sample correction was the alternative; it was not chosen because what
//! fails in the issue is the bootstrap itself: with every layout showing the same
//! difference every resample is identical, and no correction of its quantiles recovers a
//! width the resamples do not have. A score interval on `n_eff` keeps its width from the
//! binomial variance at the hypothesised value, so it is never zero-width, and at the cap
//! it is the interval of one pair per layout: 20 layouts of 0% against 100% give what 20
//! independent pairs would, whatever the number of runs.
//!
//! The scaling keeps what the independent-pairs interval has: with every cluster of size 1
//! the cap is 1 and the bounds are exactly [`tango_paired`](super::tango_paired)'s and
//! [`newcombe_paired`](super::newcombe_paired)'s; a smaller `n_eff` only widens them.

use serde::{Deserialize, Serialize};

use super::paired_proportion::{newcombe_bounds, tango_bounds};
use super::{
    clustered_standard_error, ClusteredSample, Estimate, Level, Method, PairedCounts, PairedSample,
    StatsError, NOTE_ONE_CLUSTER,
};

/// Note when every paired difference is equal, so the design effect (0/0) is undefined.
pub const NOTE_CONSTANT_DIFFERENCES: &str =
    "all paired differences equal, design effect undefined: n_eff = clusters (the conservative cap)";

/// A difference of paired success rates over clustered pairs, with Tango's and Newcombe's
/// score intervals on the effective sample size and how it came about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusteredPairedDifference {
    /// `p_A - p_B` with Tango's score interval on `n_eff` ([`Method::TangoPairedClustered`]):
    /// the primary interval. `n` is pairs, `clusters` the clusters; `note` says when the
    /// design effect fell back to its cap.
    pub tango: Estimate,
    /// The same with Newcombe's method 10 ([`Method::NewcombePairedClustered`]).
    pub newcombe: Estimate,
    /// The pooled table over all clusters.
    pub counts: PairedCounts,
    /// The design effect of the difference, after the floor at 1 and the cap at the mean
    /// cluster size.
    pub design_effect: f64,
    /// `n / design_effect`: between the number of clusters and `n`.
    pub n_effective: f64,
}

/// Tango's and Newcombe's intervals for `p_A - p_B` over a paired sample of 0/1 outcomes
/// whose clusters are layouts, on the effective sample size (see the module documentation).
///
/// Errors: [`StatsError::NotBinary`] when an outcome is neither 0 nor 1.
pub fn clustered_paired_difference(
    sample: &PairedSample,
    level: Level,
) -> Result<ClusteredPairedDifference, StatsError> {
    clustered_paired_difference_from_tables(&PairedCounts::per_cluster(sample)?, level)
}

/// [`clustered_paired_difference`] from one paired table per cluster.
///
/// Errors: [`StatsError::EmptySample`] for no tables.
pub fn clustered_paired_difference_from_tables(
    tables: &[PairedCounts],
    level: Level,
) -> Result<ClusteredPairedDifference, StatsError> {
    let counts = PairedCounts::total(tables).ok_or(StatsError::EmptySample)?;
    let clusters = tables.len();
    let nf = counts.n() as f64;
    let mean_cluster_size = nf / clusters as f64;
    let (design_effect, fallback) = match clustered_standard_error(&differences(tables)?) {
        Ok(se) => match se.design_effect() {
            Some(d) => (d.clamp(1.0, mean_cluster_size), None),
            None => (mean_cluster_size, Some(NOTE_CONSTANT_DIFFERENCES)),
        },
        Err(StatsError::TooFewClusters { .. }) => (mean_cluster_size, Some(NOTE_ONE_CLUSTER)),
        Err(e) => return Err(e),
    };
    // At the cap, n_eff is the cluster count exactly (n / (n / C) may round off it).
    let n_effective = if design_effect >= mean_cluster_size {
        clusters as f64
    } else {
        (nf / design_effect).clamp(clusters as f64, nf)
    };
    // With clusters of size 1 the cap is the floor: nothing was assumed.
    let note = fallback
        .filter(|_| mean_cluster_size > 1.0)
        .map(str::to_string);
    let estimate = |(lower, upper): (f64, f64), method: Method| Estimate {
        point: counts.difference(),
        lower,
        upper,
        level: level.get(),
        method,
        n: usize::try_from(counts.n()).unwrap_or(usize::MAX),
        clusters: Some(clusters),
        resamples: None,
        seed: None,
        note: note.clone(),
    };
    Ok(ClusteredPairedDifference {
        tango: estimate(
            tango_bounds(counts, n_effective, level),
            Method::TangoPairedClustered,
        ),
        newcombe: estimate(
            newcombe_bounds(counts, n_effective, level),
            Method::NewcombePairedClustered,
        ),
        counts,
        design_effect,
        n_effective,
    })
}

/// The per-pair differences `a - b` grouped as the tables are: `only_a` ones, `only_b`
/// minus ones and the concordant pairs' zeros.
fn differences(tables: &[PairedCounts]) -> Result<ClusteredSample, StatsError> {
    ClusteredSample::new(
        tables
            .iter()
            .map(|t| {
                let mut d = vec![1.0; t.only_a() as usize];
                d.extend(std::iter::repeat_n(-1.0, t.only_b() as usize));
                d.extend(std::iter::repeat_n(0.0, (t.both() + t.neither()) as usize));
                d
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::{newcombe_paired, tango_paired};
    use super::*;
    use crate::stats::test_support::close;

    // Reference values computed by the same independent Python implementation as in
    // `paired_proportion` (Tango by bisection, Newcombe's square-and-add written out), given
    // the rescaled table; the design effects are worked by hand below.
    const TOL: f64 = 1e-9;

    fn counts(a: u64, b: u64, c: u64, d: u64) -> PairedCounts {
        PairedCounts::new(a, b, c, d).unwrap()
    }

    /// The recovery case: 20 layouts × 3 runs, A recovers every time and B never.
    /// Every difference is +1, so the design effect is undefined and the 60 episodes count
    /// as the 20 layouts.
    #[test]
    fn twenty_layouts_of_zero_vs_one_count_as_twenty_pairs() {
        let tables = vec![counts(0, 3, 0, 0); 20];
        let r = clustered_paired_difference_from_tables(&tables, Level::default()).unwrap();
        assert_eq!((r.design_effect, r.n_effective), (3.0, 20.0));
        assert_eq!(r.tango.note.as_deref(), Some(NOTE_CONSTANT_DIFFERENCES));
        for e in [&r.tango, &r.newcombe] {
            assert_eq!((e.point, e.upper), (1.0, 1.0));
            assert!(e.lower < 1.0, "{e:?}");
            assert_eq!((e.n, e.clusters), (60, Some(20)));
        }
        // Exactly the intervals of 20 independent pairs.
        let twenty = counts(0, 20, 0, 0);
        assert_eq!(r.tango.lower, tango_paired(twenty, Level::default()).lower);
        close(
            r.newcombe.lower,
            newcombe_paired(twenty, Level::default()).lower,
            TOL,
        );
        close(r.tango.lower, 0.677_749_683_894_361_3, TOL);
        close(r.newcombe.lower, 0.772_134_616_242_194_1, TOL);
        // Wider than treating the 60 episodes as independent.
        assert!(r.tango.lower < tango_paired(counts(0, 60, 0, 0), Level::default()).lower);
    }

    #[test]
    fn hand_computed_design_effect() {
        // Three clusters: differences [+1, +1, 0], [0, 0, -1], [+1, 0, 0, 0]; n = 10,
        // θ̂ = (3 - 1) / 10 = 0.2.
        // Naive: Σ(d - θ̂)² = 3·0.64 + 1.44 + 6·0.04 = 3.6; s² = 3.6 / 9 = 0.4;
        //   var = 0.04.
        // Clustered: residual sums 2 - 0.6 = 1.4, -1 - 0.6 = -1.6, 1 - 0.8 = 0.2;
        //   squares 1.96 + 2.56 + 0.04 = 4.56; var = (3/2) · 4.56 / 100 = 0.0684.
        // DEFF = 0.0684 / 0.04 = 1.71, below the cap 10/3: n_eff = 10 / 1.71.
        let tables = vec![counts(0, 2, 0, 1), counts(1, 0, 1, 1), counts(2, 1, 0, 1)];
        let r = clustered_paired_difference_from_tables(&tables, Level::default()).unwrap();
        close(r.design_effect, 1.71, TOL);
        close(r.n_effective, 10.0 / 1.71, TOL);
        assert_eq!(r.counts, counts(3, 3, 1, 3));
        close(r.tango.point, 0.2, TOL);
        assert_eq!(r.tango.note, None);
        // Rescaled table (3, 3, 1, 3) · n_eff / 10.
        close(r.tango.lower, -0.347_260_670_324_750_8, TOL);
        close(r.tango.upper, 0.635_894_502_152_664_3, TOL);
        close(r.newcombe.lower, -0.295_890_670_788_492_7, TOL);
        close(r.newcombe.upper, 0.583_755_008_836_251_8, TOL);
        // Wider than the independent-pairs intervals on n = 10.
        let plain = tango_paired(r.counts, Level::default());
        assert!(r.tango.lower < plain.lower && r.tango.upper > plain.upper);
    }

    #[test]
    fn singleton_clusters_give_the_independent_intervals_exactly() {
        let pairs = [(1, 0), (1, 1), (0, 0), (1, 0), (0, 1), (1, 0), (0, 0)];
        let tables: Vec<_> = pairs
            .iter()
            .map(|&(a, b)| PairedCounts::from_outcomes(&[(a == 1, b == 1)]).unwrap())
            .collect();
        let r = clustered_paired_difference_from_tables(&tables, Level::default()).unwrap();
        assert_eq!((r.design_effect, r.n_effective), (1.0, 7.0));
        let total = PairedCounts::total(&tables).unwrap();
        let t = tango_paired(total, Level::default());
        let n = newcombe_paired(total, Level::default());
        assert_eq!((r.tango.lower, r.tango.upper), (t.lower, t.upper));
        assert_eq!((r.newcombe.lower, r.newcombe.upper), (n.lower, n.upper));
        assert_eq!(r.tango.note, None);
    }

    #[test]
    fn one_cluster_is_worth_one_pair() {
        let r = clustered_paired_difference_from_tables(&[counts(2, 1, 0, 1)], Level::default())
            .unwrap();
        assert_eq!((r.design_effect, r.n_effective), (4.0, 1.0));
        assert_eq!(r.tango.note.as_deref(), Some(NOTE_ONE_CLUSTER));
        assert!(r.tango.lower < 0.0 && r.tango.upper > 0.25);
    }

    #[test]
    fn from_a_paired_sample_and_errors() {
        let s = PairedSample::from_binary(vec![
            vec![(true, false), (true, true)],
            vec![(true, false), (false, false)],
            vec![(true, true)],
        ])
        .unwrap();
        let r = clustered_paired_difference(&s, Level::default()).unwrap();
        let tables = PairedCounts::per_cluster(&s).unwrap();
        assert_eq!(
            r,
            clustered_paired_difference_from_tables(&tables, Level::default()).unwrap()
        );
        assert_eq!(r.counts, counts(2, 2, 0, 1));
        assert_eq!(
            clustered_paired_difference_from_tables(&[], Level::default()),
            Err(StatsError::EmptySample)
        );
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            serde_json::from_str::<ClusteredPairedDifference>(&json).unwrap(),
            r
        );
    }
}
