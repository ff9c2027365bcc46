//! Binomial proportions with Wilson and Clopper-Pearson intervals.

use statrs::distribution::{Beta, ContinuousCDF};

use super::{Estimate, Level, Method, StatsError};

/// `successes` out of `n` independent trials, with `0 < n` and `successes <= n`.
///
/// n = 0 is rejected at construction (an error, not an Estimate): a rate over zero trials
/// has no point estimate, and an interval of [0, 1] with a made-up point would be easy to
/// print by mistake. Callers with an empty cell should show "no data" instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proportion {
    successes: u64,
    n: u64,
}

impl Proportion {
    /// `successes` out of `n` trials; an error when `n` is 0 or `successes > n`.
    pub fn new(successes: u64, n: u64) -> Result<Self, StatsError> {
        if n == 0 {
            return Err(StatsError::EmptySample);
        }
        if successes > n {
            return Err(StatsError::SuccessesExceedTrials { successes, n });
        }
        Ok(Self { successes, n })
    }

    /// Counts the `true`s.
    pub fn from_outcomes(outcomes: &[bool]) -> Result<Self, StatsError> {
        let successes = outcomes.iter().filter(|&&x| x).count() as u64;
        Self::new(successes, outcomes.len() as u64)
    }

    /// The number of successes.
    pub fn successes(self) -> u64 {
        self.successes
    }

    /// The number of trials (at least 1).
    pub fn n(self) -> u64 {
        self.n
    }

    /// The sample proportion `successes / n`.
    pub fn p_hat(self) -> f64 {
        self.successes as f64 / self.n as f64
    }

    /// Wilson score interval: good coverage even near 0% and 100%, where the Wald interval
    /// collapses to a point. Uses the exact normal quantile.
    pub fn wilson(self, level: Level) -> Estimate {
        let (lower, upper) = wilson_bounds(self, self.n as f64, level);
        self.estimate(self.p_hat(), lower, upper, level, Method::Wilson)
    }

    /// Clopper-Pearson interval from beta quantiles: guaranteed coverage at least `level`,
    /// at the price of width; the conservative choice for small cells.
    pub fn clopper_pearson(self, level: Level) -> Estimate {
        let (x, n) = (self.successes as f64, self.n as f64);
        let a2 = level.alpha() / 2.0;
        let lower = if self.successes == 0 {
            0.0
        } else if self.successes == self.n {
            // Closed form of the beta quantile when b = 1.
            a2.powf(1.0 / n)
        } else {
            beta_quantile(x, n - x + 1.0, a2)
        };
        let upper = if self.successes == self.n {
            1.0
        } else if self.successes == 0 {
            1.0 - a2.powf(1.0 / n)
        } else {
            beta_quantile(x + 1.0, n - x, 1.0 - a2)
        };
        let p = self.p_hat();
        self.estimate(
            p,
            lower.clamp(0.0, p),
            upper.clamp(p, 1.0),
            level,
            Method::ClopperPearson,
        )
    }

    fn estimate(
        self,
        point: f64,
        lower: f64,
        upper: f64,
        level: Level,
        method: Method,
    ) -> Estimate {
        Estimate {
            point,
            lower,
            upper,
            level: level.get(),
            method,
            n: usize::try_from(self.n).unwrap_or(usize::MAX),
            clusters: None,
            resamples: None,
            seed: None,
            note: None,
        }
    }
}

/// Wilson score bounds for `p̂ = successes / n`, taking the sample size in the variance to
/// be `n_eff` (`n` itself for independent trials, less for clustered ones; need not be an
/// integer, must be positive).
///
/// The bounds are the two roots of `|p̂ - π| = z·sqrt(π(1 - π) / n_eff)`, so a smaller
/// `n_eff` gives an interval containing the larger one's: less information, wider interval.
pub(crate) fn wilson_bounds(p: Proportion, n_eff: f64, level: Level) -> (f64, f64) {
    let n = n_eff;
    let p_hat = p.p_hat();
    let z = level.z();
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p_hat + z2 / (2.0 * n)) / denom;
    let half = z * (p_hat * (1.0 - p_hat) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // Exact at the edges and clamped elsewhere, so rounding can never put a bound
    // outside [0, 1] or on the wrong side of p̂.
    let lower = if p.successes == 0 {
        0.0
    } else {
        (centre - half).clamp(0.0, p_hat)
    };
    let upper = if p.successes == p.n {
        1.0
    } else {
        (centre + half).clamp(p_hat, 1.0)
    };
    (lower, upper)
}

