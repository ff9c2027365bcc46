//! The agent's action round trip as four explicit stages, each in its own module and
//! each with a fault hook:
//!
//! 1. [`parse`]: reply text -> typed actions (chat special tokens are stripped first);
//! 2. [`execute`]: actions -> browser input events (points scaled from the space the
//!    model saw to the viewport);
//! 3. [`feedback`]: what the tool reports back about what it did;
//! 4. [`observe`]: after a settle wait, a screenshot at image size + the visible text of
//!    every frame, captured at the same instant.
//!
//! [`RoundTrip::act`] is the whole of the sequence; each stage is a named unit it calls
//! in order. The armed fault ([`FaultPlan`]) is offered every hook; it acts only at its
//! own and leaves a [`Witness`] when it changed something (the first witness of a step
//! is kept, in stage order). The round trip never reads the ledger.

pub mod execute;
pub mod feedback;
pub mod observe;
pub mod parse;

pub use execute::Executed;
pub use feedback::Feedback;
pub use observe::EarlyObservation;
pub use parse::{parse_stage, ReplyError, SPECIAL_TOKENS};
// The timing settings live in their own module (the browser reads them too); kept
// reachable here for the paths that name them through the round trip.
pub use crate::engine::timing::{StableSettle, Timing};

use crate::engine::browser::TrialPage;
use crate::engine::cost::{Span, Stage};
use crate::engine::liveness::{InfraFailure, InfraKind};
use crate::engine::protocol::ArmedPage;
use anyhow::Result;
use faultline_devtools::fault::ProtocolFault;
use faultline_devtools::sessions::SessionFaults;
use faultline_faults::{BeforeAct, FaultPlan, Witness};
use faultline_policies::{Observation, PageState};
use faultline_tasks::formats::Converted;
use faultline_tasks::{Action, ActionFormat, CoordinateSpace, Layout, Size};
use serde::{Deserialize, Serialize};

/// Everything one step of the round trip did and saw.
pub struct StepOutcome {
    /// Actions after the parse stage (including any parse fault).
    pub actions: Vec<Action>,
    /// Each dispatched action with its viewport point and honest message.
    pub executed: Vec<Executed>,
    /// The tool message the agent and the policies are given (after the feedback hook).
    pub tool_message: String,
    /// What the feedback stage decided the message from, to tell it under another fault.
    pub feedback: Feedback,
    /// The observation after the step (after any observe fault).
    pub after: Observation,
    /// The page state read at the same instant as `after`.
    pub after_state: PageState,
    /// The id of the capture that produced `after`.
    pub after_capture: u64,
    /// The answer the step gave, if any.
    pub answer: Option<String>,
    /// Whether the step asked to stop.
    pub stop: bool,
    /// The fault's witness, when it fired.
    pub witness: Option<Witness>,
}

/// When an observation was captured (page clock of the top document), for the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CaptureMark {
    /// The capture's number within the page, from 0.
    pub id: u64,
    /// The page clock just before the screenshot, in milliseconds.
    pub begin_ms: f64,
    /// The page clock at the DOM read just after the screenshot, in milliseconds.
    pub end_ms: f64,
}

/// The round trip over one trial page (which it owns; a [`crate::engine::Session`]
/// owns the round trip).
pub struct RoundTrip {
    /// The trial page the round trip drives.
    pub page: TrialPage,
    /// The fault acting in the round trip's stages (`None` on a working trial).
    pub fault: Option<FaultPlan>,
    /// The screenshot size the model sees; observations are captured at it.
    pub image: Size,
    /// The round trip's waits.
    pub timing: Timing,
    /// Every capture so far; the session hands them to the ledger.
    pub marks: Vec<CaptureMark>,
    /// The longest `wait(ms)` a reply may ask for (longer waits are cut to it).
    pub max_wait_ms: u64,
    /// The renderer-crash fault's witness, until a step reports it.
    crash_witness: Option<Witness>,
    /// The layout on the page (for faults whose parameters depend on it).
    layout: Layout,
    before_act_done: bool,
    /// Whether the execute stage hit-tests each click (the iframe feedback fault's
    /// condition), for the armed fault or for another one told from this page's feedback.
    hit_test_clicks: bool,
    /// Whether the site is still answering the page's requests (see
    /// [`RoundTrip::with_site_probe`]); without one, a load past its timeout is the page's.
    site_busy: Option<SiteProbe>,
    /// The fault armed on the page's DevTools session, when it is on the protocol.
    protocol: Option<ArmedPage>,
    /// A rider whose fault acts only on the capture's timing, which this page captures
    /// early for ([`RoundTrip::step_with_early_rider`]).
    early_rider: Option<FaultPlan>,
}

