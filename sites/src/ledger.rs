//! Ground-truth ledgers: what really happened on a page, as recorded by the page and the
//! server, one ledger per scope (one scope per trial).
//!
//! Reading a ledger requires the [`LedgerKey`] that [`crate::FixtureServer::start`] hands
//! out exactly once. Scoring holds it; verification policies live in a crate that does not
//! depend on this one, so they cannot even name the key type, and over HTTP the ledger
//! endpoint answers 401 without the key's bearer token.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One thing that happened, in arrival order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEvent {
    /// Arrival order within the scope, from 0.
    pub seq: u64,
    /// Milliseconds since the server started when the event arrived.
    pub server_ms: f64,
    /// The page's own clock (`performance.now()`) when it sent the event, if page-sent.
    pub page_ms: Option<f64>,
    /// What happened. Page-sent: `typed`, `click`, `row_selected`, `tooltip_shown`,
    /// `tooltip_hidden`; server-recorded: `submitted`, and `ledger_overflow` (once, when
    /// the scope refused an event for its limits, with what it refused); harness-recorded (through the
    /// key): `capture` (id and page-clock interval), `answer`.
    pub kind: String,
    /// The event's own fields, as sent or noted.
    pub data: serde_json::Value,
}

/// Everything one scope recorded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// The id of the scope the events were recorded under.
    pub scope: String,
    /// The events, in the order they arrived.
    pub events: Vec<LedgerEvent>,
}

impl Ledger {
    /// The events of kind `kind`, in arrival order.
    pub fn of_kind<'a>(
        &'a self,
        kind: &'a str,
    ) -> impl DoubleEndedIterator<Item = &'a LedgerEvent> + 'a {
        self.events.iter().filter(move |e| e.kind == kind)
    }

    /// The scope's `ledger_overflow` event, when the server refused some of its events:
    /// the ledger is then incomplete and no truth can be judged from it.
    pub fn overflow(&self) -> Option<&LedgerEvent> {
        self.of_kind("ledger_overflow").next()
    }

    /// The latest event of kind `kind`, if any.
    pub fn last_of_kind(&self, kind: &str) -> Option<&LedgerEvent> {
        self.events.iter().rev().find(|e| e.kind == kind)
    }
}

/// The per-run secret that unlocks ledgers. Deliberately not `Clone`, `Debug`,
/// `Serialize` or `Display`: it can be lent, not copied into logs or results.
pub struct LedgerKey {
    secret: [u8; 32],
    store: Arc<LedgerStore>,
}

impl LedgerKey {
    pub(crate) fn new(secret: [u8; 32], store: Arc<LedgerStore>) -> LedgerKey {
        LedgerKey { secret, store }
    }

    /// A snapshot of the scope's ledger (empty if nothing was recorded).
    pub fn read(&self, scope: &Scope) -> Ledger {
        self.store.snapshot(&scope.0)
    }

    /// A snapshot of the scope's ledger with one more harness note at its end that is not
    /// recorded: the ledger a trial would leave had it ended here with that note (a
    /// trial that rode on another's page and ended before it). The scope is unchanged.
    pub fn read_with_note(&self, scope: &Scope, kind: &str, data: serde_json::Value) -> Ledger {
        let mut ledger = self.store.snapshot(&scope.0);
        push_event(&mut ledger.events, self.store.now_ms(), None, kind, data);
        ledger
    }

    /// Opens the scope's ledger, before its page loads: from here until [`LedgerKey::take`]
    /// the scope records events. A page's events on a scope nobody opened, or after its
    /// ledger was taken, are refused and stored nowhere.
    pub fn open(&self, scope: &Scope) {
        self.store.open(scope);
    }

    /// Reads and forgets the scope's ledger and closes the scope, so a long run does not
    /// accumulate memory and a finished trial's late events are refused.
    pub fn take(&self, scope: &Scope) -> Ledger {
        self.store.take(&scope.0)
    }

