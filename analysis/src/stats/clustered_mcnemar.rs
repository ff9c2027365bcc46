//! McNemar's test for clustered pairs: Durkalski et al.'s statistic over layouts.
//!
//! McNemar's test counts discordant pairs as independent coin flips. Recovery episodes are
//! layouts × runs, and runs of one layout share the layout: 60 episodes of 20 layouts on
//! which policy A always recovers and B never are 20 pieces of evidence, not 60, yet
//! McNemar's exact test on them reports p = 2·2⁻⁶⁰ ≈ 1.7e-18.
//!
//! With `d_k = b_k - c_k`, the excess of pairs only A got right over pairs only B got
//! right in cluster `k`, **Durkalski, Palesch, Lipsitz and Rust (2003, *Statistics in
//! Medicine* 22)** use
//!
//! `X² = (Σ_k d_k)² / Σ_k d_k²`, referred to χ² with 1 degree of freedom.
//!
//! Under the null hypothesis the `d_k` have mean zero, and `Σ d_k²` estimates the variance
//! of `Σ d_k` without assuming anything about the correlation within a layout. With one
//! pair per cluster `d_k ∈ {-1, 0, 1}` and `X² = (b - c)² / (b + c)`, McNemar's statistic.
//!
//! **Why Durkalski's and not Obuchowski's (1998, *Statistics in Medicine* 17).** Obuchowski's statistic is the same
//! numerator over a variance estimated around the *observed* difference,
//! `C/(C - 1) Σ_k (d_k - n_k θ̂)²`. When every layout shows the same difference (the
//! issue's case: A recovers on all 3 runs of all 20 layouts, B on none) that variance is 0
//! and the statistic is infinite: p = 0, a worse overclaim than the one being fixed.
//! Durkalski's variance is taken under the null, so it is positive whenever any pair is
//! discordant, and by Cauchy-Schwarz `X²` is at most the number of clusters with
//! `d_k ≠ 0`: twenty layouts can never give more evidence than twenty coin flips' worth
//! (`X² = 20`, p ≈ 7.7e-6, against 1.9e-6 for an exact sign test over the 20 layouts).
//! Durkalski et al. also found it holds its size better than Obuchowski's with few
//! clusters; simulations in this module's property tests check the size at 5% with 20
//! layouts.
//!
//! Plain [`mcnemar_exact`](super::mcnemar_exact) remains right where pairs are
//! independent, e.g. detection with one trial per layout.
//!
//! The p-value is χ²₁'s upper tail from `statrs` (the regularized upper incomplete gamma
//! function, accurate far into the tail); statrs is used for distribution functions only.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::{PairedCounts, PairedSample, StatsError};

/// Which paired test produced a p-value; serialized as a short lowercase tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairedTest {
    /// McNemar's exact (binomial) test on independent pairs
    /// ([`mcnemar_exact`](super::mcnemar_exact)).
    McnemarExact,
    /// Durkalski et al.'s clustered McNemar test ([`clustered_mcnemar`]).
    McnemarClustered,
}

impl PairedTest {
    /// The tag used in serialized output, e.g. `"mcnemar-clustered"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PairedTest::McnemarExact => "mcnemar-exact",
            PairedTest::McnemarClustered => "mcnemar-clustered",
        }
    }
}

impl std::fmt::Display for PairedTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Result of Durkalski et al.'s clustered McNemar test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredMcNemar {
    /// `(Σ d_k)² / Σ d_k²`; 0 when no cluster has `d_k ≠ 0`.
    pub statistic: f64,
    /// `P(χ²₁ >= statistic)`; exactly 1 when no cluster has `d_k ≠ 0` (no discordant
    /// pairs, or as many each way in every cluster).
    pub p_value: f64,
    /// Pairs only A got right, over all clusters.
    pub only_a: u64,
    /// Pairs only B got right, over all clusters.
    pub only_b: u64,
    /// Number of clusters (layouts).
    pub clusters: usize,
    /// Clusters with `d_k ≠ 0`, the ones that carry evidence; the statistic never
    /// exceeds this count.
    pub informative_clusters: usize,
    /// Always [`PairedTest::McnemarClustered`].
    pub method: PairedTest,
}

/// Durkalski et al.'s clustered McNemar test from one paired table per cluster.
///
/// Errors: [`StatsError::EmptySample`] for no tables.
pub fn clustered_mcnemar(tables: &[PairedCounts]) -> Result<ClusteredMcNemar, StatsError> {
    if tables.is_empty() {
        return Err(StatsError::EmptySample);
    }
    let (mut sum, mut sum_sq, mut informative) = (0.0, 0.0, 0);
    let (mut only_a, mut only_b) = (0, 0);
    for t in tables {
        only_a += t.only_a();
        only_b += t.only_b();
        let d = t.only_a() as f64 - t.only_b() as f64;
        sum += d;
        sum_sq += d * d;
        informative += usize::from(d != 0.0);
    }
    let (statistic, p_value) = if sum_sq > 0.0 {
        // Cauchy-Schwarz bounds it by `informative`; the min only absorbs rounding.
        let x = (sum * sum / sum_sq).min(informative as f64);
        (x, chi_square_1_upper_tail(x))
    } else {
        (0.0, 1.0)
    };
    Ok(ClusteredMcNemar {
        statistic,
        p_value,
        only_a,
        only_b,
        clusters: tables.len(),
        informative_clusters: informative,
        method: PairedTest::McnemarClustered,
    })
}

/// [`clustered_mcnemar`] on a paired sample of 0/1 outcomes whose clusters are layouts.
///
/// Errors: [`StatsError::NotBinary`] when an outcome is neither 0 nor 1.
pub fn clustered_mcnemar_from_sample(
    sample: &PairedSample,
) -> Result<ClusteredMcNemar, StatsError> {
    clustered_mcnemar(&PairedCounts::per_cluster(sample)?)
}

