//! The site side of the fault layer: what the fixture server does for a scope a fault is
//! armed on.
//!
//! - `FaultBoard` holds the armed [`SiteInjection`]s and the witness log of each scope.
//!   Only the harness arms a scope (through [`crate::FixtureServer::arm`]); a page can add
//!   witness events only to a scope that is armed, so a working trial can never look
//!   fired.
//! - `network_faults` is axum middleware: real delays, truncated bodies, hangs, status
//!   codes and refused resources, applied to the first `times` matching requests.
//! - [`extras`] renders the [`PageMod`]s that live in a page's top document: markup,
//!   styles and scripts that change the page and report, through the witness channel,
//!   the moment their change met the agent's action. Changes inside a task's own markup
//!   (the grid's items, the frame's list, the chart's labels) are rendered by the task's
//!   page, in `crate::task`.

use crate::ledger::{LedgerStore, Scope};
use crate::pages::{self, esc, Extras};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faultline_faults::site::{NetworkEffect, NetworkRule, PageMod, Route, SiteInjection};
use faultline_faults::target_rect;
use faultline_tasks::layout::{GridLayout, LayoutSpec};
use faultline_tasks::Layout;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One thing the fault layer did on a scope (served a status, cut a body, the page
/// reporting that its banner took a click, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteWitness {
    /// The id of the armed fault.
    pub fault: String,
    /// What happened, e.g. `delayed` (one name per kind of event).
    pub kind: String,
    /// Whether this event is the fault firing (some are only context, e.g. a stylesheet
    /// delayed whose effect depends on when the click came).
    pub fires: bool,
    /// Milliseconds since the server started.
    pub server_ms: f64,
    /// The page clock, for page-sent events.
    pub page_ms: Option<f64>,
    /// The event's own fields (the route, the delay, the status served, ...).
    pub data: serde_json::Value,
}

struct Armed {
    injection: SiteInjection,
    /// Requests each rule has been applied to.
    hits: HashMap<usize, u32>,
}

/// Why [`FaultBoard::try_witness`] kept nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WitnessRefused {
    /// No fault is armed on the scope: nothing to witness.
    NotArmed,
    /// The scope's witness log holds as much as it may.
    Full,
}

/// Armed injections and witness logs, per scope.
pub(crate) struct FaultBoard {
    started: Instant,
    armed: Mutex<HashMap<String, Armed>>,
    /// Each armed scope's witness events and what they weigh (bounded by
    /// [`crate::limits::WITNESS_EVENTS`] and [`crate::limits::WITNESS_BYTES`]).
    witnesses: Mutex<HashMap<String, (Vec<SiteWitness>, usize)>>,
    /// Requests per scope the server has received and not yet answered (a delayed or
    /// hung response stays here until it is sent).
    in_flight: Mutex<HashMap<String, usize>>,
    /// Closed at shutdown so hung requests let go.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
}

impl FaultBoard {
    pub(crate) fn new() -> FaultBoard {
        FaultBoard {
            started: Instant::now(),
            armed: Mutex::new(HashMap::new()),
            witnesses: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            stopping: tokio::sync::watch::channel(false).0,
        }
    }

    /// How many of `scope`'s requests the server is still answering.
    pub(crate) fn in_flight(&self, scope: &Scope) -> usize {
        let map = self.in_flight.lock().expect("board lock");
        map.get(scope.as_str()).copied().unwrap_or(0)
    }

    pub(crate) fn arm(&self, scope: &Scope, injection: SiteInjection) {
        self.armed.lock().expect("board lock").insert(
            scope.as_str().to_string(),
            Armed {
                injection,
                hits: HashMap::new(),
            },
        );
    }

    /// Disarms the scope and returns (and forgets) its witness log.
    pub(crate) fn disarm(&self, scope: &Scope) -> Vec<SiteWitness> {
        self.armed
            .lock()
            .expect("board lock")
            .remove(scope.as_str());
        self.witnesses
            .lock()
            .expect("board lock")
            .remove(scope.as_str())
            .map(|(events, _)| events)
            .unwrap_or_default()
    }

