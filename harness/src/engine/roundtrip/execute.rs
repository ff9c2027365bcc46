//! The execute stage: typed actions -> browser input events.
//!
//! Pointer actions carry points in the space the model saw ([`CoordinateSpace`]): pixels
//! of the screenshot, or a 0–1000 grid over it. An honest executor scales them from that
//! space to the viewport; `execute.unscaled_coordinates` does not, and uses the raw
//! numbers as viewport pixels. Each action
//! yields the honest tool message for it and the message it would have had on success
//! (the feedback stage chooses between them).

use crate::engine::roundtrip::RoundTrip;
use anyhow::Result;
use faultline_faults::{FaultPlan, Witness};
use faultline_tasks::{Action, CoordinateSpace, Point};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Makes the page hold its tooltip (the chart's tooltip timer waits on the promise).
pub const HOLD_TOOLTIP: &str =
    "window.__fl_hold = new Promise(function (r) { window.__fl_release = r; }); true";

/// Lets the page show its tooltip again.
pub const RELEASE_TOOLTIP: &str =
    "(function () { var r = window.__fl_release; window.__fl_hold = null; window.__fl_release = null; if (r) r(); return true; })()";

/// What is at a viewport point right now (`{x}` and `{y}` are replaced): the element
/// `elementFromPoint` returns, its id, class and the start of its text, or `null` over
/// nothing. The unsettled-capture fault records it for the action after a skipped wait.
pub const NEXT_ACTION_MET: &str = "(() => { const e = document.elementFromPoint({x}, {y}); if (!e) return null; const text = (e.innerText || e.value || '').trim().replace(/\\s+/g, ' ').slice(0, 60); return { tag: e.tagName, id: e.id || null, class: (typeof e.className === 'string' ? e.className : '') || null, text }; })()";

/// What two viewport points meet (`{ax}`, `{ay}`: the intended point; `{bx}`, `{by}`: the
/// dispatched one): each element described (`null` outside the viewport), and whether a
/// click at the second reaches what a click at the first would: the same element, one
/// inside it, or the same control (the nearest button, link, form field, label or
/// element with a role, handler or tab stop around each).
pub const LANDING: &str = "(() => { const a = document.elementFromPoint({ax}, {ay}), b = document.elementFromPoint({bx}, {by}); const d = (e) => e ? { tag: e.tagName.toLowerCase(), id: e.id || null, text: (e.innerText || e.value || '').trim().replace(/\\s+/g, ' ').slice(0, 40) } : null; const control = (e) => e && (e.closest('button, a, input, select, textarea, label, [role], [onclick], [tabindex]') || e); const same = !!a && !!b && (a === b || a.contains(b) || control(a) === control(b)); return { intended: d(a), landed: d(b), same }; })()";

/// What an honest tool says of an input it dispatched: `ok` when the browser took it,
/// the browser's refusal when it answered with an error (an unknown key, an input a
/// protocol fault refused); a dead browser or page, or a call left unanswered, is the
/// harness's failure, not the action's, and is returned as the error it is.
fn told(dispatched: Result<()>, ok: String) -> Result<(String, String)> {
    match dispatched {
        Ok(()) => Ok((ok.clone(), ok)),
        Err(e) if crate::engine::liveness::InfraFailure::find(&e).is_some() => Err(e),
        Err(e) => Ok((format!("Error: {e}"), ok)),
    }
}

/// One dispatched action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Executed {
    /// The action as parsed (points in the decision's space).
    pub action: Action,
    /// The viewport point the event was sent to, for pointer actions.
    pub viewport_point: Option<Point>,
    /// The honest tool message for this action, before any feedback fault.
    pub message: String,
}

