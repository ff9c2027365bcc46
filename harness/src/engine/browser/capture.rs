//! Capturing an observation: a screenshot and every frame's DOM and text, bracketed by
//! the page clock.

use super::page::{screenshot_clip, Shot, TrialPage};
use crate::engine::cost::{Span, Stage};
use crate::engine::liveness::InfraFailure;
use anyhow::{anyhow, Context, Result};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams,
};
use chromiumoxide::cdp::js_protocol::runtime::ExecutionContextId;
use faultline_policies::{Control, FrameSnapshot, Observation, PageState, ScrollOffset};
use faultline_tasks::{Point, Size};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// same instant, bracketed by the page clock.
pub struct Capture {
    /// Capture number within the page, from 0.
    pub id: u64,
    /// The screenshot (PNG), scaled to `size`.
    pub png: Vec<u8>,
    /// The screenshot's size (the `image` it was captured at).
    pub size: Size,
    /// Every frame's URL, DOM and controls, read just after the screenshot.
    pub state: PageState,
    /// Every non-empty frame's visible text, trimmed, joined by newlines.
    pub text: String,
    /// The page clock just before the screenshot, in milliseconds.
    pub begin_ms: f64,
    /// The page clock at the DOM read just after the screenshot, in milliseconds.
    pub end_ms: f64,
}

impl Capture {
    /// What an agent and a policy are shown (the screenshot and the text), and the page
    /// state read with it.
    pub fn into_observation(self) -> (Observation, PageState) {
        let observation = Observation {
            png: self.png,
            size: self.size,
            text: self.text,
        };
        (observation, self.state)
    }
}

/// One evaluation's answer: the frames it read (the one it ran in first) and the iframes
/// it could not reach.
#[derive(Deserialize)]
struct RawRead {
    now: f64,
    frames: Vec<RawFrame>,
    unreadable: usize,
}

#[derive(Deserialize)]
struct RawFrame {
    url: String,
    html: String,
    text: String,
    controls: Vec<Control>,
    selected: Vec<String>,
    focus: String,
    scroll: Vec<ScrollOffset>,
    selection: String,
}

/// Reads one frame's window and document, and with `deep` every same-origin iframe below it
/// from the same script (one evaluation for the whole page); an iframe whose document it
/// cannot reach (another origin) is counted in `unreadable`.
const SNAPSHOT_JS: &str = r#"((deep) => {
  const now = performance.now();
  const read = (win, doc) => {
    const name = (e) => (e.getAttribute('aria-label') || e.innerText || e.textContent || '').trim();
    const selected = Array.from(doc.querySelectorAll('[aria-pressed="true"],[aria-selected="true"],[aria-checked="true"]')).map(name);
    const controls = Array.from(doc.querySelectorAll('input,textarea,select'))
      .filter((e) => e.type !== 'hidden')
      .map((e) => ({
        tag: e.tagName.toLowerCase(),
        kind: (e.type || '').toLowerCase(),
        name: e.name || e.id || '',
        label: ((e.labels && e.labels[0]) ? e.labels[0].innerText : (e.getAttribute('aria-label') || '')).trim(),
        value: String(e.value),
        checked: e.checked === true,
      }));
    const describe = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : (e.getAttribute('name') ? '[name=' + e.getAttribute('name') + ']' : ''));
    const active = doc.activeElement;
    const focus = (!active || active === doc.body || active === doc.documentElement) ? '' : describe(active);
    const scroll = [];
    if (Math.round(win.scrollX) !== 0 || Math.round(win.scrollY) !== 0) {
      scroll.push({ target: 'window', x: Math.round(win.scrollX), y: Math.round(win.scrollY) });
    }
    for (const e of doc.body ? doc.body.querySelectorAll('*') : []) {
      if (Math.round(e.scrollLeft) !== 0 || Math.round(e.scrollTop) !== 0) {
        scroll.push({ target: describe(e), x: Math.round(e.scrollLeft), y: Math.round(e.scrollTop) });
      }
    }
    let selection = '';
    const field = active && (active.tagName === 'INPUT' || active.tagName === 'TEXTAREA');
    try {
      if (field && typeof active.selectionStart === 'number' && active.selectionEnd > active.selectionStart) {
        selection = String(active.value).slice(active.selectionStart, active.selectionEnd);
      }
    } catch (_) {}
    if (!selection && win.getSelection) selection = String(win.getSelection());
    return { url: win.location.href, html: doc.documentElement.outerHTML,
             text: doc.body ? doc.body.innerText : '', controls, selected,
             focus, scroll, selection };
  };
  const frames = [];
  let unreadable = 0;
  const walk = (win, doc) => {
    frames.push(read(win, doc));
    if (!deep) return;
    for (const f of doc.querySelectorAll('iframe,frame')) {
      let inner = null;
      try { inner = f.contentWindow && f.contentDocument; } catch (_) {}
      if (inner && inner.documentElement) walk(f.contentWindow, inner); else unreadable += 1;
    }
  };
  walk(window, document);
  return { now, frames, unreadable };
})"#;

