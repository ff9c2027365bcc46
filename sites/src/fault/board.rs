//! The board: what is armed on each scope, and the witness log a fault's events are kept
//! in.

use crate::ledger::Scope;
use faultline_faults::site::{NetworkRule, PageMod, Route, SiteInjection};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One thing the fault layer did on a scope (served a status, cut a body, the page
/// reporting that its banner took a click, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteWitness {
    /// The id of the armed fault.
    pub fault: String,
    /// What happened, e.g. `delayed` (one name per kind of event).
    pub kind: String,
    /// Whether this event is the fault firing (some are only context, e.g. a stylesheet
    /// delayed whose effect depends on when the click came).
    pub fires: bool,
    /// Milliseconds since the server started.
    pub server_ms: f64,
    /// The page clock, for page-sent events.
    pub page_ms: Option<f64>,
    /// The event's own fields (the route, the delay, the status served, ...).
    pub data: serde_json::Value,
}

struct Armed {
    injection: SiteInjection,
    /// Requests each rule has been applied to.
    hits: HashMap<usize, u32>,
}

/// Why [`FaultBoard::try_witness`] kept nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WitnessRefused {
    /// No fault is armed on the scope: nothing to witness.
    NotArmed,
    /// The scope's witness log holds as much as it may.
    Full,
}

/// Armed injections and witness logs, per scope.
pub(crate) struct FaultBoard {
    started: Instant,
    armed: Mutex<HashMap<String, Armed>>,
    /// Each armed scope's witness events and what they weigh (bounded by
    /// [`crate::limits::WITNESS_EVENTS`] and [`crate::limits::WITNESS_BYTES`]).
    witnesses: Mutex<HashMap<String, (Vec<SiteWitness>, usize)>>,
    /// Requests per scope the server has received and not yet answered (a delayed or
    /// hung response stays here until it is sent).
    pub(super) in_flight: Mutex<HashMap<String, usize>>,
    /// Closed at shutdown so hung requests let go.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
}

impl FaultBoard {
    pub(crate) fn new() -> FaultBoard {
        FaultBoard {
            started: Instant::now(),
            armed: Mutex::new(HashMap::new()),
            witnesses: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            stopping: tokio::sync::watch::channel(false).0,
        }
    }

    /// How many of `scope`'s requests the server is still answering.
    pub(crate) fn in_flight(&self, scope: &Scope) -> usize {
        let map = self.in_flight.lock().expect("board lock");
        map.get(scope.as_str()).copied().unwrap_or(0)
    }

    pub(crate) fn arm(&self, scope: &Scope, injection: SiteInjection) {
        self.armed.lock().expect("board lock").insert(
            scope.as_str().to_string(),
            Armed {
                injection,
                hits: HashMap::new(),
            },
        );
    }

    /// Disarms the scope and returns (and forgets) its witness log.
    pub(crate) fn disarm(&self, scope: &Scope) -> Vec<SiteWitness> {
        self.armed
            .lock()
            .expect("board lock")
            .remove(scope.as_str());
        self.witnesses
            .lock()
            .expect("board lock")
            .remove(scope.as_str())
            .map(|(events, _)| events)
            .unwrap_or_default()
    }

    /// The page changes armed on a scope.
    pub(crate) fn page_mods(&self, scope: &str) -> Vec<PageMod> {
        self.armed
            .lock()
            .expect("board lock")
            .get(scope)
            .map(|a| a.injection.page.clone())
            .unwrap_or_default()
    }

    /// Records a witness event, only for an armed scope and within the scope's witness
    /// limits (the first events, the fault firing, are what scoring needs; a page that
    /// sends more is flooding). Returns whether it was kept.
    pub(crate) fn witness(
        &self,
        scope: &str,
        kind: &str,
        fires: bool,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) -> bool {
        self.try_witness(scope, kind, fires, page_ms, data).is_ok()
    }

