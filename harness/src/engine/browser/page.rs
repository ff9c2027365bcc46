//! The trial page: one trial's page, its guarded CDP calls, navigation, evaluation and
//! the few reads and writes the faults and the round trip make on it.

use crate::engine::cost::StageCosts;
use crate::engine::liveness::{guard, InfraFailure, InfraKind, Liveness, Vital};
use anyhow::{anyhow, bail, Result};
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::page::CrashParams;
use chromiumoxide::cdp::browser_protocol::page::{
    NavigateParams, RemoveScriptToEvaluateOnNewDocumentParams, ScriptIdentifier, Viewport,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, ExecutionContextId};
use chromiumoxide::types::{Command, CommandResponse};
use chromiumoxide::{Browser, Page};
use faultline_tasks::{Point, Size};
use std::sync::Arc;
use std::time::Duration;

/// What a reusable page needs to go back into its pool.
pub(super) struct Reuse {
    pub(super) pool: tokio::sync::mpsc::Sender<Result<TrialPage>>,
    pub(super) origins: super::pool::SiteOrigins,
    /// One of the pool's page slots, given back when the page is closed for good.
    pub(super) _permit: tokio::sync::OwnedSemaphorePermit,
}

/// One trial's page in its own browser context.
///
/// Every CDP call it makes has a deadline and ends at once when the browser or the
/// page's renderer dies (see [`crate::engine::liveness`]).
pub struct TrialPage {
    pub(super) browser: Arc<Browser>,
    pub(super) context: Option<BrowserContextId>,
    pub(super) page: Page,
    pub(super) viewport: Size,
    pub(super) captures: u64,
    pub(super) browser_alive: Vital,
    pub(super) alive: Vital,
    pub(super) watcher: tokio::task::JoinHandle<()>,
    pub(super) liveness: Liveness,
    /// What the page has cost so far, stage by stage (opening it, ahead of time, is
    /// [`Stage::SetupAhead`](crate::engine::cost::Stage::SetupAhead)).
    pub costs: StageCosts,
    /// Where the page goes when it is closed, under [`Isolation::ReusedContext`].
    pub(super) reuse: Option<Reuse>,
    /// The origin the page's item loads from (see [`super::SiteOrigins`]).
    pub(super) origin: String,
    /// Whether the page's scripts were stopped by its reset (and not yet let run again).
    pub(super) frozen: bool,
    /// The script the reset left for the next item's first document (see `reset`),
    /// removed once that document has loaded.
    pub(super) first_document_script: std::sync::Mutex<Option<ScriptIdentifier>>,
    /// What the page's device-metrics override holds now (see [`Emulation`]).
    pub(super) emulation: std::sync::Mutex<Emulation>,
}

/// The device metrics a page emulates: its viewport and the region its screenshots
/// render.
///
/// A screenshot of a clip at another scale (the observation's image is smaller than the
/// viewport) is taken by Chromium under a device-metrics override of that clip and scale,
/// which it sets for the screenshot and puts back after it: two changes the renderer
/// draws a frame for, on every capture. A page whose override already holds the clip
/// (`shot`) draws at that scale all along, so the screenshot changes nothing and costs
/// one frame. The page does not see it: layout, input and scroll stay at the emulated
/// size (`Emulation.setDeviceMetricsOverride`'s `viewport` is only what is drawn), and
/// the screenshot shows the same, since Chromium sets the same override for it either
/// way. Only the raster can differ, in the shade of an edge: drawn at that scale all
/// along, not in the frame right after a change of scale, and the same from one
/// capture to the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Emulation {
    /// The viewport size emulated: the page's own unless a fault moved it.
    pub size: Size,
    /// The region the page's screenshots are taken of, once one was asked for.
    pub shot: Option<Shot>,
}

/// What a screenshot is taken of: the viewport where the page is scrolled to, at the
/// image's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shot {
    /// The image size.
    pub image: Size,
    /// The document point at the viewport's top left corner (the page's scroll position).
    pub at: Point,
}

impl Shot {
    /// The unscrolled viewport at `image` size.
    pub fn top(image: Size) -> Shot {
        Shot {
            image,
            at: Point::new(0.0, 0.0),
        }
    }
}

