//! The observe stage: settle, wait for any navigation the actions started, then capture
//! a screenshot at image size and the visible text of every frame at the same instant.
//!
//! The settle wait is the hover settle after a hover (tooltips need time; the
//! `observe.capture_before_tooltip` fault skips it), the short settle after other browser
//! actions, and nothing after a reply that only waited, answered or stopped; whatever
//! the reply waited itself counts against it. The `tool.capture_before_settled` fault
//! skips it altogether, as it skips the reply's own waits (execute stage).
//!
//! A settle is time the page gets, not time the harness sleeps: after it, every page
//! timer already due runs before the capture, so a renderer the machine stopped during
//! the settle cannot race a tooltip against the screenshot (`run_overdue_timers`).
//!
//! Because the capture-before-tooltip fault changes nothing but when the capture is
//! taken, a working trial's page can also observe for a trial under it
//! ([`RoundTrip::step_with_early_rider`]): the early capture first, then the working
//! trial's settle, which is a deadline counted from the end of the actions, so the time
//! the early capture took is not added to it.

use crate::engine::browser::Capture;
use crate::engine::cost::{Span, Stage};
use crate::engine::roundtrip::execute::{Execution, RELEASE_TOOLTIP};
use crate::engine::roundtrip::{CaptureMark, Feedback, RoundTrip};
use anyhow::Result;
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Observation, PageState};
use faultline_tasks::Action;
use std::time::Duration;

/// What a rider whose fault acts only on the capture's timing observed on the armed
/// trial's page: its tool message, its early observation and its witness.
pub struct EarlyObservation {
    /// The tool message under the rider's fault.
    pub tool_message: String,
    /// The observation captured without the hover settle.
    pub after: Observation,
    /// The page state read at the same instant as `after`.
    pub after_state: PageState,
    /// The id of the capture that produced `after`.
    pub after_capture: u64,
    /// The rider's witness, when its fault fired.
    pub witness: Option<Witness>,
}

impl RoundTrip {
    /// Waits for the page to settle after the actions; returns the load error the tool
    /// reports when a navigation did not finish in time.
    /// `acted_at` is when the actions ended: a fixed settle ends that long after it,
    /// whatever the page was doing meanwhile (an early capture for a rider).
    pub(super) async fn settle(
        &mut self,
        actions: &[Action],
        execution: &Execution,
        acted_at: tokio::time::Instant,
    ) -> Result<Option<String>> {
        let settle = if self.fault.as_ref().is_some_and(FaultPlan::skips_waits) {
            0
        } else {
            self.settle_ms(actions, execution)
        };
        match self.timing.stable {
            // The stable mode replaces every settle wait the fixed mode would make.
            Some(st) if settle > 0 => {
                self.page.wait_stable(st).await?;
            }
            _ if settle > 0 => {
                tokio::time::sleep_until(acted_at + Duration::from_millis(settle)).await
            }
            _ => {}
        }
        let load_error = self.wait_for_navigation(actions).await?;
        if settle > 0 {
            // The settle is time the page gets, not time the harness sleeps: a renderer
            // stopped by the machine during it has timers (a tooltip's) overdue that
            // would otherwise race the capture. Only once no navigation is pending:
            // a page waiting on a navigation runs no timers.
            self.page.run_overdue_timers().await?;
        }
        Ok(load_error)
    }

    /// Waits for a navigation the actions may have started (only clicks and keys can);
    /// returns the load error the tool reports when it did not finish in time.
    async fn wait_for_navigation(&mut self, actions: &[Action]) -> Result<Option<String>> {
        let may_navigate = actions.iter().any(|a| {
            matches!(
                a,
                Action::Click { .. }
                    | Action::DoubleClick { .. }
                    | Action::RightClick { .. }
                    | Action::Press { .. }
                    | Action::Type { .. }
            )
        });
        if !may_navigate {
            return Ok(None);
        }
        let limit = Duration::from_millis(self.timing.navigation_timeout_ms);
        let site_owes = self
            .site_busy
            .as_deref()
            .map(|busy| busy as &(dyn Fn() -> bool + Sync));
        if self.page.wait_loaded(limit, site_owes).await? {
            return Ok(None);
        }
        // Give up on the load, as a harness with a navigation timeout does, and observe
        // what the browser shows.
        self.page.stop_loading().await?;
        Ok(Some(format!(
            "Error: the page did not finish loading within {:.1} s.",
            limit.as_secs_f64()
        )))
    }