/// Asks the fixture server whether it still owes the page a response.
pub type SiteProbe = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

impl RoundTrip {
    /// A round trip over `page`, showing `layout`, with `fault` (if any) armed in its stages.
    pub fn new(
        page: TrialPage,
        layout: &Layout,
        fault: Option<FaultPlan>,
        image: Size,
        timing: Timing,
    ) -> Self {
        RoundTrip {
            page,
            fault,
            image,
            timing,
            marks: Vec::new(),
            max_wait_ms: crate::engine::timing::MAX_WAIT_MS,
            crash_witness: None,
            layout: layout.clone(),
            before_act_done: false,
            hit_test_clicks: fault.is_some_and(|f| f.needs_iframe_hit_test()),
            site_busy: None,
            protocol: None,
            early_rider: None,
        }
    }

    /// Arms the fault's protocol side on the page's own DevTools session, when the fault
    /// is on the protocol and the browser connection goes through the proxy (`faults`).
    /// A page whose messages a protocol fault may change is not reused after its trial.
    pub fn with_protocol(mut self, faults: Option<&std::sync::Arc<SessionFaults>>) -> Self {
        if let (Some(plan), Some(faults)) = (&self.fault, faults) {
            self.protocol = ArmedPage::arm(plan, self.page.session_id(), faults);
            if self.protocol.is_some() {
                self.page.retire();
            }
        }
        self
    }

    /// The protocol fault's witness, when it changed a message; it is disarmed from here
    /// on (the page's end — its reset, its closing — is not the trial's).
    pub fn protocol_witness(&mut self) -> Option<Witness> {
        self.protocol.take().and_then(|p| p.witness())
    }

    /// The protocol fault that changed the page's messages, if one did.
    fn protocol_fired(&self) -> Option<ProtocolFault> {
        self.protocol
            .as_ref()
            .filter(|p| p.fired())
            .map(ArmedPage::fault)
    }

    /// Whether the page's renderer is gone because the armed fault crashed it (the
    /// renderer-crash fault, or `Page.crash` sent by the proxy after an input).
    pub fn crashed_by_fault(&self) -> bool {
        self.page.crashed().is_some()
            && (self.fault.is_some_and(|f| f.crashes_renderer())
                || matches!(self.protocol_fired(), Some(ProtocolFault::CrashAfterInput)))
    }

    /// Makes the execute stage hit-test each click whether or not the armed fault needs
    /// it, so the step's [`Feedback`] can tell the message under a fault that does (a
    /// read before the click; the page is not touched).
    pub fn hit_test_clicks(&mut self) {
        self.hit_test_clicks = true;
    }

    /// Lets the observe stage ask the site whether a page slow to load is waiting on the
    /// site (a delayed or hung response: the load error is reported at the navigation
    /// timeout, as a harness would) or only on the machine (the site has answered: the
    /// wait goes on, up to the navigation's liveness deadline, so CPU load or a frozen
    /// renderer cannot turn into a load error; see [`TrialPage::wait_loaded`]).
    pub fn with_site_probe(mut self, probe: SiteProbe) -> Self {
        self.site_busy = Some(probe);
        self
    }

    /// What the environment does between the observation and the first action (a
    /// layout shift, a viewport change), with its witness when the harness made it.
    async fn before_act(&mut self) -> Result<Option<Witness>> {
        let Some(fault) = &self.fault else {
            return Ok(None);
        };
        match fault.before_act(self.page.viewport(), &self.layout) {
            None => Ok(None),
            Some(BeforeAct::PageHook) => {
                self.page
                    .eval("window.__fl_before_act ? (window.__fl_before_act(), true) : false")
                    .await?;
                Ok(None)
            }
            Some(BeforeAct::Viewport { width, height }) => {
                let before = self.page.viewport();
                let after = Size::new(width, height);
                // Behind the harness's back: its own idea of the viewport stays as it was.
                self.page.emulate_viewport(after).await?;
                Ok(fault.viewport_witness(before, after))
            }
        }
    }

    /// Captures an observation without acting (the "before" picture).
    pub async fn observe_now(&mut self) -> Result<(Observation, PageState)> {
        Ok(self.capture().await?.into_observation())
    }

    /// The id of the newest capture, if any.
    pub fn last_capture(&self) -> Option<u64> {
        self.marks.last().map(|m| m.id)
    }

    /// The parse stage alone: `reply` in `format` -> actions in the format's default
    /// space, the armed fault's parse hook applied (so a caller can admit the actions —
    /// a budget, a terminal answer — before any reaches the page).
    pub fn parse(
        &self,
        reply: &str,
        format: ActionFormat,
    ) -> Result<(Converted, Option<Witness>), ReplyError> {
        parse_stage(reply, format, self.fault.as_ref())
    }

