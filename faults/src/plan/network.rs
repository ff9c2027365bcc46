//! Network faults: the fixture server's middleware delays, cuts, holds, refuses or
//! answers with a status code the requests of one route.

use super::{Injection, RESULTS_MARKER, SETTLED_BEFORE_A_WAIT_ENDS};
use crate::catalogue::Fault;
use crate::site::{NetworkEffect, NetworkRule, PageMod, Route};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A rule that fires, on `route`, for the first `times` requests (all of them for `None`).
pub(super) fn rule(route: Route, effect: NetworkEffect, times: Option<u32>) -> NetworkRule {
    NetworkRule {
        route,
        effect,
        times,
        fires: true,
    }
}

/// The transport, HTTP and resource faults (and the hang the tool misreports as success):
/// network rules, with the late stylesheet's page change.
pub(super) fn network(fault: Fault, rng: &mut ChaCha8Rng) -> Option<Injection> {
    let injection = match fault {
        Fault::SlowResponse => (
            vec![rule(
                Route::FormSave,
                NetworkEffect::Delay {
                    ms: rng.random_range(SETTLED_BEFORE_A_WAIT_ENDS),
                },
                None,
            )],
            vec![],
        ),
        Fault::ConnectionDropped => (
            vec![rule(
                Route::SearchResults,
                NetworkEffect::DropMidBody {
                    cut_before: RESULTS_MARKER.into(),
                },
                None,
            )],
            vec![],
        ),
        Fault::RequestHangs | Fault::TimeoutAsSuccess => (
            vec![rule(
                Route::SearchResults,
                NetworkEffect::Hang { max_ms: 30_000 },
                None,
            )],
            vec![],
        ),
        Fault::ServerError => (
            vec![rule(
                Route::SearchResults,
                NetworkEffect::Status {
                    code: 500,
                    retry_after_s: None,
                },
                None,
            )],
            vec![],
        ),
        Fault::ServiceUnavailable => (
            vec![rule(
                Route::SearchResults,
                NetworkEffect::Status {
                    code: 503,
                    retry_after_s: Some(1),
                },
                Some(1),
            )],
            vec![],
        ),
        Fault::RateLimited => (
            vec![rule(
                Route::FormSave,
                NetworkEffect::Status {
                    code: 429,
                    retry_after_s: Some(1),
                },
                Some(1),
            )],
            vec![],
        ),
        Fault::SessionExpired => (
            vec![rule(Route::FormSave, NetworkEffect::SessionExpired, None)],
            vec![],
        ),
        Fault::ScriptBlocked => (
            vec![rule(Route::GridScript, NetworkEffect::Block, None)],
            vec![],
        ),
        Fault::StylesheetDelayed => (
            vec![NetworkRule {
                fires: false,
                ..rule(
                    Route::GridStyle,
                    // Held until the page reports its first click (before the
                    // stylesheet), then landing after the observation of that click
                    // and before the one after an agent's wait: where the layout
                    // jumps never depends on the machine's load. Timed from the page
                    // load (3.5-4.5 s), it raced an agent's retries.
                    NetworkEffect::DelayAfterWitness {
                        after: "click_before_stylesheet".into(),
                        ms: rng.random_range(SETTLED_BEFORE_A_WAIT_ENDS),
                        max_wait_ms: 4000,
                    },
                    None,
                )
            }],
            vec![PageMod::LateStylesheet],
        ),
        Fault::ImageMissing => (
            vec![rule(Route::SaveIcon, NetworkEffect::Block, None)],
            vec![],
        ),
        other => unreachable!("{other:?} is not a network fault"),
    };
    Some(injection)
}
