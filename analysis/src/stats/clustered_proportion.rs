//! A success rate over clustered binary outcomes: Wilson on the effective sample size.
//!
//! Repeated runs of one layout are not independent trials: an agent that recovers on a
//! layout tends to recover on every run of it. A plain Wilson interval over all runs would
//! then claim the precision of `n` independent trials while the data hold little more than
//! one trial per layout. So the interval here is Wilson's with `n` replaced by the
//! effective sample size `n_eff = n / DEFF` (Kish), where the design effect
//! `DEFF = (clustered SE / naive SE)²` comes from [`clustered_standard_error`] with the
//! layouts as clusters.

use serde::{Deserialize, Serialize};

use super::proportion::wilson_bounds;
use super::{
    clustered_standard_error, ClusteredSample, Estimate, Level, Method, Proportion, StatsError,
};

/// Note when every outcome is equal, so the design effect (0/0) is undefined.
pub const NOTE_CONSTANT_OUTCOMES: &str =
    "all outcomes equal, design effect undefined: n_eff = clusters (the conservative cap)";

/// Note when there is one cluster, so the clustered SE (which needs two) is undefined.
pub const NOTE_ONE_CLUSTER: &str =
    "one cluster, design effect not estimable: n_eff = 1 (the conservative cap)";

/// A clustered success rate with its Wilson interval on `n_eff` and how `n_eff` came about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusteredProportion {
    /// Point `successes / n`, the interval, `n`, `clusters` and method
    /// [`Method::WilsonClustered`]; `note` says when the design effect fell back to its cap.
    pub estimate: Estimate,
    /// Observations equal to 1.
    pub successes: u64,
    /// The design effect applied, after the floor at 1 and the cap at the mean cluster size.
    pub design_effect: f64,
    /// `n / design_effect`: between the number of clusters and `n`.
    pub n_effective: f64,
}

