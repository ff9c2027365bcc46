//! The agent's action round trip as four explicit stages, each with a fault hook:
//!
//! 1. **parse**: reply text -> typed actions (chat special tokens are stripped first);
//! 2. **execute**: actions -> browser input events (image points scaled to the viewport);
//! 3. **feedback**: what the tool reports back about what it did;
//! 4. **observe**: after a settle wait, a screenshot at image size + the visible text of
//!    every frame, captured at the same instant.
//!
//! The armed fault ([`FaultPlan`]) is offered every hook; it acts only at its own and
//! leaves a [`Witness`] when it changed something. The round trip never reads the ledger.

use crate::browser::TrialPage;
use anyhow::Result;
use faultline_faults::{BeforeAct, FaultPlan, FeedbackContext, Witness};
use faultline_policies::{Observation, PageState};
use faultline_tasks::{parse_reply, Action, Layout, Point, Size};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Chat special tokens an honest parse stage strips before parsing.
pub const SPECIAL_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<|endoftext|>",
    "</s>",
];

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

/// One dispatched action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Executed {
    pub action: Action,
    /// The viewport point the event was sent to, for pointer actions.
    pub viewport_point: Option<Point>,
    /// The honest tool message for this action, before any feedback fault.
    pub message: String,
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

/// The parse stage's error (the reply is recorded; the step ends there).
#[derive(Debug, thiserror::Error)]
#[error("parse error: {0}")]
pub struct ReplyError(pub String);

/// The stage where parse happens, exposed for agents and tests.
pub fn parse_stage(
    reply: &str,
    fault: Option<&FaultPlan>,
) -> Result<(Vec<Action>, Option<Witness>), ReplyError> {
    let mut cleaned = reply.to_string();
    for token in SPECIAL_TOKENS {
        cleaned = cleaned.replace(token, "");
    }
    let mut actions = parse_reply(&cleaned).map_err(|e| ReplyError(e.to_string()))?;
    let witness = fault.and_then(|f| f.on_parse(&mut actions));
    Ok((actions, witness))
}

/// When an observation was captured (page clock of the top document), for the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CaptureMark {
    pub id: u64,
    pub begin_ms: f64,
    pub end_ms: f64,
}

/// The round trip over one trial page.
pub struct RoundTrip<'a> {
    pub page: &'a mut TrialPage,
    pub fault: Option<FaultPlan>,
    pub image: Size,
    pub timing: Timing,
    /// Every capture so far; the trial hands them to the ledger.
    pub marks: Vec<CaptureMark>,
    /// The layout on the page (for faults whose parameters depend on it).
    layout: Layout,
    before_act_done: bool,
}

