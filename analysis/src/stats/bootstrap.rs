//! Cluster bootstrap of a pooled mean, with percentile and BCa intervals.
//!
//! Clusters (layouts) are resampled with replacement and keep all their observations, so
//! within-layout correlation is reflected in the interval width. Each cluster is reduced once
//! to `(sum, count)`; a resample then costs O(clusters), not O(observations).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use super::estimate::standard_normal;
use super::{ClusteredSample, Estimate, Level, Method, StatsError};

/// Seed used by [`BootstrapConfig::default`]; fixed so reports are reproducible by default.
pub const DEFAULT_SEED: u64 = 0x5eed_fa17;

/// How to run a bootstrap. The seed is part of the result: same data + same config gives
/// bit-identical intervals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples (default 10,000: enough for stable 95% BCa endpoints).
    pub resamples: usize,
    /// The confidence level of the intervals.
    pub level: Level,
    /// The resampling RNG's seed: with the data and `resamples`, it fixes the intervals.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            level: Level::default(),
            seed: DEFAULT_SEED,
        }
    }
}

/// Both bootstrap intervals for one statistic, computed from one set of resamples.
///
/// `bca.method` is `bootstrap-percentile` when BCa had to fall back (see `bca.note`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapIntervals {
    /// The percentile interval.
    pub percentile: Estimate,
    /// The bias-corrected and accelerated (BCa) interval.
    pub bca: Estimate,
    /// BCa bias correction z0; `None` when it is infinite or the distribution is degenerate.
    pub bias_correction: Option<f64>,
    /// BCa acceleration from the leave-one-cluster-out jackknife.
    pub acceleration: Option<f64>,
}

/// Note attached when every resampled statistic is the same value.
pub const NOTE_DEGENERATE: &str =
    "degenerate bootstrap distribution (all resampled statistics equal); BCa fell back to percentile";
/// Note attached when the point estimate lies outside the bootstrap distribution.
pub const NOTE_INFINITE_BIAS: &str =
    "BCa bias correction is infinite (point estimate outside the bootstrap distribution); BCa fell back to percentile";
/// Note attached when the acceleration makes the BCa adjustment undefined.
pub const NOTE_BAD_ACCELERATION: &str =
    "BCa adjustment undefined (1 - a(z0 + z) <= 0); BCa fell back to percentile";
/// Note attached when a BCa endpoint is the most extreme resample.
pub const NOTE_BCA_EDGE: &str =
    "BCa endpoint at the edge of the bootstrap distribution; more resamples would be needed to resolve it";

/// Percentile and BCa intervals for the pooled mean of `sample`.
///
/// Needs at least two clusters: with one, every resample is the original sample and the
/// interval would claim certainty it does not have.
pub fn cluster_bootstrap(
    sample: &ClusteredSample,
    config: &BootstrapConfig,
) -> Result<BootstrapIntervals, StatsError> {
    check(sample.num_clusters(), config.resamples)?;
    let (sums, counts) = sample.totals();
    let dist = resample_means(&sums, &counts, config.resamples, config.seed);
    let total_sum: f64 = sums.iter().sum();
    let total_count: f64 = counts.iter().sum();
    let point = total_sum / total_count;
    let jackknife: Vec<f64> = sums
        .iter()
        .zip(&counts)
        .map(|(s, c)| (total_sum - s) / (total_count - c))
        .collect();
    Ok(intervals(
        dist,
        point,
        &jackknife,
        config,
        sample.n(),
        sample.num_clusters(),
    ))
}

/// The resampled pooled means, in draw order (unsorted), for inspection and testing.
pub fn bootstrap_distribution(
    sample: &ClusteredSample,
    resamples: usize,
    seed: u64,
) -> Result<Vec<f64>, StatsError> {
    check(sample.num_clusters(), resamples)?;
    let (sums, counts) = sample.totals();
    Ok(resample_means(&sums, &counts, resamples, seed))
}

fn resample_means(sums: &[f64], counts: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
    let mut out = Vec::with_capacity(resamples);
    for_each_resample(sums.len(), resamples, seed, |idx| {
        let (mut s, mut c) = (0.0, 0.0);
        for &i in idx {
            s += sums[i];
            c += counts[i];
        }
        out.push(s / c);
    });
    out
}

pub(crate) fn check(clusters: usize, resamples: usize) -> Result<(), StatsError> {
    if clusters < 2 {
        return Err(StatsError::TooFewClusters {
            needed: 2,
            got: clusters,
        });
    }
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    Ok(())
}

