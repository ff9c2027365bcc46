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
pub use parse::{parse_stage, ReplyError, SPECIAL_TOKENS};

use crate::engine::browser::TrialPage;
use anyhow::Result;
use faultline_faults::{BeforeAct, FaultPlan, Witness};
use faultline_policies::{Observation, PageState};
use faultline_tasks::{Action, ActionFormat, CoordinateSpace, Layout, Size};
use serde::{Deserialize, Serialize};

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
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            settle_ms: 120,
            hover_settle_ms: 1400,
            navigation_timeout_ms: 4000,
        }
    }
}

/// Everything one step of the round trip did and saw.
pub struct StepOutcome {
    /// Actions after the parse stage (including any parse fault).
    pub actions: Vec<Action>,
    pub executed: Vec<Executed>,
    /// The tool message the agent and the policies are given (after the feedback hook).
    pub tool_message: String,
    pub after: Observation,
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
    pub id: u64,
    pub begin_ms: f64,
    pub end_ms: f64,
}

/// The round trip over one trial page (which it owns; a [`crate::engine::Session`]
/// owns the round trip).
pub struct RoundTrip {
    pub page: TrialPage,
    pub fault: Option<FaultPlan>,
    pub image: Size,
    pub timing: Timing,
    /// Every capture so far; the session hands them to the ledger.
    pub marks: Vec<CaptureMark>,
    /// The longest `wait(ms)` a reply may ask for (longer waits are cut to it).
    pub max_wait_ms: u64,
    /// The layout on the page (for faults whose parameters depend on it).
    layout: Layout,
    before_act_done: bool,
}

impl RoundTrip {
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
            max_wait_ms: crate::engine::episode::EpisodeLimits::default().max_wait_ms,
            layout: layout.clone(),
            before_act_done: false,
        }
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
        let c = self.capture().await?;
        Ok((
            Observation {
                png: c.png,
                size: c.size,
                text: c.text,
            },
            c.state,
        ))
    }

    /// The id of the newest capture, if any.
    pub fn last_capture(&self) -> Option<u64> {
        self.marks.last().map(|m| m.id)
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
        let (converted, parse_witness) = match parse_stage(reply, format, self.fault.as_ref()) {
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
    pub async fn act(
        &mut self,
        actions: Vec<Action>,
        space: CoordinateSpace,
        parse_witness: Option<Witness>,
    ) -> Result<StepOutcome> {
        let mut witness = parse_witness;
        if !self.before_act_done {
            self.before_act_done = true;
            witness = witness.or(self.before_act().await?);
        }
        let mut execution = self.execute(&actions, space).await?;
        witness = witness.or(execution.witness.take());
        let load_error = self.settle(&actions, &execution).await?;
        let (tool_message, feedback_witness) = feedback::report(
            self.fault.as_ref(),
            &actions,
            &execution,
            load_error.as_deref(),
        );
        witness = witness.or(feedback_witness);
        let capture = self.capture().await?;
        witness = witness.or(self
            .capture_witness(execution.hover_clock, &capture)
            .await?);
        Ok(StepOutcome {
            actions,
            executed: execution.executed,
            tool_message,
            after: Observation {
                png: capture.png,
                size: capture.size,
                text: capture.text,
            },
            after_state: capture.state,
            after_capture: capture.id,
            answer: execution.answer,
            stop: execution.stop,
            witness,
        })
    }
}