impl TrialPage {
    /// Reads every frame's URL, DOM and controls: same-origin frames in one evaluation.
    pub async fn page_state(&self) -> Result<PageState> {
        Ok(self.page_state_at().await?.0)
    }

    /// [`Self::page_state`] plus the top document's clock when it was read.
    ///
    /// One evaluation in the top document reads it and every same-origin frame below it.
    /// When that read did not reach every frame in the page's frame tree (another origin's
    /// frame, a frame attached or detached in between), each child frame is read again
    /// through its own execution context.
    async fn page_state_at(&self) -> Result<(PageState, f64)> {
        let call = self.liveness.call();
        let ids = self
            .guarded("reading the frame tree", call, self.page.frames())
            .await?;
        let whole = self.read_frames(None, true).await?;
        let top_now = whole.now;
        let raw = if whole.unreadable == 0 && whole.frames.len() == ids.len() {
            whole.frames
        } else {
            // The top frame as the whole-page read saw it, then each child frame's own.
            let main = self
                .guarded("reading the frame tree", call, self.page.mainframe())
                .await?;
            let mut frames: Vec<RawFrame> = whole.frames.into_iter().take(1).collect();
            for id in ids.into_iter().filter(|id| Some(id) != main.as_ref()) {
                let Some(context) = self
                    .guarded(
                        "finding a frame's context",
                        call,
                        self.page.frame_execution_context(id),
                    )
                    .await?
                else {
                    continue;
                };
                match self.read_frames(Some(context), false).await {
                    Ok(read) => frames.extend(read.frames),
                    // A detached or navigating child frame is not part of the page now (a
                    // dead browser or page is not that).
                    Err(e) if InfraFailure::find(&e).is_none() => continue,
                    Err(e) => return Err(e),
                }
            }
            frames
        };
        let mut frames: Vec<FrameSnapshot> = raw
            .into_iter()
            .enumerate()
            .map(|(i, raw)| (i == 0, raw))
            .filter(|(is_top, raw)| *is_top || raw.url != "about:blank")
            .map(|(is_top, raw)| FrameSnapshot {
                url: raw.url,
                is_top,
                dom_digest: hex::encode(Sha256::digest(raw.html.as_bytes())),
                text: raw.text,
                controls: raw.controls,
                selected: raw.selected,
                focus: raw.focus,
                scroll: raw.scroll,
                selection: raw.selection,
            })
            .collect();
        frames.sort_by(|a, b| b.is_top.cmp(&a.is_top).then(a.url.cmp(&b.url)));
        let url = frames
            .iter()
            .find(|f| f.is_top)
            .map(|f| f.url.clone())
            .ok_or_else(|| anyhow!("the page has no readable top frame"))?;
        Ok((PageState { url, frames }, top_now))
    }

    /// One snapshot evaluation in `context` (the top document's when `None`); `deep` also
    /// reads the same-origin frames below it.
    async fn read_frames(
        &self,
        context: Option<ExecutionContextId>,
        deep: bool,
    ) -> Result<RawRead> {
        let value = self
            .eval_in(context, &format!("{SNAPSHOT_JS}({deep})"))
            .await?;
        serde_json::from_value(value).context("reading a frame snapshot")
    }

    /// Captures an observation: a screenshot scaled to `image` plus every frame's DOM and
    /// visible text, bracketed by the page clock (read just before the screenshot and
    /// inside the DOM read just after it), so the ledger can say what the page showed
    /// during the capture.
    pub async fn capture(&mut self, image: Size) -> Result<Capture> {
        let id = self.captures;
        self.captures += 1;
        let span = Span::start(Stage::Capture);
        let (mut begin_ms, at) = self.clock_and_scroll().await?;
        let shot = Shot { image, at };
        // Ahead of the session's navigation as a rule (see `Session::open`), again only
        // where the page was scrolled.
        if self.render_for_screenshots(shot).await? {
            begin_ms = self.page_now().await?;
        }
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            optimize_for_speed: Some(true),
            clip: Some(screenshot_clip(self.viewport, shot)),
            ..Default::default()
        };
        let shot = self.cdp("taking a screenshot", params).await?;
        let png = base64_decode(shot.result.data.as_ref())?;
        span.end(&mut self.costs);
        let span = Span::start(Stage::Dom);
        let (state, end_ms) = self.page_state_at().await?;
        let text = state
            .frames
            .iter()
            .map(|f| f.text.trim())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        span.end(&mut self.costs);
        Ok(Capture {
            id,
            png,
            size: image,
            state,
            text,
            begin_ms,
            end_ms,
        })
    }

    /// The page clock and where the top document is scrolled to, in one evaluation.
    async fn clock_and_scroll(&self) -> Result<(f64, Point)> {
        let v = self
            .eval("[performance.now(), window.scrollX, window.scrollY]")
            .await?;
        let number = |i: usize| {
            v.get(i)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| anyhow!("the page's clock and scroll position are not numbers"))
        };
        Ok((number(0)?, Point::new(number(1)?, number(2)?)))
    }
}

fn base64_decode(data: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .context("decoding a screenshot")
}
