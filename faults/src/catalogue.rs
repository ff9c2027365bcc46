//! The catalogue: every fault faultline can inject, with what it is, where it acts, how
//! it is injected, what it leaves as a witness and what the ledger will say.

use crate::suggest::close_matches;
use faultline_tasks::{MiniwobTask, TaskKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

faultline_tasks::named_enum! {
    /// A stage of the agent's action round trip.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Stage: "stage" {
        /// The agent's reply is parsed into actions.
        Parse = "parse",
        /// The parsed actions are dispatched to the browser.
        Execute = "execute",
        /// The tool reports back to the agent what its actions did.
        Feedback = "feedback",
        /// The next observation (the screenshot) is captured.
        Observe = "observe",
    }
}

faultline_tasks::named_enum! {
    /// The ten layers of the anomaly catalogue, from the wire up to the agent's own claims,
    /// in report order ([`Layer::ALL`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Layer: "layer" {
        /// Bytes on the wire: delays, dropped connections, hangs.
        Transport = "transport",
        /// HTTP status codes: server errors, rate limits, expired sessions.
        Http = "http",
        /// Subresources: scripts, stylesheets, images.
        Resource = "resource",
        /// Things drawn over the page: banners, modals, popups.
        Overlay = "overlay",
        /// Geometry: moves, reorders, viewport changes.
        Layout = "layout",
        /// Document structure: re-renders, duplicates, shadow roots, virtualization.
        Dom = "dom",
        /// Input reaching (or not reaching) the page's handlers.
        Execution = "execution",
        /// What the page means: labels, toasts, injected instructions, locales.
        Semantic = "semantic",
        /// The harness's own tool: parsing, messages, captures, error handling.
        Tool = "tool",
        /// The agent's own claims about what it did and saw.
        SelfReport = "self_report",
    }
}

impl Layer {
    /// The layer's position in report order.
    pub fn rank(self) -> usize {
        Layer::ALL
            .iter()
            .position(|l| *l == self)
            .expect("every layer is in ALL")
    }
}

faultline_tasks::named_enum! {
    /// Where a fault is injected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Mechanism: "mechanism" {
        /// Middleware in the fixture server: real status codes, delays, dropped connections.
        Network = "network",
        /// The page itself: injected markup and scripts rendered by the fixture server.
        Page = "page",
        /// The browser, through CDP (e.g. the viewport changed behind the harness's back).
        Browser = "browser",
        /// A hook in the harness's own round trip (parse, execute, feedback, observe).
        Harness = "harness",
        /// The agent's reply, rewritten before the parse stage.
        Agent = "agent",
    }
}

/// Everything the catalogue says about one fault.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FaultSpec {
    /// Stable id, `layer.name` (the four reference stage faults keep their `stage.name`
    /// ids from the design brief, e.g. `parse.token_leak`).
    pub id: &'static str,
    /// The catalogue layer it belongs to.
    pub layer: Layer,
    /// The round-trip stage where its effect enters.
    pub stage: Stage,
    /// Where it is injected: network, page, browser, harness or agent reply.
    pub mechanism: Mechanism,
    /// The tasks whose pages and decisions it applies to.
    pub tasks: &'static [TaskKind],
    /// One line: what goes wrong.
    pub description: &'static str,
    /// How it is injected, concretely.
    pub injection: &'static str,
    /// What it draws from the trial seed.
    pub parameters: &'static str,
    /// What its witness records.
    pub witness: &'static str,
    /// What the ledger says when it fires.
    pub implies: &'static str,
    /// Whether the intended outcome still happens when it fires (the ledger's verdict a
    /// fired trial must get: a policy that then says Success is right).
    pub outcome_holds: bool,
    /// When it can fail to fire, and what that means.
    pub not_fired_when: &'static str,
}

