//! One client connection's HTTP side: its request head read, then either a discovery
//! request forwarded (its answer's URLs rewritten to the proxy's own address) or a
//! WebSocket upgrade, which the connection hands to the relay instead.

use crate::Shared;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest request head read from a client.
const MAX_HEAD_BYTES: usize = 16 << 10;
/// The largest discovery answer read from the browser (`/json/protocol` is about 1 MB).
const MAX_DISCOVERY_BYTES: usize = 32 << 20;
/// How long a client or the browser may take to send a head or a discovery answer.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request head: what the proxy needs of it.
pub(crate) struct Head {
    pub method: String,
    pub path: String,
    /// `Sec-WebSocket-Key`, when the request asks for a WebSocket upgrade.
    pub ws_key: Option<String>,
}

/// A client's request head, read within [`HEAD_TIMEOUT`]; `None` once the client has been
/// answered with what was wrong with it (`400`, or `408` past the timeout).
pub(crate) async fn read_request(stream: &mut TcpStream) -> Option<Head> {
    match tokio::time::timeout(HEAD_TIMEOUT, read_head(stream)).await {
        Ok(Ok(h)) => Some(h),
        Ok(Err(e)) => {
            respond(stream, 400, &e).await;
            None
        }
        Err(_) => {
            respond(stream, 408, "no request head within 10 s").await;
            None
        }
    }
}

/// Answers a request that is not a WebSocket upgrade: the discovery endpoints, or what
/// is wrong with the request.
pub(crate) async fn answer(mut stream: TcpStream, head: &Head, shared: &Shared) {
    if head.path.starts_with("/devtools/") {
        respond(
            &mut stream,
            426,
            "a /devtools/ path is a WebSocket endpoint: expected an upgrade",
        )
        .await
    } else if head.path == "/json"
        || head.path.starts_with("/json/")
        || head.path.starts_with("/json?")
    {
        match discovery(head, shared).await {
            Ok((status, body)) => {
                let _ = write_response(
                    &mut stream,
                    status,
                    "application/json; charset=UTF-8",
                    &body,
                )
                .await;
            }
            Err(e) => respond(&mut stream, 502, &e).await,
        }
    } else {
        respond(
            &mut stream,
            404,
            "the DevTools proxy serves /json/version, /json/list, /json and /devtools/ WebSockets",
        )
        .await
    }
}

/// Reads a request head (up to the blank line) and parses it.
async fn read_head(stream: &mut TcpStream) -> Result<Head, String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Err("the client closed the connection before its request head ended".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if end + 4 != buf.len() {
                // A client sends nothing after its head before the answer (no body on
                // GET, no frame before the 101).
                return Err("unexpected bytes after the request head".into());
            }
            break;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(format!("request head over {MAX_HEAD_BYTES} bytes"));
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(&buf)
        .map_err(|e| format!("malformed request head: {e}"))?;
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .map(str::to_string)
    };
    let upgrade = header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    Ok(Head {
        method: req.method.unwrap_or("GET").to_string(),
        path: req.path.unwrap_or("/").to_string(),
        ws_key: header("sec-websocket-key").filter(|_| upgrade),
    })
}

/// Forwards a discovery request upstream; its status and body, the upstream's address
/// replaced by the proxy's own in the body.
async fn discovery(head: &Head, shared: &Shared) -> Result<(u16, Vec<u8>), String> {
    if !matches!(head.method.as_str(), "GET" | "PUT") {
        return Err(format!(
            "{} {}: the proxy forwards GET and PUT only",
            head.method, head.path
        ));
    }
    if head.path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err("the request path has spaces or control characters".into());
    }
    let (status, body) = tokio::time::timeout(HEAD_TIMEOUT, get_upstream(head, shared))
        .await
        .map_err(|_| {
            format!(
                "the browser at {} did not answer {} within 10 s",
                shared.upstream, head.path
            )
        })??;
    let body = match String::from_utf8(body) {
        Ok(text) => text
            .replace(&shared.upstream.to_string(), &shared.own.to_string())
            .into_bytes(),
        Err(e) => e.into_bytes(),
    };
    Ok((status, body))
}

/// One HTTP/1.1 request to the browser (`Connection: close`): its status and body.
async fn get_upstream(head: &Head, shared: &Shared) -> Result<(u16, Vec<u8>), String> {
    let mut up = TcpStream::connect(shared.upstream).await.map_err(|e| {
        format!(
            "the browser's DevTools endpoint {} refused: {e}",
            shared.upstream
        )
    })?;
    let request = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        head.method, head.path, shared.upstream
    );
    up.write_all(request.as_bytes())
        .await
        .map_err(|e| format!("writing to the browser: {e}"))?;
    // Chromium keeps the connection open despite `Connection: close`: the body ends at
    // its Content-Length (or at the end of the stream when it gives none).
    let mut answer = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut head_end = None;
    let mut length = None;
    loop {
        if let (Some(at), Some(n)) = (head_end, length) {
            if answer.len() >= at + n {
                break;
            }
        }
        let read = up
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the browser's answer: {e}"))?;
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
        if answer.len() > MAX_DISCOVERY_BYTES {
            return Err(format!(
                "the browser's answer is over {MAX_DISCOVERY_BYTES} bytes"
            ));
        }
        if head_end.is_none() {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut res = httparse::Response::new(&mut headers);
            if let Ok(httparse::Status::Complete(n)) = res.parse(&answer) {
                head_end = Some(n);
                length = res
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| {
                        std::str::from_utf8(h.value)
                            .ok()?
                            .trim()
                            .parse::<usize>()
                            .ok()
                    });
            }
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let body_at = match res.parse(&answer) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err("the browser's answer has no complete HTTP head".into()),
    };
    let status = res.code.unwrap_or(502);
    let mut body = answer.split_off(body_at);
    if let Some(n) = length {
        body.truncate(n);
    }
    Ok((status, body))
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

/// An error answer: one line of JSON, `{"error": "..."}`.
pub(crate) async fn respond(stream: &mut TcpStream, status: u16, message: &str) {
    let body = serde_json::json!({ "error": message }).to_string();
    let _ = write_response(stream, status, "application/json", body.as_bytes()).await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        426 => "Upgrade Required",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}