/// Quantile of Beta(a, b); callers guarantee a, b >= 1 and 0 < q < 1.
fn beta_quantile(a: f64, b: f64, q: f64) -> f64 {
    Beta::new(a, b)
        .expect("shape parameters are >= 1 by Proportion's invariants")
        .inverse_cdf(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::close;

    // Reference values computed independently with mpmath at 40 digits: Wilson from its
    // closed form with z = sqrt(2)·erfinv(0.95); Clopper-Pearson by bisection on the
    // regularized incomplete beta function.
    const TOL: f64 = 1e-10;

    fn p(x: u64, n: u64) -> Proportion {
        Proportion::new(x, n).unwrap()
    }

    #[test]
    fn constructor_rejects_impossible_and_empty() {
        assert_eq!(
            Proportion::new(61, 60),
            Err(StatsError::SuccessesExceedTrials {
                successes: 61,
                n: 60
            })
        );
        assert_eq!(Proportion::new(0, 0), Err(StatsError::EmptySample));
        assert_eq!(Proportion::from_outcomes(&[]), Err(StatsError::EmptySample));
        assert_eq!(Proportion::from_outcomes(&[true, false, true]), Ok(p(2, 3)));
    }

    #[test]
    fn wilson_56_of_60() {
        let e = p(56, 60).wilson(Level::default());
        close(e.point, 56.0 / 60.0, TOL);
        close(e.lower, 0.840_746_426_868_028_3, TOL);
        close(e.upper, 0.973_771_301_275_493_8, TOL);
        assert_eq!(e.method, Method::Wilson);
        assert_eq!((e.n, e.level), (60, 0.95));
        assert_eq!(
            (e.clusters, e.resamples, e.seed, &e.note),
            (None, None, None, &None)
        );
    }

    #[test]
    fn wilson_0_and_60_of_60_are_exact_at_the_edge() {
        let zero = p(0, 60).wilson(Level::default());
        assert_eq!(zero.lower, 0.0);
        close(zero.upper, 0.060_171_852_142_089_87, TOL);
        let all = p(60, 60).wilson(Level::default());
        close(all.lower, 0.939_828_147_857_910_1, TOL);
        assert_eq!(all.upper, 1.0);
    }

    #[test]
    fn wilson_other_levels_and_counts() {
        let e = p(56, 60).wilson(Level::new(0.9).unwrap());
        close(e.lower, 0.859_552_220_021_861_2, TOL);
        close(e.upper, 0.969_720_554_530_637_9, TOL);
        let e = p(3, 10).wilson(Level::default());
        close(e.lower, 0.107_791_267_406_301, TOL);
        close(e.upper, 0.603_221_852_538_854_7, TOL);
        // Symmetric at p̂ = 1/2.
        let e = p(30, 60).wilson(Level::default());
        close(e.lower, 0.377_350_242_415_557_7, TOL);
        close(e.upper, 0.622_649_757_584_442_3, TOL);
    }

    #[test]
    fn clopper_pearson_56_of_60() {
        let e = p(56, 60).clopper_pearson(Level::default());
        close(e.lower, 0.838_013_244_802_271_1, TOL);
        close(e.upper, 0.981_538_222_424_118_5, TOL);
        assert_eq!(e.method, Method::ClopperPearson);
        let e = p(56, 60).clopper_pearson(Level::new(0.9).unwrap());
        close(e.lower, 0.853_902_794_549_288_1, TOL);
        close(e.upper, 0.976_909_459_208_912, TOL);
    }

    #[test]
    fn clopper_pearson_edges_use_the_closed_form() {
        let zero = p(0, 60).clopper_pearson(Level::default());
        assert_eq!(zero.lower, 0.0);
        close(zero.upper, 1.0 - 0.025f64.powf(1.0 / 60.0), TOL);
        close(zero.upper, 0.059_629_492_286_166_93, TOL);
        let all = p(60, 60).clopper_pearson(Level::default());
        close(all.lower, 0.940_370_507_713_833_1, TOL);
        assert_eq!(all.upper, 1.0);
        // n = 1, x = 1: lower = alpha/2.
        close(p(1, 1).clopper_pearson(Level::default()).lower, 0.025, TOL);
        let e = p(3, 10).clopper_pearson(Level::default());
        close(e.lower, 0.066_739_511_177_734_47, TOL);
        close(e.upper, 0.652_452_850_059_997_3, TOL);
    }

    #[test]
    fn clopper_pearson_is_wider_than_wilson_for_56_of_60() {
        let w = p(56, 60).wilson(Level::default());
        let cp = p(56, 60).clopper_pearson(Level::default());
        assert!(cp.lower < w.lower && cp.upper > w.upper);
    }
}
