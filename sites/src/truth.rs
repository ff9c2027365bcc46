//! The ledger's verdict: did the intended outcome happen?
//!
//! This is the answer key. Each task reads its own ledger events (`SiteTask::validate`,
//! in `crate::task`); [`crate::judge`] picks the task's reading. Only scoring calls it
//! (it needs a [`crate::Ledger`], which needs the run's [`crate::LedgerKey`]).

use serde::{Deserialize, Serialize};

/// The ledger's verdict on one trial or episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    /// The intended outcome happened.
    pub achieved: bool,
    /// What happened, in words, for reports and transcripts.
    pub detail: String,
}

impl Truth {
    pub(crate) fn yes(detail: String) -> Truth {
        Truth {
            achieved: true,
            detail,
        }
    }
    pub(crate) fn no(detail: String) -> Truth {
        Truth {
            achieved: false,
            detail,
        }
    }
}