impl<'a> RoundTrip<'a> {
    pub fn new(
        page: &'a mut TrialPage,
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

    async fn capture(&mut self) -> Result<crate::browser::Capture> {
        let c = self.page.capture(self.image).await?;
        self.marks.push(CaptureMark {
            id: c.id,
            begin_ms: c.begin_ms,
            end_ms: c.end_ms,
        });
        Ok(c)
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

    /// Runs one reply through parse -> execute -> feedback -> observe.
    pub async fn step(&mut self, reply: &str) -> Result<Result<StepOutcome, ReplyError>> {
        let (actions, parse_witness) = match parse_stage(reply, self.fault.as_ref()) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        self.act(actions, parse_witness).await.map(Ok)
    }

    /// Runs already parsed actions through execute -> feedback -> observe.
    /// `parse_witness` is the parse stage's witness for them, if any.
    pub async fn act(
        &mut self,
        actions: Vec<Action>,
        parse_witness: Option<Witness>,
    ) -> Result<StepOutcome> {
        let mut witness = parse_witness;
        if !self.before_act_done {
            self.before_act_done = true;
            witness = witness.or(self.before_act().await?);
        }
        let mut executed = Vec::new();
        // Per action: the honest message, and the one it would have been on success.
        let mut messages: Vec<(String, String)> = Vec::new();
        let mut answer = None;
        let mut stop = false;
        let mut last_pointer_into_iframe = false;
        let mut last_click = None;
        let mut hovered = false;
        // The page clock at the hover, read only when the observe fault needs it.
        let mut hover_clock: Option<f64> = None;
        let mut waited_ms = 0u64;

        for action in &actions {
            // --- execute stage ---
            let viewport_point = match action.point() {
                Some(p) => {
                    let (vp, w) = match &self.fault {
                        Some(f) => f.on_execute(p, self.image, self.page.viewport()),
                        None => (p.scale(self.image, self.page.viewport()), None),
                    };
                    witness = witness.or(w);
                    Some(vp)
                }
                None => None,
            };
            let dispatch_error = self
                .fault
                .as_ref()
                .and_then(|f| f.fails_dispatch(action, viewport_point));
            let (honest, nominal) = match action {
                Action::Click { .. } => {
                    let p = viewport_point.expect("clicks have points");
                    let ok = format!("Clicked at {p}.");
                    last_click = Some(p);
                    match dispatch_error {
                        Some(e) => (e, ok),
                        None => {
                            // The feedback fault's condition is the harness's own hit
                            // test; an honest tool does not need it, so it is only paid
                            // for when asked.
                            if self
                                .fault
                                .as_ref()
                                .is_some_and(FaultPlan::needs_iframe_hit_test)
                            {
                                last_pointer_into_iframe =
                                    self.page.element_tag_at(p).await?.as_deref() == Some("IFRAME");
                            }
                            self.page.click(p).await?;
                            (ok.clone(), ok)
                        }
                    }
                }
                Action::Hover { .. } => {
                    let p = viewport_point.expect("hovers have points");
                    last_pointer_into_iframe = false;
                    self.page.hover(p).await?;
                    hovered = true;
                    if self
                        .fault
                        .as_ref()
                        .is_some_and(FaultPlan::skips_hover_settle)
                    {
                        hover_clock = Some(self.page.page_now().await?);
                    }
                    let m = format!("Moved the mouse to {p}.");
                    (m.clone(), m)
                }
                Action::Type { text } => {
                    let ok = format!("Typed {text:?}.");
                    // An honest tool says so when the keystrokes would go nowhere.
                    if self.page.has_editable_focus().await? {
                        self.page.insert_text(text).await?;
                        (ok.clone(), ok)
                    } else {
                        (
                            "Error: nothing has keyboard focus; the text was not typed.".into(),
                            ok,
                        )
                    }
                }
                Action::Press { key } => {
                    let ok = format!("Pressed {key}.");
                    match self.page.press(key).await {
                        Ok(()) => (ok.clone(), ok),
                        Err(e) => (format!("Error: {e}"), ok),
                    }
                }
                Action::Scroll { dx, dy } => {
                    self.page.scroll(*dx, *dy).await?;
                    let m = format!("Scrolled by ({dx}, {dy}).");
                    (m.clone(), m)
                }
                Action::Wait { ms } => {
                    tokio::time::sleep(Duration::from_millis(*ms)).await;
                    waited_ms += ms;
                    let m = format!("Waited {ms} ms.");
                    (m.clone(), m)
                }
                Action::Answer { value } => {
                    answer = Some(value.clone());
                    let m = format!("Answered {value:?}.");
                    (m.clone(), m)
                }
                Action::Stop => {
                    stop = true;
                    ("Stopped.".to_string(), "Stopped.".to_string())
                }
            };
            executed.push(Executed {
                action: action.clone(),
                viewport_point,
                message: honest.clone(),
            });
            messages.push((honest, nominal));
        }

        // --- settle, then wait for any navigation the actions started ---
        let browser_acted = actions.iter().any(Action::is_browser_action);
        let skip_hover_settle = self
            .fault
            .as_ref()
            .is_some_and(FaultPlan::skips_hover_settle);
        let settle = if hovered {
            if skip_hover_settle {
                0
            } else {
                self.timing.hover_settle_ms
            }
        } else if browser_acted {
            self.timing.settle_ms
        } else {
            0
        };
        let settle = settle.saturating_sub(waited_ms);
        if settle > 0 {
            tokio::time::sleep(Duration::from_millis(settle)).await;
        }
        // Only clicks and keys can start a navigation worth waiting for.
        let may_navigate = actions.iter().any(|a| {
            matches!(
                a,
                Action::Click { .. } | Action::Press { .. } | Action::Type { .. }
            )
        });
        let mut load_error = None;
        if may_navigate {
            let limit = Duration::from_millis(self.timing.navigation_timeout_ms);
            if self.page.wait_ready(limit).await.is_err() {
                // Give up on the load, as a harness with a navigation timeout does, and
                // observe what the browser shows.
                self.page.stop_loading().await?;
                load_error = Some(format!(
                    "Error: the page did not finish loading within {:.1} s.",
                    limit.as_secs_f64()
                ));
            }
        }

        // --- feedback stage ---
        let join = |pick: fn(&(String, String)) -> &str| {
            let browser: Vec<&str> = messages
                .iter()
                .zip(&actions)
                .filter(|(_, a)| a.is_browser_action())
                .map(|(m, _)| pick(m))
                .collect();
            if browser.is_empty() {
                messages.iter().map(pick).collect::<Vec<_>>().join(" ")
            } else {
                browser.join(" ")
            }
        };
        let mut honest = join(|m| &m.0);
        let nominal = join(|m| &m.1);
        if let Some(e) = &load_error {
            honest = format!("{honest} {e}");
        }
        let tool_message = match &self.fault {
            Some(f) => {
                let (m, w) = f.on_feedback(&FeedbackContext {
                    honest: &honest,
                    nominal: &nominal,
                    clicked_into_iframe: last_pointer_into_iframe,
                    last_click,
                });
                witness = witness.or(w);
                m
            }
            None => honest,
        };

        // --- observe stage ---
        let capture = self.capture().await?;
        if let (Some(hover_at), Some(fault)) = (hover_clock, &self.fault) {
            // Witness: read from the page itself when the tooltip appeared, waiting at
            // most as long as an honest observe stage would have.
            const SHOWN_AT: &str = "(() => { const t = document.querySelector('[role=\"tooltip\"]'); return t && !t.hidden && t.dataset.shownAt ? Number(t.dataset.shownAt) : null; })()";
            let deadline =
                tokio::time::Instant::now() + Duration::from_millis(self.timing.hover_settle_ms);
            let shown = loop {
                let shown = self.page.eval(SHOWN_AT).await?.as_f64();
                if shown.is_some() || tokio::time::Instant::now() >= deadline {
                    break shown;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            witness = witness.or(fault.capture_witness(hover_at, capture.begin_ms, shown));
        }
        Ok(StepOutcome {
            actions,
            executed,
            tool_message,
            after: Observation {
                png: capture.png,
                size: capture.size,
                text: capture.text,
            },
            after_state: capture.state,
            after_capture: capture.id,
            answer,
            stop,
            witness,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honest_parse_strips_special_tokens_and_the_fault_does_not() {
        let (a, w) = parse_stage("type(\"Record-10\")<|im_end|>", None).unwrap();
        assert_eq!(
            a,
            vec![Action::Type {
                text: "Record-10".into()
            }]
        );
        assert!(w.is_none());
        let leak = FaultPlan::new(faultline_faults::Fault::TokenLeak, 1);
        let (a, w) = parse_stage("type(\"Record-10\")\npress(\"Enter\")", Some(&leak)).unwrap();
        assert_eq!(
            a[0],
            Action::Type {
                text: "Record-10<|im_end|>".into()
            }
        );
        assert!(w.is_some());
        assert!(parse_stage("click(1)", None).is_err());
    }
}