    /// Records an event the harness itself witnessed (`capture`, `answer`) on an open
    /// scope; on a scope that is not open it records nothing and returns `false`. Needs
    /// the key, so neither a page nor a policy can write these. The ledger's limits do not
    /// refuse these: the harness notes few, and a page's flood must not lose the answer.
    pub fn note(&self, scope: &Scope, kind: &str, data: serde_json::Value) -> bool {
        self.store.note(scope, kind, data)
    }

    /// The bearer token for the HTTP ledger endpoint (for `faultline serve`, which prints
    /// it so a person can inspect ledgers; never stored in results).
    pub fn bearer_token(&self) -> String {
        hex::encode(self.secret)
    }
}

/// The id of one trial's ledger. Random, so a page cannot guess another trial's scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope(pub(crate) String);

impl Scope {
    /// A fresh random scope: 16 lowercase hex digits.
    pub fn random() -> Scope {
        Scope(hex::encode(rand::random::<[u8; 8]>()))
    }

    /// Accepts ids of 1..=64 characters from `[0-9a-z_-]`.
    pub fn parse(s: &str) -> Option<Scope> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-' || b == b'_');
        ok.then(|| Scope(s.to_string()))
    }

    /// The scope's id, as it appears in URLs.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How much one scope's ledger, and all of them together, may hold (see
/// [`crate::limits`] for the default values and why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerLimits {
    /// The most events one scope keeps.
    pub scope_events: usize,
    /// The most bytes (by [`crate::limits::event_weight`]) one scope keeps.
    pub scope_bytes: usize,
    /// The most bytes all open scopes keep together.
    pub total_bytes: usize,
}

impl Default for LedgerLimits {
    fn default() -> LedgerLimits {
        LedgerLimits {
            scope_events: crate::limits::SCOPE_EVENTS,
            scope_bytes: crate::limits::SCOPE_BYTES,
            total_bytes: crate::limits::TOTAL_BYTES,
        }
    }
}

/// Why a request-driven event was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The scope is not open: the harness never opened it, or its ledger was taken.
    Closed,
    /// The scope, or all scopes together, hold as much as they may.
    Full,
}

impl Refused {
    /// The answer to the request whose event was refused.
    pub(crate) fn response(self) -> axum::response::Response {
        use axum::http::StatusCode;
        use axum::response::IntoResponse;
        match self {
            Refused::Closed => (
                StatusCode::NOT_FOUND,
                "no open ledger on this scope (the trial is over or never began)",
            )
                .into_response(),
            Refused::Full => (
                StatusCode::TOO_MANY_REQUESTS,
                "this scope's ledger is full; the event was not recorded",
            )
                .into_response(),
        }
    }
}

/// Appends an event as the next in arrival order: its `seq` is its place in `events`.
fn push_event(
    events: &mut Vec<LedgerEvent>,
    server_ms: f64,
    page_ms: Option<f64>,
    kind: &str,
    data: serde_json::Value,
) {
    events.push(LedgerEvent {
        seq: events.len() as u64,
        server_ms,
        page_ms,
        kind: kind.to_string(),
        data,
    });
}

/// One open scope's events and what they weigh.
#[derive(Default)]
struct ScopeLedger {
    events: Vec<LedgerEvent>,
    bytes: usize,
    /// The index of the scope's one `ledger_overflow` event, once anything was refused.
    overflow: Option<usize>,
}

struct Scopes {
    open: HashMap<String, ScopeLedger>,
    /// What every open scope weighs, overheads included.
    total_bytes: usize,
}

/// The server-side store of every open scope's events.
///
/// A scope is open from [`LedgerKey::open`] until [`LedgerKey::take`]; events driven by a
/// request (a page's event, a search submission, a form save) are recorded only on an
/// open scope, so a finished trial's late requests cannot recreate its scope. With
/// `open_on_demand` (a person inspecting pages through `faultline serve`), any valid
/// scope opens on its first event instead. Either way the [`LedgerLimits`] hold: past
/// them a scope stores one `ledger_overflow` event, counting what it refused, and
/// nothing more.
pub(crate) struct LedgerStore {
    started: Instant,
    limits: LedgerLimits,
    open_on_demand: bool,
    scopes: Mutex<Scopes>,
}

