//! Property tests for the statistics module.
//!
//! On containment of the point estimate:
//!
//! - Percentile: the interval is `[Q(α/2), Q(1-α/2)]` of the bootstrap distribution, so it
//!   misses the point only if more than 1 - α/2 of the resamples fall strictly on one side
//!   of it. For a pooled mean over ≥ 5 clusters with mixed outcomes the resample that draws
//!   every cluster once reproduces the point, and the distribution is centred on it, so
//!   that does not happen for the data generated here.
//! - BCa: the point sits at the `Φ(z0)` quantile of the distribution (mid-rank), and the
//!   endpoints sit at `Φ(z0 + w/(1 - a w))` with `w = z0 ∓ z`. Since `w/(1 - a w)` has
//!   the sign of `w` whenever `1 - a w > 0` (checked, else we fall back), the lower endpoint
//!   is below the point iff `z0 < z` and the upper above it iff `z0 > -z`. So BCa can
//!   legitimately exclude the point, but only when `|z0| >= z`, i.e. when more than
//!   97.5% of the resamples lie on one side of the point: the same extreme that would break
//!   the percentile interval. The property therefore asserts `|z0| < z` for these
//!   generators as well, rather than assuming it.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use super::proportion::wilson_bounds;
use super::*;

const RESAMPLES: usize = 1_000;

/// 5..=20 clusters of 1..=40 binary outcomes, each cluster with its own success rate,
/// filtered to samples where both outcomes occur.
fn mixed_binary_sample() -> impl Strategy<Value = ClusteredSample> {
    prop::collection::vec(
        (0.0f64..=1.0, 1usize..=40).prop_flat_map(|(rate, size)| {
            prop::collection::vec(prop::bool::weighted(rate.clamp(0.02, 0.98)), size)
        }),
        5..=20,
    )
    .prop_filter("needs both outcomes", |cs| {
        let flat = || cs.iter().flatten();
        flat().any(|&x| x) && flat().any(|&x| !x)
    })
    .prop_map(|cs| ClusteredSample::from_binary(cs).expect("generator makes valid samples"))
}

/// 2..=12 clusters of 1..=15 real outcomes in [-10, 10].
fn real_sample() -> impl Strategy<Value = ClusteredSample> {
    prop::collection::vec(prop::collection::vec(-10.0f64..10.0, 1..=15), 2..=12)
        .prop_map(|cs| ClusteredSample::new(cs).expect("generator makes valid samples"))
}

/// 1..=15 clusters of 1..=12 binary outcomes, each cluster with its own success rate (so
/// anything from independent-looking to all-or-nothing clusters), unanimous samples kept.
fn any_binary_sample() -> impl Strategy<Value = ClusteredSample> {
    prop::collection::vec(
        (0.0f64..=1.0, 1usize..=12)
            .prop_flat_map(|(rate, size)| prop::collection::vec(prop::bool::weighted(rate), size)),
        1..=15,
    )
    .prop_map(|cs| ClusteredSample::from_binary(cs).expect("generator makes valid samples"))
}

fn successes(s: &ClusteredSample) -> u64 {
    s.clusters().iter().flatten().filter(|&&x| x == 1.0).count() as u64
}

