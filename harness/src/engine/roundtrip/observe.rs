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

use crate::engine::browser::Capture;
use crate::engine::roundtrip::execute::Execution;
use crate::engine::roundtrip::{CaptureMark, RoundTrip};
use anyhow::Result;
use faultline_faults::{FaultPlan, Witness};
use faultline_tasks::Action;
use std::time::Duration;

impl RoundTrip {
    /// Waits for the page to settle after the actions; returns the load error the tool
    /// reports when a navigation did not finish in time.
    pub(super) async fn settle(
        &mut self,
        actions: &[Action],
        execution: &Execution,
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
            _ if settle > 0 => tokio::time::sleep(Duration::from_millis(settle)).await,
            _ => {}
        }
        // Only clicks and keys can start a navigation worth waiting for.
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
        let mut load_error = None;
        if may_navigate {
            let limit = Duration::from_millis(self.timing.navigation_timeout_ms);
            let site_owes = self
                .site_busy
                .as_deref()
                .map(|busy| busy as &(dyn Fn() -> bool + Sync));
            if !self.page.wait_loaded(limit, site_owes).await? {
                // Give up on the load, as a harness with a navigation timeout does, and
                // observe what the browser shows.
                self.page.stop_loading().await?;
                load_error = Some(format!(
                    "Error: the page did not finish loading within {:.1} s.",
                    limit.as_secs_f64()
                ));
            }
        }
        if settle > 0 {
            // The settle is time the page gets, not time the harness sleeps: a renderer
            // stopped by the machine during it has timers (a tooltip's) overdue that
            // would otherwise race the capture. Only once no navigation is pending:
            // a page waiting on a navigation runs no timers.
            self.page.run_overdue_timers().await?;
        }
        Ok(load_error)
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
        let (Some(hover_at), Some(fault)) = (hover_clock, &self.fault) else {
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
