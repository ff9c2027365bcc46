//! The one error type of the statistics module.

use thiserror::Error;

/// Why a statistic could not be built or computed.
///
/// Every variant is an input problem the caller can act on; nothing here is an internal
/// failure, so callers may surface the message directly in a report.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// A confidence level outside the open interval (0, 1).
    #[error("confidence level must lie strictly between 0 and 1, got {0}")]
    InvalidLevel(f64),
    /// More successes than trials.
    #[error("{successes} successes out of {n} trials is impossible")]
    SuccessesExceedTrials {
        /// The successes given.
        successes: u64,
        /// The trials given (fewer than `successes`).
        n: u64,
    },
    /// No observations at all (n = 0 or no clusters).
    #[error("sample is empty")]
    EmptySample,
    /// A cluster without observations: it would make resampled means undefined.
    #[error("cluster {index} has no observations")]
    EmptyCluster {
        /// The empty cluster's position in the sample, from 0.
        index: usize,
    },
    /// A NaN or infinite outcome.
    #[error("observation {index} of cluster {cluster} is not finite ({value})")]
    NonFinite {
        /// The cluster's position in the sample, from 0.
        cluster: usize,
        /// The observation's position within its cluster, from 0.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// An outcome other than 0 or 1 where a proportion needs binary data.
    #[error("observation {index} of cluster {cluster} is {value}, not 0 or 1")]
    NotBinary {
        /// The cluster's position in the sample, from 0.
        cluster: usize,
        /// The observation's position within its cluster, from 0.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The method needs more clusters than the sample has (e.g. a one-cluster bootstrap).
    #[error("needs at least {needed} clusters, got {got}")]
    TooFewClusters {
        /// The clusters the method needs.
        needed: usize,
        /// The clusters the sample has.
        got: usize,
    },
    /// The method needs more observations than the sample has.
    #[error("needs at least {needed} observations, got {got}")]
    TooFewObservations {
        /// The observations the method needs.
        needed: usize,
        /// The observations the sample has.
        got: usize,
    },
    /// A bootstrap with zero resamples.
    #[error("the bootstrap needs at least one resample")]
    NoResamples,
    /// Two inputs that should be aligned pair-for-pair are not.
    #[error("paired inputs are not aligned: {0}")]
    Misaligned(String),
}
