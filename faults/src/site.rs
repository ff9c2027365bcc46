//! What the fixture server must do for a fault armed on one trial's scope.
//!
//! Site-side faults are pure data here: the fault layer decides *what* (the route, the
//! status code, the delay, the overlay's box, drawn from the trial seed) and the fixture
//! server applies it — network rules in its middleware, page changes when it renders
//! the page. The harness arms the scope before the trial navigates, through the server
//! handle it holds; nothing in a URL or a page tells a policy that a fault is armed.

use faultline_tasks::Rect;
use serde::{Deserialize, Serialize};

/// Everything the server does differently for one scope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteInjection {
    /// The fault's id, stamped on every witness event the server records.
    pub fault: String,
    /// Rules the server's middleware applies to matching requests.
    pub network: Vec<NetworkRule>,
    /// Changes the server makes to the page when it renders it.
    pub page: Vec<PageMod>,
}

impl SiteInjection {
    /// Whether the injection changes nothing (no network rule, no page change).
    pub fn is_empty(&self) -> bool {
        self.network.is_empty() && self.page.is_empty()
    }
}

/// Requests a network rule can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// `GET /s/{scope}/search/results` (a navigation).
    SearchResults,
    /// `POST /s/{scope}/form/save` (a fetch).
    FormSave,
    /// `GET /s/{scope}/static/grid.js`, the grid's click handler.
    GridScript,
    /// `GET /s/{scope}/static/grid.css`, the grid's positions.
    GridStyle,
    /// `GET /s/{scope}/static/save.png`, the form's Save icon.
    SaveIcon,
}

/// What happens to a matching request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetworkEffect {
    /// The handler runs (and records its effect) at once; the response is held back.
    Delay {
        /// How long the response is held back, in milliseconds.
        ms: u64,
    },
    /// The handler runs at once; the response is held until the page has reported the
    /// witness `after` on the request's scope (or `max_wait_ms` passed), then for `ms`
    /// more. Timed from an event of the page rather than from the request, a late
    /// resource lands at the same point of the round trip however loaded the machine is.
    DelayAfterWitness {
        /// The kind of the page's witness event that starts the delay.
        after: String,
        /// How long the response is held once the event came, in milliseconds.
        ms: u64,
        /// The longest wait for the event, in milliseconds (then the delay starts anyway).
        max_wait_ms: u64,
    },
    /// The handler runs; the response's headers and its body up to the first occurrence
    /// of `cut_before` are sent, then the connection is aborted.
    DropMidBody {
        /// The body text before whose first occurrence the connection is aborted.
        cut_before: String,
    },
    /// Nothing is ever answered: the request hangs until the client gives up (or
    /// `max_ms` passes, so a forgotten connection cannot outlive the run).
    Hang {
        /// The longest the request is held, in milliseconds.
        max_ms: u64,
    },
    /// The handler does not run; a real error response with this status is sent.
    Status {
        /// The HTTP status code sent.
        code: u16,
        /// The `Retry-After` header's value in seconds, if one is sent.
        retry_after_s: Option<u32>,
    },
    /// The handler does not run; 401 with the session-expired marker, which the page's
    /// own code answers by redirecting to the login page.
    SessionExpired,
    /// The request is refused (404), as when a blocker or a bad deploy drops a file.
    Block,
}

/// One network rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkRule {
    /// The requests the rule matches.
    pub route: Route,
    /// What happens to a matching request.
    pub effect: NetworkEffect,
    /// Applies to the first `times` matching requests only (`None`: every one), so a
    /// transient error can be recovered from by retrying.
    pub times: Option<u32>,
    /// Whether applying the rule is itself the fault firing. `false` when the page
    /// reports whether the change met the action (a late stylesheet fires only if the
    /// click came before it applied).
    pub fires: bool,
}

/// A change to the page as the server renders it. Each injected script reports, through
/// the page's witness channel, the moment its change actually met the agent's action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageMod {
    /// A cookie-consent banner over `rect` (which covers the target).
    CookieBanner {
        /// The banner's box, in viewport pixels.
        rect: Rect,
    },
    /// A newsletter modal whose backdrop covers the viewport and takes every pointer event.
    Modal,
    /// A popup with a tempting button over `rect` (which covers the target); its button
    /// leads to a decoy page.
    DecoyPopup {
        /// The popup's box, in viewport pixels.
        rect: Rect,
    },
    /// Content moves down by `dy` pixels when the harness is about to act.
    ShiftBeforeAct {
        /// How far the content moves down, in CSS pixels.
        dy: f64,
    },
    /// The grid's labels are permuted (by `seed`) when the harness is about to act.
    ReorderBeforeAct {
        /// The seed the permutation is drawn from.
        seed: u64,
    },
    /// The grid is laid out centred on the viewport's width (responsive), so a viewport
    /// change moves it.
    Responsive,
    /// The grid re-renders its buttons on `pointerdown` (new nodes), so the press and the
    /// release land on different elements and no click is delivered to a button.
    RerenderOnPress,
    /// The target's box is taken by another control with the same label (a different
    /// item); the real target moves to `moved_to`.
    DuplicateLabel {
        /// The real target's new box, in viewport pixels.
        moved_to: Rect,
    },
    /// The grid's buttons live inside a closed shadow root.
    ShadowRoot,
    /// The orders table is virtualized: `prepended` extra rows come first and only the
    /// rows in view are in the DOM.
    Virtualized {
        /// How many extra rows come before the original ones.
        prepended: u32,
    },
    /// A transparent layer over the board swallows every click.
    TransparentLayer,
    /// The target control is disabled.
    Disabled,
    /// The click handler throws before it updates anything.
    HandlerThrows,
    /// The click on the target is intercepted before the page's handler (nothing is
    /// selected or written) and reported; the harness then crashes the renderer.
    InterceptClick,
    /// The click on the target is intercepted before the page's handler, and the main
    /// thread blocks for `ms` milliseconds inside the click's dispatch, on a synchronous
    /// request the server holds (and records as the witness).
    HangAfterClick {
        /// How long the main thread is blocked, in milliseconds.
        ms: u64,
    },
    /// A live ticker rewrites part of the page every `interval_ms` milliseconds, from
    /// load on: the DOM never settles.
    LiveFeed {
        /// The update interval, in milliseconds.
        interval_ms: u64,
    },
    /// The select's change never reaches the page's state (it listens to the wrong event).
    SelectIgnored,
    /// A focus, a scroll or a selection is undone by the page on the next task: the
    /// field blurred, the scroll reset to the top, the selection cleared.
    UndoEffect,
    /// The target's visible label is renamed (its identity is not).
    Renamed {
        /// The new visible label.
        label: String,
    },
    /// Save shows "Saved!" and lists the note at once; the server rejects the write and
    /// the page rolls back after `rollback_ms`.
    OptimisticToast {
        /// How long after the click the page rolls back, in milliseconds.
        rollback_ms: u64,
    },
    /// Text in the page that addresses the agent.
    InjectedInstruction {
        /// The text addressed to the agent.
        text: String,
    },
    /// Month names and numbers in a locale (e.g. `de-DE`).
    Locale {
        /// The BCP 47 locale tag, e.g. `de-DE`.
        locale: String,
    },
    /// The chart's bar under the pointer is highlighted as soon as the pointer enters it
    /// (the default chart shows nothing until the tooltip).
    HoverHighlight,
    /// Every Save click mints a fresh idempotency key (so a retry writes again).
    FreshKeyPerClick,
    /// The grid's stylesheet is attached only after the load event.
    LateStylesheet,
}
