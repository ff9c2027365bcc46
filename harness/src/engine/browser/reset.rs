//! Ending a trial page: reset to the state of a fresh one and handed back to its pool,
//! or closed with its browser context.

use super::page::TrialPage;
use super::pool::SiteOrigins;
use crate::engine::cost::{Span, Stage, StageCosts};
use anyhow::{bail, Result};
use chromiumoxide::cdp::browser_protocol::emulation::SetScriptExecutionDisabledParams;
use chromiumoxide::cdp::browser_protocol::input::DispatchMouseEventType;
use chromiumoxide::cdp::browser_protocol::network::ClearBrowserCookiesParams;
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, ResetNavigationHistoryParams,
};
use chromiumoxide::cdp::browser_protocol::storage::ClearDataForOriginParams;
use faultline_tasks::Point;

/// What the first document after a reset runs before its own scripts: the top document
/// (on the origin the reset cleared) empties the tab's session storage of that origin and
/// the window name, which the old page may have written on its way out.
const FIRST_DOCUMENT_CLEARS: &str =
    "if (window === window.top) { sessionStorage.clear(); window.name = ''; }";

impl TrialPage {
    /// Ends the page's trial: under [`Isolation::ReusedContext`] the page is reset (see
    /// there) and handed back to its pool; otherwise, or when the reset fails, the page
    /// is closed and its browser context disposed of.
    ///
    /// [`Isolation::ReusedContext`]: super::Isolation::ReusedContext
    pub async fn close(mut self) {
        if let Some(reuse) = self.reuse.take() {
            let span = Span::start(Stage::SetupAhead);
            let reset = self.reset(&reuse.origins).await;
            if let Err(e) = &reset {
                tracing::debug!("a page could not be reset, closed instead: {e:#}");
            }
            if reset.is_ok() {
                self.costs = StageCosts::default();
                self.captures = 0;
                span.end(&mut self.costs);
                let pool = reuse.pool.clone();
                self.reuse = Some(reuse);
                // A pool that is gone (the run ended, the browser was replaced) takes no
                // more pages: this one is closed for good.
                if let Err(tokio::sync::mpsc::error::SendError(Ok(page))) =
                    pool.send(Ok(self)).await
                {
                    page.dispose().await;
                }
                return;
            }
        }
        self.dispose().await;
    }

    /// Brings a used page back to the state of a fresh one for its next item, which
    /// loads from the other of `origins`; see [`SiteOrigins`] for why that one is the
    /// origin cleared.
    async fn reset(&mut self, origins: &SiteOrigins) -> Result<()> {
        if let Some(why) = self.crashed() {
            bail!("the page's renderer is gone: {why}");
        }
        if !origins.is_site() {
            bail!("a page without a site's two origins cannot be reset");
        }
        // Off the page first: a pointer left over an element would hover it on the next
        // page (Blink re-hit-tests the last pointer position after every layout).
        self.mouse(
            DispatchMouseEventType::MouseMoved,
            Point { x: -1.0, y: -1.0 },
            None,
        )
        .await?;
        // Emulating the same size again is not free: Chromium resizes and draws the page
        // anew. Only a fault that moved the viewport leaves one to undo.
        if self.emulation.get_mut().expect("never poisoned").size != self.viewport {
            self.emulate_viewport(self.viewport).await?;
        }
        // The trial's page stays on screen until the next item's navigation, its scripts
        // stopped: it costs nothing while it waits. Whatever it writes once they run again
        // (its `pagehide`) lands in its own origin, which the next item does not read.
        self.cdp(
            "stopping the page's scripts",
            SetScriptExecutionDisabledParams::new(true),
        )
        .await?;
        self.frozen = true;
        let next = origins.other(&self.origin).to_owned();
        self.cdp(
            "clearing the next origin's data",
            ClearDataForOriginParams {
                origin: next.clone(),
                storage_types: "all".into(),
            },
        )
        .await?;
        // Session storage and the window name belong to the tab, and the browser clears
        // them only from a live document: the next item's first document does, before
        // any script of its own runs (then the script is removed, see `goto`).
        // (One left by a reset whose item never loaded a page is still registered.)
        // The reset holds the page itself: no lock is needed to look at its script.
        if self
            .first_document_script
            .get_mut()
            .expect("never poisoned")
            .is_none()
        {
            let script = self
                .cdp(
                    "clearing the tab's state in the next document",
                    AddScriptToEvaluateOnNewDocumentParams::new(FIRST_DOCUMENT_CLEARS),
                )
                .await?;
            *self
                .first_document_script
                .get_mut()
                .expect("never poisoned") = Some(script.result.identifier);
        }
        // All of them: the ones the old page may still write are bound to its origin's
        // port (`EnablePortBoundCookies`), so the next item does not see them.
        self.cdp("clearing cookies", ClearBrowserCookiesParams {})
            .await?;
        // The HTTP cache is not cleared: the fixture server marks every response
        // `no-store`, so it holds nothing an item fetched.
        self.cdp(
            "clearing the navigation history",
            ResetNavigationHistoryParams {},
        )
        .await?;
        self.origin = next;
        Ok(())
    }

    /// Lets the scripts of a page its reset stopped run again, before its next item.
    pub(super) async fn thaw(&mut self) -> Result<()> {
        if self.frozen {
            self.cdp(
                "letting the page's scripts run",
                SetScriptExecutionDisabledParams::new(false),
            )
            .await?;
            self.frozen = false;
        }
        Ok(())
    }

    /// Closes the page and disposes of its browser context.
    async fn dispose(mut self) {
        self.watcher.abort();
        let call = self.liveness.call();
        if self.browser_alive.dead().is_some() {
            return;
        }
        let _ = tokio::time::timeout(call, self.page.clone().close()).await;
        if let Some(ctx) = self.context.take() {
            let _ = tokio::time::timeout(call, self.browser.dispose_browser_context(ctx)).await;
        }
    }
}
