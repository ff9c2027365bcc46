//! `Level`, `Method` and `Estimate`: the vocabulary every interval is reported in.

use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::StatsError;

/// A two-sided confidence level, always strictly between 0 and 1.
///
/// A newtype so that a level of `95.0` (percent, not fraction) is caught at the boundary
/// instead of producing a silently wrong interval.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Level(f64);

impl Level {
    /// Checks `0 < level < 1` (NaN is rejected).
    pub fn new(level: f64) -> Result<Self, StatsError> {
        if level > 0.0 && level < 1.0 {
            Ok(Self(level))
        } else {
            Err(StatsError::InvalidLevel(level))
        }
    }

    /// The level as a fraction, e.g. 0.95.
    pub fn get(self) -> f64 {
        self.0
    }

    /// `1 - level`: the total two-sided tail probability.
    pub fn alpha(self) -> f64 {
        1.0 - self.0
    }

    /// The exact two-sided standard normal quantile `z_{1 - alpha/2}`
    /// (1.959963984540054 at 95%), not the rounded 1.96.
    pub fn z(self) -> f64 {
        -standard_normal().inverse_cdf(self.alpha() / 2.0)
    }
}

impl Default for Level {
    /// 95%, the level every report uses unless told otherwise.
    fn default() -> Self {
        Self(0.95)
    }
}

impl TryFrom<f64> for Level {
    type Error = StatsError;
    fn try_from(level: f64) -> Result<Self, StatsError> {
        Self::new(level)
    }
}

impl From<Level> for f64 {
    fn from(level: Level) -> f64 {
        level.0
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rounded so 0.95 prints as 95%, not 94.99999999999999%.
        write!(f, "{}%", (self.0 * 100.0 * 1e9).round() / 1e9)
    }
}

/// How an interval was computed; serialized as a short lowercase tag so stored results stay
/// readable and stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Wilson score interval for a binomial proportion.
    Wilson,
    /// Wilson score interval on the effective sample size `n / DEFF` of clustered trials
    /// ([`clustered_wilson`](super::clustered_wilson)).
    WilsonClustered,
    /// Clopper-Pearson "exact" interval for a binomial proportion.
    ClopperPearson,
    /// Percentile interval of a (cluster) bootstrap distribution.
    BootstrapPercentile,
    /// Bias-corrected and accelerated bootstrap interval.
    BootstrapBca,
    /// Wald interval `point ± z·se` from a normal approximation.
    Normal,
    /// Newcombe's hybrid score interval (his method 10) for a difference of paired
    /// proportions ([`newcombe_paired`](super::newcombe_paired)).
    NewcombePaired,
    /// Newcombe's method 10 on the effective sample size of clustered pairs
    /// ([`clustered_paired_difference`](super::clustered_paired_difference)).
    NewcombePairedClustered,
    /// Tango's asymptotic score interval for a difference of paired proportions
    /// ([`tango_paired`](super::tango_paired)).
    TangoPaired,
    /// Tango's score interval on the effective sample size of clustered pairs
    /// ([`clustered_paired_difference`](super::clustered_paired_difference)).
    TangoPairedClustered,
}