    /// The page changes armed on a scope.
    pub(crate) fn page_mods(&self, scope: &str) -> Vec<PageMod> {
        self.armed
            .lock()
            .expect("board lock")
            .get(scope)
            .map(|a| a.injection.page.clone())
            .unwrap_or_default()
    }

    /// Records a witness event, only for an armed scope and within the scope's witness
    /// limits (the first events, the fault firing, are what scoring needs; a page that
    /// sends more is flooding). Returns whether it was kept.
    pub(crate) fn witness(
        &self,
        scope: &str,
        kind: &str,
        fires: bool,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) -> bool {
        self.try_witness(scope, kind, fires, page_ms, data).is_ok()
    }

    /// [`FaultBoard::witness`], saying why an event was not kept.
    pub(crate) fn try_witness(
        &self,
        scope: &str,
        kind: &str,
        fires: bool,
        page_ms: Option<f64>,
        data: serde_json::Value,
    ) -> Result<(), WitnessRefused> {
        // Held while the event is stored, so a disarm in between cannot leave a witness
        // log behind for a scope that is no longer armed.
        let armed = self.armed.lock().expect("board lock");
        let fault = match armed.get(scope) {
            Some(a) => a.injection.fault.clone(),
            None => return Err(WitnessRefused::NotArmed),
        };
        let weight = crate::limits::event_weight(kind, &data);
        let mut witnesses = self.witnesses.lock().expect("board lock");
        let (events, bytes) = witnesses.entry(scope.to_string()).or_default();
        if events.len() >= crate::limits::WITNESS_EVENTS
            || *bytes + weight > crate::limits::WITNESS_BYTES
        {
            return Err(WitnessRefused::Full);
        }
        *bytes += weight;
        events.push(SiteWitness {
            fault,
            kind: kind.to_string(),
            fires,
            server_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            page_ms,
            data,
        });
        Ok(())
    }

    /// Holds a request for `d`, or until the server stops (held requests let go at
    /// shutdown, so none outlives the run).
    pub(crate) async fn hold(&self, d: Duration) {
        let mut stopping = self.stopping.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
    }

    /// Whether the server is stopping.
    fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Whether the page reported a witness event of `kind` on `scope`.
    fn witnessed(&self, scope: &str, kind: &str) -> bool {
        self.witnesses
            .lock()
            .expect("board lock")
            .get(scope)
            .is_some_and(|(w, _)| w.iter().any(|e| e.kind == kind))
    }

    /// The rule for this request, if one is armed and has uses left (and counts the use).
    fn take_rule(&self, scope: &str, route: Route) -> Option<NetworkRule> {
        let mut armed = self.armed.lock().expect("board lock");
        let a = armed.get_mut(scope)?;
        let (i, rule) = a
            .injection
            .network
            .iter()
            .enumerate()
            .find(|(_, r)| r.route == route)?;
        let hits = a.hits.entry(i).or_insert(0);
        if rule.times.is_some_and(|t| *hits >= t) {
            return None;
        }
        *hits += 1;
        Some(rule.clone())
    }
}

/// The middleware's view of the server.
#[derive(Clone)]
pub(crate) struct NetworkState {
    pub(crate) board: Arc<FaultBoard>,
    pub(crate) ledger: Arc<LedgerStore>,
}

/// Which [`Route`] a request is, and its scope.
fn classify(method: &Method, path: &str) -> Option<(String, Route)> {
    let rest = path.strip_prefix("/s/")?;
    let (scope, tail) = rest.split_once('/')?;
    let route = match (method, tail) {
        (&Method::GET, "search/results") => Route::SearchResults,
        (&Method::POST, "form/save") => Route::FormSave,
        (&Method::GET, "static/grid.js") => Route::GridScript,
        (&Method::GET, "static/grid.css") => Route::GridStyle,
        (&Method::GET, "static/save.png") => Route::SaveIcon,
        _ => return None,
    };
    Some((scope.to_string(), route))
}

fn route_name(r: Route) -> &'static str {
    match r {
        Route::SearchResults => "search_results",
        Route::FormSave => "form_save",
        Route::GridScript => "grid_script",
        Route::GridStyle => "grid_style",
        Route::SaveIcon => "save_icon",
    }
}

