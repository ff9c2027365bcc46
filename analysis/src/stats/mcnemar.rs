//! McNemar's exact test for two policies on the same episodes.

use serde::{Deserialize, Serialize};

use super::StatsError;

/// Result of McNemar's exact (binomial) test.
///
/// Only discordant pairs carry information about which policy is better; the exact test
/// is used instead of the chi-square version because discordant counts per cell are often
/// small.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    /// Pairs where A was right and B wrong.
    pub b: u64,
    /// Pairs where A was wrong and B right.
    pub c: u64,
    /// Two-sided p = min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1 when b + c = 0.
    /// Underflows to 0 only when the true value is below ~1e-308.
    pub p_value: f64,
}

/// McNemar's exact test from discordant counts.
pub fn mcnemar_exact(b: u64, c: u64) -> McNemar {
    let n = b + c;
    let p_value = if n == 0 {
        1.0
    } else {
        (2.0 * binomial_half_lower_tail(n, b.min(c))).min(1.0)
    };
    McNemar { b, c, p_value }
}

/// McNemar's exact test from aligned per-episode outcomes of policies A and B.
pub fn mcnemar_from_outcomes(a: &[bool], b: &[bool]) -> Result<McNemar, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::Misaligned(format!(
            "{} outcomes for A vs {} for B",
            a.len(),
            b.len()
        )));
    }
    let (mut only_a, mut only_b) = (0, 0);
    for (&x, &y) in a.iter().zip(b) {
        match (x, y) {
            (true, false) => only_a += 1,
            (false, true) => only_b += 1,
            _ => {}
        }
    }
    Ok(mcnemar_exact(only_a, only_b))
}

/// `P(X <= k)` for `X ~ Binomial(n, 1/2)` with `k <= n/2`.
///
/// For k <= n/2 the terms C(n, i) grow with i, so the sum is taken relative to the last
/// term (each earlier one by the exact ratio i / (n - i + 1)); only that last term,
/// C(n, k) / 2^n, goes through logarithms, so nothing overflows at any n and the relative
/// error stays around k·ε. Cost is O(k): fine for per-cell counts in the thousands.
fn binomial_half_lower_tail(n: u64, k: u64) -> f64 {
    debug_assert!(2 * k <= n);
    let nf = n as f64;
    let mut rel_sum = 1.0;
    let mut term = 1.0;
    let mut i = k;
    while i > 0 {
        term *= i as f64 / (nf - i as f64 + 1.0);
        if term < 1e-18 * rel_sum {
            break; // the remaining terms shrink faster than geometrically
        }
        rel_sum += term;
        i -= 1;
    }
    // ln C(n, k) = Σ_{j=1..k} ln((n - k + j) / j)
    let ln_choose: f64 = (1..=k)
        .map(|j| ((nf - k as f64 + j as f64) / j as f64).ln())
        .sum();
    let ln_last = ln_choose - nf * std::f64::consts::LN_2;
    (ln_last.exp() * rel_sum).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::rel_close;

    fn p(b: u64, c: u64) -> f64 {
        mcnemar_exact(b, c).p_value
    }

    #[test]
    fn hand_computed_tails() {
        // b=0, c=5: 2 · (1/32) = 0.0625.
        rel_close(p(0, 5), 0.0625, 1e-14);
        rel_close(p(5, 0), 0.0625, 1e-14);
        // b=1, c=9: 2 · (C(10,0) + C(10,1)) / 2^10 = 2 · 11 / 1024.
        rel_close(p(1, 9), 0.021_484_375, 1e-14);
        // b=2, c=8: 2 · (1 + 10 + 45) / 1024 = 112 / 1024.
        rel_close(p(2, 8), 0.109_375, 1e-14);
        // b=3, c=3: P(X <= 3) for n = 6 is 42/64 > 1/2, so p is capped at 1.
        assert_eq!(p(3, 3), 1.0);
        // b=0, c=1: 2 · 1/2 = 1.
        assert_eq!(p(0, 1), 1.0);
    }

    #[test]
    fn no_discordant_pairs_gives_one() {
        assert_eq!(
            mcnemar_exact(0, 0),
            McNemar {
                b: 0,
                c: 0,
                p_value: 1.0
            }
        );
    }

    #[test]
    fn large_counts_match_high_precision_reference() {
        // Reference values from exact rational summation in mpmath (40 digits).
        rel_close(p(10, 25), 0.016_673_847_800_120_71, 1e-12);
        rel_close(p(1000, 1100), 0.030_720_707_864_242_295, 1e-10);
        rel_close(p(1500, 1520), 0.729_544_136_797_913_9, 1e-10);
        // 2 · 2^-1000, far below where 2^n in f64 would overflow the naive formula.
        rel_close(p(0, 1000), 2f64.powi(-999), 1e-12);
        // True value 1.7e-602 is below f64's range: reported as 0, not NaN.
        assert_eq!(p(0, 2000), 0.0);
    }

    #[test]
    fn from_outcomes_counts_discordant_pairs() {
        let a = [true, true, false, false, true, true];
        let b = [true, false, true, false, false, false];
        let m = mcnemar_from_outcomes(&a, &b).unwrap();
        assert_eq!((m.b, m.c), (3, 1));
        // n = 4, k = 1: 2 · (1 + 4) / 16 = 0.625.
        rel_close(m.p_value, 0.625, 1e-14);
        assert!(matches!(
            mcnemar_from_outcomes(&a, &b[..5]),
            Err(StatsError::Misaligned(_))
        ));
    }
}
