//! The environment API: HTTP/JSON on loopback, versioned under `/v1/`, every route
//! behind the run's own bearer token.
//!
//! - `GET /v1/run`: the run's harness name, viewport and item counts;
//! - `POST /v1/claim` (body `{"worker": "w1"}`, optional): the next item, or
//!   `{"item": null, "done": bool, "retry_after_ms": N}` when none waits;
//! - `POST /v1/leases/{lease}/steps` (a [`super::episode::StepReport`], episodes only):
//!   checkpoints one step of an episode and answers with what is left of its budget;
//! - `POST /v1/leases/{lease}/report` (a [`super::report::Report`] for a trial, an
//!   [`super::episode::EpisodeReport`] for an episode): stores the item and answers with
//!   its fault, whether it fired and the ledger's truth — the first moment the harness
//!   may learn them.
//!
//! Every error is a 4xx or 5xx with one line of JSON, `{"error": "..."}`. A report that
//! cannot be stored for its item's sake (malformed, out of bounds) is also an
//! infrastructure error of that item, which is offered again; a report for a lease this
//! run never issued is refused (leases are random, per run: an item of one run cannot be
//! reported into another).

use super::board::{fail_lease, Lease};
use super::offer::offer;
use super::report::Report;
use super::{Shared, ToStore, API_VERSION};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline_sites::Scope;
use faultline_tasks::InfraKind;
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The largest request body: a report with two screenshots.
pub const MAX_BODY_BYTES: usize = 12 << 20;
/// What a worker is told to wait before claiming again when every item is leased.
const RETRY_AFTER_MS: u64 = 200;

/// A fresh bearer token (32 random bytes, hex).
pub fn new_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The running API.
pub struct Api {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Api {
    /// Listens on `bind` and serves `shared`'s items.
    pub(crate) async fn start(shared: Arc<Shared>, bind: SocketAddr) -> std::io::Result<Api> {
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/v1/run", get(run_info))
            .route("/v1/claim", post(claim))
            .route("/v1/leases/{lease}/report", post(report))
            .route("/v1/leases/{lease}/steps", post(step))
            .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route (see GET /v1/run)") })
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(shared);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Api {
            addr,
            stop: Some(stop),
            task,
        })
    }