impl Emulation {
    fn params(self, viewport: Size) -> SetDeviceMetricsOverrideParams {
        let mut params = SetDeviceMetricsOverrideParams::new(
            i64::from(self.size.width),
            i64::from(self.size.height),
            1.0,
            false,
        );
        params.viewport = self.shot.map(|shot| screenshot_clip(viewport, shot));
        params
    }
}

/// The region and scale of a screenshot of the page's `viewport` (`shot`): a clip is in
/// document coordinates, so it starts where the page is scrolled to.
pub(super) fn screenshot_clip(viewport: Size, shot: Shot) -> Viewport {
    Viewport {
        x: shot.at.x,
        y: shot.at.y,
        width: f64::from(viewport.width),
        height: f64::from(viewport.height),
        scale: f64::from(shot.image.width) / f64::from(viewport.width),
    }
}

impl Drop for TrialPage {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl TrialPage {
    /// The deadlines this page's calls keep.
    pub fn liveness(&self) -> Liveness {
        self.liveness
    }

    /// The origin (`http://host:port`, no trailing slash) this page's item loads its
    /// pages from: under [`super::Isolation::ReusedContext`] the fixture server's two
    /// origins in turn (see [`super::SiteOrigins`]), otherwise always the first. A reused
    /// page is kept apart from earlier items only on this origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The page's viewport size, in CSS pixels.
    pub fn viewport(&self) -> Size {
        self.viewport
    }

    /// One CDP command on the page, with the call deadline and the liveness signals.
    pub(super) async fn cdp<T: Command>(
        &self,
        what: &str,
        params: T,
    ) -> Result<CommandResponse<T::Response>> {
        self.guarded(what, self.liveness.call(), self.page.execute(params))
            .await
    }

    /// Any wait on the page, with a deadline and the liveness signals.
    pub(super) async fn guarded<T, E: Into<anyhow::Error>>(
        &self,
        what: &str,
        limit: Duration,
        call: impl std::future::Future<Output = std::result::Result<T, E>>,
    ) -> Result<T> {
        // A call the page leaves unanswered for long parks the item (see `waiting`): the
        // page is not working for it, so another item may. Waits for a page from the
        // pool do not come here: they wait for the pool, not on a page.
        let call = guard(what, limit, &self.browser_alive, Some(&self.alive), call);
        crate::engine::waiting::unanswered(call).await
    }

    /// The page's DevTools session (`sessionId` of its messages on the browser
    /// connection): what a fault on the protocol is armed on.
    pub fn session_id(&self) -> &str {
        self.page.session_id().as_ref()
    }

    /// Closes the page for good when its trial ends, instead of resetting it for the next
    /// one: a fault on the protocol may have left input state behind (a press never
    /// released) that the reset does not clear.
    pub fn retire(&mut self) {
        self.reuse = None;
    }

    /// Why the page's renderer died, if it did.
    pub fn crashed(&self) -> Option<String> {
        self.alive.dead()
    }

    /// Crashes the page's renderer (CDP `Page.crash`): what the renderer-crash fault of
    /// the catalogue does after the action. Waits (within the call deadline) until the
    /// crash has been noticed.
    pub async fn crash_renderer(&self) -> Result<()> {
        // The command itself gets no answer: the renderer that would answer is gone.
        let page = self.page.clone();
        tokio::spawn(async move {
            let _ = page.execute(CrashParams::default()).await;
        });
        match tokio::time::timeout(self.liveness.call(), self.alive.died()).await {
            Ok(_) => Ok(()),
            Err(_) => Err(anyhow!(InfraFailure::new(
                InfraKind::Unresponsive,
                "Page.crash was sent but no crash was reported",
            ))),
        }
    }

    /// The underlying CDP page, for callers that need its events (console messages and
    /// exceptions, e.g. to check that a page loads without errors).
    pub fn cdp_page(&self) -> &Page {
        &self.page
    }

