//! What every request handler shares: the server's state, the layout query, and the
//! answers to a malformed request.

use crate::fault::FaultBoard;
use crate::ledger::{LedgerStore, Scope};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) store: Arc<LedgerStore>,
    pub(crate) secret: Arc<[u8; 32]>,
    pub(crate) board: Arc<FaultBoard>,
}

/// `?layout=I&seed=S`: which layout a page or subresource is for.
#[derive(Debug, Deserialize)]
pub(crate) struct LayoutQuery {
    pub(crate) layout: u32,
    pub(crate) seed: u64,
}

pub(crate) fn bad_request(msg: impl Into<String>) -> Response {
    (StatusCode::BAD_REQUEST, msg.into()).into_response()
}

pub(crate) fn scope_or_400(raw: &str) -> Result<Scope, (StatusCode, &'static str)> {
    Scope::parse(raw).ok_or((
        StatusCode::BAD_REQUEST,
        "scope: expected 1-64 characters of [0-9a-z_-]",
    ))
}