impl LedgerStore {
    pub(crate) fn new(limits: LedgerLimits, open_on_demand: bool) -> LedgerStore {
        LedgerStore {
            started: Instant::now(),
            limits,
            open_on_demand,
            scopes: Mutex::new(Scopes {
                open: HashMap::new(),
                total_bytes: 0,
            }),
        }
    }

    fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Opens `scope` (no-op if it is open already).
    pub(crate) fn open(&self, scope: &Scope) {
        let mut scopes = self.scopes.lock().expect("ledger lock");
        if !scopes.open.contains_key(&scope.0) {
            scopes.open.insert(scope.0.clone(), ScopeLedger::default());
            scopes.total_bytes += crate::limits::SCOPE_OVERHEAD_BYTES;
        }
    }

    /// Records a request-driven event on an open scope (or, with `open_on_demand`, any
    /// scope while the total allows one more), within the limits.
    pub(crate) fn append(
        &self,
        scope: &Scope,
        kind: &str,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) -> Result<(), Refused> {
        let server_ms = self.now_ms();
        let weight = crate::limits::event_weight(kind, &data);
        let limits = self.limits;
        let mut guard = self.scopes.lock().expect("ledger lock");
        let scopes = &mut *guard;
        if !scopes.open.contains_key(&scope.0) {
            if !self.open_on_demand {
                return Err(Refused::Closed);
            }
            let opened = scopes.total_bytes + crate::limits::SCOPE_OVERHEAD_BYTES;
            if opened + weight > limits.total_bytes {
                return Err(Refused::Full);
            }
            scopes.open.insert(scope.0.clone(), ScopeLedger::default());
            scopes.total_bytes = opened;
        }
        let ledger = scopes.open.get_mut(&scope.0).expect("opened above");
        let reason = if ledger.overflow.is_some() {
            Some("after_overflow")
        } else if ledger.events.len() >= limits.scope_events {
            Some("scope_events")
        } else if ledger.bytes + weight > limits.scope_bytes {
            Some("scope_bytes")
        } else if scopes.total_bytes + weight > limits.total_bytes {
            Some("total_bytes")
        } else {
            None
        };
        let Some(reason) = reason else {
            ledger.bytes += weight;
            scopes.total_bytes += weight;
            push_event(&mut ledger.events, server_ms, page_ms, kind, data);
            return Ok(());
        };
        match ledger.overflow {
            Some(i) => {
                // Counted in place: the one overflow event does not grow.
                let data = &mut ledger.events[i].data;
                data["refused_events"] = (data["refused_events"].as_u64().unwrap_or(0) + 1).into();
                data["refused_bytes"] =
                    (data["refused_bytes"].as_u64().unwrap_or(0) + weight as u64).into();
            }
            None => {
                let limit = match reason {
                    "scope_events" => limits.scope_events,
                    "scope_bytes" => limits.scope_bytes,
                    _ => limits.total_bytes,
                };
                let data = serde_json::json!({
                    "reason": reason,
                    "limit": limit,
                    "refused_events": 1,
                    "refused_bytes": weight,
                });
                // The overflow event is the one event allowed past the limits: scoring
                // must see that the ledger is incomplete.
                let cost = crate::limits::event_weight("ledger_overflow", &data);
                ledger.bytes += cost;
                scopes.total_bytes += cost;
                ledger.overflow = Some(ledger.events.len());
                push_event(&mut ledger.events, server_ms, None, "ledger_overflow", data);
            }
        }
        Err(Refused::Full)
    }

    /// Records an event the harness witnessed, on an open scope, whatever the limits: the
    /// harness notes a bounded number of them (captures, the answer), and a page's flood
    /// must not cost scoring the agent's answer. Returns whether the scope was open.
    fn note(&self, scope: &Scope, kind: &str, data: serde_json::Value) -> bool {
        let server_ms = self.now_ms();
        let weight = crate::limits::event_weight(kind, &data);
        let mut guard = self.scopes.lock().expect("ledger lock");
        let scopes = &mut *guard;
        let Some(ledger) = scopes.open.get_mut(&scope.0) else {
            return false;
        };
        ledger.bytes += weight;
        scopes.total_bytes += weight;
        push_event(&mut ledger.events, server_ms, None, kind, data);
        true
    }

