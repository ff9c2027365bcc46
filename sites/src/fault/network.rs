//! Network effects: real delays, truncated bodies, hangs, status codes and refused
//! resources, applied by middleware to the first `times` requests an armed rule matches.

use super::board::FaultBoard;
use crate::ledger::{LedgerStore, Scope};
use crate::pages;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faultline_faults::site::{NetworkEffect, Route};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
}
