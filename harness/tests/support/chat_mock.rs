//! An in-process mock of the OpenAI chat-completions API, on `127.0.0.1:0`.
//!
//! This is a **test double**, not a model: it answers what its responder tells it to,
//! so the `openai` agent's protocol, retries, timeouts and cassette can be exercised
//! offline (tests, or development without a model server). It serves
//! `POST /v1/chat/completions`, counts requests, and keeps every request body and
//! `Authorization` header it received so a test can assert what was sent.
//!
//! Dropping the mock shuts it down without waiting: a [`MockResponse::Hang`] in
//! flight is released by the same signal.

// Each test binary uses a part of the mock.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the mock answers to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockResponse {
    /// A well-formed chat completion whose message content is `content`.
    Reply {
        content: String,
        prompt_tokens: u64,
        completion_tokens: u64,
    },
    /// An error status with an optional `Retry-After` (seconds) and a body.
    Status {
        code: u16,
        retry_after_s: Option<u64>,
        body: String,
    },
    /// No answer at all, until the client gives up (or the mock is dropped).
    Hang,
    /// Status 200 with this body as is (for malformed-response tests).
    Malformed(String),
}

impl MockResponse {
    /// A reply with small fixed token counts.
    pub fn reply(content: impl Into<String>) -> MockResponse {
        MockResponse::Reply {
            content: content.into(),
            prompt_tokens: 100,
            completion_tokens: 10,
        }
    }

    /// An error status without `Retry-After`.
    pub fn status(code: u16, body: impl Into<String>) -> MockResponse {
        MockResponse::Status {
            code,
            retry_after_s: None,
            body: body.into(),
        }
    }
}

type Responder = dyn Fn(&Value, usize) -> MockResponse + Send + Sync;

struct Shared {
    responder: Box<Responder>,
    count: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    authorizations: Mutex<Vec<Option<String>>>,
    shutdown: watch::Receiver<bool>,
}

/// A running mock server; shut down on drop.
pub struct ChatMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ChatMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatMock")
            .field("addr", &self.addr)
            .field("requests", &self.requests())
            .finish()
    }
}

impl ChatMock {
    /// Starts a mock whose `responder` picks each response from the request body and
    /// the request's number (0 for the first). A body that is not JSON is answered
    /// with 400 and recorded as a JSON string.
    pub async fn start<F>(responder: F) -> std::io::Result<ChatMock>
    where
        F: Fn(&Value, usize) -> MockResponse + Send + Sync + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            responder: Box::new(responder),
            count: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
            authorizations: Mutex::new(Vec::new()),
            shutdown: rx.clone(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(shared.clone());
        let mut stop = rx;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|stopped| *stopped).await;
                })
                .await;
        });
        Ok(ChatMock {
            addr,
            shared,
            shutdown: tx,
            task,
        })
    }

    /// A mock that answers with `responses` in order; past the end every request gets
    /// a 400 saying the script is exhausted (not retried, so a test fails clearly).
    pub async fn scripted(responses: Vec<MockResponse>) -> std::io::Result<ChatMock> {
        ChatMock::start(move |_, n| {
            responses.get(n).cloned().unwrap_or_else(|| {
                MockResponse::status(
                    400,
                    format!(
                        "chat mock: script exhausted after {} responses",
                        responses.len()
                    ),
                )
            })
        })
        .await
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` to configure an agent with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// Every request body received, in arrival order.
    pub fn bodies(&self) -> Vec<Value> {
        self.shared.bodies.lock().unwrap().clone()
    }

    /// The `Authorization` header of every request (`None` when absent).
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.authorizations.lock().unwrap().clone()
    }
}

impl Drop for ChatMock {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.task.abort();
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let parsed = serde_json::from_slice::<Value>(&body);
    let recorded = match &parsed {
        Ok(v) => v.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
    };
    // Record before counting so a test that sees the count also sees the body.
    let n = {
        let mut bodies = shared.bodies.lock().unwrap();
        bodies.push(recorded);
        shared.authorizations.lock().unwrap().push(auth);
        shared.count.fetch_add(1, Ordering::SeqCst)
    };
    let request = match parsed {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("chat mock: body is not JSON: {e}"),
            )
                .into_response()
        }
    };
    match (shared.responder)(&request, n) {
        MockResponse::Reply {
            content,
            prompt_tokens,
            completion_tokens,
        } => {
            let model = request.get("model").cloned().unwrap_or(Value::Null);
            axum::Json(json!({
                "id": format!("chatcmpl-mock-{n}"),
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }))
            .into_response()
        }
        MockResponse::Status {
            code,
            retry_after_s,
            body,
        } => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body).into_response();
            if let Some(secs) = retry_after_s {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, secs.to_string().parse().unwrap());
            }
            response
        }
        MockResponse::Hang => {
            let mut stop = shared.shutdown.clone();
            let _ = stop.wait_for(|stopped| *stopped).await;
            (StatusCode::SERVICE_UNAVAILABLE, "chat mock: shut down").into_response()
        }
        MockResponse::Malformed(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
    }
}