impl Method {
    /// The tag used in serialized output, e.g. `"clopper-pearson"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Wilson => "wilson",
            Method::WilsonClustered => "wilson-clustered",
            Method::ClopperPearson => "clopper-pearson",
            Method::BootstrapPercentile => "bootstrap-percentile",
            Method::BootstrapBca => "bootstrap-bca",
            Method::Normal => "normal",
            Method::NewcombePaired => "newcombe-paired",
            Method::NewcombePairedClustered => "newcombe-paired-clustered",
            Method::TangoPaired => "tango-paired",
            Method::TangoPairedClustered => "tango-paired-clustered",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A point estimate that never travels without its interval, level and provenance.
///
/// `method` is the method actually used: when BCa falls back to percentile the method says
/// `bootstrap-percentile` and `note` says why, so a table can never misreport it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub point: f64,
    /// The interval's lower end.
    pub lower: f64,
    /// The interval's upper end.
    pub upper: f64,
    /// The confidence level as a fraction (0.95).
    pub level: f64,
    /// How the interval was computed (the method actually used, after any fallback).
    pub method: Method,
    /// Number of observations (trials, or pairs for a paired difference).
    pub n: usize,
    /// Number of clusters resampled, for cluster methods.
    pub clusters: Option<usize>,
    /// Number of bootstrap resamples, for bootstrap methods.
    pub resamples: Option<usize>,
    /// RNG seed, for bootstrap methods: with it the interval is reproducible bit for bit.
    pub seed: Option<u64>,
    /// Anything a reader must know to trust the interval (fallbacks, degenerate data).
    pub note: Option<String>,
}

impl Estimate {
    /// Whether `x` lies in the closed interval `[lower, upper]`.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// `upper - lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }
}

pub(crate) fn standard_normal() -> Normal {
    Normal::standard()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_rejects_out_of_range_and_nan() {
        for bad in [0.0, 1.0, -0.1, 95.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(Level::new(bad), Err(StatsError::InvalidLevel(_))),
                "{bad} accepted"
            );
        }
        assert_eq!(Level::new(0.9).map(Level::get), Ok(0.9));
        assert_eq!(Level::default().get(), 0.95);
        assert_eq!(Level::default().to_string(), "95%");
        assert_eq!(Level::new(0.999).unwrap().to_string(), "99.9%");
    }

    #[test]
    fn level_z_is_the_exact_normal_quantile() {
        assert!((Level::default().z() - 1.959963984540054).abs() < 1e-14);
        // z_{0.95} for a 90% level.
        let z90 = Level::new(0.9).unwrap().z();
        assert!((z90 - 1.6448536269514722).abs() < 1e-14);
    }

    #[test]
    fn level_serde_round_trips_and_validates() {
        let json = serde_json::to_string(&Level::default()).unwrap();
        assert_eq!(json, "0.95");
        assert!(serde_json::from_str::<Level>("1.5").is_err());
        assert_eq!(
            serde_json::from_str::<Level>("0.8").unwrap(),
            Level::new(0.8).unwrap()
        );
    }

    #[test]
    fn method_tags_are_short_lowercase_and_match_display() {
        let all = [
            (Method::Wilson, "wilson"),
            (Method::WilsonClustered, "wilson-clustered"),
            (Method::ClopperPearson, "clopper-pearson"),
            (Method::BootstrapPercentile, "bootstrap-percentile"),
            (Method::BootstrapBca, "bootstrap-bca"),
            (Method::Normal, "normal"),
            (Method::NewcombePaired, "newcombe-paired"),
            (Method::NewcombePairedClustered, "newcombe-paired-clustered"),
            (Method::TangoPaired, "tango-paired"),
            (Method::TangoPairedClustered, "tango-paired-clustered"),
        ];
        for (m, tag) in all {
            assert_eq!(m.to_string(), tag);
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{tag}\""));
            assert_eq!(
                serde_json::from_str::<Method>(&format!("\"{tag}\"")).unwrap(),
                m
            );
        }
    }

    #[test]
    fn estimate_serde_round_trip_keeps_every_field() {
        let e = Estimate {
            point: 0.5,
            lower: 0.25,
            upper: 0.75,
            level: 0.95,
            method: Method::BootstrapBca,
            n: 720,
            clusters: Some(20),
            resamples: Some(10_000),
            seed: Some(7),
            note: Some("x".into()),
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains("\"method\":\"bootstrap-bca\""), "{json}");
        let back: Estimate = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, e);
        assert!(e.contains(0.5) && e.contains(0.25) && !e.contains(0.76));
        assert_eq!(e.width(), 0.5);
    }
}
