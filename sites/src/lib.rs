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
//! | `POST /s/{scope}/event` | page-sent ledger events (open scopes only: 404 otherwise, 429 past the ledger's limits) |
//! | `/s/{scope}/form`, `POST /s/{scope}/form/save` | the notes form and its idempotent write |
//! | `/s/{scope}/select` | the checkout page with its native `<select>` |
//! | `/s/{scope}/login`, `/s/{scope}/decoy` | where an expired session and a decoy popup lead |
//! | `/s/{scope}/static/grid.js`, `grid.css`, `save.png` | per-scope subresources (faults can refuse or delay them) |
//! | `/s/{scope}/miniwob_<task>`, `/miniwob/...` | a MiniWoB++ task page and the vendored MiniWoB++ files it loads |
//! | `POST /s/{scope}/witness` | the fault layer's page-side witness channel (armed scopes only) |
//! | `GET /api/ledger/{scope}` | the scope's ledger; needs `Authorization: Bearer <key>` |
//!
//! A fault is armed on a scope by the harness, in process ([`FixtureServer::arm`]);
//! nothing in a URL says so.
//!
//! A scope's ledger records only while it is open: the harness opens it before the trial's
//! page loads ([`LedgerKey::open`]) and closes it by taking the ledger
//! ([`LedgerKey::take`]). Every event a request would record (a page's event, a search
//! submission, a form save, the decoy) is refused with 404 on a scope that is not open,
//! so a finished trial's late requests store nothing. `faultline serve` opens scopes on
//! demand instead ([`ServerOptions::open_scopes_on_demand`]). What any client can make
//! the server hold is bounded ([`limits`]): request bodies (413 past the limit), each
//! scope's ledger and all of them together (past a limit, one `ledger_overflow` event and
//! 429), each armed scope's witness log, the time a connection may take to send its
//! headers, and the number of connections held at once.
//!
//! The server binds `127.0.0.1` on an ephemeral port unless told otherwise, and a second
//! ephemeral port on the same address ([`FixtureServer::twin_base_url`]): every URL above
//! is served on both. The two are one site (the port is not part of a site) but two
//! origins, each with its own storage; the harness's reused pages alternate between them
//! so that an origin's data can be cleared while none of its documents is alive. Every
//! response says `Cache-Control: no-store`, so no browser's HTTP cache keeps anything of
//! one item for the next.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod app;
pub mod fault;
mod ledger;
pub mod limits;
pub mod pages;
mod task;
pub mod truth;

/// The fault layer's former path, kept for callers that still name it.
pub use fault as anomalies;
pub use fault::SiteWitness;
pub use ledger::{Ledger, LedgerEvent, LedgerKey, LedgerLimits, Scope};
pub use task::{judge, locate_script, plan_script};
pub use truth::Truth;

use app::{bad_request, scope_or_400, AppState, LayoutQuery};
use fault::{FaultBoard, NetworkState};
use faultline_faults::site::SiteInjection;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline_tasks::{Layout, TaskKind};
use ledger::LedgerStore;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running fixture server.
pub struct FixtureServer {
    addr: SocketAddr,
    twin: SocketAddr,
    board: Arc<FaultBoard>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// How a fixture server treats scopes and what it bounds. The defaults (see
/// [`limits`]) are what a run uses.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Open any valid scope on its first event, instead of only those the key holder
    /// opened ([`LedgerKey::open`]). For `faultline serve`, where a person loads pages
    /// under scopes they choose; still within [`ServerOptions::ledger`].
    pub open_scopes_on_demand: bool,
    /// How much the ledgers may hold.
    pub ledger: LedgerLimits,
    /// The largest request body read ([`limits::MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
    /// How long a connection may take to send its request headers
    /// ([`limits::HEADER_READ_TIMEOUT`]).
    pub header_read_timeout: std::time::Duration,
    /// The most connections held at once ([`limits::MAX_CONNECTIONS`]).
    pub max_connections: usize,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            open_scopes_on_demand: false,
            ledger: LedgerLimits::default(),
            max_body_bytes: limits::MAX_BODY_BYTES,
            header_read_timeout: limits::HEADER_READ_TIMEOUT,
            max_connections: limits::MAX_CONNECTIONS,
        }
    }
}

impl FixtureServer {
    /// Starts the server on `bind` (use port 0 for an ephemeral port), and its twin on an
    /// ephemeral port of the same address, with the default options. Returns the server
    /// and the only key that can read its ledgers.
    pub async fn start(bind: SocketAddr) -> std::io::Result<(FixtureServer, LedgerKey)> {
        FixtureServer::start_with(bind, ServerOptions::default()).await
    }

