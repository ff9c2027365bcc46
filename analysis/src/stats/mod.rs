//! Statistics for faultline's reports, in the style of criterion.rs.
//!
//! Two rules shape the API:
//!
//! - **Types carry their invariants.** A [`Level`] is always in (0, 1); a [`Proportion`] has
//!   `0 < n` and `successes <= n`; a [`ClusteredSample`] has at least one cluster, no empty
//!   cluster and no NaN. Validation happens once, in constructors returning
//!   [`StatsError`], so the statistics themselves cannot fail on bad data halfway through
//!   a report.
//! - **An estimate never travels without its uncertainty.** Every interval is an
//!   [`Estimate`] carrying point, bounds, level, [`Method`], sample size and, for the
//!   bootstrap, clusters, resample count and seed, plus a `note` whenever something a
//!   reader must know happened (e.g. BCa falling back to percentile on a degenerate
//!   distribution). Estimates are NaN-free, so they serialize to JSON and back.
//!
//! Episodes on the same layout are correlated, so layouts are the clusters: the bootstrap
//! resamples whole layouts ([`cluster_bootstrap`]), paired comparisons resample both
//! policies with the very same layouts ([`paired_difference`]), and the analytic SE is
//! cluster-robust ([`clustered_standard_error`]). Per-cell success rates with no cluster
//! structure use [`Proportion::wilson`] or [`Proportion::clopper_pearson`]; clustered success
//! rates (repeated runs of one layout) use [`clustered_wilson`], Wilson on the effective
//! sample size; [`mcnemar_exact`] tests whether two policies differ on the same episodes.
//!
//! A difference of two paired success rates also gets score intervals, which keep a
//! width where a bootstrap degenerates (0% against 100% makes every resample +1):
//! [`tango_paired`] (primary) and [`newcombe_paired`] on a [`PairedCounts`] table of
//! independent pairs, and [`clustered_paired_difference`] on the effective sample size of
//! the difference when pairs are layouts × runs. For clustered pairs, [`clustered_mcnemar`]
//! (Durkalski et al.) replaces McNemar's test, which would count every run of a layout as
//! independent evidence.
//!
//! Bootstraps are seeded ([`BootstrapConfig::seed`], ChaCha8), so a report rebuilt from
//! the same results is bit-identical.

mod bootstrap;
mod cluster_se;
mod clustered_mcnemar;
mod clustered_paired_proportion;
mod clustered_proportion;
mod error;
mod estimate;
mod mcnemar;
mod paired;
mod paired_proportion;
mod proportion;
mod sample;

#[cfg(test)]
mod paired_proptests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod test_support;

pub use bootstrap::{
    bootstrap_distribution, cluster_bootstrap, BootstrapConfig, BootstrapIntervals, DEFAULT_SEED,
    NOTE_BAD_ACCELERATION, NOTE_BCA_EDGE, NOTE_DEGENERATE, NOTE_INFINITE_BIAS,
};
pub use cluster_se::{clustered_standard_error, ClusteredStandardError};
pub use clustered_mcnemar::{
    clustered_mcnemar, clustered_mcnemar_from_sample, ClusteredMcNemar, PairedTest,
};
pub use clustered_paired_proportion::{
    clustered_paired_difference, clustered_paired_difference_from_tables,
    ClusteredPairedDifference, NOTE_CONSTANT_DIFFERENCES,
};
pub use clustered_proportion::{
    clustered_wilson, ClusteredProportion, NOTE_CONSTANT_OUTCOMES, NOTE_ONE_CLUSTER,
};
pub use error::StatsError;
pub use estimate::{Estimate, Level, Method};
pub use mcnemar::{mcnemar_exact, mcnemar_from_outcomes, McNemar};
pub use paired::{paired_bootstrap_distribution, paired_difference, PairedDifference};
pub use paired_proportion::{newcombe_paired, tango_paired, PairedCounts};
pub use proportion::Proportion;
pub use sample::{ClusteredSample, PairedSample};
