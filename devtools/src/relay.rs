//! One WebSocket relayed: the client's and the browser's, each read by its own loop
//! and written by its own writer, messages in order, through the proxy's [`Tamper`]
//! when one is armed.

use crate::http::{respond, Head};
use crate::{Route, Shared, Step, Tamper, INJECTED_ID_BASE, MAX_MESSAGE_BYTES};
use async_tungstenite::tokio::{connect_async_with_config, TokioAdapter};
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use async_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use async_tungstenite::tungstenite::{Error as WsError, Message};
use async_tungstenite::{WebSocketSender, WebSocketStream};
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// Messages waiting to be written, per direction (a slow reader slows its writer's
/// feeder, never the other direction's).
const QUEUE: usize = 256;
/// How long the proxy waits for the browser's answer to a command of its own.
const INJECTED_TIMEOUT: Duration = Duration::from_secs(10);

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES))
}

/// A command of the proxy's own, waiting for its answer: the command, its session, and
/// who gets the answer (the caller waiting on it, or else the tamper's
/// [`Tamper::injected_answer`]).
type Waiting = Arc<Mutex<HashMap<i64, Injected>>>;

struct Injected {
    request: Value,
    session: Option<String>,
    reply: Option<oneshot::Sender<Value>>,
}

/// What both directions of one relayed connection share.
struct Link {
    number: u64,
    tamper: Option<Arc<dyn Tamper>>,
    to_browser: mpsc::Sender<Message>,
    to_client: mpsc::Sender<Message>,
    waiting: Waiting,
    next_id: AtomicI64,
}

/// Opens the upstream WebSocket for `head.path`, accepts the client's, and relays
/// until either side closes.
pub(crate) async fn relay(
    mut stream: TcpStream,
    head: &Head,
    key: &str,
    shared: Arc<Shared>,
    number: u64,
) {
    let url = format!("ws://{}{}", shared.upstream, head.path);
    let browser = match connect_async_with_config(url, Some(ws_config())).await {
        Ok((ws, _)) => ws,
        Err(e) => {
            let why = format!(
                "the browser at {} refused the WebSocket {}: {e}",
                shared.upstream, head.path
            );
            return respond(&mut stream, 502, &why).await;
        }
    };
    let accepted = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    if stream.write_all(accepted.as_bytes()).await.is_err() {
        return;
    }
    let client = WebSocketStream::from_raw_socket(
        TokioAdapter::new(stream),
        Role::Server,
        Some(ws_config()),
    )
    .await;
    let (client_sink, client_stream) = client.split();
    let (browser_sink, browser_stream) = browser.split();
    let (to_browser, browser_rx) = mpsc::channel(QUEUE);
    let (to_client, client_rx) = mpsc::channel(QUEUE);
    let writers = [
        tokio::spawn(write(browser_rx, browser_sink)),
        tokio::spawn(write(client_rx, client_sink)),
    ];
    let link = Link {
        number,
        tamper: shared.tamper.clone(),
        to_browser,
        to_client,
        waiting: Arc::default(),
        next_id: AtomicI64::new(INJECTED_ID_BASE),
    };
    tokio::select! {
        _ = from_client(&link, client_stream) => {}
        _ = from_browser(&link, browser_stream) => {}
    }
    // The close frames queued by the loop that ended are written, then both sockets go.
    drop(link);
    for w in writers {
        let abort = w.abort_handle();
        if tokio::time::timeout(Duration::from_secs(2), w)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
}

/// Writes queued messages until the queue ends or a close frame is written.
async fn write<S>(mut rx: mpsc::Receiver<Message>, mut sink: WebSocketSender<S>)
where
    S: futures::io::AsyncRead + futures::io::AsyncWrite + Unpin,
{
    while let Some(m) = rx.recv().await {
        let close = m.is_close();
        if sink.send(m).await.is_err() || close {
            return;
        }
    }
    let _ = sink.close(None).await;
}

fn close(code: CloseCode, reason: String) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

/// Why a read ended, as a close frame for the other side (or none when it closed
/// cleanly and its close frame was relayed).
fn read_error(side: &str, e: &WsError) -> Message {
    match e {
        WsError::Capacity(c) => close(
            CloseCode::Size,
            format!(
                "the {side}'s message is over the proxy's limit of {MAX_MESSAGE_BYTES} bytes ({c})"
            ),
        ),
        other => close(
            CloseCode::Error,
            format!("the {side}'s WebSocket failed: {other}"),
        ),
    }
}

/// The client's messages, through the tamper, to the browser.
async fn from_client<S>(link: &Link, mut stream: S)
where
    S: Stream<Item = Result<Message, WsError>> + Unpin,
{
    let mut held = JoinSet::new();
    while let Some(m) = stream.next().await {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                let why = read_error("client", &e);
                tracing::debug!("DevTools proxy connection {}: {why:?}", link.number);
                let _ = link.to_client.send(why.clone()).await;
                let _ = link
                    .to_browser
                    .send(close(
                        CloseCode::Away,
                        "the client's connection ended".into(),
                    ))
                    .await;
                return;
            }
        };
        if m.is_close() {
            let _ = link.to_browser.send(m).await;
            return;
        }
        let Some((tamper, mut v)) = tamperable(&link.tamper, &link.waiting, &m) else {
            if link.to_browser.send(m).await.is_err() {
                return;
            }
            continue;
        };
        let session = session_of(&v);
        let route = Route {
            connection: link.number,
            session: session.as_deref(),
        };
        let step = tamper.command(route, &mut v);
        let sent = match step {
            Step::Relay => link.to_browser.send(m).await.is_ok(),
            Step::Rewritten => link.to_browser.send(json(&v)).await.is_ok(),
            Step::Answer(a) => link.to_client.send(json(&a)).await.is_ok(),
            Step::Drop => true,
            Step::Hold(d) => {
                let tx = link.to_browser.clone();
                held.spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = tx.send(json(&v)).await;
                });
                true
            }
            Step::After(cmd) => {
                let answer = inject(link, &cmd, session.as_deref(), true).await;
                if let Some(answer) = answer {
                    tamper.injected_answer(route, &cmd, &answer);
                }
                link.to_browser.send(json(&v)).await.is_ok()
            }
            Step::Then(cmd) => {
                let ok = link.to_browser.send(json(&v)).await.is_ok();
                inject(link, &cmd, session.as_deref(), false).await;
                ok
            }
        };
        if !sent {
            return;
        }
    }
    // The client went away without a close frame: the browser's socket is closed too.
    let _ = link
        .to_browser
        .send(close(
            CloseCode::Away,
            "the client's connection ended".into(),
        ))
        .await;
}