    /// `http://host:port`, with no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving (requests in progress finish).
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), &mut self.task).await;
        self.task.abort();
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// `None` when the request carries the run's token; the refusal otherwise.
fn refused(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if constant_time_eq(t.as_bytes(), shared.token.as_bytes()) => None,
        Some(_) => Some(error(StatusCode::UNAUTHORIZED, "wrong bearer token")),
        None => Some(error(
            StatusCode::UNAUTHORIZED,
            "expected `Authorization: Bearer <FAULTLINE_ENV_TOKEN>`",
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn run_info(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(r) = refused(&shared, &headers) {
        return r;
    }
    let (pending, leased, stored, given_up) = shared.board.lock().expect("not poisoned").counts();
    Json(json!({
        "api_version": API_VERSION,
        "harness": shared.harness,
        "viewport": shared.viewport,
        "items": { "pending": pending, "leased": leased, "stored": stored, "given_up": given_up },
    }))
    .into_response()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    /// The worker's own name (faultline gives each worker it starts one in
    /// `FAULTLINE_WORKER`): its leases are taken back when it exits.
    #[serde(default)]
    worker: Option<String>,
    /// The DevTools endpoint of the harness's own browser (`http://127.0.0.1:PORT`):
    /// the item is then served with a DevTools proxy in front of it
    /// ([`super::devtools`]).
    #[serde(default)]
    devtools_upstream: Option<String>,
    /// `"item"` (the default): a proxy of the lease's own, stopped when it ends;
    /// `"worker"`: the worker's one proxy for all its items, re-armed at each claim
    /// (needs `worker` and `devtools_upstream`).
    #[serde(default)]
    devtools_scope: DevtoolsScope,
}

/// Whose DevTools proxy serves a claimed item.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum DevtoolsScope {
    #[default]
    Item,
    Worker,
}

async fn claim(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = refused(&shared, &headers) {
        return r;
    }
    let body: ClaimBody = match body.is_empty() {
        true => ClaimBody::default(),
        false => match serde_json::from_slice(&body) {
            Ok(b) => b,
            Err(e) => return error(StatusCode::BAD_REQUEST, format!("claim body: {e}")),
        },
    };
    if body.worker.as_ref().is_some_and(|w| w.len() > 128) {
        return error(StatusCode::BAD_REQUEST, "worker: at most 128 bytes");
    }
    let upstream = match body
        .devtools_upstream
        .as_deref()
        .map(super::devtools::upstream)
    {
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, format!("devtools_upstream: {e}")),
        Some(Ok(a)) => Some(a),
        None => None,
    };
    if body.devtools_scope == DevtoolsScope::Worker && (body.worker.is_none() || upstream.is_none())
    {
        return error(
            StatusCode::BAD_REQUEST,
            "devtools_scope: \"worker\" needs the claim's `worker` and `devtools_upstream`",
        );
    }
    if let (DevtoolsScope::Worker, Some(worker)) = (body.devtools_scope, body.worker.as_deref()) {
        // One item at a time on a worker's proxy, or one item's fault could act on
        // another's commands.
        let held = shared.worker_proxies.holding(worker).await.filter(|l| {
            shared
                .board
                .lock()
                .expect("not poisoned")
                .leased(l)
                .is_some()
        });
        if let Some(held) = held {
            return error(
                StatusCode::CONFLICT,
                format!("{worker} still holds lease {held} on its DevTools proxy (devtools_scope \"worker\"): report it before claiming another item"),
            );
        }
    }
    let next = {
        let mut board = shared.board.lock().expect("not poisoned");
        board.next_pending().map(|i| (i, board.item(i).clone()))
    };
    let Some((index, spec)) = next else {
        let settled = shared.board.lock().expect("not poisoned").settled();
        return Json(json!({
            "item": null,
            "done": settled,
            "retry_after_ms": RETRY_AFTER_MS,
        }))
        .into_response();
    };
    let d = spec.spec().decision();
    let layout = d.layout();
    let offered = offer(spec.spec(), shared.viewport);
    // A fresh scope per attempt: opened and armed before the harness can load the page.
    let scope = Scope::random();
    shared.scorer.open(&scope);
    if let Some(injection) = offered.plan.as_ref().and_then(|p| p.site(&layout)) {
        shared.server.arm(&scope, injection);
    }
    let start_url = shared.server.page_url(&scope, &layout);
    let lease_id = hex::encode(rand::random::<[u8; 16]>());
    let mut item = json!({
        "lease": lease_id,
        "item": opaque_item_id(&shared.token, spec.key()),
        "kind": match spec {
            super::board::Item::Trial(_) => "trial",
            super::board::Item::Episode(_) => "episode",
        },
        "task": d.task,
        "layout_index": d.layout_index,
        "instruction": d.instruction,
        "start_url": start_url,
        "viewport": shared.viewport,
        "image": offered.image,
        "reply": offered.reply,
        "format": offered.format,
        "space": offered.space,
    });
    let worker = body.worker.clone();
    let deadline_ms = {
        let mut board = shared.board.lock().expect("not poisoned");
        let deadline = board.lease(lease_id.clone(), index, scope, offered, body.worker);
        deadline
            .saturating_duration_since(std::time::Instant::now())
            .as_millis() as u64
    };
    item["lease_ms"] = json!(deadline_ms);
    if let super::board::Item::Episode(_) = spec {
        item["budget"] = super::episode::budget(&shared.limits);
    }
    if let Some(upstream) = upstream {
        let (fault, seed) = (spec.spec().fault(), spec.spec().trial_seed());
        let started = match (body.devtools_scope, worker.as_deref()) {
            (DevtoolsScope::Worker, Some(worker)) => {
                shared
                    .worker_proxies
                    .claim(worker, upstream, &lease_id, fault, seed)
                    .await
            }
            _ => super::devtools::ItemProxy::start(fault, seed, upstream).await,
        };
        match started {
            Ok(proxy) => {
                item["devtools"] = json!(proxy.url());
                let _ = shared
                    .board
                    .lock()
                    .expect("not poisoned")
                    .attach_devtools(&lease_id, proxy);
            }
            Err(e) => {
                let taken = shared.board.lock().expect("not poisoned").take(&lease_id);
                let why = format!("starting the item's DevTools proxy: {e}");
                if let Some(lease) = taken {
                    let row = fail_lease(&shared, &lease_id, lease, InfraKind::Harness, &why);
                    let _ = shared.store.send(ToStore::Infra(vec![row]));
                }
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("{why}; the item is offered again"),
                );
            }
        }
    }
    Json(json!({ "item": item })).into_response()
}