    /// Runs one reply in `format` through parse -> execute -> feedback -> observe. Its
    /// points are in `space` when given (a decision's recorded space), else in the
    /// format's default space.
    pub async fn step(
        &mut self,
        reply: &str,
        format: ActionFormat,
        space: Option<CoordinateSpace>,
    ) -> Result<Result<StepOutcome, ReplyError>> {
        let (converted, parse_witness) = match self.parse(reply, format) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let space = space.unwrap_or(converted.space);
        self.act(converted.actions, space, parse_witness)
            .await
            .map(Ok)
    }

    /// Runs already parsed actions, whose points are in `space`, through execute ->
    /// feedback -> observe. `parse_witness` is the parse stage's witness for them, if any.
    ///
    /// When the armed fault broke the page (the renderer-crash fault crashed it, the
    /// main-thread-hang fault hung it), the step still ends: the tool reports the error
    /// and the observation is a blank image with no page state. That is the fault's
    /// measured effect. A page that breaks with no such fault armed is an
    /// infrastructure failure: the error is returned (the item is retried).
    pub async fn act(
        &mut self,
        actions: Vec<Action>,
        space: CoordinateSpace,
        parse_witness: Option<Witness>,
    ) -> Result<StepOutcome> {
        match self
            .act_on_page(actions.clone(), space, parse_witness)
            .await
        {
            Err(e) => match self.broken_by_fault(&e) {
                Some(message) => Ok(self.broken_outcome(actions, message)),
                None => Err(e),
            },
            done => done,
        }
    }

    /// The error's message when it is the armed fault's effect on the page (a crash
    /// the renderer-crash fault caused, a hang the main-thread-hang fault caused, or a
    /// crash or a held answer the proxy caused for a protocol fault that fired).
    fn broken_by_fault(&self, e: &anyhow::Error) -> Option<String> {
        let fault = self.fault.as_ref()?;
        let f = InfraFailure::find(e)?;
        let protocol = self.protocol_fired();
        match f.kind {
            InfraKind::RendererCrashed
                if fault.crashes_renderer()
                    || matches!(protocol, Some(ProtocolFault::CrashAfterInput)) =>
            {
                Some(
                    "Error: the page crashed (its renderer process is gone); nothing could be observed."
                        .to_string(),
                )
            }
            InfraKind::Unresponsive
                if fault.hangs_page()
                    || matches!(protocol, Some(ProtocolFault::HeldAnswer { .. })) =>
            {
                Some(format!(
                    "Error: the page stopped responding ({}); nothing could be observed.",
                    f.reason
                ))
            }
            _ => None,
        }
    }

    /// The step's outcome on a page the armed fault broke: the error as the tool's
    /// message, a blank observation and no page state.
    fn broken_outcome(&mut self, actions: Vec<Action>, message: String) -> StepOutcome {
        let answer = actions.iter().rev().find_map(|a| match a {
            Action::Answer { value } => Some(value.clone()),
            _ => None,
        });
        StepOutcome {
            actions,
            executed: Vec::new(),
            feedback: Feedback::fixed(&message),
            tool_message: message,
            after: Observation {
                png: blank_png(self.image),
                size: self.image,
                text: String::new(),
            },
            after_state: PageState {
                url: String::new(),
                frames: Vec::new(),
            },
            after_capture: self.last_capture().unwrap_or(0),
            answer,
            stop: false,
            // A protocol fault's witness is the proxy's, taken when the session ends.
            witness: self.crash_witness.take(),
        }
    }

    /// Runs one reply like [`RoundTrip::step`] on a page that also serves `rider`, a
    /// trial of the same decision whose fault acts only on the capture's timing
    /// ([`faultline_faults::Fault::acts_only_on_capture_timing`]): after the actions,
    /// the rider's observation is captured as the rider's fault alone would capture it
    /// (the page holding its tooltip until then, as under that fault), and the step
    /// stops there; [`RoundTrip::finish_step`] then observes for the armed trial, its
    /// settle counted from the end of the actions. No early observation when the reply
    /// did not hover: the rider's fault had nothing to act on, and its observation is
    /// the armed trial's.
    ///
    /// The armed fault must act on the page no differently from the working trial (none,
    /// or one that acts only on the feedback): the page is the armed trial's until the
    /// early capture and the rider's after it.
    pub async fn step_with_early_rider(
        &mut self,
        reply: &str,
        format: ActionFormat,
        space: Option<CoordinateSpace>,
        rider: FaultPlan,
    ) -> Result<Result<(Acted, Option<EarlyObservation>), ReplyError>> {
        assert!(
            self.fault.is_none_or(|f| f.fault.acts_only_on_feedback()),
            "a page that captures early for a rider must act as the working trial's does"
        );
        let (converted, parse_witness) = match self.parse(reply, format) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let space = space.unwrap_or(converted.space);
        self.early_rider = Some(rider);
        let mut acted = self
            .act_only(converted.actions, space, parse_witness)
            .await?;
        let early = if acted.execution.hovered {
            Some(
                self.observe_early(&rider, &acted.actions, &mut acted.execution)
                    .await?,
            )
        } else {
            None
        };
        Ok(Ok((acted, early)))
    }