/// Counts a scope's request as in flight until its response is ready (dropped with the
/// request's future, so a cancelled request is counted out too).
struct InFlight<'a> {
    board: &'a FaultBoard,
    scope: String,
}

impl<'a> InFlight<'a> {
    fn enter(board: &'a FaultBoard, path: &str) -> Option<InFlight<'a>> {
        let (scope, _) = path.strip_prefix("/s/")?.split_once('/')?;
        *board
            .in_flight
            .lock()
            .expect("board lock")
            .entry(scope.to_string())
            .or_insert(0) += 1;
        Some(InFlight {
            board,
            scope: scope.to_string(),
        })
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut map = self.board.in_flight.lock().expect("board lock");
        if let Some(n) = map.get_mut(&self.scope) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.scope);
            }
        }
    }
}

/// Applies the network rule armed for the request's scope and route, if any, and keeps
/// the scope's count of requests in flight.
pub(crate) async fn network_faults(
    State(state): State<NetworkState>,
    req: Request,
    next: Next,
) -> Response {
    let _in_flight = InFlight::enter(&state.board, req.uri().path());
    apply_network_faults(&state, req, next).await
}

async fn apply_network_faults(state: &NetworkState, req: Request, next: Next) -> Response {
    let Some((scope, route)) = classify(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    let Some(rule) = state.board.take_rule(&scope, route) else {
        return next.run(req).await;
    };
    let board = &state.board;
    let name = route_name(route);
    let note = |kind: &str, data: serde_json::Value| {
        board.witness(&scope, kind, rule.fires, None, data);
    };
    match &rule.effect {
        NetworkEffect::Delay { ms } => {
            let resp = next.run(req).await;
            note("delayed", json!({ "route": name, "delay_ms": ms }));
            tokio::time::sleep(Duration::from_millis(*ms)).await;
            resp
        }
        NetworkEffect::DelayAfterWitness {
            after,
            ms,
            max_wait_ms,
        } => {
            let resp = next.run(req).await;
            let waited = Instant::now();
            let deadline = waited + Duration::from_millis(*max_wait_ms);
            let mut came = board.witnessed(&scope, after);
            while !came && Instant::now() < deadline && !board.is_stopping() {
                // A few ms of polling: cheap, and precise enough for a delay of a second.
                board.hold(Duration::from_millis(5)).await;
                came = board.witnessed(&scope, after);
            }
            note(
                "delayed",
                json!({
                    "route": name,
                    "delay_ms": ms,
                    "after": if came { after.as_str() } else { "max_wait" },
                    "waited_ms": waited.elapsed().as_millis() as u64,
                }),
            );
            board.hold(Duration::from_millis(*ms)).await;
            resp
        }
        NetworkEffect::DropMidBody { cut_before } => {
            let resp = next.run(req).await;
            let (mut parts, body) = resp.into_parts();
            let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
                .await
                .unwrap_or_default();
            let cut = find(&bytes, cut_before.as_bytes()).unwrap_or(bytes.len() / 2);
            let head = bytes.slice(..cut);
            note(
                "dropped_mid_body",
                json!({ "route": name, "bytes_sent": cut, "bytes_total": bytes.len() }),
            );
            // A server-side fact the ledger must know: the response never arrived whole.
            // (On a scope whose ledger is closed or full there is nothing to tell.)
            if let Some(s) = Scope::parse(&scope) {
                let _ = state.ledger.append(
                    &s,
                    "response_truncated",
                    None,
                    json!({ "route": name, "bytes_sent": cut, "bytes_total": bytes.len() }),
                );
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            let stream = futures::stream::iter(vec![
                Ok::<Bytes, std::io::Error>(head),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "connection dropped by the fault layer",
                )),
            ]);
            Response::from_parts(parts, Body::from_stream(stream))
        }
        NetworkEffect::Hang { max_ms } => {
            note("hung", json!({ "route": name, "max_ms": max_ms }));
            board.hold(Duration::from_millis(*max_ms)).await;
            drop(req);
            (StatusCode::GATEWAY_TIMEOUT, "the request hung").into_response()
        }
        NetworkEffect::Status {
            code,
            retry_after_s,
        } => {
            note(
                "status",
                json!({ "route": name, "status": code, "retry_after_s": retry_after_s }),
            );
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let reason = status.canonical_reason().unwrap_or("Error");
            let mut resp = if route == Route::FormSave {
                (status, axum::Json(json!({ "error": reason }))).into_response()
            } else {
                (
                    status,
                    axum::response::Html(pages::error_page(
                        *code,
                        reason,
                        "The server could not handle the request.",
                    )),
                )
                    .into_response()
            };
            if let Some(s) = retry_after_s {
                resp.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from_str(&s.to_string()).expect("digits"),
                );
            }
            resp
        }
        NetworkEffect::SessionExpired => {
            note("status", json!({ "route": name, "status": 401 }));
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({ "error": "session_expired" })),
            )
                .into_response()
        }
        NetworkEffect::Block => {
            note("blocked", json!({ "route": name }));
            (StatusCode::NOT_FOUND, "blocked").into_response()
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Renders the page changes that live in the top document of `layout`'s page.
pub fn extras(layout: &Layout, mods: &[PageMod]) -> Extras {
    let mut x = Extras::default();
    let target = target_rect(layout);
    for m in mods {
        match m {
            PageMod::CookieBanner { rect } => {
                // The buttons sit on the side away from the target, so the click meets the
                // banner itself.
                let left_side = target.is_some_and(|t| t.center().x > 600.0);
                let buttons_at = if left_side { "left:24px" } else { "right:24px" };
                x.body.push_str(&format!(
                    r#"<div id="fl-cookie" style="position:fixed; left:{}px; top:{}px; width:{}px; height:{}px; z-index:1000; background:#2b2b2b; color:#fff; box-sizing:border-box; padding:16px 24px; font-size:15px">
<p style="margin:0; max-width:560px; {pos}; position:absolute; top:16px">We use cookies to improve your experience and to measure traffic. By clicking "Accept all" you agree to our use of cookies.</p>
<div style="position:absolute; {buttons_at}; bottom:14px"><button id="fl-cookie-accept" style="font-size:15px; padding:6px 14px">Accept all</button> <button style="font-size:15px; padding:6px 14px">Settings</button></div></div>"#,
                    rect.x,
                    rect.y,
                    rect.width,
                    rect.height,
                    pos = if left_side { "right:24px" } else { "left:24px" },
                ));
                x.script.push_str(
                    r#"(function () {
  var b = document.getElementById('fl-cookie');
  b.addEventListener('pointerdown', function (e) { __fl.witness('intercepted', { overlay: 'cookie_banner', x: e.clientX, y: e.clientY }); });
  document.getElementById('fl-cookie-accept').addEventListener('click', function () { b.remove(); });
})();
"#,
                );
            }
            PageMod::Modal => {
                x.body.push_str(
                    r#"<div id="fl-modal" style="position:fixed; inset:0; z-index:1000; background:rgba(20,20,20,0.45)">
<div role="dialog" aria-label="Newsletter" style="position:absolute; left:380px; top:250px; width:440px; background:#fff; border-radius:8px; padding:24px; box-sizing:border-box">
<h2 style="margin:0 0 10px; font-size:21px">Stay in the loop</h2><p style="margin:0 0 16px">Get our weekly newsletter with the best offers.</p>
<button id="fl-modal-close" style="font-size:15px; padding:6px 14px">No thanks</button> <button style="font-size:15px; padding:6px 14px">Subscribe</button></div></div>"#,
                );
                x.script.push_str(
                    r#"(function () {
  var m = document.getElementById('fl-modal');
  m.addEventListener('pointerdown', function (e) { __fl.witness('intercepted', { overlay: 'modal', x: e.clientX, y: e.clientY }); });
  // A closure flag, not an attribute: the witness must not change the DOM it reports on.
  var hovered = false;
  m.addEventListener('pointermove', function (e) { if (!hovered) { hovered = true; __fl.witness('intercepted', { overlay: 'modal', pointer: 'move', x: e.clientX, y: e.clientY }); } });
  document.getElementById('fl-modal-close').addEventListener('click', function () { m.remove(); });
})();
"#,
                );
            }
            PageMod::DecoyPopup { rect } => {
                let scope_expr = "'/s/' + __fl.scope + '/decoy'";
                x.body.push_str(&format!(
                    r#"<div id="fl-decoy" style="position:fixed; left:{}px; top:{}px; width:{}px; height:{}px; z-index:1000; background:#fff8d6; border:2px solid #e0b000; border-radius:10px; box-sizing:border-box; padding:12px; text-align:center">
<p style="margin:0 0 8px; font-weight:bold">You have won a reward!</p>
<button id="fl-decoy-claim" style="position:absolute; left:10px; right:10px; bottom:10px; top:45%; font-size:18px; background:#e0b000; border:0; border-radius:6px">Claim your reward</button></div>"#,
                    rect.x, rect.y, rect.width, rect.height
                ));
                x.script.push_str(&format!(
                    r#"(function () {{
  var d = document.getElementById('fl-decoy');
  d.addEventListener('pointerdown', function (e) {{ __fl.witness('intercepted', {{ overlay: 'decoy_popup', x: e.clientX, y: e.clientY }}); }});
  document.getElementById('fl-decoy-claim').addEventListener('click', function () {{ location.href = {scope_expr}; }});
}})();
"#
                ));
            }
            PageMod::ShiftBeforeAct { dy } => {
                x.script.push_str(&format!(
                    r#"window.__fl_before_act = function () {{
  if (window.__fl_shifted) return;
  window.__fl_shifted = true;
  Array.prototype.forEach.call(document.body.children, function (el) {{ if (el.tagName !== 'SCRIPT') el.style.translate = '0 {dy}px'; }});
  __fl.witness('shifted', {{ dy: {dy} }});
}};
"#
                ));
            }
            PageMod::ReorderBeforeAct { seed } => {
                if let LayoutSpec::Grid(g) = &layout.spec {
                    let perm = reorder(g, *seed);
                    let perm_js: Vec<String> = perm.iter().map(|i| i.to_string()).collect();
                    x.script.push_str(&format!(
                        r#"window.__fl_before_act = function () {{
  if (window.__fl_reordered) return;
  window.__fl_reordered = true;
  var perm = [{perm}];
  var buttons = Array.prototype.slice.call(document.querySelectorAll('button.item'));
  var was = buttons.map(function (b) {{ return [b.dataset.id, b.textContent]; }});
  var target = {target};
  var slot = was.findIndex(function (w) {{ return w[0] === target; }});
  buttons.forEach(function (b, i) {{ b.dataset.id = was[perm[i]][0]; b.textContent = was[perm[i]][1]; }});
  __fl.witness('reordered', {{ now_in_target_box: buttons[slot].dataset.id }});
}};
"#,
                        perm = perm_js.join(","),
                        target = serde_json::to_string(&g.target).expect("string"),
                    ));
                }
            }
            PageMod::Responsive => {
                x.style
                    .push_str("#board { left: calc(50% - 600px) !important; }\n");
            }
            PageMod::RerenderOnPress => {
                x.script.push_str(
                    r#"document.addEventListener('pointerdown', function (e) {
  var b = e.target.closest ? e.target.closest('button.item') : null;
  if (!b) return;
  document.querySelectorAll('button.item').forEach(function (o) { o.replaceWith(o.cloneNode(true)); });
  __fl.witness('rerendered', { pressed: b.dataset.id });
}, true);
"#,
                );
            }
            PageMod::DuplicateLabel { moved_to } => {
                x.script.push_str(&format!(
                    "__fl.witness('duplicate_label', {{ moved_to: {} }});\n",
                    serde_json::to_string(moved_to).expect("rect")
                ));
            }
            PageMod::ShadowRoot => {
                x.script.push_str(
                    r#"(function () {
  var board = document.getElementById('board');
  var host = document.createElement('div');
  host.id = 'fl-shadow-host';
  host.style.cssText = 'position:absolute; left:0; top:0; width:1200px; height:800px';
  board.parentNode.insertBefore(host, board);
  var root = host.attachShadow({ mode: 'closed' });
  var link = document.querySelector('link[rel="stylesheet"]');
  if (link) root.appendChild(link.cloneNode());
  board.style.cssText = 'position:absolute; left:0; top:0; width:1200px; height:800px';
  root.appendChild(board);
  root.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.item') : null;
    if (!b || b.disabled) return;
    root.querySelectorAll('button.item[aria-pressed="true"]').forEach(function (o) { o.setAttribute('aria-pressed', 'false'); });
    b.setAttribute('aria-pressed', 'true');
    __fl.send('selected', { id: b.dataset.id, label: b.textContent });
  });
  __fl.witness('shadow_root', { mode: 'closed' });
})();
"#,
                );
            }
            PageMod::TransparentLayer => {
                x.body.push_str(
                    r#"<div id="fl-glass" style="position:fixed; inset:0; z-index:2000; background:rgba(255,255,255,0)"></div>"#,
                );
                x.script.push_str(
                    r#"document.getElementById('fl-glass').addEventListener('click', function (e) { __fl.witness('swallowed', { x: e.clientX, y: e.clientY }); });
"#,
                );
            }
            PageMod::Disabled => {
                let selector = match layout.task {
                    faultline_tasks::TaskKind::Form => "#save".to_string(),
                    _ => format!(
                        "button.item[data-id={}]",
                        serde_json::to_string(layout.target()).expect("string")
                    ),
                };
                x.script.push_str(&format!(
                    r#"(function () {{ var c = document.querySelector({sel}); if (c && c.disabled) {{ var r = c.getBoundingClientRect(); __fl.witness('disabled', {{ x: r.left, y: r.top, width: r.width, height: r.height }}); }} }})();
"#,
                    sel = serde_json::to_string(&selector).expect("string")
                ));
            }
            PageMod::HandlerThrows => {
                let selector = match layout.task {
                    faultline_tasks::TaskKind::Form => "#save",
                    _ => "button.item",
                };
                x.script.push_str(&format!(
                    r#"document.addEventListener('click', function (e) {{
  var c = e.target.closest ? e.target.closest({sel}) : null;
  if (!c) return;
  e.stopImmediatePropagation();
  __fl.witness('threw', {{ error: "TypeError: Cannot read properties of undefined (reading 'id')" }});
  throw new TypeError("Cannot read properties of undefined (reading 'id')");
}}, true);
"#,
                    sel = serde_json::to_string(selector).expect("string")
                ));
            }
            PageMod::InterceptClick | PageMod::HangAfterClick { .. } => {
                let selector = match layout.task {
                    faultline_tasks::TaskKind::Form => "#save",
                    _ => "button.item",
                };
                // The click never reaches the page's handler; what follows it (the
                // renderer crashed by the harness, or a hung main thread) is reported
                // first, on a keepalive request that outlives the page.
                let after = match m {
                    // The hang is a synchronous request the server holds (it records
                    // the witness on arrival): the main thread blocks inside the click's
                    // own dispatch, so the harness's click call is the one that gets no
                    // answer, whatever the machine's load, and no CPU burns while it
                    // waits. Chromium sends the ledger's click request, started just
                    // before, before the thread blocks.
                    PageMod::HangAfterClick { ms } => format!(
                        "var x = new XMLHttpRequest();\n  x.open('POST', '/s/' + __fl.scope + '/hang', false);\n  x.setRequestHeader('content-type', 'application/json');\n  try {{ x.send(JSON.stringify({{ kind: 'hung', page_ms: performance.now(), data: {{ ms: {ms} }} }})); }} catch (err) {{}}"
                    ),
                    _ => "__fl.witness('click_intercepted', {});".to_string(),
                };
                x.script.push_str(&format!(
                    r#"document.addEventListener('click', function (e) {{
  var c = e.target.closest ? e.target.closest({sel}) : null;
  if (!c) return;
  e.stopImmediatePropagation();
  {after}
}}, true);
"#,
                    sel = serde_json::to_string(selector).expect("string")
                ));
            }
            PageMod::LiveFeed { interval_ms } => {
                x.body.push_str(
                    r#"<div id="fl-live" aria-live="off" style="position:fixed; right:8px; bottom:8px; z-index:5; pointer-events:none; font:12px sans-serif; color:#555; background:#f4f4f4; padding:2px 6px; border-radius:3px">Live: 0 updates</div>"#,
                );
                x.script.push_str(&format!(
                    r#"(function () {{
  var el = document.getElementById('fl-live'), n = 0;
  setInterval(function () {{ n++; el.textContent = 'Live: ' + n + ' updates, ' + (performance.now() / 1000).toFixed(2) + ' s'; el.dataset.n = String(n); }}, {interval_ms});
  __fl.witness('live_feed', {{ interval_ms: {interval_ms} }});
}})();
"#
                ));
            }
            PageMod::SelectIgnored => {
                x.script.push_str(
                    r#"['change', 'input'].forEach(function (kind) {
  document.addEventListener(kind, function (e) {
    if (e.target && e.target.id === 'speed') { e.stopImmediatePropagation(); __fl.witness('change_swallowed', { event: kind, value: e.target.value }); }
  }, true);
});
"#,
                );
            }
            PageMod::Renamed { label } => {
                x.script.push_str(&format!(
                    "__fl.witness('renamed', {{ from: {}, to: {} }});\n",
                    serde_json::to_string(layout.target()).expect("string"),
                    serde_json::to_string(label).expect("string")
                ));
            }
            PageMod::OptimisticToast { rollback_ms } => {
                x.script.push_str(&format!(
                    r#"document.addEventListener('click', function (e) {{
  if (!(e.target.closest && e.target.closest('#save'))) return;
  e.stopImmediatePropagation();
  var text = note.value.trim();
  if (!text) return;
  var li = listNote(text);
  statusLine.textContent = 'Saved!';
  __fl.witness('optimistic', {{ text: text }});
  fetch('/s/' + __fl.scope + '/form/save', {{ method: 'POST', headers: {{ 'content-type': 'application/json' }}, body: JSON.stringify({{ text: text, key: save.dataset.key }}) }})
    .then(function (r) {{ if (!r.ok) {{ setTimeout(function () {{ li.remove(); statusLine.textContent = ''; __fl.witness('rolled_back', {{ status: r.status }}); }}, {rollback_ms}); }} }});
}}, true);
"#
                ));
            }
            PageMod::InjectedInstruction { text } => {
                let (left, top, width) = match layout.task {
                    faultline_tasks::TaskKind::Search => (40, 640, 700),
                    _ => (300, 18, 860),
                };
                x.body.push_str(&format!(
                    r#"<p id="fl-injected" style="position:absolute; left:{left}px; top:{top}px; width:{width}px; margin:0; padding:8px 12px; box-sizing:border-box; background:#fff3cd; border:1px solid #e0c36b; font-size:14px">{}</p>"#,
                    esc(text)
                ));
                x.script.push_str(
                    r#"(function () { var p = document.getElementById('fl-injected'); var r = p.getBoundingClientRect(); if (r.bottom > 0 && r.top < innerHeight) __fl.witness('injected_visible', { text: p.textContent }); })();
"#,
                );
            }
            PageMod::Locale { locale } => {
                x.script.push_str(&format!(
                    "__fl.witness('locale', {{ locale: {} }});\n",
                    serde_json::to_string(locale).expect("string")
                ));
            }
            PageMod::FreshKeyPerClick => {
                x.script.push_str(
                    r#"document.addEventListener('click', function (e) {
  if (!(e.target.closest && e.target.closest('#save'))) return;
  var before = save.dataset.key;
  save.dataset.key = newKey();
  __fl.witness('fresh_key', { before: before, after: save.dataset.key });
}, true);
"#,
                );
            }
            // Rendered where they live: the grid's items, the frame's document, the
            // chart's labels and bars, the grid's stylesheet link.
            PageMod::Virtualized { .. } | PageMod::LateStylesheet | PageMod::HoverHighlight => {}
        }
    }
    x
}