/// `P(χ²₁ >= x)` for `x >= 0`.
fn chi_square_1_upper_tail(x: f64) -> f64 {
    let chi2 = ChiSquared::new(1.0).expect("one degree of freedom is valid");
    chi2.sf(x).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::super::mcnemar_exact;
    use super::*;
    use crate::stats::test_support::rel_close;

    fn counts(a: u64, b: u64, c: u64, d: u64) -> PairedCounts {
        PairedCounts::new(a, b, c, d).unwrap()
    }

    /// The case: 20 layouts × 3 runs, A recovers every time, B never.
    #[test]
    fn twenty_layouts_are_twenty_pieces_of_evidence() {
        let r = clustered_mcnemar(&vec![counts(0, 3, 0, 0); 20]).unwrap();
        // (20·3)² / (20·3²) = 3600 / 180 = 20.
        assert_eq!(r.statistic, 20.0);
        // P(χ²₁ >= 20) = erfc(sqrt(10)), from Python's math.erfc.
        rel_close(r.p_value, 7.744_216_431_044_074e-6, 1e-9);
        assert_eq!((r.only_a, r.only_b), (60, 0));
        assert_eq!((r.clusters, r.informative_clusters), (20, 20));
        assert_eq!(r.method, PairedTest::McnemarClustered);
        // McNemar on the 60 episodes as if independent: 2·2⁻⁶⁰, the 1.7e-18.
        let naive = mcnemar_exact(60, 0).p_value;
        rel_close(naive, 1.734_723_475_976_807e-18, 1e-12);
        assert!(r.p_value > 1e12 * naive);
    }

    #[test]
    fn singleton_clusters_give_mcnemars_chi_square() {
        // b = 9, c = 3 as 12 one-pair clusters (plus concordant ones):
        // X² = (9 - 3)² / 12 = 3; P(χ²₁ >= 3) = erfc(sqrt(1.5)).
        let mut tables = vec![counts(0, 1, 0, 0); 9];
        tables.extend(vec![counts(0, 0, 1, 0); 3]);
        tables.extend(vec![counts(1, 0, 0, 0), counts(0, 0, 0, 1)]);
        let r = clustered_mcnemar(&tables).unwrap();
        assert!((r.statistic - 3.0).abs() < 1e-15);
        rel_close(r.p_value, 0.083_264_516_663_550_5, 1e-9);
        assert_eq!((r.clusters, r.informative_clusters), (14, 12));
    }

    #[test]
    fn hand_computed_clusters() {
        // d = 2 - 0, 1 - 1, 0 - 2, 3 - 0, 1 - 0 = [2, 0, -2, 3, 1]: Σd = 4, Σd² = 18,
        // X² = 16 / 18; P(χ²₁ >= 8/9) = erfc(sqrt(4/9)) = erfc(2/3).
        let tables = [
            counts(1, 2, 0, 0),
            counts(0, 1, 1, 2),
            counts(2, 0, 2, 0),
            counts(0, 3, 0, 1),
            counts(0, 1, 0, 0),
        ];
        let r = clustered_mcnemar(&tables).unwrap();
        assert!((r.statistic - 8.0 / 9.0).abs() < 1e-15);
        rel_close(r.p_value, 0.345_778_586_151_160_36, 1e-9);
        assert_eq!((r.only_a, r.only_b), (7, 3));
        assert_eq!(r.informative_clusters, 4);
    }

    #[test]
    fn no_evidence_gives_p_one() {
        // No discordant pair at all.
        let r = clustered_mcnemar(&[counts(3, 0, 0, 1), counts(0, 0, 0, 2)]).unwrap();
        assert_eq!(
            (r.statistic, r.p_value, r.informative_clusters),
            (0.0, 1.0, 0)
        );
        // Discordant pairs that cancel within every cluster.
        let r = clustered_mcnemar(&[counts(0, 2, 2, 0), counts(1, 1, 1, 0)]).unwrap();
        assert_eq!((r.statistic, r.p_value), (0.0, 1.0));
        assert_eq!((r.only_a, r.only_b), (3, 3));
        // Clusters that cancel each other: Σd = 0 but Σd² > 0.
        let r = clustered_mcnemar(&[counts(0, 2, 0, 0), counts(0, 0, 2, 0)]).unwrap();
        assert_eq!(
            (r.statistic, r.p_value, r.informative_clusters),
            (0.0, 1.0, 2)
        );
    }

    #[test]
    fn far_tail_is_accurate() {
        // 400 singleton clusters all one way: X² = 400, p = erfc(sqrt(200)) ≈ 5.5e-89.
        let r = clustered_mcnemar(&vec![counts(0, 1, 0, 0); 400]).unwrap();
        assert_eq!(r.statistic, 400.0);
        rel_close(r.p_value, 5.507_248_237_212_385e-89, 1e-6);
    }

    #[test]
    fn from_sample_errors_and_serde() {
        let s = PairedSample::from_binary(vec![
            vec![(true, false), (true, false)],
            vec![(false, true), (true, true)],
        ])
        .unwrap();
        let r = clustered_mcnemar_from_sample(&s).unwrap();
        // d = [2, -1]: X² = 1 / 5.
        assert!((r.statistic - 0.2).abs() < 1e-15);
        assert_eq!(clustered_mcnemar(&[]), Err(StatsError::EmptySample));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"method\":\"mcnemar-clustered\""), "{json}");
        assert_eq!(serde_json::from_str::<ClusteredMcNemar>(&json).unwrap(), r);
        assert_eq!(PairedTest::McnemarExact.to_string(), "mcnemar-exact");
    }
}