    /// Ends a step begun by [`RoundTrip::step_with_early_rider`]: the armed trial's
    /// settle, feedback and observation.
    pub async fn finish_step(&mut self, acted: Acted) -> Result<StepOutcome> {
        self.observe_acted(acted).await
    }

    async fn act_on_page(
        &mut self,
        actions: Vec<Action>,
        space: CoordinateSpace,
        parse_witness: Option<Witness>,
    ) -> Result<StepOutcome> {
        let acted = self.act_only(actions, space, parse_witness).await?;
        self.observe_acted(acted).await
    }

    /// The execute stage and what follows it before the settle: the environment's
    /// change before the first action, the actions, the renderer-crash fault.
    async fn act_only(
        &mut self,
        actions: Vec<Action>,
        space: CoordinateSpace,
        parse_witness: Option<Witness>,
    ) -> Result<Acted> {
        let mut witness = parse_witness;
        let span = Span::start(Stage::Actions);
        if !self.before_act_done {
            self.before_act_done = true;
            witness = witness.or(self.before_act().await?);
        }
        let mut execution = self.execute(&actions, space).await?;
        witness = witness.or(execution.witness.take());
        // The renderer-crash fault: the page's renderer dies right after the action.
        if let Some(fault) = self.fault.filter(|f| f.crashes_renderer()) {
            if actions.iter().any(Action::is_browser_action) && self.page.crashed().is_none() {
                self.page.crash_renderer().await?;
                let reported = self.page.crashed().unwrap_or_default();
                self.crash_witness = fault.crash_witness(&reported);
            }
        }
        span.end(&mut self.page.costs);
        // An agent's `wait` is a timer, not input: it counts as settling.
        self.page
            .costs
            .move_wall(Stage::Actions, Stage::Settle, execution.waited_ms as f64);
        if let Some(fault) = &self.fault {
            let settle_skipped = self.settle_ms(&actions, &execution);
            witness =
                witness.or(fault.skipped_waits_witness(&execution.skipped_waits, settle_skipped));
        }
        Ok(Acted {
            actions,
            execution,
            witness,
            at: tokio::time::Instant::now(),
        })
    }

    /// The settle, feedback and observe stages after [`RoundTrip::act_only`].
    async fn observe_acted(&mut self, acted: Acted) -> Result<StepOutcome> {
        let Acted {
            actions,
            execution,
            mut witness,
            at,
        } = acted;
        let span = Span::start(Stage::Settle);
        let load_error = self.settle(&actions, &execution, at).await?;
        span.end(&mut self.page.costs);
        let feedback = Feedback::of(&actions, &execution, load_error.as_deref());
        let (tool_message, feedback_witness) = feedback.report(self.fault.as_ref());
        witness = witness.or(feedback_witness);
        let capture = self.capture().await?;
        let span = Span::start(Stage::Witness);
        if execution.holds_tooltip {
            self.page.eval(execute::RELEASE_TOOLTIP).await?;
        }
        witness = witness.or(self
            .capture_witness(execution.hover_clock, &capture)
            .await?);
        span.end(&mut self.page.costs);
        let after_capture = capture.id;
        let (after, after_state) = capture.into_observation();
        Ok(StepOutcome {
            actions,
            executed: execution.executed,
            tool_message,
            feedback,
            after,
            after_state,
            after_capture,
            answer: execution.answer,
            stop: execution.stop,
            witness,
        })
    }
}

/// A step's actions done, its observation still to come (see
/// [`RoundTrip::step_with_early_rider`]).
pub struct Acted {
    actions: Vec<Action>,
    execution: execute::Execution,
    witness: Option<Witness>,
    /// When the actions ended: the settle runs from here.
    at: tokio::time::Instant,
}

impl Acted {
    /// The answer the step gave, if any.
    pub fn answer(&self) -> Option<&str> {
        self.execution.answer.as_deref()
    }
}

/// A blank (black) PNG of `size`: the observation of a page that is gone.
fn blank_png(size: Size) -> Vec<u8> {
    let img = image::RgbImage::new(size.width, size.height);
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("encoding a blank PNG in memory");
    out.into_inner()
}
