//! The table: one line per fault, in report order, naming its catalogue entry.
//!
//! `faults!` is a single declarative table: one invocation makes the [`Fault`] enum,
//! [`Fault::ALL`] (the invocation's order is the report order) and [`Fault::spec`]. A
//! `macro_rules!` macro cannot gather variants from several invocations into one enum,
//! so the table itself stays in this one file, one short line per fault; the entries it
//! names (each a [`FaultSpec`] constant) live one file per layer, with the four
//! reference stage faults in `stage.rs`. Adding a fault is a constant in its layer's
//! file (its [`source`](FaultSpec::source) included, with its row in the README's
//! provenance table), a line here and its arm in `Fault::miniwob_not_applicable`.

use super::FaultSpec;

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
/// suite (in `MiniwobTask::ALL` order), either whole (`..MINIWOB`) or the suite tasks
/// with a property (`..MINIWOB.types_text()`, see [`::faultline_tasks::MiniwobTask`]), so a new suite task
/// joins every fault that applies to it without an edit here.
macro_rules! tasks {
    ($($fixture:ident,)* ..MINIWOB $(.$property:ident())?) => {{
        const FIXTURE: &[::faultline_tasks::TaskKind] = &[$(::faultline_tasks::TaskKind::$fixture),*];
        const fn keep(_t: ::faultline_tasks::MiniwobTask) -> bool {
            true $(&& _t.$property())?
        }
        const LEN: usize = {
            let mut n = FIXTURE.len();
            let mut i = 0;
            while i < ::faultline_tasks::MiniwobTask::ALL.len() {
                if keep(::faultline_tasks::MiniwobTask::ALL[i]) {
                    n += 1;
                }
                i += 1;
            }
            n
        };
        const TASKS: [::faultline_tasks::TaskKind; LEN] = {
            let mut tasks = [::faultline_tasks::TaskKind::Search; LEN];
            let mut n = 0;
            while n < FIXTURE.len() {
                tasks[n] = FIXTURE[n];
                n += 1;
            }
            let mut i = 0;
            while i < ::faultline_tasks::MiniwobTask::ALL.len() {
                if keep(::faultline_tasks::MiniwobTask::ALL[i]) {
                    tasks[n] = ::faultline_tasks::TaskKind::Miniwob(::faultline_tasks::MiniwobTask::ALL[i]);
                    n += 1;
                }
                i += 1;
            }
            tasks
        };
        &TASKS
    }};
    ($($fixture:ident),* $(,)?) => {
        &[$(::faultline_tasks::TaskKind::$fixture),*]
    };
}

mod devtools;
mod dom;
mod execution;
mod http;
mod layout;
mod overlay;
mod resource;
mod self_report;
mod semantic;
mod stage;
mod tool;
mod transport;