fn cluster_means(s: &ClusteredSample) -> Vec<f64> {
    s.clusters()
        .iter()
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

fn config(seed: u64) -> BootstrapConfig {
    BootstrapConfig {
        resamples: RESAMPLES,
        level: Level::default(),
        seed,
    }
}

proptest! {
    // Failing seeds go to `proptests.regressions` beside this file, inside stats/.
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn bootstrap_intervals_contain_the_point(s in mixed_binary_sample(), seed in any::<u64>()) {
        let r = cluster_bootstrap(&s, &config(seed)).unwrap();
        let point = s.mean();
        prop_assert_eq!(r.percentile.point, point);
        prop_assert!(r.percentile.contains(point), "percentile {:?}", r.percentile);
        prop_assert!(r.bca.contains(point), "bca {:?} z0 {:?}", r.bca, r.bias_correction);
        prop_assert!(r.percentile.lower <= r.percentile.upper);
        prop_assert!(r.bca.lower <= r.bca.upper);
        if let Some(z0) = r.bias_correction {
            prop_assert!(z0.abs() < Level::default().z(), "z0 = {}", z0);
        }
    }

    #[test]
    fn resampled_means_stay_within_cluster_means_and_data_range(
        s in real_sample(),
        seed in any::<u64>(),
    ) {
        let means = cluster_means(&s);
        let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let data_lo = s.clusters().iter().flatten().copied().fold(f64::INFINITY, f64::min);
        let data_hi = s.clusters().iter().flatten().copied().fold(f64::NEG_INFINITY, f64::max);
        let tol = 1e-9;
        for x in bootstrap_distribution(&s, 300, seed).unwrap() {
            prop_assert!(lo - tol <= x && x <= hi + tol, "{} outside [{}, {}]", x, lo, hi);
            prop_assert!(data_lo - tol <= x && x <= data_hi + tol);
        }
        let r = cluster_bootstrap(&s, &config(seed)).unwrap();
        for e in [&r.percentile, &r.bca] {
            prop_assert!(data_lo - tol <= e.lower && e.upper <= data_hi + tol, "{:?}", e);
        }
    }

    #[test]
    fn same_seed_gives_identical_results(s in real_sample(), seed in any::<u64>()) {
        prop_assert_eq!(
            cluster_bootstrap(&s, &config(seed)).unwrap(),
            cluster_bootstrap(&s, &config(seed)).unwrap()
        );
        prop_assert_eq!(
            bootstrap_distribution(&s, 200, seed).unwrap(),
            bootstrap_distribution(&s, 200, seed).unwrap()
        );
    }

    #[test]
    fn different_seeds_give_different_draws(s in real_sample(), seed in any::<u64>()) {
        // Needs clusters with different means, or every draw gives the same statistic.
        let means = cluster_means(&s);
        prop_assume!(means.iter().any(|m| (m - means[0]).abs() > 1e-9));
        prop_assert_ne!(
            bootstrap_distribution(&s, 200, seed).unwrap(),
            bootstrap_distribution(&s, 200, seed.wrapping_add(1)).unwrap()
        );
    }

    #[test]
    fn wilson_and_clopper_pearson_bracket_p_hat_within_unit_interval(
        (x, n) in (1u64..=5_000).prop_flat_map(|n| (0..=n, Just(n))),
        level in 0.5f64..0.999,
    ) {
        let prop = Proportion::new(x, n).unwrap();
        let level = Level::new(level).unwrap();
        let p = prop.p_hat();
        for e in [prop.wilson(level), prop.clopper_pearson(level)] {
            prop_assert!(0.0 <= e.lower && e.lower <= p, "{:?}", e);
            prop_assert!(p <= e.upper && e.upper <= 1.0, "{:?}", e);
            prop_assert_eq!(e.point, p);
            prop_assert!(e.lower.is_finite() && e.upper.is_finite());
        }
        // Strictly inside wherever p̂ is not at an edge: a zero-width side would be a bug.
        let w = prop.wilson(level);
        if x > 0 {
            prop_assert!(w.lower < p);
        }
        if x < n {
            prop_assert!(w.upper > p);
        }
    }

    #[test]
    fn mcnemar_is_symmetric_bounded_and_monotone(b in 0u64..1_000, c in 0u64..1_000) {
        // Below 1000 discordant pairs the smallest p (2^-999) is representable, so p > 0;
        // beyond ~1075 it may underflow to 0, which `large_counts_...` covers.
        let p = mcnemar_exact(b, c).p_value;
        prop_assert!(p > 0.0 && p <= 1.0, "p = {}", p);
        prop_assert_eq!(p, mcnemar_exact(c, b).p_value);
        // One more discordant pair on the majority side can only strengthen the evidence.
        let (lo, hi) = (b.min(c), b.max(c));
        prop_assert!(mcnemar_exact(lo, hi + 1).p_value <= p * (1.0 + 1e-12));
    }

    #[test]
    fn paired_difference_is_consistent_with_each_policy(
        s in mixed_binary_sample(),
        flip in prop::collection::vec(any::<bool>(), 800),
        seed in any::<u64>(),
    ) {
        // B = A with some outcomes flipped; same layout by construction.
        let mut k = 0;
        let pairs: Vec<Vec<(f64, f64)>> = s
            .clusters()
            .iter()
            .map(|c| {
                c.iter()
                    .map(|&a| {
                        k += 1;
                        (a, if flip[k % flip.len()] { 1.0 - a } else { a })
                    })
                    .collect()
            })
            .collect();
        let paired = PairedSample::new(pairs).unwrap();
        let d = paired_difference(&paired, &config(seed)).unwrap();
        prop_assert!((d.mean_a - paired.policy_a().mean()).abs() < 1e-12);
        prop_assert!((d.mean_b - paired.policy_b().mean()).abs() < 1e-12);
        prop_assert!((d.estimate.point - (d.mean_a - d.mean_b)).abs() < 1e-12);
        prop_assert!(d.estimate.lower <= d.estimate.upper);
        prop_assert!(d.estimate.lower >= -1.0 && d.estimate.upper <= 1.0);
        if let Some(r) = d.correlation {
            prop_assert!((-1.0..=1.0).contains(&r));
        }
    }

    #[test]
    fn clustered_wilson_brackets_the_point_within_the_unit_interval(
        s in any_binary_sample(),
        level in 0.5f64..0.999,
    ) {
        let r = clustered_wilson(&s, Level::new(level).unwrap()).unwrap();
        let e = &r.estimate;
        let (n, c) = (s.n() as f64, s.num_clusters() as f64);
        prop_assert_eq!(e.point, successes(&s) as f64 / n);
        prop_assert!(0.0 <= e.lower && e.lower <= e.point && e.point <= e.upper && e.upper <= 1.0, "{:?}", r);
        prop_assert!(c <= r.n_effective && r.n_effective <= n, "{:?}", r);
        prop_assert!(1.0 <= r.design_effect && r.design_effect <= n / c, "{:?}", r);
        prop_assert_eq!((e.n, e.clusters, e.method), (s.n(), Some(s.num_clusters()), Method::WilsonClustered));
    }

    #[test]
    fn clustered_wilson_is_never_narrower_than_plain_wilson(s in any_binary_sample()) {
        // n_eff <= n, and Wilson intervals are nested in the sample size.
        let r = clustered_wilson(&s, Level::default()).unwrap();
        let plain = Proportion::new(successes(&s), s.n() as u64).unwrap().wilson(Level::default());
        prop_assert!(r.estimate.lower <= plain.lower + 1e-12, "{:?} vs {:?}", r, plain);
        prop_assert!(r.estimate.upper >= plain.upper - 1e-12, "{:?} vs {:?}", r, plain);
        if s.clusters().iter().all(|c| c.len() == 1) {
            prop_assert_eq!((r.estimate.lower, r.estimate.upper), (plain.lower, plain.upper));
            prop_assert_eq!(r.estimate.note, None);
        }
    }

    #[test]
    fn wilson_widens_as_the_effective_sample_shrinks(
        (x, n) in (1u64..=2_000).prop_flat_map(|n| (0..=n, Just(n))),
        fractions in (0.001f64..=1.0, 0.001f64..=1.0),
        level in 0.5f64..0.999,
    ) {
        let p = Proportion::new(x, n).unwrap();
        let level = Level::new(level).unwrap();
        let (small, large) = (fractions.0.min(fractions.1), fractions.0.max(fractions.1));
        let (lo_s, hi_s) = wilson_bounds(p, small * n as f64, level);
        let (lo_l, hi_l) = wilson_bounds(p, large * n as f64, level);
        prop_assert!(lo_s <= lo_l + 1e-12 && hi_l <= hi_s + 1e-12,
            "n_eff {} gives [{}, {}], n_eff {} gives [{}, {}]",
            small * n as f64, lo_s, hi_s, large * n as f64, lo_l, hi_l);
    }
}