    /// Whether an event of `kind` on `scope` matches `pred` (without copying the ledger).
    pub(crate) fn any(&self, scope: &str, kind: &str, pred: impl Fn(&LedgerEvent) -> bool) -> bool {
        let scopes = self.scopes.lock().expect("ledger lock");
        scopes
            .open
            .get(scope)
            .is_some_and(|l| l.events.iter().any(|e| e.kind == kind && pred(e)))
    }

    pub(crate) fn snapshot(&self, scope: &str) -> Ledger {
        let scopes = self.scopes.lock().expect("ledger lock");
        Ledger {
            scope: scope.to_string(),
            events: scopes
                .open
                .get(scope)
                .map(|l| l.events.clone())
                .unwrap_or_default(),
        }
    }

    /// Closes the scope and returns its events, freeing what they held.
    fn take(&self, scope: &str) -> Ledger {
        let mut scopes = self.scopes.lock().expect("ledger lock");
        let taken = scopes.open.remove(scope);
        if let Some(l) = &taken {
            scopes.total_bytes -= l.bytes + crate::limits::SCOPE_OVERHEAD_BYTES;
        }
        Ledger {
            scope: scope.to_string(),
            events: taken.map(|l| l.events).unwrap_or_default(),
        }
    }

    /// How many scopes are open and what they weigh together.
    #[cfg(test)]
    pub(crate) fn usage(&self) -> (usize, usize) {
        let scopes = self.scopes.lock().expect("ledger lock");
        (scopes.open.len(), scopes.total_bytes)
    }

