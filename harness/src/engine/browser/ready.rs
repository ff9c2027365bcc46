//! Waiting on a trial page: for its documents to be ready, for a navigation an action
//! started, for the DOM to stop changing, for its overdue timers.

use super::page::TrialPage;
use crate::engine::liveness::{InfraFailure, InfraKind};
use anyhow::{anyhow, bail, Result};
use chromiumoxide::cdp::browser_protocol::page::StopLoadingParams;
use std::time::Duration;

/// How a wait for a page to be ready ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every document is complete and no navigation is under way.
    Ready,
    /// The deadline passed first. `answering`: the page's main thread still answered the
    /// checks in the window's last second (it is loading, or the machine is slow); when
    /// false it stopped answering (hung).
    NotReady {
        /// Whether a check answered within the last second before the deadline.
        answering: bool,
    },
}

impl TrialPage {
    /// can outlast any fixed settle time).
    pub async fn wait_ready(&self, timeout: Duration) -> Result<()> {
        match self.poll_ready(timeout).await? {
            Readiness::Ready => Ok(()),
            Readiness::NotReady { .. } => {
                bail!("the page did not finish loading within {timeout:?}")
            }
        }
    }

    /// Waits for a navigation an action started, the way a harness with a navigation
    /// timeout does, but without measuring the machine: returns whether the page loaded
    /// (`false`: the tool reports a load error, as a harness would).
    ///
    /// `site_owes` asks the fixture server whether it still owes the page a response.
    /// Past `limit` with the site owing nothing, the wait is not the page's: nothing a
    /// fixture page or a fault does keeps a load going without a request the site holds.
    /// A page still answering is a loaded CPU; a page that stopped answering is a
    /// renderer the machine froze (a fault that hangs the main thread holds a request,
    /// so it is the site's). Either way the wait goes on up to the navigation's liveness
    /// deadline, so a short freeze or a busy machine cannot become a stored load error;
    /// a renderer still silent then is an infrastructure failure (the item is retried),
    /// never the trial's outcome. Without `site_owes`, a load past `limit` is the page's.
    pub async fn wait_loaded(
        &self,
        limit: Duration,
        site_owes: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<bool> {
        let ready = self.poll_ready(limit).await?;
        let site_done = || site_owes.is_some_and(|owes| !owes());
        if ready == Readiness::Ready || !site_done() {
            return Ok(ready == Readiness::Ready);
        }
        let deadline = self.liveness.navigation(limit.as_millis() as u64);
        match self.poll_ready(deadline.saturating_sub(limit)).await? {
            Readiness::Ready => Ok(true),
            Readiness::NotReady { answering: false } if site_done() => {
                Err(anyhow!(InfraFailure::new(
                    InfraKind::Unresponsive,
                    format!(
                        "the renderer stopped answering for {:.1} s while loading a page the site had fully served",
                        deadline.as_secs_f64()
                    ),
                )))
            }
            Readiness::NotReady { .. } => Ok(false),
        }
    }

    /// [`TrialPage::wait_ready`], telling a page that is not ready yet but answers (its
    /// main thread ran the last checks: a slow load, or a slow machine) from one that has
    /// stopped answering (a hung main thread).
    pub async fn poll_ready(&self, timeout: Duration) -> Result<Readiness> {
        const JS: &str = r#"(async () => {
          if (window.__faultline_leaving !== undefined && performance.now() - window.__faultline_leaving < 5000) return false;
          const docs = [document];
          document.querySelectorAll('iframe').forEach((f) => { try { if (f.contentDocument) docs.push(f.contentDocument); } catch (e) {} });
          const frameLoads = Array.from(document.querySelectorAll('iframe')).every((f) => { try { return f.contentDocument && f.contentDocument.readyState === 'complete' && f.contentWindow.location.href !== 'about:blank'; } catch (e) { return true; } });
          if (!frameLoads || !docs.every((d) => d.readyState === 'complete')) return false;
          await document.fonts.ready;
          return true;
        })()"#;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_answer = None;
        loop {
            // Errors are expected while a navigation swaps the document; keep polling. A
            // single evaluation can itself stall while a navigation hangs, so it is
            // bounded by the deadline too.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.eval(JS)).await {
                Ok(Ok(serde_json::Value::Bool(true))) => return Ok(Readiness::Ready),
                // A dead browser or renderer will not finish loading: say so at once.
                Ok(Err(e))
                    if InfraFailure::find(&e).is_some_and(|f| {
                        matches!(f.kind, InfraKind::BrowserDied | InfraKind::RendererCrashed)
                    }) =>
                {
                    return Err(e)
                }
                // A check the call deadline gave up on got no answer either.
                Ok(Err(e))
                    if InfraFailure::find(&e)
                        .is_some_and(|f| f.kind == InfraKind::Unresponsive) => {}
                // Any answer (not ready, or an error while a document is swapped) means
                // the renderer ran the check; only a check still pending at the deadline
                // did not answer.
                Ok(_) => last_answer = Some(tokio::time::Instant::now()),
                Err(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                // Answering: a check answered within the window's last second.
                let answering = last_answer.is_some_and(|t| {
                    deadline.saturating_duration_since(t) <= Duration::from_secs(1)
                });
                return Ok(Readiness::NotReady { answering });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The `stable` settle: waits until the top document has had no DOM mutation for
    /// `windows` consecutive windows of `window_ms`, or `cap_ms` has passed. Returns
    /// whether the cap was hit (a page that never settles).
    pub async fn wait_stable(&self, st: crate::engine::timing::StableSettle) -> Result<bool> {
        const MUTATIONS: &str = r#"(() => {
          if (!window.__fl_mo) {
            window.__fl_mutations = 0;
            window.__fl_mo = new MutationObserver((r) => { window.__fl_mutations += r.length; });
            window.__fl_mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
          }
          return window.__fl_mutations;
        })()"#;
        let started = tokio::time::Instant::now();
        let cap = Duration::from_millis(st.cap_ms);
        let mut last = self.eval(MUTATIONS).await?;
        let mut quiet = 0u32;
        loop {
            let left = cap.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(st.window_ms).min(left)).await;
            let now = self.eval(MUTATIONS).await?;
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
            if quiet >= st.windows {
                return Ok(false);
            }
        }
    }

    /// Gives up on a navigation that is still loading (what a browser's Stop button
    /// does), so the page can be observed as it is.
    pub async fn stop_loading(&self) -> Result<()> {
        self.cdp("stopping the page load", StopLoadingParams::default())
            .await?;
        Ok(())
    }

    /// Returns once every page timer already due has run: a zero-delay timer is queued
    /// behind all overdue ones (timers run in deadline order), so after a renderer stall
    /// the page catches up before the harness looks at it.
    pub async fn run_overdue_timers(&self) -> Result<()> {
        self.eval("new Promise((done) => setTimeout(done, 0))")
            .await?;
        Ok(())
    }
}