/// The browser's messages, through the tamper, to the client; answers to the proxy's
/// own commands taken out.
async fn from_browser<S>(link: &Link, mut stream: S)
where
    S: Stream<Item = Result<Message, WsError>> + Unpin,
{
    let mut held = JoinSet::new();
    while let Some(m) = stream.next().await {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                let why = read_error("browser", &e);
                tracing::debug!("DevTools proxy connection {}: {why:?}", link.number);
                let _ = link.to_client.send(why).await;
                return;
            }
        };
        if m.is_close() {
            let _ = link.to_client.send(m).await;
            return;
        }
        let Some((tamper, mut v)) = tamperable(&link.tamper, &link.waiting, &m) else {
            if link.to_client.send(m).await.is_err() {
                return;
            }
            continue;
        };
        if let Some(id) = v
            .get("id")
            .and_then(Value::as_i64)
            .filter(|id| *id >= INJECTED_ID_BASE)
        {
            let waiter = link.waiting.lock().expect("not poisoned").remove(&id);
            match waiter {
                Some(Injected {
                    reply: Some(tx), ..
                }) => {
                    let _ = tx.send(v);
                }
                Some(Injected {
                    request, session, ..
                }) => {
                    let route = Route {
                        connection: link.number,
                        session: session.as_deref(),
                    };
                    tamper.injected_answer(route, &request, &v);
                }
                None => {}
            }
            continue;
        }
        let session = session_of(&v);
        let route = Route {
            connection: link.number,
            session: session.as_deref(),
        };
        let sent = match tamper.message(route, &mut v) {
            Step::Relay => link.to_client.send(m).await.is_ok(),
            Step::Rewritten | Step::After(_) => link.to_client.send(json(&v)).await.is_ok(),
            Step::Answer(a) => link.to_client.send(json(&a)).await.is_ok(),
            Step::Drop => true,
            Step::Hold(d) => {
                let tx = link.to_client.clone();
                held.spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = tx.send(json(&v)).await;
                });
                true
            }
            Step::Then(cmd) => {
                let ok = link.to_client.send(json(&v)).await.is_ok();
                inject(link, &cmd, session.as_deref(), false).await;
                ok
            }
        };
        if !sent {
            return;
        }
    }
    let _ = link
        .to_client
        .send(close(
            CloseCode::Away,
            "the browser's connection ended".into(),
        ))
        .await;
}

/// Sends a command of the proxy's own (`{"method", "params"}`) on `session`; with
/// `wait`, its answer (or `None` after [`INJECTED_TIMEOUT`]); without, its answer goes
/// to the tamper when it comes.
async fn inject(link: &Link, cmd: &Value, session: Option<&str>, wait: bool) -> Option<Value> {
    let id = link.next_id.fetch_add(1, Ordering::Relaxed);
    let mut message = serde_json::json!({
        "id": id,
        "method": cmd.get("method").cloned().unwrap_or(Value::Null),
        "params": cmd.get("params").cloned().unwrap_or_else(|| serde_json::json!({})),
    });
    if let Some(s) = session {
        message["sessionId"] = Value::String(s.to_string());
    }
    let (tx, rx) = oneshot::channel();
    link.waiting.lock().expect("not poisoned").insert(
        id,
        Injected {
            request: cmd.clone(),
            session: session.map(str::to_string),
            reply: wait.then_some(tx),
        },
    );
    link.to_browser.send(json(&message)).await.ok()?;
    if !wait {
        return None;
    }
    let answer = tokio::time::timeout(INJECTED_TIMEOUT, rx).await;
    link.waiting.lock().expect("not poisoned").remove(&id);
    answer.ok()?.ok()
}

fn session_of(v: &Value) -> Option<String> {
    v.get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn json(v: &Value) -> Message {
    Message::text(v.to_string())
}

/// A message a fault may change: a text message that parses as JSON, with the armed
/// tamper. `None` (no fault armed or the tamper idle, a binary frame, text that is not
/// JSON): it is relayed as the bytes it arrived as.
fn tamperable<'a>(
    tamper: &'a Option<Arc<dyn Tamper>>,
    waiting: &Waiting,
    m: &Message,
) -> Option<(&'a Arc<dyn Tamper>, Value)> {
    let (Some(tamper), Message::Text(text)) = (tamper, m) else {
        return None;
    };
    // Idle, with no command of the proxy's own awaiting its answer (which must still be
    // taken out of the stream): nothing to parse.
    if tamper.idle() && waiting.lock().expect("not poisoned").is_empty() {
        return None;
    }
    serde_json::from_str::<Value>(text.as_str())
        .ok()
        .map(|v| (tamper, v))
}
