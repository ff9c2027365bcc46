//! Capturing an observation: a screenshot and every frame's DOM and text, bracketed by
//! the page clock.

use super::page::TrialPage;
use crate::engine::cost::{Span, Stage};
use crate::engine::liveness::InfraFailure;
use anyhow::{anyhow, Context, Result};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, Viewport,
};
use faultline_policies::{Control, FrameSnapshot, PageState, ScrollOffset};
use faultline_tasks::Size;
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

#[derive(Deserialize)]
struct RawFrame {
    now: f64,
    url: String,
    html: String,
    text: String,
    controls: Vec<Control>,
    selected: Vec<String>,
    focus: String,
    scroll: Vec<ScrollOffset>,
    selection: String,
}

const SNAPSHOT_JS: &str = r#"(() => {
  const now = performance.now();
  const name = (e) => (e.getAttribute('aria-label') || e.innerText || e.textContent || '').trim();
  const selected = Array.from(document.querySelectorAll('[aria-pressed="true"],[aria-selected="true"],[aria-checked="true"]')).map(name);
  const controls = Array.from(document.querySelectorAll('input,textarea,select'))
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
  const active = document.activeElement;
  const focus = (!active || active === document.body || active === document.documentElement) ? '' : describe(active);
  const scroll = [];
  if (Math.round(window.scrollX) !== 0 || Math.round(window.scrollY) !== 0) {
    scroll.push({ target: 'window', x: Math.round(window.scrollX), y: Math.round(window.scrollY) });
  }
  for (const e of document.body ? document.body.querySelectorAll('*') : []) {
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
  if (!selection && window.getSelection) selection = String(window.getSelection());
  return { now, url: location.href, html: document.documentElement.outerHTML,
           text: document.body ? document.body.innerText : '', controls, selected,
           focus, scroll, selection };
})()"#;

impl TrialPage {
    /// Reads every frame's DOM through its own execution context.
    pub async fn page_state(&self) -> Result<PageState> {
        Ok(self.page_state_at().await?.0)
    }

    /// [`Self::page_state`] plus the top document's clock when it was read.
    async fn page_state_at(&self) -> Result<(PageState, f64)> {
        let mut top_now = f64::NAN;
        let call = self.liveness.call();
        let main = self
            .guarded("reading the frame tree", call, self.page.mainframe())
            .await?;
        let mut frames = Vec::new();
        let mut ids = self
            .guarded("reading the frame tree", call, self.page.frames())
            .await?;
        // Top frame first, the rest in a stable order (by URL) so snapshots compare.
        ids.sort_by_key(|id| Some(id) != main.as_ref());
        for id in ids {
            let is_top = Some(&id) == main.as_ref();
            let context = if is_top {
                None
            } else {
                match self
                    .guarded(
                        "finding a frame's context",
                        call,
                        self.page.frame_execution_context(id.clone()),
                    )
                    .await?
                {
                    Some(c) => Some(c),
                    None => continue,
                }
            };
            let value = match self.eval_in(context, SNAPSHOT_JS).await {
                Ok(v) => v,
                // A detached or navigating child frame is not part of the page now (a
                // dead browser or page is not that).
                Err(e) if !is_top && InfraFailure::find(&e).is_none() => continue,
                Err(e) => return Err(e),
            };
            let raw: RawFrame =
                serde_json::from_value(value).context("reading a frame snapshot")?;
            if is_top {
                top_now = raw.now;
            }
            if raw.url == "about:blank" && !is_top {
                continue;
            }
            frames.push(FrameSnapshot {
                url: raw.url,
                is_top,
                dom_digest: hex::encode(Sha256::digest(raw.html.as_bytes())),
                text: raw.text,
                controls: raw.controls,
                selected: raw.selected,
                focus: raw.focus,
                scroll: raw.scroll,
                selection: raw.selection,
            });
        }
        frames.sort_by(|a, b| b.is_top.cmp(&a.is_top).then(a.url.cmp(&b.url)));
        let url = frames
            .iter()
            .find(|f| f.is_top)
            .map(|f| f.url.clone())
            .ok_or_else(|| anyhow!("the page has no readable top frame"))?;
        Ok((PageState { url, frames }, top_now))
    }

    /// Captures an observation: a screenshot scaled to `image` plus every frame's DOM and
    /// visible text, bracketed by the page clock (read just before the screenshot and
    /// inside the DOM read just after it), so the ledger can say what the page showed
    /// during the capture.
    pub async fn capture(&mut self, image: Size) -> Result<Capture> {
        let id = self.captures;
        self.captures += 1;
        let span = Span::start(Stage::Capture);
        let begin_ms = self.page_now().await?;
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            optimize_for_speed: Some(true),
            clip: Some(Viewport {
                x: 0.0,
                y: 0.0,
                width: f64::from(self.viewport.width),
                height: f64::from(self.viewport.height),
                scale: f64::from(image.width) / f64::from(self.viewport.width),
            }),
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
}

fn base64_decode(data: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .context("decoding a screenshot")
}
