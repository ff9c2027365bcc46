//! Ending a trial page: reset to the state of a fresh one and handed back to its pool,
//! or closed with its browser context.

use super::page::TrialPage;
use crate::engine::cost::{Span, Stage, StageCosts};
use anyhow::{anyhow, bail, Result};
use chromiumoxide::cdp::browser_protocol::emulation::SetScriptExecutionDisabledParams;
use chromiumoxide::cdp::browser_protocol::input::DispatchMouseEventType;
use chromiumoxide::cdp::browser_protocol::network::{
    ClearBrowserCacheParams, ClearBrowserCookiesParams,
};
use chromiumoxide::cdp::browser_protocol::page::{NavigateParams, ResetNavigationHistoryParams};
use chromiumoxide::cdp::browser_protocol::storage::ClearDataForOriginParams;
use faultline_tasks::Point;

impl TrialPage {
    /// Ends the page's trial: under [`Isolation::ReusedContext`](super::Isolation::ReusedContext) the page is reset (see
    /// there) and handed back to its pool; otherwise, or when the reset fails, the page
    /// is closed and its browser context disposed of.
    pub async fn close(mut self) {
        if let Some(reuse) = self.reuse.take() {
            let span = Span::start(Stage::SetupAhead);
            if self.reset(&reuse.warm_url).await.is_ok() {
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

    /// Brings a used page back to the state of a fresh one; see [`Isolation::ReusedContext`].
    async fn reset(&mut self, warm_url: &str) -> Result<()> {
        if let Some(why) = self.crashed() {
            bail!("the page's renderer is gone: {why}");
        }
        // Off the page first: a pointer left over an element would hover it on the next
        // page (Blink re-hit-tests the last pointer position after every layout).
        self.mouse(
            DispatchMouseEventType::MouseMoved,
            Point { x: -1.0, y: -1.0 },
            None,
        )
        .await?;
        self.emulate_viewport(self.viewport).await?;
        // Freeze the trial's page: from here none of its scripts (timers, handlers) runs,
        // so nothing it writes can outlive the clearing below.
        self.cdp(
            "stopping the page's scripts",
            SetScriptExecutionDisabledParams::new(true),
        )
        .await?;
        // Session storage and the window name belong to the tab, not to the origin's
        // stored data: cleared from the trial's page itself, on its own origin.
        self.eval("sessionStorage.clear(); localStorage.clear(); window.name = ''; true")
            .await?;
        // Leave it for a blank document (no request, no layout: about half the CPU of a
        // page from the server), which needs no script.
        self.guarded(
            "navigating to the blank page",
            self.liveness.call(),
            self.page.goto(NavigateParams::new("about:blank")),
        )
        .await?;
        self.cdp(
            "letting the next page's scripts run",
            SetScriptExecutionDisabledParams::new(false),
        )
        .await?;
        let origin = origin_of(warm_url)?;
        self.cdp(
            "clearing the origin's data",
            ClearDataForOriginParams {
                origin,
                storage_types: "all".into(),
            },
        )
        .await?;
        self.cdp("clearing cookies", ClearBrowserCookiesParams {})
            .await?;
        self.cdp("clearing the HTTP cache", ClearBrowserCacheParams {})
            .await?;
        self.cdp(
            "clearing the navigation history",
            ResetNavigationHistoryParams {},
        )
        .await?;
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

/// The origin (`scheme://host:port`) of an absolute URL.
fn origin_of(url: &str) -> Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| anyhow!("not an absolute URL: {url}"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    Ok(format!("{scheme}://{host}"))
}
