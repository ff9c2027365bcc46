//! Paired comparison of two policies run on the same episodes.

use serde::{Deserialize, Serialize};

use super::bootstrap::{check, for_each_resample, intervals};
use super::{BootstrapConfig, Estimate, PairedSample, StatsError};

/// Policy A minus policy B on the same episodes.
///
/// Pairing removes the shared per-episode difficulty from the comparison: the interval
/// comes from resampling clusters once and taking both policies' means on that resample,
/// so it is much narrower than the difference of two independent intervals when the
/// policies are positively correlated (`correlation` shows by how much to expect).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// `mean_a - mean_b` with its BCa interval (or percentile, with a note, if BCa had
    /// to fall back).
    pub estimate: Estimate,
    /// Pearson correlation of A's and B's outcomes over all pairs; `None` when either
    /// policy's outcomes have zero variance (e.g. B never succeeds), where it is undefined.
    pub correlation: Option<f64>,
    /// A's mean outcome over all pairs.
    pub mean_a: f64,
    /// B's mean outcome over all pairs.
    pub mean_b: f64,
}

/// Difference of pooled means, A minus B, with a cluster-bootstrap interval in which both
/// means are taken on the same resampled clusters.
pub fn paired_difference(
    sample: &PairedSample,
    config: &BootstrapConfig,
) -> Result<PairedDifference, StatsError> {
    check(sample.num_clusters(), config.resamples)?;
    let t = PairedTotals::new(sample);
    let dist = t
        .resample(config.resamples, config.seed)
        .into_iter()
        .map(|(a, b)| a - b)
        .collect();
    let (sa, sb, n) = (t.a.iter().sum::<f64>(), t.b.iter().sum::<f64>(), t.n());
    let (mean_a, mean_b) = (sa / n, sb / n);
    let jackknife: Vec<f64> = (0..t.counts.len())
        .map(|i| {
            let rest = n - t.counts[i];
            (sa - t.a[i]) / rest - (sb - t.b[i]) / rest
        })
        .collect();
    let estimate = intervals(
        dist,
        mean_a - mean_b,
        &jackknife,
        config,
        sample.n(),
        sample.num_clusters(),
    )
    .bca;
    Ok(PairedDifference {
        estimate,
        correlation: pearson(sample),
        mean_a,
        mean_b,
    })
}

/// `(mean_a, mean_b)` of each resample in draw order. Uses exactly the draws that
/// [`super::bootstrap_distribution`] makes for the same seed and cluster count, so the A
/// column equals A's own bootstrap distribution.
pub fn paired_bootstrap_distribution(
    sample: &PairedSample,
    resamples: usize,
    seed: u64,
) -> Result<Vec<(f64, f64)>, StatsError> {
    check(sample.num_clusters(), resamples)?;
    Ok(PairedTotals::new(sample).resample(resamples, seed))
}

/// Per-cluster sums for A and B and the shared count.
struct PairedTotals {
    a: Vec<f64>,
    b: Vec<f64>,
    counts: Vec<f64>,
}

impl PairedTotals {
    fn new(sample: &PairedSample) -> Self {
        let clusters = sample.clusters();
        Self {
            a: clusters
                .iter()
                .map(|c| c.iter().map(|p| p.0).sum())
                .collect(),
            b: clusters
                .iter()
                .map(|c| c.iter().map(|p| p.1).sum())
                .collect(),
            counts: clusters.iter().map(|c| c.len() as f64).collect(),
        }
    }

    fn n(&self) -> f64 {
        self.counts.iter().sum()
    }

    fn resample(&self, resamples: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut out = Vec::with_capacity(resamples);
        for_each_resample(self.counts.len(), resamples, seed, |idx| {
            let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
            for &i in idx {
                a += self.a[i];
                b += self.b[i];
                c += self.counts[i];
            }
            out.push((a / c, b / c));
        });
        out
    }
}

