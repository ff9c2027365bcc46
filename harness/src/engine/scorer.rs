//! Scoring: the one place the ledger is read.
//!
//! The order matters for the information barrier: policies judge first, from the
//! evidence only; the ledger is read afterwards, by [`Scorer`], which alone holds the
//! ledger key. Nothing else in the harness holds a [`LedgerKey`].

use crate::engine::roundtrip::CaptureMark;
use faultline_sites::{Ledger, LedgerKey, Scope, Truth};
use faultline_tasks::Layout;

/// Reads ledgers and judges truth. The only holder of the ledger key.
pub struct Scorer {
    key: LedgerKey,
}

impl Scorer {
    /// The scorer, holding the ledger `key`.
    pub fn new(key: LedgerKey) -> Scorer {
        Scorer { key }
    }

    /// Opens the scope's ledger before its page loads: the server records a page's events
    /// only on an open scope, and [`Scorer::score`] closes it again.
    pub fn open(&self, scope: &Scope) {
        self.key.open(scope);
    }

    /// Records a capture's page-clock interval in the scope's ledger.
    pub fn note_capture(&self, scope: &Scope, mark: &CaptureMark) {
        self.key.note(
            scope,
            "capture",
            serde_json::json!({ "id": mark.id, "begin_ms": mark.begin_ms, "end_ms": mark.end_ms }),
        );
    }

    /// Records the agent's answer in the scope's ledger, with the capture it is judged
    /// against: the newest observation when the answer was given (for a reply that also
    /// acted, the observation that followed it).
    pub fn note_answer(&self, scope: &Scope, value: &str, capture: Option<u64>) {
        self.key.note(
            scope,
            "answer",
            serde_json::json!({ "value": value, "capture": capture }),
        );
    }

    /// Takes the scope's ledger (closing the scope) and judges it against the layout.
    pub fn score(&self, scope: &Scope, layout: &Layout) -> (Ledger, Truth) {
        let ledger = self.key.take(scope);
        let truth = faultline_sites::judge(layout, &ledger);
        (ledger, truth)
    }

    /// Judges the scope's ledger as it stands, leaving it in place (episodes judge after
    /// every step and take the ledger at the end).
    pub fn peek(&self, scope: &Scope, layout: &Layout) -> (Ledger, Truth) {
        let ledger = self.key.read(scope);
        let truth = faultline_sites::judge(layout, &ledger);
        (ledger, truth)
    }
}
