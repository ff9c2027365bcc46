//! The site side of the fault layer: what the fixture server does for a scope a fault is
//! armed on.
//!
//! # The board and the witness channel
//!
//! A fault is armed on a scope by the harness alone, in process (through
//! [`crate::FixtureServer::arm`]); nothing in a URL says so. The board (`board.rs`) holds,
//! per scope, the armed [`SiteInjection`](faultline_faults::site::SiteInjection) and the
//! scope's witness log: the events in which the fault layer says what it did, a status
//! served, a body cut, a banner that took a click.
//!
//! Events reach the log two ways. The server side notes its own (the network effects
//! below). A page sends its own through the witness channel, `POST /s/{scope}/witness`,
//! from the scripts rendered here (`__fl.witness(kind, data)`). The board keeps a page's
//! event only on a scope that is armed, so a working trial can never look fired, and only
//! within the scope's witness limits ([`crate::limits`]): the first events, the fault
//! firing, are what scoring needs, and a page that sends more is flooding. Disarming a
//! scope hands its log to the harness and forgets it.
//!
//! # Network effects
//!
//! `network.rs` is axum middleware. It classifies a request by method and path into a
//! [`Route`](faultline_faults::site::Route) and its scope, takes the rule armed for that
//! route if it has uses left (a rule applies to its first `times` matching requests), and
//! applies it for real: a delay (fixed, or held until the page witnessed something), a
//! body cut before a marker and the connection dropped, a hang that lets go at shutdown,
//! a status code with its `Retry-After`, an expired session, a refused resource. It also
//! counts each scope's requests in flight, so the harness can wait for a delayed response
//! to be sent before it reads the ledger.
//!
//! # Page changes
//!
//! [`extras`] renders the [`PageMod`]s that live in a page's top document: markup, styles
//! and scripts that change the page and report, through the witness channel, the moment
//! their change met the agent's action. One file per family of page change:
//!
//! - `overlay.rs`: something on top of the page takes the click (cookie banner, modal,
//!   decoy popup, transparent layer);
//! - `motion.rs`: the page moves under the agent (shifted or reordered before the act, a
//!   responsive layout, items re-rendered on press, a live feed);
//! - `handler.rs`: the click lands but the page does not do what it shows (disabled,
//!   a throwing handler, an intercepted click or a hang after it, an ignored `<select>`,
//!   a focus, scroll or selection undone,
//!   an optimistic save rolled back, a fresh idempotency key per click);
//! - `content.rs`: what the page says or how it is built (a duplicated label, a renamed
//!   target, another locale, an injected instruction, a closed shadow root).
//!
//! Changes inside a task's own markup (the grid's items, the frame's list, the chart's
//! labels) are rendered by the task's page, in `crate::task`.

mod board;
mod content;
mod handler;
mod motion;
mod network;
mod overlay;

pub use board::SiteWitness;
pub(crate) use board::{FaultBoard, WitnessRefused};
pub(crate) use network::{network_faults, NetworkState};

use crate::pages::Extras;
use faultline_faults::site::PageMod;
use faultline_faults::target_rect;
use faultline_tasks::Layout;

/// Renders the page changes that live in the top document of `layout`'s page.
pub fn extras(layout: &Layout, mods: &[PageMod]) -> Extras {
    let mut x = Extras::default();
    let target = target_rect(layout);
    for m in mods {
        let x = &mut x;
        match m {
            PageMod::CookieBanner { rect } => overlay::cookie_banner(x, rect, target),
            PageMod::Modal => overlay::modal(x),
            PageMod::DecoyPopup { rect } => overlay::decoy_popup(x, rect),
            PageMod::ShiftBeforeAct { dy } => motion::shift_before_act(x, dy),
            PageMod::ReorderBeforeAct { seed } => motion::reorder_before_act(x, layout, seed),
            PageMod::Responsive => motion::responsive(x),
            PageMod::RerenderOnPress => motion::rerender_on_press(x),
            PageMod::DuplicateLabel { moved_to } => content::duplicate_label(x, moved_to),
            PageMod::ShadowRoot => content::shadow_root(x),
            PageMod::TransparentLayer => overlay::transparent_layer(x),
            PageMod::Disabled => handler::disabled(x, layout),
            PageMod::HandlerThrows => handler::handler_throws(x, layout),
            PageMod::InterceptClick => handler::intercept_click(x, layout, None),
            PageMod::HangAfterClick { ms } => handler::intercept_click(x, layout, Some(*ms)),
            PageMod::LiveFeed { interval_ms } => motion::live_feed(x, interval_ms),
            PageMod::SelectIgnored => handler::select_ignored(x),
            PageMod::UndoEffect => handler::undo_effect(x),
            PageMod::Renamed { label } => content::renamed(x, layout, label),
            PageMod::OptimisticToast { rollback_ms } => handler::optimistic_toast(x, rollback_ms),
            PageMod::InjectedInstruction { text } => content::injected_instruction(x, layout, text),
            PageMod::Locale { locale } => content::locale(x, locale),
            PageMod::FreshKeyPerClick => handler::fresh_key_per_click(x),
            // Rendered where they live: the grid's items, the frame's document, the
            // chart's labels and bars, the grid's stylesheet link.
            PageMod::Virtualized { .. } | PageMod::LateStylesheet | PageMod::HoverHighlight => {}
        }
    }
    x
}