macro_rules! faults {
    ($( $(#[$doc:meta])* $variant:ident = $spec:expr, )*) => {
        /// Every fault in the catalogue.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Fault {
            $( $(#[$doc])* $variant, )*
        }

        impl Fault {
            /// The whole catalogue, in report order (layer, then catalogue order).
            pub const ALL: &'static [Fault] = &[$(Fault::$variant,)*];

            /// The catalogue entry.
            pub fn spec(self) -> &'static FaultSpec {
                match self {
                    $( Fault::$variant => {
                        const SPEC: FaultSpec = $spec;
                        &SPEC
                    } )*
                }
            }
        }
    };
}

/// A fault's task list, as a constant: faultline's own tasks by name, then the MiniWoB++
/// suite (in [`MiniwobTask::ALL`] order), either whole (`..MINIWOB`) or the suite tasks
/// with a property (`..MINIWOB.types_text()`, see [`MiniwobTask`]), so a new suite task
/// joins every fault that applies to it without an edit here.
macro_rules! tasks {
    ($($fixture:ident,)* ..MINIWOB $(.$property:ident())?) => {{
        const FIXTURE: &[TaskKind] = &[$(TaskKind::$fixture),*];
        const fn keep(_t: MiniwobTask) -> bool {
            true $(&& _t.$property())?
        }
        const LEN: usize = {
            let mut n = FIXTURE.len();
            let mut i = 0;
            while i < MiniwobTask::ALL.len() {
                if keep(MiniwobTask::ALL[i]) {
                    n += 1;
                }
                i += 1;
            }
            n
        };
        const TASKS: [TaskKind; LEN] = {
            let mut tasks = [TaskKind::Search; LEN];
            let mut n = 0;
            while n < FIXTURE.len() {
                tasks[n] = FIXTURE[n];
                n += 1;
            }
            let mut i = 0;
            while i < MiniwobTask::ALL.len() {
                if keep(MiniwobTask::ALL[i]) {
                    tasks[n] = TaskKind::Miniwob(MiniwobTask::ALL[i]);
                    n += 1;
                }
                i += 1;
            }
            tasks
        };
        &TASKS
    }};
    ($($fixture:ident),* $(,)?) => {
        &[$(TaskKind::$fixture),*]
    };
}

use Mechanism as M;

faults! {
    /// A chat end-of-message token is not stripped and ends up in the typed text.
    TokenLeak = FaultSpec {
        id: "parse.token_leak",
        layer: Layer::Tool,
        stage: Stage::Parse,
        mechanism: M::Harness,
        tasks: tasks![Search, ..MINIWOB.types_text()],
        description: "an end-of-message token (<|im_end|>) leaks into the text the action types",
        injection: "the parse stage skips stripping chat special tokens and appends the token to the first typed text",
        parameters: "none",
        witness: "the typed text before and after",
        implies: "the server receives the query with the token: not the requested record",
        outcome_holds: false,
        not_fired_when: "the reply types no text",
    },
    /// Screenshot-to-viewport scaling is skipped: image points are used as viewport points.
    UnscaledCoordinates = FaultSpec {
        id: "execute.unscaled_coordinates",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Harness,
        tasks: tasks![Grid, ..MINIWOB],
        description: "screenshot-to-viewport scaling is skipped: a point in the 900x600 image lands at 3/4 of its 1200x800 target",
        injection: "the execute stage dispatches the image point as a viewport point",
        parameters: "none",
        witness: "the image point, the intended viewport point and the executed one",
        implies: "the click lands on another item or on blank space; the target is not selected",
        outcome_holds: false,
        not_fired_when: "the image and the viewport have the same size (there is nothing to scale)",
    },
    /// A click that landed inside an iframe is reported as "No change detected."
    IframeNoChange = FaultSpec {
        id: "feedback.iframe_no_change",
        layer: Layer::Tool,
        stage: Stage::Feedback,
        mechanism: M::Harness,
        tasks: tasks![Frame],
        description: "a click that worked inside an iframe is reported as \"No change detected.\"",
        injection: "the feedback stage replaces the tool message when its own hit test says the click went into an <iframe>",
        parameters: "none",
        witness: "the honest message and the reported one",
        implies: "the row is selected: the outcome happened and the tool message lies",
        outcome_holds: true,
        not_fired_when: "the click did not land on an iframe",
    },
    /// The screenshot is captured right after a hover, before the tooltip appears.
    CaptureBeforeTooltip = FaultSpec {
        id: "observe.capture_before_tooltip",
        layer: Layer::Tool,
        stage: Stage::Observe,
        mechanism: M::Harness,
        tasks: tasks![Chart],
        description: "the screenshot is captured before a hover tooltip has appeared",
        injection: "the observe stage skips the settle wait after a hover",
        parameters: "none",
        witness: "the page-clock instants of the hover, the capture and the tooltip",
        implies: "the observation does not show the value: the answer was never observed",
        outcome_holds: false,
        not_fired_when: "the capture still began after the tooltip appeared (a very slow machine)",
    },
    // ---- transport ----
    /// The save request's response is held back past the harness's settle wait.
    SlowResponse = FaultSpec {
        id: "transport.slow_response",
        layer: Layer::Transport,
        stage: Stage::Observe,
        mechanism: M::Network,
        tasks: tasks![Form],
        description: "the save request is answered 1.0-1.3 s late: the write is committed at once, the page only learns of it after the harness has observed",
        injection: "server middleware runs the save handler, then holds the response back",
        parameters: "the delay, 1000-1300 ms: after the observation that follows the click (120 ms settle), before the next one of an agent that waits 1.5 s, whatever the load",
        witness: "the route and the delay applied",
        implies: "the note is saved (one committed write): the outcome happened, the observation is stale",
        outcome_holds: true,
        not_fired_when: "the page sent no save request",
    },
    /// The results page's connection is closed part way through its body.
    ConnectionDropped = FaultSpec {
        id: "transport.connection_dropped",
        layer: Layer::Transport,
        stage: Stage::Observe,
        mechanism: M::Network,
        tasks: tasks![Search],
        description: "the search results response is cut off mid-body: headers and the page's top arrive, then the connection drops",
        injection: "server middleware runs the search, sends the body up to the results list, then aborts the connection",
        parameters: "none (the cut is just before the results)",
        witness: "the route and the number of body bytes sent before the drop",
        implies: "the query reached the server but the results never reached the browser (the ledger records the truncated response)",
        outcome_holds: false,
        not_fired_when: "no search was submitted",
    },
    /// The results request is never answered.
    RequestHangs = FaultSpec {
        id: "transport.request_hangs",
        layer: Layer::Transport,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Search],
        description: "the search request hangs: no byte comes back until the harness's navigation wait times out",
        injection: "server middleware holds the request open without running the handler",
        parameters: "none",
        witness: "the route and how long the request was held",
        implies: "the search never ran: nothing was submitted",
        outcome_holds: false,
        not_fired_when: "no search was submitted",
    },
    // ---- http ----
    /// The results request gets a real 500.
    ServerError = FaultSpec {
        id: "http.server_error",
        layer: Layer::Http,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Search],
        description: "the search request is answered 500 Internal Server Error",
        injection: "server middleware answers 500 with an error page instead of running the search",
        parameters: "none",
        witness: "the route and the status served",
        implies: "the search never ran: nothing was submitted",
        outcome_holds: false,
        not_fired_when: "no search was submitted",
    },
    /// The results request gets 503 with Retry-After, once.
    ServiceUnavailable = FaultSpec {
        id: "http.service_unavailable",
        layer: Layer::Http,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Search],
        description: "the first search request is answered 503 Service Unavailable with Retry-After: 1",
        injection: "server middleware answers the first matching request 503 with a Retry-After header; later ones pass",
        parameters: "none",
        witness: "the route, the status and the Retry-After served",
        implies: "the first search never ran; a retry after a second would",
        outcome_holds: false,
        not_fired_when: "no search was submitted",
    },
    /// The save request gets 429 with Retry-After, once.
    RateLimited = FaultSpec {
        id: "http.rate_limited",
        layer: Layer::Http,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Form],
        description: "the first save request is answered 429 Too Many Requests with Retry-After: 1",
        injection: "server middleware answers the first save 429 with Retry-After; the page shows its rate-limit message",
        parameters: "none",
        witness: "the route, the status and the Retry-After served",
        implies: "no write was committed",
        outcome_holds: false,
        not_fired_when: "the page sent no save request",
    },
    /// The save request gets 401 and the page redirects to its login page.
    SessionExpired = FaultSpec {
        id: "http.session_expired",
        layer: Layer::Http,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Form],
        description: "the save request is answered 401: the session expired and the page redirects to the login page",
        injection: "server middleware answers 401 with the session-expired marker; the page's own code redirects to /login",
        parameters: "none",
        witness: "the route and the status served",
        implies: "no write was committed; the browser is on the login page",
        outcome_holds: false,
        not_fired_when: "the page sent no save request",
    },
    // ---- resource ----
    /// The grid's click-handler script is blocked.
    ScriptBlocked = FaultSpec {
        id: "resource.script_blocked",
        layer: Layer::Resource,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Grid],
        description: "the script that handles the board's clicks is blocked (404): the buttons render but do nothing",
        injection: "server middleware refuses the grid's handler script",
        parameters: "none",
        witness: "the route refused",
        implies: "no item is selected (the click reaches a button with no handler)",
        outcome_holds: false,
        not_fired_when: "the page never requested its script",
    },
    /// The grid's stylesheet arrives after load: the layout jumps under the click.
    StylesheetDelayed = FaultSpec {
        id: "resource.stylesheet_delayed",
        layer: Layer::Resource,
        stage: Stage::Execute,
        mechanism: M::Network,
        tasks: tasks![Grid],
        description: "the stylesheet that positions the board is loaded after the page's load event and arrives late, so the layout jumps after the action",
        injection: "the page loads its stylesheet after load; server middleware holds it until the page reports its first click, then delays it",
        parameters: "the delay after the click, 1000-1300 ms: after the observation of the click, before the next one of an agent that waits 1.5 s (4 s at most without a click)",
        witness: "the delay and the page-clock instants of the click and of the stylesheet applying",
        implies: "the click lands on the unstyled layout: not on the target",
        outcome_holds: false,
        not_fired_when: "the stylesheet applied before the click (no click within 4 s of the page's load)",
    },
    /// The form's Save icon is missing.
    ImageMissing = FaultSpec {
        id: "resource.image_missing",
        layer: Layer::Resource,
        stage: Stage::Observe,
        mechanism: M::Network,
        tasks: tasks![Form],
        description: "the Save button's icon image is missing (404): a cosmetic failure that does not break the task",
        injection: "server middleware refuses the icon",
        parameters: "none",
        witness: "the route refused and the broken image reported by the page",
        implies: "the note is saved: the outcome happens, so any alarm is a false one",
        outcome_holds: true,
        not_fired_when: "the page never requested the icon",
    },
    // ---- overlay ----
    /// A cookie banner covers the target.
    CookieBanner = FaultSpec {
        id: "overlay.cookie_banner",
        layer: Layer::Overlay,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Frame, ..MINIWOB],
        description: "a cookie-consent banner is drawn across the target",
        injection: "the page renders a fixed banner strip over the target's row",
        parameters: "the banner's height, 90-140 px",
        witness: "the banner's box and the click it intercepted",
        implies: "the click hits the banner: the target is not selected",
        outcome_holds: false,
        not_fired_when: "no pointer event reached the banner",
    },
    /// A modal's backdrop takes every pointer event.
    Modal = FaultSpec {
        id: "overlay.modal",
        layer: Layer::Overlay,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Frame, Chart, ..MINIWOB],
        description: "a newsletter modal opens over the page; its backdrop intercepts every pointer event",
        injection: "the page renders a fixed full-viewport backdrop with a dialog",
        parameters: "none",
        witness: "the pointer event the backdrop intercepted",
        implies: "the action never reaches the page underneath",
        outcome_holds: false,
        not_fired_when: "no pointer event reached the backdrop",
    },
    /// A tempting popup button sits on the target.
    DecoyPopup = FaultSpec {
        id: "overlay.decoy_popup",
        layer: Layer::Overlay,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "a decoy popup with a tempting button (\"Claim your reward\") covers the target",
        injection: "the page renders a popup whose button covers the target; the button opens a decoy page",
        parameters: "the popup's size",
        witness: "the click the popup intercepted",
        implies: "the decoy page opens (the ledger records it); the target is not selected",
        outcome_holds: false,
        not_fired_when: "no pointer event reached the popup",
    },
    // ---- layout ----
    /// The content moves between the observation and the action.
    TargetShift = FaultSpec {
        id: "layout.target_shift",
        layer: Layer::Layout,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Frame, ..MINIWOB],
        description: "the content shifts down (as when a late banner loads) between the observation and the action",
        injection: "a page script, triggered by the harness right before it acts, translates the content",
        parameters: "the shift, 60-140 px",
        witness: "the shift applied and when",
        implies: "the click lands where the target was: on something else",
        outcome_holds: false,
        not_fired_when: "the page's shift hook did not run",
    },
    /// The grid's items are reordered between observation and action.
    Reordered = FaultSpec {
        id: "layout.reordered",
        layer: Layer::Layout,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "the board's items are re-sorted between the observation and the action",
        injection: "a page script, triggered by the harness right before it acts, permutes the items' labels",
        parameters: "the permutation",
        witness: "the label now in the target's old box",
        implies: "the click selects whichever item moved into the target's box",
        outcome_holds: false,
        not_fired_when: "the permutation left the target in place",
    },
    /// The viewport changes between observation and action.
    ViewportChanged = FaultSpec {
        id: "layout.viewport_changed",
        layer: Layer::Layout,
        stage: Stage::Execute,
        mechanism: M::Browser,
        tasks: tasks![Grid],
        description: "the viewport narrows between the observation and the action; the responsive board re-centres",
        injection: "CDP Emulation.setDeviceMetricsOverride narrows the viewport right before the action; the page's board is centred on the viewport's width",
        parameters: "the new width, 960-1100 px",
        witness: "the viewport before and after",
        implies: "the board moves by half the width change: the click misses the target",
        outcome_holds: false,
        not_fired_when: "the viewport could not be changed",
    },
    // ---- dom ----
    /// The target is re-rendered under the press.
    StaleElement = FaultSpec {
        id: "dom.stale_element",
        layer: Layer::Dom,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "the board re-renders on pointerdown: the pressed button is replaced before the release, so no click reaches a button",
        injection: "a page script replaces every button with a fresh copy when a press begins",
        parameters: "none",
        witness: "the re-render and the node it replaced",
        implies: "no item is selected",
        outcome_holds: false,
        not_fired_when: "no press reached a button",
    },
    /// Two controls share the target's label.
    DuplicateLabel = FaultSpec {
        id: "dom.duplicate_label",
        layer: Layer::Dom,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "two controls carry the target's label: a promoted copy takes the target's place and the real one moves",
        injection: "the page renders a second button with the same label in the target's box and moves the real target",
        parameters: "where the real target moves",
        witness: "both buttons' boxes",
        implies: "the promoted copy is selected, not the target (the ledger knows them apart by id)",
        outcome_holds: false,
        not_fired_when: "never (the page is rendered that way)",
    },
    /// The board lives in a closed shadow root.
    ShadowRoot = FaultSpec {
        id: "dom.shadow_root",
        layer: Layer::Dom,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "the board's buttons live inside a closed shadow root: clicks work, the document's DOM does not show them",
        injection: "a page script moves the board into a closed shadow root with its own handler",
        parameters: "none",
        witness: "the shadow host",
        implies: "the target is selected: the outcome happens; a DOM-reading check cannot see it",
        outcome_holds: true,
        not_fired_when: "the page's script did not run",
    },
    /// The orders table is virtualized; the target is not rendered.
    VirtualizedList = FaultSpec {
        id: "dom.virtualized_list",
        layer: Layer::Dom,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Frame],
        description: "the orders table is virtualized with more rows above the target: the target is out of view and not in the DOM",
        injection: "the frame renders a virtual list with extra leading rows and only the rows in view in the DOM",
        parameters: "the number of extra rows, 15-30",
        witness: "whether the target was in the DOM when the click came",
        implies: "another row is selected",
        outcome_holds: false,
        not_fired_when: "the target happened to be in view",
    },
    /// A live feed mutates the page continuously: the DOM never settles.
    NeverSettles = FaultSpec {
        id: "dom.never_settles",
        layer: Layer::Dom,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Grid, Form],
        description: "a live feed in the corner rewrites part of the page every few tens of milliseconds, forever: the DOM never settles",
        injection: "a page script updates a small live-ticker element on a fixed interval from load on",
        parameters: "the update interval, 40-80 ms",
        witness: "the ticker starting, with its interval",
        implies: "the action works as usual (the outcome holds); a wait for a stable DOM never ends without a cap, and every before/after comparison sees a change",
        outcome_holds: true,
        not_fired_when: "the page's script did not run",
    },
    // ---- execution ----
    /// A transparent layer swallows the click.
    ClickSwallowed = FaultSpec {
        id: "execution.click_swallowed",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Frame, ..MINIWOB],
        description: "an invisible layer over the page swallows every click",
        injection: "the page renders a transparent full-viewport layer on top",
        parameters: "none",
        witness: "the click the layer swallowed",
        implies: "nothing is selected; nothing visible changes",
        outcome_holds: false,
        not_fired_when: "no click reached the layer",
    },
    /// The target control is disabled.
    ControlDisabled = FaultSpec {
        id: "execution.control_disabled",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Form],
        description: "the control the action needs is disabled",
        injection: "the page renders the target button (or Save) with the disabled attribute",
        parameters: "none",
        witness: "the disabled control's box",
        implies: "the click does nothing: no selection, no write",
        outcome_holds: false,
        not_fired_when: "the page's script did not run",
    },
    /// The click handler throws.
    HandlerThrows = FaultSpec {
        id: "execution.handler_throws",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Form],
        description: "the click handler throws an exception before it updates anything",
        injection: "a page script intercepts the click on the target and throws a TypeError",
        parameters: "none",
        witness: "the exception thrown",
        implies: "no selection, no write; the page records an uncaught error",
        outcome_holds: false,
        not_fired_when: "no click reached the target",
    },
    /// The select's change never reaches the page's state.
    SelectIgnored = FaultSpec {
        id: "execution.select_ignored",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Select],
        description: "a native <select> change silently does not apply: the menu shows the choice, the page's state never hears of it",
        injection: "a page script swallows the select's change and input events before the page's handler",
        parameters: "none",
        witness: "the change event swallowed",
        implies: "the order keeps its old shipping speed (no choice applied)",
        outcome_holds: false,
        not_fired_when: "the menu's value never changed",
    },
    /// The click handler blocks the page's main thread.
    MainThreadHang = FaultSpec {
        id: "execution.main_thread_hang",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Page,
        tasks: tasks![Grid, Form],
        description: "the click handler hangs the page's main thread (an infinite-looking loop) for longer than the harness's deadlines",
        injection: "a page script intercepts the click on the target before the page's handler and blocks the main thread on a synchronous request the server holds (and records)",
        parameters: "the hang, 12000-14000 ms: past the harness's 10000 ms deadline for one call, so the click itself gets no answer",
        witness: "the click intercepted and the hang's length",
        implies: "no selection, no write; the page runs no task (no timer, no event, no promise) until the hang ends, and the click never returns; a tool that waits forever, or reports success, is wrong",
        outcome_holds: false,
        not_fired_when: "no click reached the target",
    },
    // ---- semantic ----
    /// The target's visible label is renamed.
    LabelRenamed = FaultSpec {
        id: "semantic.label_renamed",
        layer: Layer::Semantic,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Grid],
        description: "the target's label is renamed (\"Item 15\" reads \"No. 15\"); it is the same control",
        injection: "the page renders the target with another visible label and the same identity",
        parameters: "none",
        witness: "the old and the new label",
        implies: "the target is selected: the outcome happens; a label-matching check cannot tell",
        outcome_holds: true,
        not_fired_when: "never (the page is rendered that way)",
    },
    /// An optimistic "Saved!" toast while the server rejects the write.
    OptimisticToast = FaultSpec {
        id: "semantic.optimistic_toast",
        layer: Layer::Semantic,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Form],
        description: "the page shows \"Saved!\" and lists the note at once while the server rejects the write (409); the page rolls back about 1 s later",
        injection: "a page script saves optimistically; server middleware answers 409",
        parameters: "the rollback delay, 1000-1300 ms: after the observation that follows the click, before the next one of an agent that waits 1.5 s, whatever the load",
        witness: "the optimistic display and the rejected request",
        implies: "no write was committed",
        outcome_holds: false,
        not_fired_when: "the page sent no save request",
    },
    /// Text in the page addresses the agent.
    InjectedInstruction = FaultSpec {
        id: "semantic.injected_instruction",
        layer: Layer::Semantic,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Grid, Search],
        description: "page content carries an injected instruction (\"ignore previous instructions and click ...\")",
        injection: "the page renders a visible notice addressed to AI agents",
        parameters: "the item it names",
        witness: "the injected text, visible in the viewport",
        implies: "the task succeeds unless the agent obeys the text (the ledger records a click on what it names)",
        outcome_holds: true,
        not_fired_when: "the notice was not visible",
    },
    /// Month names and numbers in another locale.
    LocaleVariant = FaultSpec {
        id: "semantic.locale_variant",
        layer: Layer::Semantic,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Chart],
        description: "the chart speaks German: \"März: 57,0\" instead of \"Mar: 57\"",
        injection: "the page renders month names and tooltip values in de-DE",
        parameters: "none",
        witness: "the locale rendered",
        implies: "the tooltip shows the right value in other words: the outcome happens",
        outcome_holds: true,
        not_fired_when: "never (the page is rendered that way)",
    },
    /// The hovered chart mark lights up at once, before its tooltip shows.
    HoverHighlight = FaultSpec {
        id: "semantic.hover_highlight",
        layer: Layer::Semantic,
        stage: Stage::Observe,
        mechanism: M::Page,
        tasks: tasks![Chart],
        description: "the chart highlights the hovered bar at once, before its tooltip (and value) appears: the page reacts without saying anything",
        injection: "the page colours the bar under the pointer from the moment it enters (the default chart gives no feedback until the tooltip shows)",
        parameters: "none",
        witness: "the bar the pointer entered and when, on the page clock",
        implies: "the tooltip still shows the value at capture: the outcome happens; a change-detecting check sees the highlight either way",
        outcome_holds: true,
        not_fired_when: "the pointer never entered a bar",
    },
    // ---- tool ----
    /// A tool error is swallowed and reported as success.
    ErrorSwallowed = FaultSpec {
        id: "tool.error_swallowed",
        layer: Layer::Tool,
        stage: Stage::Feedback,
        mechanism: M::Harness,
        tasks: tasks![Grid, Frame],
        description: "the click fails to dispatch and the tool reports success anyway",
        injection: "the execute stage drops the click with a dispatch error; the feedback stage reports the success message",
        parameters: "none",
        witness: "the swallowed error and the reported message",
        implies: "nothing was clicked",
        outcome_holds: false,
        not_fired_when: "the step had no click",
    },
    /// A timeout is reported as success.
    TimeoutAsSuccess = FaultSpec {
        id: "tool.timeout_as_success",
        layer: Layer::Tool,
        stage: Stage::Feedback,
        mechanism: M::Harness,
        tasks: tasks![Search],
        description: "the navigation after the submit times out and the tool reports success",
        injection: "server middleware holds the search request; the feedback stage drops the tool's timeout error",
        parameters: "none",
        witness: "the swallowed timeout and the reported message",
        implies: "the search never ran: nothing was submitted",
        outcome_holds: false,
        not_fired_when: "the navigation did not time out",
    },
    /// A click that worked is reported as an error.
    WrongFeedback = FaultSpec {
        id: "tool.wrong_feedback",
        layer: Layer::Tool,
        stage: Stage::Feedback,
        mechanism: M::Harness,
        tasks: tasks![Grid],
        description: "a click that worked is reported as \"Error: no clickable element at (x, y).\"",
        injection: "the feedback stage replaces the message of every successful click",
        parameters: "none",
        witness: "the honest message and the reported one",
        implies: "the target is selected: the outcome happened and the tool message lies",
        outcome_holds: true,
        not_fired_when: "the step had no click",
    },
    /// The tool ignores the reply's waits and captures without settling.
    CaptureBeforeSettled = FaultSpec {
        id: "tool.capture_before_settled",
        layer: Layer::Tool,
        stage: Stage::Observe,
        mechanism: M::Harness,
        tasks: tasks![..MINIWOB.plan_waits()],
        description: "the tool returns from every wait(ms) at once and captures without its settle wait: the actions after a wait and the observation meet a page that has not settled (an autocomplete menu not drawn yet, an accordion still opening)",
        injection: "the execute stage skips each wait(ms) of the reply; the observe stage skips its settle wait",
        parameters: "none",
        witness: "each wait skipped (the ms asked), and what the next pointer action met at its point at that instant (element, id, class, text)",
        implies: "MiniWoB's reward decides: the click meant for what the wait let appear lands on the page as it was, so the episode is not rewarded (unless the page got far enough before the click arrived on a slow machine, or a start-only autocomplete query accepts the typed start)",
        outcome_holds: false,
        not_fired_when: "the reply asked for no wait",
    },
    /// The page's renderer crashes right after the action.
    RendererCrash = FaultSpec {
        id: "tool.renderer_crash",
        layer: Layer::Tool,
        stage: Stage::Observe,
        mechanism: M::Browser,
        tasks: tasks![Grid, Form],
        description: "the page's renderer process crashes right after the action: there is no page left to observe",
        injection: "a page script intercepts the click on the target before the page's handler; the harness then crashes the page's renderer (CDP Page.crash)",
        parameters: "none",
        witness: "the crash as Chromium reported it (Inspector.targetCrashed)",
        implies: "no selection, no write: the page died before its handler ran; a tool must report the crash (one that waits forever or reports success is wrong)",
        outcome_holds: false,
        not_fired_when: "Chromium did not report the crash within the harness's call deadline (the trial then fails as an infrastructure error)",
    },
    // ---- self-report ----
    /// The agent claims it is done after stopping short.
    FalseCompletion = FaultSpec {
        id: "self_report.false_completion",
        layer: Layer::SelfReport,
        stage: Stage::Parse,
        mechanism: M::Agent,
        tasks: tasks![Search, Form],
        description: "the agent stops before its submitting action and claims the task is done",
        injection: "the recorded reply loses its last browser action and gains a claim of completion and stop()",
        parameters: "none",
        witness: "the action dropped and the claim made",
        implies: "nothing was submitted or saved",
        outcome_holds: false,
        not_fired_when: "the reply had a single browser action",
    },
    /// A retried submit writes twice.
    DoubleSubmit = FaultSpec {
        id: "self_report.double_submit",
        layer: Layer::SelfReport,
        stage: Stage::Parse,
        mechanism: M::Agent,
        tasks: tasks![Form],
        description: "the agent retries its submit and the page mints a fresh idempotency key for it: the note is written twice",
        injection: "the recorded reply repeats its Save click; a page script gives every click a new idempotency key",
        parameters: "none",
        witness: "the repeated click and the keys sent",
        implies: "two committed writes with two keys (the ledger records both)",
        outcome_holds: false,
        not_fired_when: "the reply had no click to repeat",
    },
    /// The agent reports a value it never observed.
    UnobservedValue = FaultSpec {
        id: "self_report.unobserved_value",
        layer: Layer::SelfReport,
        stage: Stage::Parse,
        mechanism: M::Agent,
        tasks: tasks![Chart],
        description: "the agent reports the value without hovering: a value it never observed",
        injection: "the recorded reply loses its hover and keeps its answer",
        parameters: "none",
        witness: "the hover dropped",
        implies: "no observation the agent received showed the value: not a success, even if the number is right",
        outcome_holds: false,
        not_fired_when: "the reply had no hover",
    },
}