/// A report's JSON, or what is wrong with it, naming the field (`report.verdict: ...`).
fn parse_report(body: &[u8]) -> Result<Report, String> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| match e.path().to_string() {
        p if p == "." => format!("report: {}", e.inner()),
        p => format!("report.{p}: {}", e.inner()),
    })
}

/// An item's id as the harness sees it: stable within the run, naming no fault.
fn opaque_item_id(token: &str, key: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{token}\n{key}").as_bytes());
    hex::encode(&digest[..8])
}

async fn report(
    State(shared): State<Arc<Shared>>,
    Path(lease_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = refused(&shared, &headers) {
        return r;
    }
    let taken = shared.board.lock().expect("not poisoned").take(&lease_id);
    let Some(lease) = taken else {
        return not_leased(&shared, &lease_id);
    };
    if lease.episode.is_some() {
        return report_episode(&shared, lease_id, lease, &body).await;
    }
    let parsed = parse_report(&body).and_then(|r| r.check().map_err(|e| format!("report: {e}")));
    let checked = match parsed {
        Ok(c) => c,
        Err(reason) => return bad_report(&shared, lease_id, lease, &reason),
    };
    let item = lease.item;
    let scored = match super::report::score(&shared, &lease, checked).await {
        Ok(s) => s,
        Err(e) => return unscored(&shared, lease_id, lease, "item", &e),
    };
    let (done, stored) = oneshot::channel();
    let sent = shared.store.send(ToStore::Trial {
        row: Box::new(scored.row),
        verdict: scored.verdict,
        shots: scored.shots,
        done,
    });
    answer_once_stored(
        &shared,
        lease_id,
        item,
        sent.is_ok(),
        stored,
        scored.told,
        "item",
    )
    .await
}

/// A report that could not be scored (faultline's own failure): an infrastructure error
/// of the harness kind, and the item is offered again.
fn unscored(
    shared: &Shared,
    lease_id: String,
    lease: Lease,
    what: &str,
    e: &anyhow::Error,
) -> Response {
    let row = fail_lease(
        shared,
        &lease_id,
        lease,
        InfraKind::Harness,
        &format!("{e:#}"),
    );
    let _ = shared.store.send(ToStore::Infra(vec![row]));
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("the {what} could not be scored ({e:#}); it is offered again"),
    )
}

/// Answers a scored report once the store says its rows are written (`sent`: whether the
/// store took them): the item counts as reported only then.
async fn answer_once_stored(
    shared: &Shared,
    lease_id: String,
    item: usize,
    sent: bool,
    stored: oneshot::Receiver<anyhow::Result<()>>,
    told: Value,
    what: &str,
) -> Response {
    match (sent, stored.await) {
        (true, Ok(Ok(()))) => {
            shared
                .board
                .lock()
                .expect("not poisoned")
                .stored(lease_id, item);
            Json(told).into_response()
        }
        (_, Ok(Err(e))) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the {what} could not be stored: {e:#}"),
        ),
        _ => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the run is ending; the {what} was not stored"),
        ),
    }
}