/// Calls `f` with the cluster indices of each resample. Every caller that shares a seed
/// sees the same draws, which is what pairs two policies on the same resamples.
pub(crate) fn for_each_resample(
    clusters: usize,
    resamples: usize,
    seed: u64,
    mut f: impl FnMut(&[usize]),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx = vec![0usize; clusters];
    for _ in 0..resamples {
        for slot in idx.iter_mut() {
            *slot = rng.random_range(0..clusters);
        }
        f(&idx);
    }
}

/// Turns a bootstrap distribution, the point estimate and its leave-one-cluster-out
/// jackknife values into percentile and BCa estimates.
pub(crate) fn intervals(
    mut dist: Vec<f64>,
    point: f64,
    jackknife: &[f64],
    config: &BootstrapConfig,
    n: usize,
    clusters: usize,
) -> BootstrapIntervals {
    dist.sort_unstable_by(f64::total_cmp);
    let b = dist.len();
    let (min, max) = (dist[0], dist[b - 1]);
    // Resamples whose exact mean equals the point can differ from it by rounding when the
    // outcomes are not integers; treat such values as ties.
    let tol = 1e-12 * (1.0 + point.abs().max(min.abs()).max(max.abs()));
    let degenerate = max - min <= tol;
    let alpha = config.level.alpha();
    let estimate = |lower: f64, upper: f64, method: Method, note: Option<&str>| Estimate {
        point,
        lower,
        upper,
        level: config.level.get(),
        method,
        n,
        clusters: Some(clusters),
        resamples: Some(b),
        seed: Some(config.seed),
        note: note.map(str::to_owned),
    };

    let pct_lower = quantile(&dist, alpha / 2.0);
    let pct_upper = quantile(&dist, 1.0 - alpha / 2.0);
    let percentile = estimate(
        pct_lower,
        pct_upper,
        Method::BootstrapPercentile,
        degenerate.then_some(
            "degenerate bootstrap distribution (all resampled statistics equal); interval has zero width",
        ),
    );
    let acceleration = jackknife_acceleration(jackknife);
    let fallback = |note: &str| {
        estimate(
            pct_lower,
            pct_upper,
            Method::BootstrapPercentile,
            Some(note),
        )
    };

    if degenerate {
        return BootstrapIntervals {
            bca: fallback(NOTE_DEGENERATE),
            percentile,
            bias_correction: None,
            acceleration,
        };
    }
    // Mid-rank proportion below the point: ties are common for binary outcomes and
    // counting them all on one side would bias z0.
    let less = dist.partition_point(|&x| x < point - tol);
    let not_greater = dist.partition_point(|&x| x <= point + tol);
    let p0 = (less as f64 + 0.5 * (not_greater - less) as f64) / b as f64;
    if p0 <= 0.0 || p0 >= 1.0 {
        return BootstrapIntervals {
            bca: fallback(NOTE_INFINITE_BIAS),
            percentile,
            bias_correction: None,
            acceleration,
        };
    }
    let normal = standard_normal();
    let z0 = normal.inverse_cdf(p0);
    let a = acceleration.unwrap_or(0.0);
    let z = config.level.z();
    let adjusted = |zq: f64| {
        let w = z0 + zq;
        let denom = 1.0 - a * w;
        (denom > 0.0).then(|| normal.cdf(z0 + w / denom))
    };
    let (Some(q_lo), Some(q_hi)) = (adjusted(-z), adjusted(z)) else {
        return BootstrapIntervals {
            bca: fallback(NOTE_BAD_ACCELERATION),
            percentile,
            bias_correction: Some(z0),
            acceleration,
        };
    };
    let at_edge = q_lo < 1.0 / b as f64 || q_hi > 1.0 - 1.0 / b as f64;
    let bca = estimate(
        quantile(&dist, q_lo),
        quantile(&dist, q_hi),
        Method::BootstrapBca,
        at_edge.then_some(NOTE_BCA_EDGE),
    );
    BootstrapIntervals {
        percentile,
        bca,
        bias_correction: Some(z0),
        acceleration,
    }
}