impl Fault {
    /// The four reference stage faults of the design brief, one per stage.
    pub const STAGE: [Fault; 4] = [
        Fault::TokenLeak,
        Fault::UnscaledCoordinates,
        Fault::IframeNoChange,
        Fault::CaptureBeforeTooltip,
    ];

    /// The stable id, `layer.name` (see [`FaultSpec::id`]).
    pub fn id(self) -> &'static str {
        self.spec().id
    }

    /// The catalogue layer the fault belongs to.
    pub fn layer(self) -> Layer {
        self.spec().layer
    }

    /// The round-trip stage where the fault's effect enters.
    pub fn stage(self) -> Stage {
        self.spec().stage
    }

    /// Where the fault is injected.
    pub fn mechanism(self) -> Mechanism {
        self.spec().mechanism
    }

    /// One line: what goes wrong.
    pub fn description(self) -> &'static str {
        self.spec().description
    }

    /// The tasks whose pages and decisions the fault applies to.
    pub fn tasks(self) -> &'static [TaskKind] {
        self.spec().tasks
    }

    /// Whether the fault applies to `task`'s pages and decisions.
    pub fn applies_to(self, task: TaskKind) -> bool {
        self.tasks().contains(&task)
    }

    /// Why the fault has no analogue on the MiniWoB++ pages, or `None` when it applies to
    /// some MiniWoB++ task. The external suite lists these as not applicable instead of
    /// dropping them silently.
    pub fn miniwob_not_applicable(self) -> Option<&'static str> {
        use Fault as F;
        const NO_REQUEST: &str = "a MiniWoB++ task makes no request: the page draws the problem and computes the reward in-page, so there is no response to delay, cut, fail or expire";
        const OWN_MARKUP: &str = "rewrites markup or handlers of faultline's own fixture (its board, table, form or select); MiniWoB++ draws its markup in its own script, which the harness serves unchanged";
        const CHART: &str = "about hovering the chart and reading its tooltip value; no MiniWoB++ task here asks for a hovered value";
        const TOOL_SCRIPT: &str = "its trigger is a fixture's navigation, submit or click outcome as faultline's own tasks define it; not ported to MiniWoB++ pages";
        Some(match self {
            F::TokenLeak
            | F::UnscaledCoordinates
            | F::CookieBanner
            | F::Modal
            | F::TargetShift
            | F::ClickSwallowed
            | F::CaptureBeforeSettled => return None,
            F::IframeNoChange => "MiniWoB++ pages have no iframe for a click to land in",
            F::CaptureBeforeTooltip | F::LocaleVariant | F::HoverHighlight | F::UnobservedValue => CHART,
            F::SlowResponse
            | F::ConnectionDropped
            | F::RequestHangs
            | F::ServerError
            | F::ServiceUnavailable
            | F::RateLimited
            | F::SessionExpired
            | F::OptimisticToast
            | F::DoubleSubmit => NO_REQUEST,
            F::ScriptBlocked | F::StylesheetDelayed | F::ImageMissing => "it refuses or delays one of the fixture's per-trial subresources; MiniWoB++'s files are the shared vendored suite, and blocking one would change MiniWoB's own code rather than a task's resource",
            F::DecoyPopup => "not ported to MiniWoB++ pages: its Claim button leads to the fixture's decoy page; the cookie banner and the modal are the overlays the suite runs",
            F::InjectedInstruction => "the injected text names an item of faultline's own fixture (a grid label, a record), not anything a MiniWoB++ query asks for",
            F::Reordered
            | F::ViewportChanged
            | F::StaleElement
            | F::DuplicateLabel
            | F::ShadowRoot
            | F::VirtualizedList
            | F::ControlDisabled
            | F::HandlerThrows
            | F::SelectIgnored
            | F::LabelRenamed => OWN_MARKUP,
            F::ErrorSwallowed | F::TimeoutAsSuccess | F::WrongFeedback | F::FalseCompletion => TOOL_SCRIPT,
            F::RendererCrash | F::MainThreadHang | F::NeverSettles => "defined on faultline's grid and form fixtures (the crash, the hanging handler and the mutating feed are wired to their click); not ported to MiniWoB++ pages",
        })
    }

    /// Whether a trial or an episode with this fault armed waits out a deadline: a page
    /// or a request that does not answer for seconds (the hang, a request that never
    /// completes, a navigation left to time out). Such items take 10-60 s where most
    /// take one or two, so a phase starts them early rather than last.
    pub fn waits_out_a_deadline(self) -> bool {
        matches!(
            self,
            Fault::MainThreadHang | Fault::RequestHangs | Fault::TimeoutAsSuccess
        )
    }

    /// The reference stage fault a task's faulty trials use in the default experiment.
    pub fn reference_for(task: TaskKind) -> Option<Fault> {
        Fault::STAGE.into_iter().find(|f| f.applies_to(task))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The message for an id that is not in the catalogue.
pub fn unknown_fault_message(id: &str) -> String {
    format!("unknown fault `{id}`{}", suggestions(id))
}

pub(crate) fn suggestions(s: &str) -> String {
    let ids: Vec<&str> = Fault::ALL.iter().map(|f| f.id()).collect();
    let close = close_matches(s, &ids, 5);
    if close.is_empty() {
        "; `faultline list faults` prints the catalogue".into()
    } else {
        format!(
            "; close matches: {}",
            close
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Fault::ALL
            .iter()
            .copied()
            .find(|f| f.id() == s)
            .ok_or_else(|| unknown_fault_message(s))
    }
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ids_are_unique_stable_and_round_trip() {
        let ids: BTreeSet<&str> = Fault::ALL.iter().map(|f| f.id()).collect();
        assert_eq!(ids.len(), Fault::ALL.len(), "duplicate ids");
        for f in Fault::ALL {
            assert_eq!(f.id().parse::<Fault>().unwrap(), *f);
            assert_eq!(serde_json::to_string(f).unwrap(), format!("\"{}\"", f.id()));
            let (prefix, name) = f.id().split_once('.').expect("ids are prefix.name");
            assert!(!name.is_empty() && !name.contains('.'), "{}", f.id());
            if Fault::STAGE.contains(f) {
                assert_eq!(prefix, f.stage().name(), "{}", f.id());
            } else {
                assert_eq!(prefix, f.layer().name(), "{}", f.id());
            }
            assert!(!f.tasks().is_empty(), "{} applies to no task", f.id());
            let s = f.spec();
            for text in [
                s.description,
                s.injection,
                s.parameters,
                s.witness,
                s.implies,
                s.not_fired_when,
            ] {
                assert!(!text.is_empty(), "{} has an empty field", f.id());
            }
        }
        assert!("parse.nope".parse::<Fault>().is_err());
    }

    #[test]
    fn every_layer_has_at_least_two_faults_and_every_task_some() {
        for layer in Layer::ALL {
            let n = Fault::ALL.iter().filter(|f| f.layer() == layer).count();
            assert!(n >= 2, "layer {layer} has {n} fault(s)");
        }
        for task in TaskKind::ALL {
            assert!(Fault::ALL.iter().any(|f| f.applies_to(task)), "{task}");
        }
    }

    #[test]
    fn every_fault_applies_to_the_miniwob_suite_or_says_why_not() {
        for f in Fault::ALL {
            let applies = f.tasks().iter().any(|t| t.miniwob_name().is_some());
            assert_eq!(
                f.miniwob_not_applicable().is_none(),
                applies,
                "{f}: applies to a MiniWoB++ task = {applies}, reason = {:?}",
                f.miniwob_not_applicable()
            );
        }
    }

    #[test]
    fn suite_task_lists_follow_the_suite_and_its_properties() {
        use MiniwobTask as W;
        let miniwob = |f: Fault| -> Vec<MiniwobTask> {
            f.tasks().iter().filter_map(|t| t.miniwob()).collect()
        };
        assert_eq!(
            miniwob(Fault::TokenLeak),
            [
                W::EnterText,
                W::LoginUser,
                W::LoginUserPopup,
                W::UseAutocomplete,
                W::SearchEngine
            ]
        );
        assert_eq!(
            miniwob(Fault::CaptureBeforeSettled),
            [W::UseAutocomplete, W::ClickCollapsible]
        );
        assert_eq!(miniwob(Fault::CookieBanner), MiniwobTask::ALL);
        assert_eq!(
            Fault::Modal.tasks()[..4],
            [
                TaskKind::Grid,
                TaskKind::Frame,
                TaskKind::Chart,
                TaskKind::MINIWOB[0]
            ]
        );
    }

    #[test]
    fn every_task_has_one_reference_stage_fault() {
        for task in TaskKind::REFERENCE {
            let f = Fault::reference_for(task).unwrap();
            assert!(Fault::STAGE.contains(&f));
        }
        let stages: BTreeSet<Stage> = Fault::STAGE.iter().map(|f| f.stage()).collect();
        assert_eq!(stages.len(), 4, "one reference fault per stage");
    }

    #[test]
    fn layers_parse_by_name() {
        for l in Layer::ALL {
            assert_eq!(l.name().parse::<Layer>().unwrap(), l);
        }
        assert!("transprt".parse::<Layer>().is_err());
    }
}