/// Wilson interval for the pooled success rate of 0/1 outcomes grouped by cluster, on the
/// effective sample size `n / DEFF`.
///
/// `DEFF = (clustered SE / naive SE)²` is floored at 1 (clustering is not allowed to make
/// the data look *more* informative than independent trials; values below 1 are noise of
/// the SE estimates) and capped at the mean cluster size `n / clusters` (perfectly
/// correlated clusters are worth one trial each, no fewer). When it is undefined (all
/// outcomes equal, or a single cluster) the cap is used, i.e. the clusters are counted:
/// the conservative choice, since unanimous outcomes say nothing about the correlation.
///
/// With every cluster of size 1 the cap is 1, so the bounds are exactly
/// [`Proportion::wilson`]'s.
///
/// Errors: [`StatsError::NotBinary`] when an outcome is neither 0 nor 1.
pub fn clustered_wilson(
    sample: &ClusteredSample,
    level: Level,
) -> Result<ClusteredProportion, StatsError> {
    let mut successes = 0u64;
    for (ci, cluster) in sample.clusters().iter().enumerate() {
        for (i, &value) in cluster.iter().enumerate() {
            if value == 1.0 {
                successes += 1;
            } else if value != 0.0 {
                return Err(StatsError::NotBinary {
                    cluster: ci,
                    index: i,
                    value,
                });
            }
        }
    }
    let (n, clusters) = (sample.n(), sample.num_clusters());
    let proportion = Proportion::new(successes, n as u64)?;
    let nf = n as f64;
    let mean_cluster_size = nf / clusters as f64;
    let (design_effect, fallback) = match clustered_standard_error(sample) {
        Ok(se) => match se.design_effect() {
            Some(d) => (d.clamp(1.0, mean_cluster_size), None),
            None => (mean_cluster_size, Some(NOTE_CONSTANT_OUTCOMES)),
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
    let (lower, upper) = wilson_bounds(proportion, n_effective, level);
    Ok(ClusteredProportion {
        estimate: Estimate {
            point: proportion.p_hat(),
            lower,
            upper,
            level: level.get(),
            method: Method::WilsonClustered,
            n,
            clusters: Some(clusters),
            resamples: None,
            seed: None,
            // With clusters of size 1 the cap is the floor: nothing was assumed.
            note: fallback
                .filter(|_| mean_cluster_size > 1.0)
                .map(str::to_string),
        },
        successes,
        design_effect,
        n_effective,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::close;

    // Reference bounds computed independently with mpmath at 40 digits from Wilson's closed
    // form with z = sqrt(2)·erfinv(0.95) and the stated n_eff.
    const TOL: f64 = 1e-10;

    fn binary(clusters: &[&[u8]]) -> ClusteredSample {
        ClusteredSample::from_binary(
            clusters
                .iter()
                .map(|c| c.iter().map(|&x| x == 1).collect())
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn hand_computed_example_uses_the_design_effect() {
        // The cluster_se hand example: n = 10, C = 3, DEFF = 0.0399 / (2.1 / 90) = 1.71,
        // below the cap 10/3, so n_eff = 10 / 1.71 = 5.847953...
        let r = clustered_wilson(
            &binary(&[&[1, 1, 0], &[0, 0, 1], &[1, 1, 1, 1]]),
            Level::default(),
        )
        .unwrap();
        close(r.design_effect, 1.71, TOL);
        close(r.n_effective, 5.847_953_216_374_269, TOL);
        close(r.estimate.point, 0.7, TOL);
        close(r.estimate.lower, 0.321_469_605_022_560_6, TOL);
        close(r.estimate.upper, 0.919_946_621_018_895_4, TOL);
        assert_eq!(r.successes, 7);
        assert_eq!(
            (r.estimate.method, r.estimate.n, r.estimate.clusters),
            (Method::WilsonClustered, 10, Some(3))
        );
        assert_eq!(r.estimate.note, None);
        // Wider than the naive Wilson on n = 10.
        let naive = Proportion::new(7, 10).unwrap().wilson(Level::default());
        assert!(r.estimate.lower < naive.lower && r.estimate.upper > naive.upper);
    }

    #[test]
    fn perfectly_correlated_clusters_count_once_each() {
        // Each layout all-or-nothing: DEFF = 4.44 > cap 3, so n_eff = C = 3, p = 2/3.
        let r = clustered_wilson(
            &binary(&[&[1, 1, 1], &[0, 0, 0], &[1, 1, 1]]),
            Level::default(),
        )
        .unwrap();
        assert_eq!((r.design_effect, r.n_effective), (3.0, 3.0));
        close(r.estimate.lower, 0.207_659_600_802_047_7, TOL);
        close(r.estimate.upper, 0.938_508_055_279_603_8, TOL);
        assert_eq!(r.estimate.note, None, "the cap was estimated, not assumed");
    }

    #[test]
    fn equal_outcomes_fall_back_to_counting_clusters() {
        let r = clustered_wilson(&binary(&[&[1, 1], &[1, 1], &[1]]), Level::default()).unwrap();
        assert_eq!((r.n_effective, r.estimate.upper), (3.0, 1.0));
        close(r.design_effect, 5.0 / 3.0, TOL);
        close(r.estimate.lower, 0.438_502_968_244_954_5, TOL);
        assert_eq!(r.estimate.note.as_deref(), Some(NOTE_CONSTANT_OUTCOMES));
        let none = clustered_wilson(&binary(&[&[0, 0], &[0, 0, 0]]), Level::default()).unwrap();
        assert_eq!((none.estimate.lower, none.n_effective), (0.0, 2.0));
    }

    #[test]
    fn one_cluster_is_worth_one_trial() {
        let r = clustered_wilson(&binary(&[&[1, 0, 1, 1]]), Level::default()).unwrap();
        assert_eq!((r.design_effect, r.n_effective), (4.0, 1.0));
        assert_eq!(r.estimate.note.as_deref(), Some(NOTE_ONE_CLUSTER));
        let single = clustered_wilson(&binary(&[&[1]]), Level::default()).unwrap();
        let plain = Proportion::new(1, 1).unwrap().wilson(Level::default());
        assert_eq!(
            (single.estimate.lower, single.estimate.upper),
            (plain.lower, plain.upper)
        );
        assert_eq!(single.estimate.note, None);
    }

    #[test]
    fn singleton_clusters_give_plain_wilson_exactly() {
        let s = binary(&[&[1], &[0], &[1], &[1], &[0], &[1]]);
        let r = clustered_wilson(&s, Level::new(0.9).unwrap()).unwrap();
        let plain = Proportion::new(4, 6)
            .unwrap()
            .wilson(Level::new(0.9).unwrap());
        assert_eq!(
            (r.estimate.lower, r.estimate.upper),
            (plain.lower, plain.upper)
        );
        assert_eq!((r.design_effect, r.n_effective), (1.0, 6.0));
    }

    #[test]
    fn rejects_non_binary_outcomes() {
        let s = ClusteredSample::new(vec![vec![1.0], vec![0.0, 0.5]]).unwrap();
        assert_eq!(
            clustered_wilson(&s, Level::default()),
            Err(StatsError::NotBinary {
                cluster: 1,
                index: 1,
                value: 0.5
            })
        );
    }
}
