//! A DevTools-protocol proxy: a loopback endpoint that a harness's own browser driver
//! (Playwright's `connect_over_cdp`, Puppeteer's `connect`, chromiumoxide) connects to
//! as if it were Chromium, relaying every message to a real Chromium — and the one
//! place where a fault on the protocol itself can be injected into someone else's
//! harness.
//!
//! # Transparency
//!
//! A [`Proxy`] listens on `127.0.0.1` and forwards to one upstream Chromium (its
//! `--remote-debugging-port`, on loopback too). Two kinds of request reach it:
//!
//! - **discovery** (`GET /json/version`, `/json/list`, `/json`, `/json/protocol`, and
//!   `/json/new` with any method): forwarded as they are, the answer's body handed back
//!   with the upstream's `host:port` replaced by the proxy's own, so every
//!   `webSocketDebuggerUrl` and `devtoolsFrontendUrl` the client reads points back at
//!   the proxy ([`http`]);
//! - **WebSocket upgrades** on `/devtools/browser/...` and `/devtools/page/...`: the
//!   proxy opens its own WebSocket to the same path upstream first (so a refused upstream
//!   is a clear `502`, not a half-open socket), then accepts the client's and relays
//!   messages both ways, text and binary, in order ([`relay`]). Nothing of the client's
//!   request (its headers, cookies, `Origin`) is forwarded.
//!
//! With no fault armed a message is relayed as the bytes it arrived as: never parsed,
//! never re-serialized. Message and frame limits are raised to
//! [`MAX_MESSAGE_BYTES`] on both sides (a full-page screenshot is one JSON message of
//! megabytes); a message beyond it closes that one connection with a `1009` close frame
//! naming the limit, and nothing else. Each connection is independent: one client
//! disconnecting mid-command, sending malformed JSON, or a browser target dying ends at
//! most its own connection, never the listener or another client's.
//!
//! # Routing
//!
//! Modern clients use one browser-level connection and attach to targets with
//! `Target.setAutoAttach` / `Target.attachToTarget` and `flatten: true`: page commands
//! then travel on the browser connection with a top-level `sessionId`, and their
//! answers and events come back with it. The proxy never assumes one connection per
//! page: a fault's hook sees each message's connection, its `sessionId` (if any) and its
//! `id`, and keys its state by them. A command the proxy injects itself (a capture of
//! its own, a `Page.crash`) carries an id from a range clients do not use
//! ([`INJECTED_ID_BASE`] and up), on the session of the command it follows; its answer
//! is taken out of the stream and never reaches the client.
//!
//! # Where faults hook in
//!
//! A [`Tamper`] sees every text message, parsed, in each direction, and says what
//! becomes of it ([`Step`]): relayed (as it was, or rewritten), answered by the proxy
//! instead of the browser (a protocol error, a fake success for a dropped event),
//! held before it is relayed (an answer past the client's timeout), or preceded or
//! followed by a command of the proxy's own. [`fault::Armed`] is the tamper for the
//! catalogue's protocol faults; each change it makes is recorded as a
//! [`fault::Change`] (the message, what it was, what it became, when), so whether the
//! fault *fired* is read from what the proxy did, not assumed from its being armed.

pub mod fault;
pub mod http;
pub mod relay;
pub mod sessions;

use serde_json::Value;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The largest WebSocket message (and frame) relayed, either way.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;
/// The most client connections one proxy serves at once (more wait to be accepted).
pub const MAX_CONNECTIONS: usize = 512;
/// The first id of a command the proxy sends on its own; clients count up from 1.
pub const INJECTED_ID_BASE: i64 = 2_000_000_000;

/// What a message's hook is told about where it travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'a> {
    /// The client connection's number within its proxy (from 1, in accept order).
    pub connection: u64,
    /// The message's top-level `sessionId` (a flattened target session), if any.
    pub session: Option<&'a str>,
}

