//! Cluster-robust standard error of a mean, reported next to the naive one.

use serde::{Deserialize, Serialize};

use super::{ClusteredSample, Estimate, Level, Method, StatsError};

/// Naive and cluster-robust standard errors of the pooled mean.
///
/// Both are kept so a report can show how much clustering by layout inflates the error
/// (`design_effect`); the naive one alone would overstate precision whenever episodes on
/// the same layout succeed or fail together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredStandardError {
    /// The sample mean `ȳ` over all observations.
    pub mean: f64,
    /// `s / sqrt(n)`, with `s` the sample standard deviation (n - 1 denominator); for 0/1
    /// data this is `sqrt(p(1-p)/(n-1))`.
    pub naive_se: f64,
    /// `sqrt(C/(C-1) · Σ_c (Σ_{i∈c} (y_i - ȳ))² / n²)`: the CR1 sandwich estimator for an
    /// intercept-only model, the C/(C-1) factor correcting its downward bias with few
    /// clusters.
    pub clustered_se: f64,
    /// Observations in all.
    pub n: usize,
    /// Clusters (`C`).
    pub clusters: usize,
}

impl ClusteredStandardError {
    /// `(clustered_se / naive_se)²`: how many times larger the variance is than an iid
    /// sample of the same size would suggest. `None` when the naive SE is zero.
    pub fn design_effect(&self) -> Option<f64> {
        (self.naive_se > 0.0).then(|| (self.clustered_se / self.naive_se).powi(2))
    }

    /// Wald interval `mean ± z · clustered_se`. Not clamped to [0, 1]: it is a normal
    /// approximation and reports as such; prefer the cluster bootstrap for proportions.
    pub fn normal_interval(&self, level: Level) -> Estimate {
        let half = level.z() * self.clustered_se;
        Estimate {
            point: self.mean,
            lower: self.mean - half,
            upper: self.mean + half,
            level: level.get(),
            method: Method::Normal,
            n: self.n,
            clusters: Some(self.clusters),
            resamples: None,
            seed: None,
            note: None,
        }
    }
}

/// Naive and cluster-robust SE of the pooled mean; needs two clusters (for C/(C-1)) and two
/// observations (for the sample standard deviation).
pub fn clustered_standard_error(
    sample: &ClusteredSample,
) -> Result<ClusteredStandardError, StatsError> {
    let (n, c) = (sample.n(), sample.num_clusters());
    if c < 2 {
        return Err(StatsError::TooFewClusters { needed: 2, got: c });
    }
    if n < 2 {
        return Err(StatsError::TooFewObservations { needed: 2, got: n });
    }
    let mean = sample.mean();
    let nf = n as f64;
    let ss: f64 = sample
        .clusters()
        .iter()
        .flatten()
        .map(|y| (y - mean).powi(2))
        .sum();
    let naive_se = (ss / (nf - 1.0) / nf).sqrt();
    let score_ss: f64 = sample
        .clusters()
        .iter()
        .map(|cl| cl.iter().map(|y| y - mean).sum::<f64>().powi(2))
        .sum();
    let cf = c as f64;
    let clustered_se = (cf / (cf - 1.0) * score_ss / (nf * nf)).sqrt();
    Ok(ClusteredStandardError {
        mean,
        naive_se,
        clustered_se,
        n,
        clusters: c,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hand_sample() -> ClusteredSample {
        ClusteredSample::new(vec![
            vec![1.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
            vec![1.0, 1.0, 1.0, 1.0],
        ])
        .unwrap()
    }

    #[test]
    fn hand_computed_example() {
        // n = 10, C = 3, sum = 2 + 1 + 4 = 7, mean = 0.7.
        // Naive: squared deviations: seven 1s give 0.09 each, three 0s give 0.49 each;
        //   SS = 0.63 + 1.47 = 2.1, s² = 2.1 / 9 = 0.23333, SE = sqrt(0.23333 / 10)
        //   = sqrt(0.023333) = 0.1527525.
        // Clustered: per-cluster residual sums 2 - 2.1 = -0.1, 1 - 2.1 = -1.1,
        //   4 - 2.8 = 1.2 (they sum to 0); squares 0.01 + 1.21 + 1.44 = 2.66;
        //   V = (3/2) · 2.66 / 10² = 0.0399, SE = sqrt(0.0399) = 0.1997498.
        let se = clustered_standard_error(&hand_sample()).unwrap();
        assert!((se.mean - 0.7).abs() < 1e-15);
        assert!((se.naive_se - (2.1f64 / 9.0 / 10.0).sqrt()).abs() < 1e-15);
        assert!((se.naive_se - 0.152_752_5).abs() < 1e-7);
        assert!((se.clustered_se - 0.0399f64.sqrt()).abs() < 1e-15);
        assert!((se.clustered_se - 0.199_749_8).abs() < 1e-7);
        assert_eq!((se.n, se.clusters), (10, 3));
        // design effect = 0.0399 / 0.023333 = 1.71
        assert!((se.design_effect().unwrap() - 0.0399 / (2.1 / 90.0)).abs() < 1e-12);
    }

    #[test]
    fn normal_interval_uses_clustered_se() {
        let se = clustered_standard_error(&hand_sample()).unwrap();
        let e = se.normal_interval(Level::default());
        let half = 1.959963984540054 * 0.0399f64.sqrt();
        assert!((e.lower - (0.7 - half)).abs() < 1e-12);
        assert!((e.upper - (0.7 + half)).abs() < 1e-12);
        assert_eq!((e.method, e.clusters, e.n), (Method::Normal, Some(3), 10));
    }

    #[test]
    fn singleton_clusters_reduce_to_the_naive_se() {
        // With one observation per cluster the residual sums are the residuals themselves:
        // clustered² = n/(n-1) · SS/n² = SS/((n-1) n) = naive². An implementation that
        // forgot the C/(C-1) factor would be off by sqrt(n/(n-1)).
        let s = ClusteredSample::new(vec![vec![1.0], vec![0.0], vec![1.0], vec![1.0], vec![0.0]])
            .unwrap();
        let se = clustered_standard_error(&s).unwrap();
        assert!((se.clustered_se - se.naive_se).abs() < 1e-15, "{se:?}");
        assert!((se.design_effect().unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn constant_data_has_zero_se_and_no_design_effect() {
        let s = ClusteredSample::new(vec![vec![1.0, 1.0], vec![1.0]]).unwrap();
        let se = clustered_standard_error(&s).unwrap();
        assert_eq!((se.naive_se, se.clustered_se), (0.0, 0.0));
        assert_eq!(se.design_effect(), None);
    }

    #[test]
    fn rejects_too_few_clusters_or_observations() {
        let one = ClusteredSample::new(vec![vec![1.0, 0.0]]).unwrap();
        assert_eq!(
            clustered_standard_error(&one),
            Err(StatsError::TooFewClusters { needed: 2, got: 1 })
        );
    }
}