/// Pearson correlation over all pairs (two-pass, for accuracy on near-constant data).
fn pearson(sample: &PairedSample) -> Option<f64> {
    let pairs = || sample.clusters().iter().flatten();
    let n = sample.n() as f64;
    let ma = pairs().map(|p| p.0).sum::<f64>() / n;
    let mb = pairs().map(|p| p.1).sum::<f64>() / n;
    let (mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0);
    for &(a, b) in pairs() {
        let (da, db) = (a - ma, b - mb);
        saa += da * da;
        sbb += db * db;
        sab += da * db;
    }
    if saa <= 0.0 || sbb <= 0.0 {
        return None;
    }
    let r = sab / (saa * sbb).sqrt();
    r.is_finite().then(|| r.clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::super::{bootstrap_distribution, cluster_bootstrap, ClusteredSample, Level, Method};
    use super::*;

    /// 20 clusters x 36 pairs. A succeeds on a cluster-dependent share; B mostly agrees
    /// with A but fails on every fifth episode A solved (B worse by a few points).
    fn sample() -> PairedSample {
        let clusters = (0..20)
            .map(|c| {
                (0..36)
                    .map(|i| {
                        let a = (i * 25) % 36 < 7 + c * 5 / 3;
                        let b = a && i % 5 != 0;
                        (a, b)
                    })
                    .collect()
            })
            .collect();
        PairedSample::from_binary(clusters).unwrap()
    }

    fn config() -> BootstrapConfig {
        BootstrapConfig {
            resamples: 2_000,
            level: Level::default(),
            seed: 9,
        }
    }

    #[test]
    fn means_difference_and_provenance() {
        let s = sample();
        let d = paired_difference(&s, &config()).unwrap();
        assert!((d.mean_a - s.policy_a().mean()).abs() < 1e-15);
        assert!((d.mean_b - s.policy_b().mean()).abs() < 1e-15);
        assert!((d.estimate.point - (d.mean_a - d.mean_b)).abs() < 1e-15);
        assert!(d.mean_a > d.mean_b);
        assert_eq!(d.estimate.method, Method::BootstrapBca);
        assert_eq!(
            (
                d.estimate.n,
                d.estimate.clusters,
                d.estimate.resamples,
                d.estimate.seed
            ),
            (720, Some(20), Some(2_000), Some(9))
        );
        assert!(
            d.estimate.lower > 0.0,
            "B is never better, so A - B > 0: {d:?}"
        );
        assert!(d.estimate.contains(d.estimate.point));
    }

    #[test]
    fn pairing_is_much_narrower_than_independent_intervals() {
        // A and B share the cluster effect, so the paired interval must be far narrower than
        // what treating them as independent would give (sum of the two half-widths).
        let s = sample();
        let d = paired_difference(&s, &config()).unwrap();
        let a = cluster_bootstrap(&s.policy_a(), &config()).unwrap().bca;
        let b = cluster_bootstrap(&s.policy_b(), &config()).unwrap().bca;
        assert!(
            d.estimate.width() < 0.5 * (a.width() + b.width()) / 2.0,
            "paired {} vs A {} B {}",
            d.estimate.width(),
            a.width(),
            b.width()
        );
        assert!(
            d.correlation.is_some_and(|r| r > 0.7),
            "{:?}",
            d.correlation
        );
    }

    #[test]
    fn both_policies_see_the_same_resamples() {
        let s = sample();
        let paired = paired_bootstrap_distribution(&s, 500, 21).unwrap();
        let a = bootstrap_distribution(&s.policy_a(), 500, 21).unwrap();
        let b = bootstrap_distribution(&s.policy_b(), 500, 21).unwrap();
        assert_eq!(paired.len(), 500);
        for (i, &(pa, pb)) in paired.iter().enumerate() {
            assert_eq!(pa, a[i]);
            assert_eq!(pb, b[i]);
        }
    }

    #[test]
    fn equals_the_bootstrap_of_per_pair_differences() {
        // mean_a - mean_b on a resample is the pooled mean of the differences a - b on that
        // resample, and likewise for every jackknife value, so with the same seed the
        // paired BCa interval must match the one-sample BCa interval of the differences
        // (up to rounding). Real-valued outcomes and unequal, skewed clusters make the
        // distribution nearly continuous and the acceleration non-zero, so an error in the
        // paired jackknife or resampling moves the endpoints (binary data would hide it in
        // ties).
        let clusters: Vec<Vec<(f64, f64)>> = (0..12u32)
            .map(|c| {
                (0..3 + (c * 7) % 11)
                    .map(|i| {
                        let a = f64::from((i * 37 + c * c * 13) % 101) / 100.0;
                        let b = a * f64::from(c % 3) / 3.0 + f64::from(c) / 40.0;
                        (a, b)
                    })
                    .collect()
            })
            .collect();
        let s = PairedSample::new(clusters).unwrap();
        let diffs = ClusteredSample::new(
            s.clusters()
                .iter()
                .map(|c| c.iter().map(|(a, b)| a - b).collect())
                .collect(),
        )
        .unwrap();
        let d = paired_difference(&s, &config()).unwrap();
        let one = cluster_bootstrap(&diffs, &config()).unwrap();
        assert!(one.acceleration.is_some_and(|a| a.abs() > 0.01), "{one:?}");
        let one = one.bca;
        assert_eq!(d.estimate.method, Method::BootstrapBca);
        assert_eq!(d.estimate.method, one.method);
        for (x, y) in [
            (d.estimate.point, one.point),
            (d.estimate.lower, one.lower),
            (d.estimate.upper, one.upper),
        ] {
            assert!(
                (x - y).abs() < 1e-12,
                "paired {:?} vs one-sample {one:?}",
                d.estimate
            );
        }
    }

    #[test]
    fn identical_policies_give_a_zero_width_interval_at_zero() {
        let a =
            ClusteredSample::from_binary(vec![vec![true, false], vec![false], vec![true]]).unwrap();
        let s = PairedSample::from_aligned(&a, &a).unwrap();
        let d = paired_difference(&s, &config()).unwrap();
        assert_eq!((d.estimate.lower, d.estimate.upper), (0.0, 0.0));
        assert!(d.estimate.note.is_some());
        assert_eq!(d.correlation, Some(1.0));
    }

    #[test]
    fn correlation_hand_value_and_zero_variance() {
        // Pairs (1,1), (1,0), (0,0), (0,1), (1,1): means 0.6, 0.6;
        // da = [.4,.4,-.6,-.6,.4], db = [.4,-.6,-.6,.4,.4];
        // sab = .16 - .24 + .36 - .24 + .16 = 0.2; saa = sbb = 3*.16 + 2*.36 = 1.2;
        // r = 0.2 / 1.2 = 1/6.
        let s = PairedSample::new(vec![
            vec![(1.0, 1.0), (1.0, 0.0)],
            vec![(0.0, 0.0), (0.0, 1.0), (1.0, 1.0)],
        ])
        .unwrap();
        let r = pearson(&s).unwrap();
        assert!((r - 1.0 / 6.0).abs() < 1e-12, "{r}");
        let constant_b =
            PairedSample::new(vec![vec![(1.0, 0.0), (0.0, 0.0)], vec![(1.0, 0.0)]]).unwrap();
        assert_eq!(pearson(&constant_b), None);
        let d = paired_difference(&constant_b, &config()).unwrap();
        assert_eq!(d.correlation, None);
        // Serializes without NaN.
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains("\"correlation\":null"), "{json}");
        assert_eq!(serde_json::from_str::<PairedDifference>(&json).unwrap(), d);
    }

    #[test]
    fn rejects_single_cluster() {
        let s = PairedSample::new(vec![vec![(1.0, 0.0), (0.0, 1.0)]]).unwrap();
        assert_eq!(
            paired_difference(&s, &config()),
            Err(StatsError::TooFewClusters { needed: 2, got: 1 })
        );
    }
}