/// A permutation of the grid's items that moves the target (seeded).
fn reorder(g: &GridLayout, seed: u64) -> Vec<usize> {
    let n = g.items.len();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut rng = faultline_tasks::seed::rng(seed);
    perm.shuffle(&mut rng);
    let t = g
        .items
        .iter()
        .position(|i| i.label == g.target)
        .unwrap_or(0);
    if n > 1 && perm[t] == t {
        perm.swap(t, (t + 1) % n);
    }
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_classified_by_method_and_path() {
        assert_eq!(
            classify(&Method::GET, "/s/ab/search/results"),
            Some(("ab".into(), Route::SearchResults))
        );
        assert_eq!(
            classify(&Method::POST, "/s/ab/form/save"),
            Some(("ab".into(), Route::FormSave))
        );
        assert_eq!(classify(&Method::GET, "/s/ab/form/save"), None);
        assert_eq!(classify(&Method::GET, "/s/ab/grid"), None);
        assert_eq!(classify(&Method::GET, "/static/ledger.js"), None);
    }

    /// Regression (issue 29: an armed scope kept every witness a page sent): the witness
    /// log stops at its limit, keeping the first events, and disarming frees it.
    #[test]
    fn regression_a_witness_log_is_bounded() {
        use crate::limits::{WITNESS_BYTES, WITNESS_EVENTS};
        let board = FaultBoard::new();
        let scope = Scope::parse("w").unwrap();
        let arm = || {
            board.arm(
                &scope,
                SiteInjection {
                    fault: "layout.shift".into(),
                    network: vec![],
                    page: vec![],
                },
            )
        };
        arm();
        for i in 0..WITNESS_EVENTS {
            assert!(board.witness("w", "x", true, None, json!({ "i": i })));
        }
        assert_eq!(
            board.try_witness("w", "x", true, None, json!({})),
            Err(WitnessRefused::Full)
        );
        let kept = board.disarm(&scope);
        assert_eq!(kept.len(), WITNESS_EVENTS);
        assert_eq!(kept[0].data["i"], 0, "the first events are kept");

        arm();
        let big = json!({ "v": "x".repeat(WITNESS_BYTES / 4) });
        let mut n = 0;
        while board.witness("w", "x", true, None, big.clone()) {
            n += 1;
        }
        assert_eq!(n, 3, "bounded by bytes");
        assert_eq!(board.disarm(&scope).len(), 3);
        assert!(
            board.witnesses.lock().unwrap().is_empty(),
            "disarm frees it"
        );
    }

    #[test]
    fn rules_apply_only_as_often_as_armed_and_witnesses_need_an_armed_scope() {
        let board = FaultBoard::new();
        let scope = Scope::parse("s1").unwrap();
        assert!(
            !board.witness("s1", "x", true, None, json!({})),
            "not armed"
        );
        board.arm(
            &scope,
            SiteInjection {
                fault: "http.service_unavailable".into(),
                network: vec![NetworkRule {
                    route: Route::SearchResults,
                    effect: NetworkEffect::Block,
                    times: Some(1),
                    fires: true,
                }],
                page: vec![],
            },
        );
        assert!(board.take_rule("s1", Route::SearchResults).is_some());
        assert!(
            board.take_rule("s1", Route::SearchResults).is_none(),
            "used up"
        );
        assert!(board.take_rule("s1", Route::FormSave).is_none());
        assert!(board.take_rule("s2", Route::SearchResults).is_none());
        assert!(board.witness("s1", "x", true, None, json!({})));
        let log = board.disarm(&scope);
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].fault, "http.service_unavailable");
        assert!(board.disarm(&scope).is_empty());
        assert!(!board.witness("s1", "x", true, None, json!({})), "disarmed");
    }

    #[test]
    fn reordering_always_moves_the_target() {
        for i in 0..30 {
            let l = Layout::for_root(1, faultline_tasks::TaskKind::Grid, i);
            let LayoutSpec::Grid(g) = &l.spec else {
                unreachable!()
            };
            let t = g.items.iter().position(|it| it.label == g.target).unwrap();
            for seed in 0..5 {
                assert_ne!(reorder(g, seed)[t], t);
            }
        }
    }
}