    /// The early observation a rider whose fault acts only on the capture's timing gets
    /// (see [`RoundTrip::step_with_early_rider`]): what the round trip does after
    /// `execution` under `rider` alone — no settle, the navigation waited for, the
    /// capture, the tooltip released, the witness — while the page stays the armed
    /// trial's, whose own settle runs from the end of the actions.
    pub(super) async fn observe_early(
        &mut self,
        rider: &FaultPlan,
        actions: &[Action],
        execution: &mut Execution,
    ) -> Result<EarlyObservation> {
        let load_error = self.wait_for_navigation(actions).await?;
        let feedback = Feedback::of(actions, execution, load_error.as_deref());
        let (tool_message, feedback_witness) = feedback.report(Some(rider));
        let skipped = rider.skipped_waits_witness(&execution.skipped_waits, 0);
        let capture = self.capture().await?;
        let span = Span::start(Stage::Witness);
        if execution.holds_tooltip {
            self.page.eval(RELEASE_TOOLTIP).await?;
            execution.holds_tooltip = false;
        }
        let witness = match skipped.or(feedback_witness) {
            Some(w) => Some(w),
            None => {
                self.capture_witness_of(rider, execution.hover_clock, &capture)
                    .await?
            }
        };
        span.end(&mut self.page.costs);
        let after_capture = capture.id;
        let (after, after_state) = capture.into_observation();
        Ok(EarlyObservation {
            tool_message,
            after,
            after_state,
            after_capture,
            witness,
        })
    }

    /// The settle wait an honest observe stage makes after `actions` (the fixed mode's
    /// length; the stable mode replaces any non-zero one with its own wait).
    pub(super) fn settle_ms(&self, actions: &[Action], execution: &Execution) -> u64 {
        let browser_acted = actions.iter().any(Action::is_browser_action);
        let skip_hover_settle = self
            .fault
            .as_ref()
            .is_some_and(FaultPlan::skips_hover_settle);
        let settle = if execution.hovered {
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
        settle.saturating_sub(execution.waited_ms)
    }

    /// Captures an observation and remembers its page-clock interval for the ledger.
    pub(super) async fn capture(&mut self) -> Result<Capture> {
        let c = self.page.capture(self.image).await?;
        self.marks.push(CaptureMark {
            id: c.id,
            begin_ms: c.begin_ms,
            end_ms: c.end_ms,
        });
        Ok(c)
    }

    /// The observe fault's witness: when the capture came before the tooltip the hover
    /// asked for, read from the page itself when the tooltip appeared, waiting at most as
    /// long as an honest observe stage would have.
    pub(super) async fn capture_witness(
        &self,
        hover_clock: Option<f64>,
        capture: &Capture,
    ) -> Result<Option<Witness>> {
        match &self.fault {
            Some(fault) => self.capture_witness_of(fault, hover_clock, capture).await,
            None => Ok(None),
        }
    }

    /// [`RoundTrip::capture_witness`] under `fault`, armed or a rider's.
    async fn capture_witness_of(
        &self,
        fault: &FaultPlan,
        hover_clock: Option<f64>,
        capture: &Capture,
    ) -> Result<Option<Witness>> {
        // Only a fault that skips the hover settle has a capture witness to wait for.
        let Some(hover_at) = hover_clock.filter(|_| fault.skips_hover_settle()) else {
            return Ok(None);
        };
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
        Ok(fault.capture_witness(hover_at, capture.begin_ms, shown))
    }
}
