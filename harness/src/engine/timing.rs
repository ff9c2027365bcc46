//! The timing settings of a run: how long the round trip lets a page settle after an
//! action before observing it, how long it waits for a navigation, and the longest
//! `wait(ms)` a reply may ask for by default ([`MAX_WAIT_MS`]).
//!
//! They live apart from the round trip that applies them because the browser reads
//! them too ([`crate::engine::browser::TrialPage::wait_stable`]): the browser module
//! depends on this one, and neither on the round trip.

use serde::{Deserialize, Serialize};

/// The longest `wait(ms)` a reply may ask for unless the episode's limits say otherwise
/// (a longer wait is cut to it): the default of both the episode's limits
/// ([`crate::engine::episode::EpisodeLimits::max_wait_ms`]) and a round trip's own cap
/// ([`crate::engine::roundtrip::RoundTrip::max_wait_ms`]).
pub const MAX_WAIT_MS: u64 = 10_000;

/// Timing knobs of the round trip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Wait after clicks, typing, keys and scrolls before observing.
    pub settle_ms: u64,
    /// Wait after a hover before observing (tooltips need time).
    pub hover_settle_ms: u64,
    /// How long the observe stage waits for a navigation the action started before it
    /// reports the page as not loaded and observes what is there.
    pub navigation_timeout_ms: u64,
    /// The `stable` settle mode, when chosen: instead of the fixed settle waits, wait
    /// until the DOM has not changed for a number of sampling windows, up to a cap.
    /// Absent (the fixed settle) from a stored config, so fixed-settle runs keep their
    /// identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<StableSettle>,
}

/// The `stable` settle mode: the DOM unchanged (no mutation of the top document) for
/// `windows` consecutive sampling windows of `window_ms`, or `cap_ms` at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StableSettle {
    /// The length of one sampling window, in milliseconds.
    pub window_ms: u64,
    /// Consecutive windows without a DOM change that end the wait.
    pub windows: u32,
    /// The longest wait, in milliseconds.
    pub cap_ms: u64,
}

impl Default for StableSettle {
    fn default() -> Self {
        StableSettle {
            window_ms: 100,
            windows: 3,
            cap_ms: 3000,
        }
    }
}

impl Timing {
    /// `fixed` or `stable`: the settle mode, as the manifest records it.
    pub fn settle_mode(&self) -> &'static str {
        match self.stable {
            None => "fixed",
            Some(_) => "stable",
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            settle_ms: 120,
            hover_settle_ms: 1400,
            navigation_timeout_ms: 4000,
            stable: None,
        }
    }
}