    /// Starts the server on `bind`, and its twin on an ephemeral port of the same address,
    /// with `options`. Returns the server and the only key that can read its ledgers.
    pub async fn start_with(
        bind: SocketAddr,
        options: ServerOptions,
    ) -> std::io::Result<(FixtureServer, LedgerKey)> {
        let store = Arc::new(LedgerStore::new(
            options.ledger,
            options.open_scopes_on_demand,
        ));
        let secret: [u8; 32] = rand::random();
        let board = Arc::new(FaultBoard::new());
        let state = AppState {
            store: store.clone(),
            secret: Arc::new(secret),
            board: board.clone(),
        };
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let twin_listener = tokio::net::TcpListener::bind(SocketAddr::new(addr.ip(), 0)).await?;
        let twin = twin_listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let app = router(state).layer(axum::extract::DefaultBodyLimit::max(options.max_body_bytes));
        let task = tokio::spawn(serve(
            [listener, twin_listener],
            app,
            options,
            board.clone(),
            rx,
        ));
        Ok((
            FixtureServer {
                addr,
                twin,
                board,
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

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://` plus the listening address, with no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://` plus the twin's address: the same pages on another port of the same
    /// address, so the same site under another origin (with no trailing slash).
    pub fn twin_base_url(&self) -> String {
        format!("http://{}", self.twin)
    }

    /// The URL of `layout`'s page under `scope`.
    pub fn page_url(&self, scope: &Scope, layout: &Layout) -> String {
        Self::page_url_on(&self.base_url(), scope, layout)
    }

    /// The URL of `layout`'s page under `scope` on `origin` (this server's
    /// [`FixtureServer::base_url`] or [`FixtureServer::twin_base_url`]).
    pub fn page_url_on(origin: &str, scope: &Scope, layout: &Layout) -> String {
        format!(
            "{}/s/{}/{}?layout={}&seed={}",
            origin, scope, layout.task, layout.index, layout.seed
        )
    }

    /// Arms a fault's site-side injection on a scope (before the trial's page loads).
    pub fn arm(&self, scope: &Scope, injection: SiteInjection) {
        self.board.arm(scope, injection);
    }

    /// Disarms the scope and returns everything the fault layer recorded on it.
    pub fn disarm(&self, scope: &Scope) -> Vec<SiteWitness> {
        self.board.disarm(scope)
    }

    /// How many requests of `scope` the server has received and not yet answered: a
    /// response the fault layer delays or hangs counts until it is sent. The harness asks
    /// when a page is slow to load, to tell a slow site from a slow machine.
    pub fn in_flight(&self, scope: &Scope) -> usize {
        self.board.in_flight(scope)
    }

    /// Stops accepting connections and waits for the server task to end.
    pub async fn shutdown(mut self) {
        let _ = self.board.stopping.send(true);
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

/// How long shutdown waits for open connections to finish their requests before it
/// drops them. Held requests let go as soon as shutdown begins, so an answered request
/// needs milliseconds; what is left after this is a connection that never finished its
/// headers.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Accepts connections on both listeners until `stop` fires, then lets every connection
/// finish its request (for at most [`SHUTDOWN_GRACE`]) and waits for them. Unlike
/// `axum::serve`, a connection must send its request headers within the header-read
/// timeout or be closed, and at most `max_connections` are held at once (more wait in the
/// listen backlog).
async fn serve(
    [listener, twin]: [tokio::net::TcpListener; 2],
    app: Router,
    options: ServerOptions,
    board: Arc<FaultBoard>,
    stop: oneshot::Receiver<()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    let mut connections = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = &mut stop => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            accepted = twin.accept() => accepted,
            _ = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: wait for connections to close rather
                // than spin.
                tracing::warn!("fixture server: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_read_timeout)
            .serve_connection(
                TokioIo::new(stream),
                hyper_util::service::TowerToHyperService::new(app.clone()),
            );
        let connection = graceful.watch(connection);
        connections.spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    drop((listener, twin));
    // Let hung requests go, so shutdown does not wait for them.
    let _ = board.stopping.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        connections.abort_all();
    }
    while connections.join_next().await.is_some() {}
}

fn router(state: AppState) -> Router {
    let network = NetworkState {
        board: state.board.clone(),
        ledger: state.store.clone(),
    };
    Router::new()
        .route("/", get(index))
        .route("/static/ledger.js", get(ledger_js))
        .route("/warm", get(warm))
        .route("/s/{scope}/event", post(event))
        .route("/s/{scope}/witness", post(witness))
        .route("/s/{scope}/hang", post(hang))
        .route("/s/{scope}/login", get(login))
        .route("/s/{scope}/decoy", get(decoy))
        .route("/s/{scope}/{task}", get(task_page))
        .route("/api/ledger/{scope}", get(ledger_api))
        .merge(task::routes())
        .layer(axum::middleware::from_fn_with_state(
            network,
            fault::network_faults,
        ))
        .layer(axum::middleware::map_response(no_store))
        .with_state(state)
}

/// Marks every response (a fault's included) as one no cache may keep: a browser that
/// reuses a page for the next item then has nothing of the last one in its HTTP cache,
/// without clearing it (which costs Chromium more than the page's own requests).
async fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

#[derive(Debug, Deserialize)]
struct PageEvent {
    kind: String,
    page_ms: Option<f64>,
    #[serde(default)]
    data: serde_json::Value,
}

/// Whether a page may send events of `kind`: the shared `click` and `page_error`, and
/// each task's own kinds. Anything else is refused so a typo cannot silently become an
/// unscored event.
fn is_page_event(kind: &str) -> bool {
    ["click", "page_error"].contains(&kind)
        || TaskKind::ALL
            .into_iter()
            .any(|task| task::events(task).contains(&kind))
}

async fn index() -> Html<String> {
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
    Html(pages::index_page(&links))
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
    if !is_page_event(&ev.kind) {
        return bad_request(format!("kind: unknown event kind `{}`", ev.kind));
    }
    match state.store.append(&scope, &ev.kind, ev.page_ms, ev.data) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refused) => refused.response(),
    }
}

async fn witness(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Json(ev): Json<PageEvent>,
) -> Response {
    record_witness(&state, &scope, &ev.kind, ev.page_ms, ev.data)
        .unwrap_or_else(|| StatusCode::NO_CONTENT.into_response())
}

/// Records a page-sent witness on `scope`, or returns the refusal: 400 for a bad scope,
/// 409 on a scope with no fault armed, which has nothing to witness, 429 once the scope's
/// witness log is full.
fn record_witness(
    state: &AppState,
    scope: &str,
    kind: &str,
    page_ms: Option<f64>,
    data: serde_json::Value,
) -> Option<Response> {
    if let Err(r) = scope_or_400(scope) {
        return Some(r.into_response());
    }
    match state.board.try_witness(scope, kind, true, page_ms, data) {
        Ok(()) => None,
        Err(fault::WitnessRefused::NotArmed) => {
            Some((StatusCode::CONFLICT, "no fault is armed on this scope").into_response())
        }
        Err(fault::WitnessRefused::Full) => Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                "this scope's witness log is full; the event was not kept",
            )
                .into_response(),
        ),
    }
}

/// The longest a page may ask the server to hold its main thread (see [`hang`]).
const MAX_HANG_MS: u64 = 60_000;

/// A page's main thread, blocked on purpose: the main-thread-hang fault sends this
/// request synchronously, so the page runs nothing until the answer comes `data.ms` later
/// (at most [`MAX_HANG_MS`], or when the server stops). The witness is recorded when the
/// request arrives: the page cannot report anything while it waits.
async fn hang(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Json(ev): Json<PageEvent>,
) -> Response {
    let Some(ms) = ev.data.get("ms").and_then(serde_json::Value::as_u64) else {
        return (
            StatusCode::BAD_REQUEST,
            "data.ms: expected the hang in milliseconds",
        )
            .into_response();
    };
    if let Some(refused) = record_witness(&state, &scope, "hung", ev.page_ms, ev.data) {
        return refused;
    }
    state
        .board
        .hold(std::time::Duration::from_millis(ms.min(MAX_HANG_MS)))
        .await;
    StatusCode::NO_CONTENT.into_response()
}

async fn login(Path(scope): Path<String>) -> Response {
    match scope_or_400(&scope) {
        Ok(s) => Html(pages::login_page(s.as_str())).into_response(),
        Err(r) => r.into_response(),
    }
}

async fn decoy(State(state): State<AppState>, Path(scope): Path<String>) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    if let Err(refused) = state
        .store
        .append(&scope, "decoy_opened", None, serde_json::json!({}))
    {
        return refused.response();
    }
    Html(pages::decoy_page(scope.as_str())).into_response()
}

async fn task_page(
    State(state): State<AppState>,
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
    let mods = state.board.page_mods(scope.as_str());
    let html = task::page(scope.as_str(), &layout, &mods);
    Html(html).into_response()
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