    /// [`FaultBoard::witness`], saying why an event was not kept.
    pub(crate) fn try_witness(
        &self,
        scope: &str,
        kind: &str,
        fires: bool,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) -> Result<(), WitnessRefused> {
        // Held while the event is stored, so a disarm in between cannot leave a witness
        // log behind for a scope that is no longer armed.
        let armed = self.armed.lock().expect("board lock");
        let fault = match armed.get(scope) {
            Some(a) => a.injection.fault.clone(),
            None => return Err(WitnessRefused::NotArmed),
        };
        let weight = crate::limits::event_weight(kind, &data);
        let mut witnesses = self.witnesses.lock().expect("board lock");
        let (events, bytes) = witnesses.entry(scope.to_string()).or_default();
        if events.len() >= crate::limits::WITNESS_EVENTS
            || *bytes + weight > crate::limits::WITNESS_BYTES
        {
            return Err(WitnessRefused::Full);
        }
        *bytes += weight;
        events.push(SiteWitness {
            fault,
            kind: kind.to_string(),
            fires,
            server_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            page_ms,
            data,
        });
        Ok(())
    }

    /// Holds a request for `d`, or until the server stops (held requests let go at
    /// shutdown, so none outlives the run).
    pub(crate) async fn hold(&self, d: Duration) {
        let mut stopping = self.stopping.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
    }

    /// Whether the server is stopping.
    pub(super) fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Whether the page reported a witness event of `kind` on `scope`.
    pub(super) fn witnessed(&self, scope: &str, kind: &str) -> bool {
        self.witnesses
            .lock()
            .expect("board lock")
            .get(scope)
            .is_some_and(|(w, _)| w.iter().any(|e| e.kind == kind))
    }

    /// The rule for this request, if one is armed and has uses left (and counts the use).
    pub(super) fn take_rule(&self, scope: &str, route: Route) -> Option<NetworkRule> {
        let mut armed = self.armed.lock().expect("board lock");
        let a = armed.get_mut(scope)?;
        let (i, rule) = a
            .injection
            .network
            .iter()
            .enumerate()
            .find(|(_, r)| r.route == route)?;
        let hits = a.hits.entry(i).or_insert(0);
        if rule.times.is_some_and(|t| *hits >= t) {
            return None;
        }
        *hits += 1;
        Some(rule.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_faults::site::NetworkEffect;
    use serde_json::json;

    /// log stops at its limit, keeping the first events, and disarming frees it.
    #[test]
    fn regression_a_witness_log_is_bounded() {
        use crate::limits::{WITNESS_BYTES, WITNESS_EVENTS};
        let board = FaultBoard::new();
        let scope = Scope::parse("w").unwrap();
        let arm = || {
            board.arm(
                &scope,
                SiteInjection {
                    fault: "layout.shift".into(),
                    network: vec![],
                    page: vec![],
                },
            )
        };
        arm();
        for i in 0..WITNESS_EVENTS {
            assert!(board.witness("w", "x", true, None, json!({ "i": i })));
        }
        assert_eq!(
            board.try_witness("w", "x", true, None, json!({})),
            Err(WitnessRefused::Full)
        );
        let kept = board.disarm(&scope);
        assert_eq!(kept.len(), WITNESS_EVENTS);
        assert_eq!(kept[0].data["i"], 0, "the first events are kept");

        arm();
        let big = json!({ "v": "x".repeat(WITNESS_BYTES / 4) });
        let mut n = 0;
        while board.witness("w", "x", true, None, big.clone()) {
            n += 1;
        }
        assert_eq!(n, 3, "bounded by bytes");
        assert_eq!(board.disarm(&scope).len(), 3);
        assert!(
            board.witnesses.lock().unwrap().is_empty(),
            "disarm frees it"
        );
    }

    #[test]
    fn rules_apply_only_as_often_as_armed_and_witnesses_need_an_armed_scope() {
        let board = FaultBoard::new();
        let scope = Scope::parse("s1").unwrap();
        assert!(
            !board.witness("s1", "x", true, None, json!({})),
            "not armed"
        );
        board.arm(
            &scope,
            SiteInjection {
                fault: "http.service_unavailable".into(),
                network: vec![NetworkRule {
                    route: Route::SearchResults,
                    effect: NetworkEffect::Block,
                    times: Some(1),
                    fires: true,
                }],
                page: vec![],
            },
        );
        assert!(board.take_rule("s1", Route::SearchResults).is_some());
        assert!(
            board.take_rule("s1", Route::SearchResults).is_none(),
            "used up"
        );
        assert!(board.take_rule("s1", Route::FormSave).is_none());
        assert!(board.take_rule("s2", Route::SearchResults).is_none());
        assert!(board.witness("s1", "x", true, None, json!({})));
        let log = board.disarm(&scope);
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].fault, "http.service_unavailable");
        assert!(board.disarm(&scope).is_empty());
        assert!(!board.witness("s1", "x", true, None, json!({})), "disarmed");
    }
}