/// What executing a reply's actions did, as the later stages need it.
#[derive(Debug, Default)]
pub struct Execution {
    /// Each dispatched action with its viewport point and honest message.
    pub executed: Vec<Executed>,
    /// Per action: the honest message, and the one it would have been on success.
    pub messages: Vec<(String, String)>,
    /// The answer the reply gave, if any.
    pub answer: Option<String>,
    /// Whether the reply asked to stop.
    pub stop: bool,
    /// Whether the last pointer action went into an iframe (hit-tested only when the
    /// armed fault's condition needs it).
    pub last_pointer_into_iframe: bool,
    /// The viewport point of the last click.
    pub last_click: Option<Point>,
    /// Whether any action hovered.
    pub hovered: bool,
    /// The page clock at the hover, read only when the observe fault needs it.
    pub hover_clock: Option<f64>,
    /// Whether the page holds its tooltip until the observe stage releases it.
    pub holds_tooltip: bool,
    /// Milliseconds the reply itself waited (counted against the settle wait).
    pub waited_ms: u64,
    /// The waits the unsettled-capture fault skipped: the ms asked for, and what the
    /// next pointer action met at its point at that instant ([`NEXT_ACTION_MET`]).
    pub skipped_waits: Vec<(u64, Option<serde_json::Value>)>,
    /// The execute hook's witness, when the fault fired here.
    pub witness: Option<Witness>,
}

impl RoundTrip {
    /// Dispatches every action in order; pointer actions' points are in `space` over
    /// the round trip's image.
    pub(super) async fn execute(
        &mut self,
        actions: &[Action],
        space: CoordinateSpace,
    ) -> Result<Execution> {
        let mut x = Execution::default();
        let source = space.extent(self.image);
        for action in actions {
            let viewport_point = match action.point() {
                Some(p) => {
                    let viewport = self.page.viewport();
                    let (vp, w) = match &self.fault {
                        Some(f) => f.on_execute(p, source, viewport),
                        None => (p.scale(source, viewport), None),
                    };
                    let w = match w {
                        Some(w)
                            if self
                                .fault
                                .as_ref()
                                .is_some_and(FaultPlan::misreads_coordinates) =>
                        {
                            self.landing(w, p.scale(source, viewport), vp).await?
                        }
                        w => w,
                    };
                    x.witness = x.witness.or(w);
                    Some(vp)
                }
                None => None,
            };
            // The action after a skipped wait: record what it meets, before it acts.
            if let (Some(p), Some((_, met @ None))) = (viewport_point, x.skipped_waits.last_mut()) {
                let js = NEXT_ACTION_MET
                    .replace("{x}", &p.x.to_string())
                    .replace("{y}", &p.y.to_string());
                *met = Some(self.page.eval(&js).await?);
            }
            let dispatch_error = self
                .fault
                .as_ref()
                .and_then(|f| f.fails_dispatch(action, viewport_point));
            let (honest, nominal) = self
                .dispatch(&mut x, action, viewport_point, dispatch_error)
                .await?;
            x.executed.push(Executed {
                action: action.clone(),
                viewport_point,
                message: honest.clone(),
            });
            x.messages.push((honest, nominal));
        }
        Ok(x)
    }

    /// A coordinate misread's witness with what each point meets on the page, or `None`
    /// (not fired) when the dispatched point still meets the element the intended one
    /// meets, or one inside it: the misread then changed nothing a page could tell.
    async fn landing(
        &mut self,
        mut w: Witness,
        intended: Point,
        executed: Point,
    ) -> Result<Option<Witness>> {
        let js = LANDING
            .replace("{ax}", &intended.x.to_string())
            .replace("{ay}", &intended.y.to_string())
            .replace("{bx}", &executed.x.to_string())
            .replace("{by}", &executed.y.to_string());
        let hit = self.page.eval(&js).await?;
        if hit["same"] == serde_json::Value::Bool(true) {
            return Ok(None);
        }
        w.data
            .insert("intended_element".into(), hit["intended"].clone());
        w.data.insert("landed_on".into(), hit["landed"].clone());
        Ok(Some(w))
    }

