//! An episode's progress while its lease is out: the steps checkpointed so far, each
//! with what its witness is decided from. The board keeps it in the lease; the episode
//! routes ([`super::episode`]) fill it in and store it.

use faultline_analysis::db::EpisodeStepRow;
use faultline_sites::LedgerEvent;

/// An episode's steps checkpointed so far, kept in its lease.
#[derive(Default)]
pub struct EpisodeProgress {
    pub(super) steps: Vec<Checkpointed>,
    /// Captures noted in the scope's ledger so far (the next capture's id).
    pub(super) captures: u64,
    /// Ledger events already given to earlier steps.
    pub(super) events_seen: usize,
    /// Browser actions the agent took after step 0.
    pub(super) spent: u32,
}

/// A checkpointed step: its row (witness still to be decided) and what its witness is
/// decided from.
pub(super) struct Checkpointed {
    pub(super) row: EpisodeStepRow,
    pub(super) captures: Vec<(f64, f64)>,
    pub(super) events: Vec<LedgerEvent>,
    /// Whether the step gave an answer.
    pub(super) answered: bool,
}