    pub(crate) fn snapshot_authorized(
        &self,
        secret: &[u8; 32],
        token: &str,
        scope: &str,
    ) -> Option<Ledger> {
        // Constant-time comparison: the token is a secret.
        let given = hex::decode(token).ok()?;
        if given.len() != secret.len() {
            return None;
        }
        let diff = given
            .iter()
            .zip(secret.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then(|| self.snapshot(scope))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope(s: &str) -> Scope {
        Scope::parse(s).unwrap()
    }

    /// Regression (issue 29: a page's events were kept for any scope, forever): a scope
    /// nobody opened records nothing, and taking a scope closes it and frees what it held,
    /// so a finished trial's late events cannot recreate it.
    #[test]
    fn regression_events_on_a_scope_not_open_are_refused_and_take_frees_it() {
        let store = LedgerStore::new(LedgerLimits::default(), false);
        let never = scope("never");
        assert_eq!(
            store.append(&never, "click", None, json!({})),
            Err(Refused::Closed)
        );
        assert!(!store.note(&never, "answer", json!({})));
        assert_eq!(store.usage(), (0, 0), "nothing stored, no entry made");

        let trial = scope("trial");
        store.open(&trial);
        store.open(&trial);
        assert_eq!(store.append(&trial, "click", Some(1.0), json!({})), Ok(()));
        assert!(store.note(&trial, "answer", json!({ "value": "x" })));
        assert_eq!(store.take("trial").events.len(), 2);
        assert_eq!(store.usage(), (0, 0), "taking the scope freed it");
        assert_eq!(
            store.append(&trial, "click", None, json!({})),
            Err(Refused::Closed),
            "a late event of a finished trial"
        );
        assert!(!store.note(&trial, "answer", json!({})));
        assert_eq!(store.usage(), (0, 0), "and it did not recreate the scope");
        assert!(store.take("trial").events.is_empty());
    }

    fn overflow(ledger: &Ledger) -> &LedgerEvent {
        let mut overflows = ledger.of_kind("ledger_overflow");
        let one = overflows.next().expect("an overflow event");
        assert!(overflows.next().is_none(), "exactly one overflow event");
        one
    }

    /// Regression (issue 29: a scope kept every event it was sent): past its event limit a
    /// scope stores exactly one `ledger_overflow` event, which counts what it refused, and
    /// nothing more from requests; the harness's own notes still go in.
    #[test]
    fn regression_a_scope_past_its_event_limit_stores_one_overflow_event() {
        let store = LedgerStore::new(LedgerLimits::default(), false);
        let s = scope("flood");
        store.open(&s);
        for i in 0..crate::limits::SCOPE_EVENTS {
            assert_eq!(store.append(&s, "click", None, json!({ "i": i })), Ok(()));
        }
        for _ in 0..5 {
            assert_eq!(
                store.append(&s, "click", None, json!({})),
                Err(Refused::Full)
            );
        }
        assert!(store.note(&s, "answer", json!({ "value": "x" })));
        let ledger = store.take("flood");
        assert_eq!(ledger.events.len(), crate::limits::SCOPE_EVENTS + 2);
        let o = overflow(&ledger);
        assert_eq!(o.seq, crate::limits::SCOPE_EVENTS as u64);
        assert_eq!(o.data["reason"], "scope_events");
        assert_eq!(o.data["refused_events"], 5);
        assert_eq!(ledger.events.last().unwrap().kind, "answer");
        assert_eq!(store.usage(), (0, 0));
    }

    /// Regression (issue 29: 939 posts of 1.5 MB were all kept): past its byte limit a
    /// scope stores one `ledger_overflow` event and nothing more.
    #[test]
    fn regression_a_scope_past_its_byte_limit_stores_one_overflow_event() {
        let store = LedgerStore::new(LedgerLimits::default(), false);
        let s = scope("heavy");
        store.open(&s);
        let value = "x".repeat(100 << 10);
        let mut kept = 0;
        let mut refused = 0;
        for _ in 0..200 {
            match store.append(&s, "typed", None, json!({ "value": value })) {
                Ok(()) => kept += 1,
                Err(r) => {
                    assert_eq!(r, Refused::Full);
                    refused += 1;
                }
            }
        }
        assert!(kept > 0 && refused > 0, "{kept} kept, {refused} refused");
        let (_, bytes) = store.usage();
        assert!(
            bytes <= crate::limits::SCOPE_BYTES + 1024,
            "{bytes} bytes held"
        );
        let ledger = store.take("heavy");
        assert_eq!(ledger.events.len(), kept + 1);
        let o = overflow(&ledger);
        assert_eq!(o.data["reason"], "scope_bytes");
        assert_eq!(o.data["refused_events"], refused);
    }

    /// Regression (issue 29: the store grew with every scope ever posted to): all scopes
    /// together hold no more than the total limit (plus each scope's one overflow event),
    /// and a scope opened on demand is refused outright once the total is reached.
    #[test]
    fn regression_the_total_limit_holds_across_many_scopes() {
        let limits = LedgerLimits {
            scope_events: 1_000,
            scope_bytes: 20_000,
            total_bytes: 100_000,
        };
        for on_demand in [false, true] {
            let store = LedgerStore::new(limits, on_demand);
            let value = "x".repeat(1000);
            let mut total_overflows = 0;
            for i in 0..50 {
                let s = scope(&format!("s{i}"));
                if !on_demand {
                    store.open(&s);
                }
                for _ in 0..30 {
                    let _ = store.append(&s, "typed", None, json!({ "value": value }));
                }
                let ledger = store.snapshot(s.as_str());
                if ledger
                    .of_kind("ledger_overflow")
                    .any(|e| e.data["reason"] == "total_bytes")
                {
                    total_overflows += 1;
                }
            }
            // Past the total, a scope the harness opened still costs its entry and its
            // one overflow event.
            let (open, bytes) = store.usage();
            assert!(
                bytes <= limits.total_bytes + open * (crate::limits::SCOPE_OVERHEAD_BYTES + 1024),
                "{bytes} bytes held in {open} scopes"
            );
            if on_demand {
                assert!(open < 50, "scopes past the total were not opened: {open}");
            } else {
                assert!(total_overflows > 0);
            }
        }
    }
}
