//! Every bound the fixture server puts on what a client can make it hold, in one place,
//! with why each value is what it is.
//!
//! The server is on loopback, but anything that can reach it (a page, a local process)
//! could otherwise make it hold memory without bound: ledger events need no token, and a
//! connection that never finishes its request headers used to be held forever. The
//! values are defaults of [`crate::ServerOptions`]; tests shrink them.

use std::time::Duration;

/// The largest request body the server reads (ledger events, witnesses, hangs, the
/// form's save). The largest body a fixture page really sends is a `typed` event carrying
/// an input's whole value: an agent types at most 10,000 characters in one action, which
/// JSON escapes to at most 60,000 bytes even if every one is a control character. 128 KiB
/// leaves twice that; everything else a page sends is under 1 KiB.
pub const MAX_BODY_BYTES: usize = 128 << 10;

/// The most events one scope's ledger keeps. A trial records tens to a few hundred
/// events (clicks, typing, the harness's captures); a long episode a few thousand at
/// most. Past this the scope is flooding, not being used.
pub const SCOPE_EVENTS: usize = 10_000;

/// The most bytes one scope's ledger keeps, as estimated by [`event_weight`] (a rough
/// measure of the memory an event holds). A trial's ledger is well under 1 MiB even with
/// long typed text; 8 MiB is ample for any honest trial and small enough that many
/// concurrent trials cannot exhaust the total below.
pub const SCOPE_BYTES: usize = 8 << 20;

/// The most bytes all open scopes together keep. Thirty-two scopes at their own limit at
/// once; a run's concurrent trials stay far under their own limits, so only a flood
/// reaches it, and a person's `faultline serve`, which opens any scope asked for, cannot
/// hold more than this.
pub const TOTAL_BYTES: usize = 256 << 20;

/// What an open scope costs before it holds any event (its entry and id), counted
/// against [`TOTAL_BYTES`] so that opening scopes on demand is bounded too.
pub const SCOPE_OVERHEAD_BYTES: usize = 256;

/// How long a connection may take to send a request's headers. A browser on loopback
/// sends them at once; 10 s is far beyond any honest client even on a loaded machine,
/// and a connection that sends half a request line and stops is closed after it.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections the server holds at once; more wait in the listen backlog until
/// one closes. Chromium opens at most six connections per host per browser context, and a
/// run has at most 64 concurrent trials: 512 is ample, and well under the default limit
/// of 1024 open files that the harness shares with its browser pipes.
pub const MAX_CONNECTIONS: usize = 512;

/// The most witness events the fault layer keeps for one armed scope. An injected script
/// reports a handful per trial; a page that sends more is flooding, and the first ones
/// (the fault firing) are all scoring needs.
pub const WITNESS_EVENTS: usize = 1_000;

/// The most bytes of witness events, by [`event_weight`], one armed scope keeps.
pub const WITNESS_BYTES: usize = 1 << 20;

/// What an event costs in the ledger, roughly in bytes of memory: a fixed overhead for the
/// event itself, its kind, and every JSON node of its data (a node costs more than its
/// serialized form, so many tiny fields weigh more than their text).
pub fn event_weight(kind: &str, data: &serde_json::Value) -> usize {
    const EVENT: usize = 96;
    EVENT + kind.len() + value_weight(data)
}

fn value_weight(v: &serde_json::Value) -> usize {
    const NODE: usize = std::mem::size_of::<serde_json::Value>();
    NODE + match v {
        serde_json::Value::String(s) => s.len(),
        serde_json::Value::Array(items) => items.iter().map(value_weight).sum(),
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| 3 * NODE + k.len() + value_weight(v))
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn weight_counts_text_and_structure() {
        let small = event_weight("click", &json!({}));
        let text = event_weight("typed", &json!({ "value": "x".repeat(1000) }));
        assert!(text > small + 1000);
        // Many tiny fields weigh far more than their serialized text.
        let many: serde_json::Map<String, serde_json::Value> =
            (0..100).map(|i| (format!("k{i}"), json!(1))).collect();
        let many = serde_json::Value::Object(many);
        assert!(event_weight("click", &many) > 10 * many.to_string().len());
    }
}