    /// Dispatches one action; returns what an honest tool says about it and what it
    /// nominally did (the feedback stage chooses between them).
    async fn dispatch(
        &mut self,
        x: &mut Execution,
        action: &Action,
        viewport_point: Option<Point>,
        dispatch_error: Option<String>,
    ) -> Result<(String, String)> {
        let said = match action {
            Action::Click { .. } | Action::DoubleClick { .. } | Action::RightClick { .. } => {
                let p = viewport_point.expect("clicks have points");
                self.click(x, action, p, dispatch_error).await?
            }
            Action::Hover { .. } => {
                let p = viewport_point.expect("hovers have points");
                self.hover(x, p).await?
            }
            Action::Type { text } => {
                let ok = format!("Typed {text:?}.");
                // An honest tool says so when the keystrokes would go nowhere.
                if self.page.has_editable_focus().await? {
                    told(self.page.insert_text(text).await, ok)?
                } else {
                    (
                        "Error: nothing has keyboard focus; the text was not typed.".into(),
                        ok,
                    )
                }
            }
            Action::Press { key } => {
                let ok = format!("Pressed {key}.");
                told(self.page.press(key).await, ok)?
            }
            Action::Scroll { dx, dy } => {
                self.page.scroll(*dx, *dy).await?;
                let m = format!("Scrolled by ({dx}, {dy}).");
                (m.clone(), m)
            }
            Action::Wait { ms } if self.fault.as_ref().is_some_and(FaultPlan::skips_waits) => {
                // The faulty tool returns at once and says it waited.
                x.skipped_waits.push((*ms, None));
                let m = format!("Waited {ms} ms.");
                (m.clone(), m)
            }
            Action::Wait { ms } => self.wait(x, *ms).await,
            Action::Answer { value } => {
                x.answer = Some(value.clone());
                let m = format!("Answered {value:?}.");
                (m.clone(), m)
            }
            Action::Stop => {
                x.stop = true;
                ("Stopped.".to_string(), "Stopped.".to_string())
            }
        };
        Ok(said)
    }

    /// A click (single, double or right) at `p`, unless the fault fails its dispatch.
    async fn click(
        &mut self,
        x: &mut Execution,
        action: &Action,
        p: Point,
        dispatch_error: Option<String>,
    ) -> Result<(String, String)> {
        let ok = match action {
            Action::DoubleClick { .. } => format!("Double-clicked at {p}."),
            Action::RightClick { .. } => format!("Right-clicked at {p}."),
            _ => format!("Clicked at {p}."),
        };
        x.last_click = Some(p);
        Ok(match dispatch_error {
            Some(e) => (e, ok),
            None => {
                // The feedback fault's condition is the harness's own hit
                // test; an honest tool does not need it, so it is only paid
                // for when asked.
                if self.hit_test_clicks {
                    x.last_pointer_into_iframe =
                        self.page.element_tag_at(p).await?.as_deref() == Some("IFRAME");
                }
                let dispatched = match action {
                    Action::DoubleClick { .. } => self.page.double_click(p).await,
                    Action::RightClick { .. } => self.page.right_click(p).await,
                    _ => self.page.click(p).await,
                };
                told(dispatched, ok)?
            }
        })
    }

    /// A hover at `p`; under the capture-before-tooltip fault (armed, or a rider's that
    /// this page captures early for), the page holds its tooltip until the harness has
    /// captured.
    async fn hover(&mut self, x: &mut Execution, p: Point) -> Result<(String, String)> {
        x.last_pointer_into_iframe = false;
        let early = self
            .fault
            .as_ref()
            .is_some_and(FaultPlan::skips_hover_settle)
            || self.early_rider.is_some();
        if early && !x.holds_tooltip {
            // The capture comes strictly before the tooltip: the page holds
            // its tooltip until the harness has captured (released in the
            // observe stage), however slow the machine is.
            self.page.eval(HOLD_TOOLTIP).await?;
            x.holds_tooltip = true;
        }
        self.page.hover(p).await?;
        x.hovered = true;
        if early {
            x.hover_clock = Some(self.page.page_now().await?);
        }
        let m = format!("Moved the mouse to {p}.");
        Ok((m.clone(), m))
    }

    /// A real wait of `ms`, capped at the round trip's longest wait.
    async fn wait(&mut self, x: &mut Execution, ms: u64) -> (String, String) {
        // A reply cannot hold the harness for as long as it likes.
        let waited = ms.min(self.max_wait_ms);
        tokio::time::sleep(Duration::from_millis(waited)).await;
        x.waited_ms += waited;
        let m = if waited < ms {
            format!("Waited {waited} ms (the {ms} ms asked for is capped at {waited} ms).")
        } else {
            format!("Waited {ms} ms.")
        };
        (m.clone(), m)
    }
}
