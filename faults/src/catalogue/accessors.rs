//! What a fault is, read off its catalogue entry: its id, layer, stage, mechanism and
//! tasks, the reference stage faults ([`Fault::STAGE`]) and the fault for a task.

use super::{Fault, Layer, Mechanism, Stage};
use faultline_tasks::TaskKind;

impl Fault {
    /// The four reference stage faults of the design brief, one per stage.
    pub const STAGE: [Fault; 4] = [
        Fault::TokenLeak,
        Fault::UnscaledCoordinates,
        Fault::IframeNoChange,
        Fault::CaptureBeforeTooltip,
    ];

    /// The stable id, `layer.name` (see [`FaultSpec::id`](crate::FaultSpec::id)).
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
            | F::ProviderDownscale
            | F::DeviceScaleMismatch
            | F::WindowOffset
            | F::NormalisedGridMisread
            | F::CookieBanner
            | F::Modal
            | F::TargetShift
            | F::ClickSwallowed
            | F::CaptureBeforeSettled
            | F::DevtoolsScaledPointer
            | F::DevtoolsDroppedRelease
            | F::DevtoolsDevicePixels
            | F::DevtoolsChromeOffset
            | F::DevtoolsStaleScreenshot
            | F::DevtoolsUnsettledScreenshot
            | F::DevtoolsStaleDom
            | F::DevtoolsProtocolError
            | F::DevtoolsCrashAfterInput
            | F::DevtoolsHeldAnswer => return None,
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
            F::EffectUndone => "defined on faultline's quiet fixture, whose page records its focus, scroll and selection in the ledger; not ported to MiniWoB++ pages",
            F::RendererCrash | F::MainThreadHang | F::NeverSettles => "defined on faultline's grid and form fixtures (the crash, the hanging handler and the mutating feed are wired to their click); not ported to MiniWoB++ pages",
        })
    }

    /// Whether the fault acts on the DevTools protocol (`Mechanism::Devtools`): injected
    /// by the proxy into an external harness's own browser connection, so built-in runs
    /// never select it.
    pub fn on_the_protocol(self) -> bool {
        self.mechanism() == Mechanism::Devtools
    }

    /// Whether the fault draws a parameter from the trial's or episode's seed (its
    /// catalogue entry's `parameters` is other than "none"). Two runs of the same
    /// episode have different seeds, so under such a fault they can differ even for an
    /// agent that always replies alike.
    pub fn draws_parameters(self) -> bool {
        !self.spec().parameters.starts_with("none")
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

    /// Whether the fault acts at the feedback stage alone: it changes the tool's message
    /// (and leaves a witness), while every other hook leaves the trial as the working
    /// trial has it and nothing is drawn from the seed. The page then does exactly what
    /// it does in the working trial of the same decision, so the detection phase runs
    /// both on one page and only the message differs (a test in `plan` checks every
    /// other hook of these faults).
    pub fn acts_only_on_feedback(self) -> bool {
        matches!(self, Fault::IframeNoChange | Fault::WrongFeedback)
    }

    /// Whether the fault acts only on when the observation is captured: it skips the
    /// settle after a hover (and leaves a witness), while every other hook leaves the
    /// trial as the working trial has it and nothing is drawn from the seed. Up to the
    /// hover the page does exactly what it does in the working trial of the same
    /// decision, so the detection phase runs both on one page: the early capture is
    /// taken for this trial, then the working trial's after its settle (a test in `plan`
    /// checks every other hook of these faults).
    pub fn acts_only_on_capture_timing(self) -> bool {
        matches!(self, Fault::CaptureBeforeTooltip)
    }

    /// Whether a detection trial under the fault can ride on its working trial's page:
    /// it acts only on the feedback or only on the capture's timing.
    pub fn rides_on_working_page(self) -> bool {
        self.acts_only_on_feedback() || self.acts_only_on_capture_timing()
    }

    /// The reference stage fault a task's faulty trials use in the default experiment.
    pub fn reference_for(task: TaskKind) -> Option<Fault> {
        Fault::STAGE.into_iter().find(|f| f.applies_to(task))
    }
}