/// A report for a lease that is not out: already reported (an infrastructure error of
/// its item, which stays stored once), ended (expired, its worker gone), or never issued.
fn not_leased(shared: &Shared, lease_id: &str) -> Response {
    let board = shared.board.lock().expect("not poisoned");
    if let Some(item) = board.reported_item(lease_id) {
        let key = board.item(item).key().to_string();
        drop(board);
        let _ = shared
            .store
            .send(ToStore::Infra(vec![super::board::infra_row(
                &key,
                InfraKind::BadReport,
                "a second report for an item already reported and stored (the first one stands)",
            )]));
        return error(
            StatusCode::CONFLICT,
            "this lease was already reported; the first report stands",
        );
    }
    if let Some(why) = board.ended(lease_id) {
        return error(
            StatusCode::GONE,
            format!("this lease ended ({why}); the item was offered again"),
        );
    }
    error(StatusCode::NOT_FOUND, "no such lease in this run")
}

/// A report that cannot be stored: an infrastructure error of its item, offered again.
fn bad_report(shared: &Shared, lease_id: String, lease: Lease, reason: &str) -> Response {
    let row = fail_lease(shared, &lease_id, lease, InfraKind::BadReport, reason);
    let _ = shared.store.send(ToStore::Infra(vec![row]));
    error(
        StatusCode::BAD_REQUEST,
        format!("{reason}; the item is offered again"),
    )
}

/// `POST /v1/leases/{lease}/steps`: one step of an episode, checkpointed. A step that
/// breaks the episode's rules ends the lease as a bad report (the item is offered again).
async fn step(
    State(shared): State<Arc<Shared>>,
    Path(lease_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = refused(&shared, &headers) {
        return r;
    }
    let context = {
        let board = shared.board.lock().expect("not poisoned");
        board
            .leased(&lease_id)
            .map(|l| super::episode::context(&board, l))
    };
    let Some(context) = context else {
        return not_leased(&shared, &lease_id);
    };
    let checked = context.and_then(|cx| {
        let de = &mut serde_json::Deserializer::from_slice(&body);
        let step: super::episode::StepReport =
            serde_path_to_error::deserialize(de).map_err(|e| match e.path().to_string() {
                p if p == "." => format!("step: {}", e.inner()),
                p => format!("step.{p}: {}", e.inner()),
            })?;
        Ok((cx, step))
    });
    let result = match checked {
        Ok((cx, step)) => super::episode::checkpoint(&shared, &lease_id, cx, step).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(told) => Json(told).into_response(),
        Err(reason) => {
            let taken = shared.board.lock().expect("not poisoned").take(&lease_id);
            match taken {
                Some(lease) => bad_report(&shared, lease_id, lease, &reason),
                None => not_leased(&shared, &lease_id),
            }
        }
    }
}

/// An episode's report: how it ended, checked against its steps; the episode scored from
/// the ledger and stored.
async fn report_episode(shared: &Shared, lease_id: String, lease: Lease, body: &[u8]) -> Response {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let parsed: Result<super::episode::EpisodeReport, String> =
        serde_path_to_error::deserialize(de).map_err(|e| match e.path().to_string() {
            p if p == "." => format!("report: {}", e.inner()),
            p => format!("report.{p}: {}", e.inner()),
        });
    let end = match parsed
        .and_then(|end| super::episode::check_end(&lease, &end, &shared.limits).map(|()| end))
    {
        Ok(end) => end,
        Err(reason) => return bad_report(shared, lease_id, lease, &reason),
    };
    let item = lease.item;
    let mut lease = lease;
    let scored = match super::episode::score(shared, &mut lease, end).await {
        Ok(s) => s,
        Err(e) => return unscored(shared, lease_id, lease, "episode", &e),
    };
    let (done, stored) = oneshot::channel();
    let sent = shared.store.send(ToStore::Episode {
        row: Box::new(scored.row),
        steps: scored.steps,
        done,
    });
    answer_once_stored(
        shared,
        lease_id,
        item,
        sent.is_ok(),
        stored,
        scored.told,
        "episode",
    )
    .await
}
