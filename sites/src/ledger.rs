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
    /// `tooltip_hidden`; server-recorded: `submitted`; harness-recorded (through the
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

    /// Reads and forgets the scope's ledger, so a long run does not accumulate memory.
    pub fn take(&self, scope: &Scope) -> Ledger {
        self.store.take(&scope.0)
    }

    /// Records an event the harness itself witnessed (`capture`, `answer`). Needs the key,
    /// so neither a page nor a policy can write these.
    pub fn note(&self, scope: &Scope, kind: &str, data: serde_json::Value) {
        self.store.append(scope, kind, None, data);
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

/// The server-side store of every scope's events.
pub(crate) struct LedgerStore {
    started: Instant,
    scopes: Mutex<HashMap<String, Vec<LedgerEvent>>>,
}

impl LedgerStore {
    pub(crate) fn new() -> LedgerStore {
        LedgerStore {
            started: Instant::now(),
            scopes: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn append(
        &self,
        scope: &Scope,
        kind: &str,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) {
        let server_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let mut scopes = self.scopes.lock().expect("ledger lock");
        let events = scopes.entry(scope.0.clone()).or_default();
        events.push(LedgerEvent {
            seq: events.len() as u64,
            server_ms,
            page_ms,
            kind: kind.to_string(),
            data,
        });
    }

    pub(crate) fn snapshot(&self, scope: &str) -> Ledger {
        let scopes = self.scopes.lock().expect("ledger lock");
        Ledger {
            scope: scope.to_string(),
            events: scopes.get(scope).cloned().unwrap_or_default(),
        }
    }

    fn take(&self, scope: &str) -> Ledger {
        let mut scopes = self.scopes.lock().expect("ledger lock");
        Ledger {
            scope: scope.to_string(),
            events: scopes.remove(scope).unwrap_or_default(),
        }
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