    /// Navigates and waits for the load event, web fonts and the frames' documents.
    pub async fn goto(&self, url: &str) -> Result<()> {
        let nav = self
            .guarded(
                "navigating",
                self.liveness.navigation(10_000),
                self.page.goto(NavigateParams::new(url)),
            )
            .await;
        if let Err(e) = nav {
            // A dead browser or renderer keeps its own name; anything else is a failed
            // navigation to the fixture server.
            return Err(match InfraFailure::find(&e) {
                Some(f) if f.kind != InfraKind::Unresponsive => e,
                _ => anyhow!(InfraFailure::new(
                    InfraKind::NavigationFailed,
                    format!("navigating to {url}: {e:#}")
                )),
            });
        }
        self.wait_ready(Duration::from_secs(10))
            .await
            .map_err(|e| match InfraFailure::find(&e) {
                Some(_) => e,
                None => anyhow!(InfraFailure::new(
                    InfraKind::NavigationFailed,
                    format!("{url}: {e:#}")
                )),
            })?;
        // The item's first document has cleared what the reset could not; the item's
        // own later documents keep their tab's state.
        let script = self
            .first_document_script
            .lock()
            .expect("never poisoned")
            .take();
        if let Some(identifier) = script {
            self.cdp(
                "removing the first document's script",
                RemoveScriptToEvaluateOnNewDocumentParams::new(identifier),
            )
            .await?;
        }
        Ok(())
    }

    /// Evaluates `expression` in the top document (awaiting promises).
    pub async fn eval(&self, expression: &str) -> Result<serde_json::Value> {
        self.eval_in(None, expression).await
    }

    pub(super) async fn eval_in(
        &self,
        context: Option<ExecutionContextId>,
        expression: &str,
    ) -> Result<serde_json::Value> {
        let mut params = EvaluateParams::new(expression);
        params.await_promise = Some(true);
        params.return_by_value = Some(true);
        params.context_id = context;
        let resp = self.cdp("evaluating in the page", params).await?;
        if let Some(ex) = &resp.result.exception_details {
            bail!("page script threw: {}", ex.text);
        }
        Ok(resp
            .result
            .result
            .value
            .clone()
            .unwrap_or(serde_json::Value::Null))
    }

    /// Waits until the top document and every frame report `readyState == complete`, and
    /// no navigation away from the top document is under way (a submitted form leaves the
    /// old, complete document on screen until the new one commits; on a busy machine that
    /// The page clock (`performance.now()` of the top document).
    pub async fn page_now(&self) -> Result<f64> {
        self.eval("performance.now()")
            .await?
            .as_f64()
            .ok_or_else(|| anyhow!("performance.now() did not return a number"))
    }

    /// Emulates a viewport of `size` instead of the page's own ([`Self::viewport`]),
    /// keeping the region its screenshots draw: the layout fault's way of moving the page
    /// under the harness.
    pub async fn emulate_viewport(&self, size: Size) -> Result<()> {
        let now = *self.emulation.lock().expect("never poisoned");
        self.emulate("changing the viewport", Emulation { size, ..now })
            .await
    }

    /// Lets the page draw what its screenshots take (`shot`) from now on (see
    /// `Emulation` in this module). Whether that changed the page's device metrics:
    /// nothing to do when it already draws it.
    pub async fn render_for_screenshots(&self, shot: Shot) -> Result<bool> {
        let now = *self.emulation.lock().expect("never poisoned");
        if now.shot == Some(shot) {
            return Ok(false);
        }
        self.emulate(
            "drawing at the screenshots' scale",
            Emulation {
                shot: Some(shot),
                ..now
            },
        )
        .await?;
        Ok(true)
    }

    /// Sets the page's device metrics. What is set is noted first: a call that fails
    /// part way leaves the reset to emulate the page's own viewport again.
    pub(super) async fn emulate(&self, what: &str, emulation: Emulation) -> Result<()> {
        *self.emulation.lock().expect("never poisoned") = emulation;
        self.cdp(what, emulation.params(self.viewport)).await?;
        Ok(())
    }

    /// The tag name of the top document's element at a viewport point.
    pub async fn element_tag_at(&self, p: Point) -> Result<Option<String>> {
        let v = self
            .eval(&format!(
                "(() => {{ const e = document.elementFromPoint({}, {}); return e ? e.tagName : null; }})()",
                p.x, p.y
            ))
            .await?;
        Ok(v.as_str().map(str::to_string))
    }

    /// Waits until every ledger request the page (and its frames) sent has been answered.
    pub async fn flush_ledger(&self) -> Result<()> {
        let v = self
            .guarded(
                "waiting for the page's ledger requests",
                Duration::from_secs(5),
                self.eval("window.__faultline_flush ? window.__faultline_flush() : true"),
            )
            .await?;
        if v != serde_json::Value::Bool(true) {
            bail!("ledger flush returned {v}");
        }
        Ok(())
    }
}
