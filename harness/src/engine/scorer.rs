//! Scoring: the one place the ledger is read.
//!
//! The order matters for the information barrier: policies judge first, from the
//! evidence only; the ledger is read afterwards, by [`Scorer`], which alone holds the
//! ledger key. Nothing else in the harness holds a [`LedgerKey`].

use crate::engine::liveness::{InfraFailure, InfraKind};
use crate::engine::roundtrip::CaptureMark;
use anyhow::{anyhow, Result};
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
        self.key.note(scope, "answer", answer_note(value, capture));
    }

    /// Takes the scope's ledger (closing the scope) and judges it against the layout. A
    /// ledger the server had to cut short (past its limits, it refused events) has no
    /// truth to judge: that is an infrastructure failure, retried, never an outcome.
    pub fn score(&self, scope: &Scope, layout: &Layout) -> Result<(Ledger, Truth)> {
        Self::judged(self.key.take(scope), layout)
    }

    /// The ledger and truth of a trial that ends here on the scope's page while the
    /// page goes on serving another (a trial riding on its capture timing): the
    /// scope's ledger as it stands with the trial's answer at its end, judged against
    /// capture `capture`, as [`Scorer::note_answer`] and [`Scorer::score`] would have
    /// left and judged it. The scope stays open and records nothing of this.
    pub fn score_ended_here(
        &self,
        scope: &Scope,
        layout: &Layout,
        answer: Option<&str>,
        capture: u64,
    ) -> Result<(Ledger, Truth)> {
        let ledger = match answer {
            Some(value) => {
                self.key
                    .read_with_note(scope, "answer", answer_note(value, Some(capture)))
            }
            None => self.key.read(scope),
        };
        Self::judged(ledger, layout)
    }

    fn judged(ledger: Ledger, layout: &Layout) -> Result<(Ledger, Truth)> {
        if let Some(overflow) = ledger.overflow() {
            return Err(anyhow!(InfraFailure::new(
                InfraKind::Harness,
                format!(
                    "the fixture server's ledger for this trial overflowed ({}): its truth is incomplete",
                    overflow.data
                )
            )));
        }
        let truth = faultline_sites::judge(layout, &ledger);
        Ok((ledger, truth))
    }

    /// Judges the scope's ledger as it stands, leaving it in place (episodes judge after
    /// every step and take the ledger at the end).
    pub fn peek(&self, scope: &Scope, layout: &Layout) -> (Ledger, Truth) {
        let ledger = self.key.read(scope);
        let truth = faultline_sites::judge(layout, &ledger);
        (ledger, truth)
    }
}

/// The `answer` event's fields, as the chart's validator reads them: the value and the
/// capture it is judged against.
fn answer_note(value: &str, capture: Option<u64>) -> serde_json::Value {
    serde_json::json!({ "value": value, "capture": capture })
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_sites::{FixtureServer, LedgerLimits, ServerOptions};
    use faultline_tasks::TaskKind;

    /// Regression (issue 29: a scope past the fixture server's limits keeps one
    /// `ledger_overflow` event and refuses the rest): a trial scored from such a cut
    /// ledger would store a truth judged on missing events. It is an infrastructure
    /// failure instead (retried); a scope within the limits scores as before.
    #[tokio::test]
    async fn regression_a_ledger_cut_short_by_its_limits_is_an_infra_failure_not_a_truth() {
        let options = ServerOptions {
            ledger: LedgerLimits {
                scope_events: 3,
                ..LedgerLimits::default()
            },
            ..ServerOptions::default()
        };
        let (server, key) =
            FixtureServer::start_with(std::net::SocketAddr::from(([127, 0, 0, 1], 0)), options)
                .await
                .unwrap();
        let scorer = Scorer::new(key);
        let layout = Layout::for_root(1, TaskKind::Search, 0);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let mut statuses = Vec::new();
        for (name, events) in [("within", 3), ("flooded", 5)] {
            let scope = Scope::parse(name).unwrap();
            scorer.open(&scope);
            for _ in 0..events {
                let r = client
                    .post(format!("{}/s/{name}/event", server.base_url()))
                    .json(&serde_json::json!({ "kind": "click", "page_ms": 1.0, "data": {} }))
                    .send()
                    .await
                    .unwrap();
                statuses.push(r.status().as_u16());
            }
        }
        assert_eq!(statuses, [204, 204, 204, 204, 204, 204, 429, 429]);
        let (ledger, _) = scorer
            .score(&Scope::parse("within").unwrap(), &layout)
            .unwrap();
        assert_eq!(ledger.events.len(), 3);
        let e = scorer
            .score(&Scope::parse("flooded").unwrap(), &layout)
            .unwrap_err();
        let f = InfraFailure::find(&e).unwrap_or_else(|| panic!("not an infra failure: {e:#}"));
        assert_eq!(f.kind, InfraKind::Harness);
        assert!(f.reason.contains("overflowed"), "{}", f.reason);
        server.shutdown().await;
    }
}
