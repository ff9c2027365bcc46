//! faultline's fixture sites: real pages served by axum on loopback, each trial under its
//! own ledger scope.
//!
//! URLs:
//!
//! | path | what |
//! |------|------|
//! | `/s/{scope}/{task}?layout=I&seed=S` | the task page for layout `I` with layout seed `S` |
//! | `/s/{scope}/search/results?q=..&layout=I&seed=S` | search results (records the submission) |
//! | `/s/{scope}/frame/orders?layout=I&seed=S` | the orders table inside the frame page |
//! | `POST /s/{scope}/event` | page-sent ledger events |
//! | `GET /api/ledger/{scope}` | the scope's ledger; needs `Authorization: Bearer <key>` |
//!
//! The server binds `127.0.0.1` on an ephemeral port unless told otherwise.

mod ledger;
pub mod pages;
pub mod truth;

pub use ledger::{Ledger, LedgerEvent, LedgerKey, Scope};
pub use truth::{judge, Truth};

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline_tasks::layout::LayoutSpec;
use faultline_tasks::{Layout, TaskKind};
use ledger::LedgerStore;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Clone)]
struct AppState {
    store: Arc<LedgerStore>,
    secret: Arc<[u8; 32]>,
}

/// A running fixture server.
pub struct FixtureServer {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl FixtureServer {
    /// Starts the server on `bind` (use port 0 for an ephemeral port). Returns the server
    /// and the only key that can read its ledgers.
    pub async fn start(bind: SocketAddr) -> std::io::Result<(FixtureServer, LedgerKey)> {
        let store = Arc::new(LedgerStore::new());
        let secret: [u8; 32] = rand::random();
        let state = AppState {
            store: store.clone(),
            secret: Arc::new(secret),
        };
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let app = router(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok((
            FixtureServer {
                addr,
                shutdown: Some(tx),
                task: Some(task),
            },
            LedgerKey::new(secret, store),
        ))
    }

    /// Starts on `127.0.0.1` with an ephemeral port.
    pub async fn start_loopback() -> std::io::Result<(FixtureServer, LedgerKey)> {
        FixtureServer::start(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `layout`'s page under `scope`.
    pub fn page_url(&self, scope: &Scope, layout: &Layout) -> String {
        format!(
            "{}/s/{}/{}?layout={}&seed={}",
            self.base_url(),
            scope,
            layout.task,
            layout.index,
            layout.seed
        )
    }

    /// Stops accepting connections and waits for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/static/ledger.js", get(ledger_js))
        .route("/warm", get(warm))
        .route("/s/{scope}/event", post(event))
        .route("/s/{scope}/search/results", get(search_results))
        .route("/s/{scope}/frame/orders", get(frame_orders))
        .route("/s/{scope}/{task}", get(task_page))
        .route("/api/ledger/{scope}", get(ledger_api))
        .with_state(state)
}

#[derive(Debug, Deserialize)]
struct LayoutQuery {
    layout: u32,
    seed: u64,
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    layout: u32,
    seed: u64,
}

#[derive(Debug, Deserialize)]
struct PageEvent {
    kind: String,
    page_ms: Option<f64>,
    #[serde(default)]
    data: serde_json::Value,
}

/// Event kinds a page may send; anything else is refused so a typo cannot silently
/// become an unscored event.
const PAGE_EVENT_KINDS: &[&str] = &[
    "typed",
    "click",
    "row_selected",
    "tooltip_shown",
    "tooltip_hidden",
];

fn bad_request(msg: impl Into<String>) -> Response {
    (StatusCode::BAD_REQUEST, msg.into()).into_response()
}

fn scope_or_400(raw: &str) -> Result<Scope, (StatusCode, &'static str)> {
    Scope::parse(raw).ok_or((
        StatusCode::BAD_REQUEST,
        "scope: expected 1-64 characters of [0-9a-z_-]",
    ))
}

async fn index(headers: HeaderMap) -> Html<String> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let mut links = Vec::new();
    for task in TaskKind::ALL {
        for i in 0..3 {
            let l = Layout::for_root(faultline_tasks::seed::DEFAULT_ROOT_SEED, task, i);
            links.push((
                format!("{task} layout {i}: {}", l.instruction().text),
                format!("/s/inspect/{task}?layout={i}&seed={}", l.seed),
            ));
        }
    }
    Html(pages::index_page(&format!("http://{host}"), &links))
}

/// A blank page on the server's origin: the harness opens fresh contexts here so their
/// renderer process is up before a trial navigates.
async fn warm() -> Html<&'static str> {
    Html("<!doctype html><html><head><meta charset=\"utf-8\"><title>ready</title></head><body></body></html>")
}

async fn ledger_js() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/javascript; charset=utf-8",
        )],
        pages::LEDGER_JS,
    )
}

async fn event(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Json(ev): Json<PageEvent>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    if !PAGE_EVENT_KINDS.contains(&ev.kind.as_str()) {
        return bad_request(format!("kind: unknown event kind `{}`", ev.kind));
    }
    state.store.append(&scope, &ev.kind, ev.page_ms, ev.data);
    StatusCode::NO_CONTENT.into_response()
}

async fn task_page(
    Path((scope, task)): Path<(String, String)>,
    Query(q): Query<LayoutQuery>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let task: TaskKind = match task.parse() {
        Ok(t) => t,
        Err(e) => return (StatusCode::NOT_FOUND, e).into_response(),
    };
    let layout = Layout::generate(task, q.layout, q.seed);
    let html = match &layout.spec {
        LayoutSpec::Search(s) => pages::search_page(scope.as_str(), &layout, s),
        LayoutSpec::Grid(g) => pages::grid_page(scope.as_str(), g),
        LayoutSpec::Frame(f) => pages::frame_page(scope.as_str(), &layout, f),
        LayoutSpec::Chart(c) => pages::chart_page(scope.as_str(), c),
    };
    Html(html).into_response()
}

async fn frame_orders(Path(scope): Path<String>, Query(q): Query<LayoutQuery>) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let layout = Layout::generate(TaskKind::Frame, q.layout, q.seed);
    let LayoutSpec::Frame(f) = &layout.spec else {
        unreachable!("frame layouts are frame specs")
    };
    Html(pages::frame_orders(scope.as_str(), f)).into_response()
}

async fn search_results(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let layout = Layout::generate(TaskKind::Search, q.layout, q.seed);
    let LayoutSpec::Search(s) = &layout.spec else {
        unreachable!("search layouts are search specs")
    };
    let results: Vec<String> = if q.q.is_empty() {
        Vec::new()
    } else {
        s.records
            .iter()
            .filter(|r| r.contains(q.q.as_str()))
            .cloned()
            .collect()
    };
    // The server records the submission itself: the query as it arrived over HTTP.
    state.store.append(
        &scope,
        "submitted",
        None,
        serde_json::json!({ "query": q.q, "results": results }),
    );
    Html(pages::search_results(
        scope.as_str(),
        &layout,
        &q.q,
        &results,
    ))
    .into_response()
}

async fn ledger_api(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    headers: HeaderMap,
) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "));
    let Some(token) = token else {
        return (
            StatusCode::UNAUTHORIZED,
            "the ledger needs the run's bearer token",
        )
            .into_response();
    };
    match state
        .store
        .snapshot_authorized(&state.secret, token, &scope)
    {
        Some(ledger) => Json(ledger).into_response(),
        None => (StatusCode::UNAUTHORIZED, "wrong bearer token").into_response(),
    }
}