/// What becomes of one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Relayed as it arrived (the hook left it unchanged).
    Relay,
    /// Relayed as the hook rewrote it.
    Rewritten,
    /// Not relayed; the client is answered with this message instead (for a command).
    Answer(Value),
    /// Not relayed and not answered.
    Drop,
    /// Relayed (as rewritten, if it was) after this delay.
    Hold(Duration),
    /// Relayed (as rewritten) once the browser has answered this command of the proxy's
    /// own (its `method` and `params`; the id and session are filled in). The hook gets
    /// the answer through [`Tamper::injected_answer`] before the message goes on.
    After(Value),
    /// Relayed (as rewritten), then this command of the proxy's own is sent on the same
    /// session; its answer, if one comes, goes to [`Tamper::injected_answer`].
    Then(Value),
}

/// A hook on the protocol: what becomes of each text message, either way.
///
/// Binary messages and unparsable text are always relayed untouched (Chromium answers
/// malformed JSON itself).
pub trait Tamper: Send + Sync + 'static {
    /// A client's message on its way to the browser (a command: `id`, `method`,
    /// `params`, perhaps `sessionId`). It may be rewritten in place.
    fn command(&self, route: Route<'_>, message: &mut Value) -> Step;
    /// A browser's message on its way to the client (an answer with `id`, or an event
    /// with `method`). It may be rewritten in place.
    fn message(&self, route: Route<'_>, message: &mut Value) -> Step;
    /// The browser's answer to a command of the proxy's own ([`Step::After`],
    /// [`Step::Then`]).
    fn injected_answer(&self, route: Route<'_>, request: &Value, answer: &Value) {
        let _ = (route, request, answer);
    }
    /// Whether nothing is armed right now: every message is then relayed as the bytes
    /// it arrived as, without being parsed (a connection shared by many items costs
    /// nothing while none of them has a fault).
    fn idle(&self) -> bool {
        false
    }
}

/// A running proxy: one loopback listener in front of one upstream Chromium.
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

/// What every connection of a proxy shares.
pub(crate) struct Shared {
    /// The upstream Chromium's `host:port`.
    pub upstream: SocketAddr,
    /// The proxy's own `host:port`.
    pub own: SocketAddr,
    pub tamper: Option<Arc<dyn Tamper>>,
}

impl Proxy {
    /// Listens on an ephemeral loopback port and relays to `upstream` (a Chromium's
    /// DevTools `host:port`, which must be on loopback), through `tamper` if given.
    pub async fn start(upstream: SocketAddr, tamper: Option<Arc<dyn Tamper>>) -> io::Result<Proxy> {
        if !upstream.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the DevTools upstream {upstream} is not on loopback: the proxy relays only to a browser on this machine"),
            ));
        }
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            own: addr,
            tamper,
        });
        let task = tokio::spawn(accept_loop(listener, shared));
        Ok(Proxy { addr, task })
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: what a client's `connect_over_cdp` / `browserURL` takes.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops listening and ends every connection it relays (the upstream browser is
    /// left running: it is not the proxy's).
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections until aborted; each is served on its own task (aborted with it).
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let mut number = 0u64;
    loop {
        while connections.try_join_next().is_some() {}
        if connections.len() >= MAX_CONNECTIONS {
            let _ = connections.join_next().await;
            continue;
        }
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Out of descriptors, say: wait a moment rather than spin.
                tracing::warn!("DevTools proxy: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        number += 1;
        let _ = stream.set_nodelay(true);
        connections.spawn(serve(stream, shared.clone(), number));
    }
}

/// Serves one client connection: a DevTools WebSocket upgrade goes to the [`relay`],
/// every other request to the discovery endpoints ([`http`]).
async fn serve(mut stream: tokio::net::TcpStream, shared: Arc<Shared>, number: u64) {
    let Some(head) = http::read_request(&mut stream).await else {
        return;
    };
    match (head.path.starts_with("/devtools/"), head.ws_key.clone()) {
        (true, Some(key)) => relay::relay(stream, &head, &key, shared, number).await,
        _ => http::answer(stream, &head, &shared).await,
    }
}