/// Efron's acceleration `sum(d^3) / (6 (sum d^2)^1.5)`, `d = mean - theta_(i)`; zero when the
/// jackknife values are all equal (no skewness to correct).
fn jackknife_acceleration(jackknife: &[f64]) -> Option<f64> {
    if jackknife.is_empty() {
        return None;
    }
    let mean = jackknife.iter().sum::<f64>() / jackknife.len() as f64;
    let (mut s2, mut s3) = (0.0, 0.0);
    for &t in jackknife {
        let d = mean - t;
        s2 += d * d;
        s3 += d * d * d;
    }
    let a = if s2 > 0.0 {
        s3 / (6.0 * s2.powf(1.5))
    } else {
        0.0
    };
    a.is_finite().then_some(a)
}

/// Linearly interpolated quantile (Hyndman-Fan type 7, as R's default) of sorted data.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let i = h.floor() as usize;
    match sorted.get(i + 1) {
        Some(&next) => sorted[i] + (h - i as f64) * (next - sorted[i]),
        None => sorted[sorted.len() - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 720 binary outcomes in 20 clusters of 36. `(i * 25) % 36` permutes 0..36, so cluster
    /// c has min(7 + 5c/3, 36) successes: rates from 19% to 100%, so clusters differ.
    pub(crate) fn bench_like() -> ClusteredSample {
        let clusters = (0..20)
            .map(|c| (0..36).map(|i| (i * 25) % 36 < 7 + c * 5 / 3).collect())
            .collect();
        ClusteredSample::from_binary(clusters).unwrap()
    }

    fn config(resamples: usize, seed: u64) -> BootstrapConfig {
        BootstrapConfig {
            resamples,
            level: Level::default(),
            seed,
        }
    }

    #[test]
    fn quantile_type7_matches_hand_values() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert_eq!(quantile(&xs, 1.0), 4.0);
        assert_eq!(quantile(&xs, 0.5), 2.5);
        // h = 3 * 0.25 = 0.75 -> 1 + 0.75
        assert_eq!(quantile(&xs, 0.25), 1.75);
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn acceleration_hand_value_and_symmetric_zero() {
        // theta = [0, 0, 3]: mean 1, d = [1, 1, -2], sum d^2 = 6, sum d^3 = 1 + 1 - 8 = -6,
        // a = -6 / (6 * 6^1.5) = -1 / 6^1.5.
        let a = jackknife_acceleration(&[0.0, 0.0, 3.0]).unwrap();
        assert!((a + 1.0 / 6f64.powf(1.5)).abs() < 1e-15);
        assert_eq!(jackknife_acceleration(&[1.0, 2.0, 3.0]), Some(0.0));
        assert_eq!(jackknife_acceleration(&[2.0, 2.0]), Some(0.0));
        assert_eq!(jackknife_acceleration(&[]), None);
    }

    #[test]
    fn rejects_one_cluster_and_zero_resamples() {
        let one = ClusteredSample::from_binary(vec![vec![true, false, true]]).unwrap();
        assert_eq!(
            cluster_bootstrap(&one, &BootstrapConfig::default()),
            Err(StatsError::TooFewClusters { needed: 2, got: 1 })
        );
        assert_eq!(
            bootstrap_distribution(&bench_like(), 0, 1),
            Err(StatsError::NoResamples)
        );
    }

    #[test]
    fn defaults_are_ten_thousand_resamples_at_95_percent() {
        let c = BootstrapConfig::default();
        assert_eq!(
            (c.resamples, c.level.get(), c.seed),
            (10_000, 0.95, DEFAULT_SEED)
        );
    }

    #[test]
    fn intervals_carry_their_provenance() {
        let s = bench_like();
        let r = cluster_bootstrap(&s, &config(2_000, 11)).unwrap();
        for (e, m) in [
            (&r.percentile, Method::BootstrapPercentile),
            (&r.bca, Method::BootstrapBca),
        ] {
            assert_eq!(e.method, m);
            assert_eq!(e.point, s.mean());
            assert_eq!(
                (e.n, e.clusters, e.resamples, e.seed, e.level),
                (720, Some(20), Some(2_000), Some(11), 0.95)
            );
            assert_eq!(e.note, None);
            assert!(e.lower < e.point && e.point < e.upper, "{e:?}");
        }
        assert!(r.bias_correction.is_some_and(f64::is_finite));
        assert!(r.acceleration.is_some_and(f64::is_finite));
    }

    #[test]
    fn cluster_bootstrap_is_wider_than_iid_when_clusters_differ() {
        // Between-cluster variation dominates here, so the cluster-bootstrap SE must exceed
        // the iid binomial SE sqrt(p(1-p)/n); an implementation that resampled observations
        // instead of clusters would not.
        let s = bench_like();
        let dist = bootstrap_distribution(&s, 4_000, 3).unwrap();
        let m = dist.iter().sum::<f64>() / dist.len() as f64;
        let sd =
            (dist.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (dist.len() - 1) as f64).sqrt();
        let p = s.mean();
        let iid = (p * (1.0 - p) / s.n() as f64).sqrt();
        assert!(sd > 1.5 * iid, "bootstrap sd {sd} vs iid {iid}");
        assert!((m - p).abs() < 0.01, "bootstrap mean {m} vs point {p}");
    }

    #[test]
    fn equal_cluster_sizes_match_the_analytic_bootstrap_variance() {
        // With equal-sized clusters the pooled mean of a resample is the mean of C cluster
        // means drawn with replacement, whose variance is exactly var_pop(cluster means) / C.
        let s = bench_like();
        let means: Vec<f64> = s
            .clusters()
            .iter()
            .map(|c| c.iter().sum::<f64>() / c.len() as f64)
            .collect();
        let mu = means.iter().sum::<f64>() / 20.0;
        let var_pop = means.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / 20.0;
        let expected = var_pop / 20.0;
        let dist = bootstrap_distribution(&s, 20_000, 5).unwrap();
        let m = dist.iter().sum::<f64>() / dist.len() as f64;
        let var = dist.iter().map(|x| (x - m).powi(2)).sum::<f64>() / dist.len() as f64;
        assert!(
            (var / expected - 1.0).abs() < 0.05,
            "bootstrap var {var} vs analytic {expected}"
        );
    }

    #[test]
    fn all_zero_and_all_one_fall_back_with_a_note() {
        for value in [false, true] {
            let s = ClusteredSample::from_binary(vec![vec![value; 5]; 6]).unwrap();
            let r = cluster_bootstrap(&s, &config(500, 1)).unwrap();
            let v = f64::from(value);
            assert_eq!((r.bca.lower, r.bca.point, r.bca.upper), (v, v, v));
            assert_eq!(r.bca.method, Method::BootstrapPercentile);
            assert_eq!(r.bca.note.as_deref(), Some(NOTE_DEGENERATE));
            assert!(r.percentile.note.is_some());
            assert_eq!(r.bias_correction, None);
            // NaN-free, so it serializes and reads back.
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(
                serde_json::from_str::<BootstrapIntervals>(&json).unwrap(),
                r
            );
        }
    }

    #[test]
    fn acceleration_comes_from_leave_one_cluster_out() {
        // Clusters [1], [0, 0], [1, 1, 1]: S = 4, N = 6. Dropping each cluster gives
        // 3/5, 4/4, 1/3; mean 0.64444, d = [0.04444, -0.35556, 0.31111],
        // Σd² = 0.225185, Σd³ = -0.014749, a = Σd³ / (6 (Σd²)^1.5) = -0.0230039.
        // (Leaving out single observations instead would give a different value.)
        let s = ClusteredSample::new(vec![vec![1.0], vec![0.0, 0.0], vec![1.0, 1.0, 1.0]]).unwrap();
        let r = cluster_bootstrap(&s, &config(200, 1)).unwrap();
        let a = r.acceleration.unwrap();
        assert!((a + 0.023_003_862_038_848_62).abs() < 1e-12, "a = {a}");
    }

    #[test]
    fn bca_endpoints_match_a_hand_computed_case() {
        // dist = i/999 for i in 0..1000, so the type-7 quantile at q is q itself.
        // Point 0.6: 600 values lie below (i <= 599), none equal, so p0 = 0.6 and
        // z0 = Φ⁻¹(0.6) = 0.2533471031357998. Jackknife [0, 0, 3] gives a = -1/6^1.5.
        // Endpoint levels Φ(z0 + w/(1 - a w)), w = z0 ∓ 1.959964, computed in mpmath:
        // 0.04672449179477624 and 0.9852584947518005.
        let dist: Vec<f64> = (0..1000).map(|i| f64::from(i) / 999.0).collect();
        let r = intervals(dist, 0.6, &[0.0, 0.0, 3.0], &config(1000, 0), 50, 3);
        let z0 = r.bias_correction.unwrap();
        assert!((z0 - 0.253_347_103_135_799_8).abs() < 1e-12, "z0 = {z0}");
        assert!((r.acceleration.unwrap() + 1.0 / 6f64.powf(1.5)).abs() < 1e-15);
        assert_eq!(r.bca.method, Method::BootstrapBca);
        // statrs' normal CDF is accurate to ~1e-12, hence the looser tolerance here.
        assert!(
            (r.bca.lower - 0.046_724_491_794_776_24).abs() < 1e-10,
            "{:?}",
            r.bca
        );
        assert!(
            (r.bca.upper - 0.985_258_494_751_800_5).abs() < 1e-10,
            "{:?}",
            r.bca
        );
        assert!((r.percentile.lower - 0.025).abs() < 1e-12);
        assert!((r.percentile.upper - 0.975).abs() < 1e-12);
    }

    #[test]
    fn bca_endpoint_beyond_the_resamples_is_flagged() {
        // dist = i/9, point 0.05: one value below, so p0 = 0.1, z0 = -1.28, and with a = 0
        // the lower level is Φ(2 z0 - 1.96) = Φ(-4.52) ≈ 3e-6 < 1/B = 0.1.
        let dist: Vec<f64> = (0..10).map(|i| f64::from(i) / 9.0).collect();
        let r = intervals(dist, 0.05, &[1.0, 2.0, 3.0], &config(10, 0), 10, 3);
        assert_eq!(r.bca.method, Method::BootstrapBca);
        assert_eq!(r.bca.note.as_deref(), Some(NOTE_BCA_EDGE));
        // Type-7 quantile of i/9 at q is q itself, so lower = Φ(-4.52) ≈ 3.05e-6.
        assert!(r.bca.lower > 0.0 && r.bca.lower < 1e-5, "{:?}", r.bca);
    }

    #[test]
    fn bias_correction_counts_ties_at_mid_rank() {
        // 2 below, 4 tied, 2 above the point: p0 = (2 + 4/2) / 8 = 0.5, so z0 = 0. Counting
        // ties as "below" would give p0 = 0.75 and a spurious z0 = 0.674.
        let dist = vec![0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0];
        let r = intervals(dist, 0.5, &[0.4, 0.5, 0.6], &config(8, 0), 8, 3);
        assert!(r.bias_correction.unwrap().abs() < 1e-15);
    }

    #[test]
    fn infinite_bias_correction_falls_back_with_a_note() {
        // The pooled mean is always attainable by some resample, so an infinite z0 needs an
        // unlucky resample set; exercise the guard directly. Point above every resample:
        let r = intervals(
            vec![0.1, 0.2, 0.3, 0.4],
            0.9,
            &[0.8, 0.9, 1.0],
            &config(4, 0),
            10,
            3,
        );
        assert_eq!(r.bca.method, Method::BootstrapPercentile);
        assert_eq!(r.bca.note.as_deref(), Some(NOTE_INFINITE_BIAS));
        assert_eq!(r.bias_correction, None);
        assert_eq!(
            (r.bca.lower, r.bca.upper),
            (r.percentile.lower, r.percentile.upper)
        );
        // Point below every resample: same fallback.
        let r = intervals(vec![0.5, 0.6], 0.1, &[0.0, 0.2], &config(2, 0), 10, 2);
        assert_eq!(r.bca.note.as_deref(), Some(NOTE_INFINITE_BIAS));
    }

    #[test]
    fn extreme_acceleration_falls_back_with_a_note() {
        // Jackknife = 30 zeros and one value -D: mean = -D/31, d = mean - t is D*30/31 for
        // the outlier and -D/31 for the rest, so with m = 31
        // a = (m-2) / (6 sqrt(m(m-1))) = 29 / (6 sqrt(930)) = 0.15849...
        let mut jack = vec![0.0; 30];
        jack.push(-1e6);
        let a = jackknife_acceleration(&jack).unwrap();
        assert!((a - 29.0 / (6.0 * 930f64.sqrt())).abs() < 1e-12, "a = {a}");
        // |a| <= 1/6 for any jackknife, so 1 - a(z0 + z) <= 0 needs z0 + z >= 6: a level of
        // 1 - 1e-15 (z = 7.9) with z0 = 0 (point at the median of the distribution) does it.
        let level = Level::new(1.0 - 1e-15).unwrap();
        assert!(a * level.z() > 1.0);
        let cfg = BootstrapConfig {
            resamples: 8,
            level,
            seed: 0,
        };
        let dist = vec![0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.8];
        let r = intervals(dist, 0.45, &jack, &cfg, 31, 31);
        assert_eq!(r.bias_correction, Some(0.0));
        assert_eq!(r.bca.note.as_deref(), Some(NOTE_BAD_ACCELERATION));
        assert_eq!(r.bca.method, Method::BootstrapPercentile);
    }
}