faults! {
    // ---- the reference stage faults ----
    /// A chat end-of-message token is not stripped and ends up in the typed text.
    TokenLeak = stage::TOKEN_LEAK,
    /// Screenshot-to-viewport scaling is skipped: image points are used as viewport points.
    UnscaledCoordinates = stage::UNSCALED_COORDINATES,
    /// A click that landed inside an iframe is reported as "No change detected."
    IframeNoChange = stage::IFRAME_NO_CHANGE,
    /// The screenshot is captured right after a hover, before the tooltip appears.
    CaptureBeforeTooltip = stage::CAPTURE_BEFORE_TOOLTIP,
    // ---- transport ----
    /// The save request's response is held back past the harness's settle wait.
    SlowResponse = transport::SLOW_RESPONSE,
    /// The results page's connection is closed part way through its body.
    ConnectionDropped = transport::CONNECTION_DROPPED,
    /// The results request is never answered.
    RequestHangs = transport::REQUEST_HANGS,
    // ---- http ----
    /// The results request gets a real 500.
    ServerError = http::SERVER_ERROR,
    /// The results request gets 503 with Retry-After, once.
    ServiceUnavailable = http::SERVICE_UNAVAILABLE,
    /// The save request gets 429 with Retry-After, once.
    RateLimited = http::RATE_LIMITED,
    /// The save request gets 401 and the page redirects to its login page.
    SessionExpired = http::SESSION_EXPIRED,
    // ---- resource ----
    /// The grid's click-handler script is blocked.
    ScriptBlocked = resource::SCRIPT_BLOCKED,
    /// The grid's stylesheet arrives after load: the layout jumps under the click.
    StylesheetDelayed = resource::STYLESHEET_DELAYED,
    /// The form's Save icon is missing.
    ImageMissing = resource::IMAGE_MISSING,
    // ---- overlay ----
    /// A cookie banner covers the target.
    CookieBanner = overlay::COOKIE_BANNER,
    /// A modal's backdrop takes every pointer event.
    Modal = overlay::MODAL,
    /// A tempting popup button sits on the target.
    DecoyPopup = overlay::DECOY_POPUP,
    // ---- layout ----
    /// The content moves between the observation and the action.
    TargetShift = layout::TARGET_SHIFT,
    /// The grid's items are reordered between observation and action.
    Reordered = layout::REORDERED,
    /// The viewport changes between observation and action.
    ViewportChanged = layout::VIEWPORT_CHANGED,
    // ---- dom ----
    /// The target is re-rendered under the press.
    StaleElement = dom::STALE_ELEMENT,
    /// Two controls share the target's label.
    DuplicateLabel = dom::DUPLICATE_LABEL,
    /// The board lives in a closed shadow root.
    ShadowRoot = dom::SHADOW_ROOT,
    /// The orders table is virtualized; the target is not rendered.
    VirtualizedList = dom::VIRTUALIZED_LIST,
    /// A live feed mutates the page continuously: the DOM never settles.
    NeverSettles = dom::NEVER_SETTLES,
    // ---- execution ----
    /// A transparent layer swallows the click.
    ClickSwallowed = execution::CLICK_SWALLOWED,
    /// The target control is disabled.
    ControlDisabled = execution::CONTROL_DISABLED,
    /// The click handler throws.
    HandlerThrows = execution::HANDLER_THROWS,
    /// The select's change never reaches the page's state.
    SelectIgnored = execution::SELECT_IGNORED,
    /// The click handler blocks the page's main thread.
    MainThreadHang = execution::MAIN_THREAD_HANG,
    /// A focus, scroll or selection is undone by the page as soon as it happens.
    EffectUndone = execution::EFFECT_UNDONE,
    /// The model saw the provider's downscaled screenshot; the executor scaled from the sent size.
    ProviderDownscale = execution::PROVIDER_DOWNSCALE,
    /// Device and CSS pixels confused at device scale factor 2 or 3.
    DeviceScaleMismatch = execution::DEVICE_SCALE_MISMATCH,
    /// A window point (page offset by the browser's chrome) dispatched as a viewport point.
    WindowOffset = execution::WINDOW_OFFSET,
    /// A 0-1000 grid read as pixels, or pixels read as a 0-1000 grid.
    NormalisedGridMisread = execution::NORMALISED_GRID_MISREAD,
    /// Mouse coordinates scaled x0.75 on the harness's own DevTools connection.
    DevtoolsScaledPointer = devtools::SCALED_POINTER,
    /// A click's mouseReleased dropped on the harness's own DevTools connection.
    DevtoolsDroppedRelease = devtools::DROPPED_RELEASE,
    /// Mouse coordinates doubled (device pixels of a 2x display) on the harness's connection.
    DevtoolsDevicePixels = devtools::DEVICE_PIXELS,
    /// Mouse coordinates shifted by a window-chrome offset on the harness's connection.
    DevtoolsChromeOffset = devtools::CHROME_OFFSET,
    // ---- semantic ----
    /// The target's visible label is renamed.
    LabelRenamed = semantic::LABEL_RENAMED,
    /// An optimistic "Saved!" toast while the server rejects the write.
    OptimisticToast = semantic::OPTIMISTIC_TOAST,
    /// Text in the page addresses the agent.
    InjectedInstruction = semantic::INJECTED_INSTRUCTION,
    /// Month names and numbers in another locale.
    LocaleVariant = semantic::LOCALE_VARIANT,
    /// The hovered chart mark lights up at once, before its tooltip shows.
    HoverHighlight = semantic::HOVER_HIGHLIGHT,
    // ---- tool ----
    /// A tool error is swallowed and reported as success.
    ErrorSwallowed = tool::ERROR_SWALLOWED,
    /// A timeout is reported as success.
    TimeoutAsSuccess = tool::TIMEOUT_AS_SUCCESS,
    /// A click that worked is reported as an error.
    WrongFeedback = tool::WRONG_FEEDBACK,
    /// The tool ignores the reply's waits and captures without settling.
    CaptureBeforeSettled = tool::CAPTURE_BEFORE_SETTLED,
    /// The page's renderer crashes right after the action.
    RendererCrash = tool::RENDERER_CRASH,
    /// The screenshot after an action answered with the frame from before it.
    DevtoolsStaleScreenshot = devtools::STALE_SCREENSHOT,
    /// The screenshot after an action answered with the frame from before the page settled.
    DevtoolsUnsettledScreenshot = devtools::UNSETTLED_SCREENSHOT,
    /// A DOM read after an action answered with the same read's answer from before it.
    DevtoolsStaleDom = devtools::STALE_DOM,
    /// The first action answered with a protocol error, not delivered.
    DevtoolsProtocolError = devtools::PROTOCOL_ERROR,
    /// Page.crash sent right after the first input.
    DevtoolsCrashAfterInput = devtools::CRASH_AFTER_INPUT,
    /// The first action's answer held back past a per-call deadline.
    DevtoolsHeldAnswer = devtools::HELD_ANSWER,
    // ---- self_report ----
    /// The agent claims it is done after stopping short.
    FalseCompletion = self_report::FALSE_COMPLETION,
    /// A retried submit writes twice.
    DoubleSubmit = self_report::DOUBLE_SUBMIT,
    /// The agent reports a value it never observed.
    UnobservedValue = self_report::UNOBSERVED_VALUE,
}
