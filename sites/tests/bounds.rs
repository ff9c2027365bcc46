//! What a client can make the fixture server hold, over real HTTP on loopback: events only
//! on scopes the harness opened, bounded bodies, bounded ledgers, and no connection held
//! for ever by headers that never finish (issue 29).

use faultline_sites::limits::MAX_BODY_BYTES;
use faultline_sites::{FixtureServer, LedgerLimits, Scope, ServerOptions};
use faultline_tasks::{Layout, TaskKind};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn http(addr: SocketAddr, request: String) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    // The server may answer a refused body before reading it all, and close.
    let _ = s.read_to_end(&mut buf).await;
    let text = String::from_utf8_lossy(&buf);
    text.get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

fn post(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
}

fn click(scope: &str) -> String {
    post(
        &format!("/s/{scope}/event"),
        r#"{"kind":"click","page_ms":1.0,"data":{}}"#,
    )
}

fn search(scope: &str) -> String {
    let seed = Layout::for_root(1, TaskKind::Search, 0).seed;
    get(&format!(
        "/s/{scope}/search/results?q=x&layout=0&seed={seed}"
    ))
}

/// Regression (issue 29: `POST /s/<scope>/event` stored events for any scope, so anything
/// that could reach the server could fill its memory): on a scope the harness never
/// opened, page events and server-recorded events (a search submission, the decoy) are
/// refused with 404 and stored nowhere.
#[tokio::test]
async fn regression_events_on_a_scope_never_opened_are_refused_and_not_stored() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let addr = server.addr();
    let never = Scope::parse("never").unwrap();
    assert_eq!(http(addr, click("never")).await, 404);
    assert_eq!(http(addr, search("never")).await, 404);
    assert_eq!(http(addr, get("/s/never/decoy")).await, 404);
    assert_eq!(
        http(
            addr,
            post("/s/never/form/save", r#"{"text":"a note","key":"k1"}"#)
        )
        .await,
        404
    );
    assert!(key.take(&never).events.is_empty());
    // The pages themselves still render: they record nothing.
    let seed = Layout::for_root(1, TaskKind::Grid, 0).seed;
    assert_eq!(
        http(addr, get(&format!("/s/never/grid?layout=0&seed={seed}"))).await,
        200
    );
    server.shutdown().await;
}

/// Regression (issue 29: a finished trial's late events recreated its scope, which was
/// never freed): once the harness took a scope's ledger, the scope's events are refused
/// and it stays empty.
#[tokio::test]
async fn regression_events_after_take_are_refused_and_do_not_recreate_the_scope() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let addr = server.addr();
    let trial = Scope::parse("trial").unwrap();
    key.open(&trial);
    assert_eq!(http(addr, click("trial")).await, 204);
    assert_eq!(http(addr, search("trial")).await, 200);
    assert!(key.note(&trial, "answer", serde_json::json!({ "value": "x" })));
    let ledger = key.take(&trial);
    let kinds: Vec<&str> = ledger.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["click", "submitted", "answer"]);

    assert_eq!(http(addr, click("trial")).await, 404);
    assert_eq!(http(addr, search("trial")).await, 404);
    assert!(!key.note(&trial, "answer", serde_json::json!({})));
    assert!(key.read(&trial).events.is_empty());
    server.shutdown().await;
}

/// Regression (issue 29: bodies up to axum's 2 MB default were read and stored): a body
/// over the limit is refused with 413 on every endpoint that reads one and stores
/// nothing, while the largest event a page really sends (10,000 typed characters, all
/// escaped) still goes in.
#[tokio::test]
async fn regression_a_body_over_the_limit_is_413_and_not_stored() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let addr = server.addr();
    let scope = Scope::parse("big").unwrap();
    key.open(&scope);
    let typed = |value: String| {
        serde_json::json!({ "kind": "typed", "page_ms": 1.0, "data": { "value": value } })
            .to_string()
    };
    let largest_honest = typed("\u{1}".repeat(10_000));
    assert!(largest_honest.len() > 60_000);
    assert_eq!(http(addr, post("/s/big/event", &largest_honest)).await, 204);
    let over = typed("x".repeat(MAX_BODY_BYTES));
    for path in [
        "/s/big/event",
        "/s/big/witness",
        "/s/big/hang",
        "/s/big/form/save",
    ] {
        assert_eq!(http(addr, post(path, &over)).await, 413, "{path}");
    }
    let ledger = key.take(&scope);
    assert_eq!(ledger.events.len(), 1, "only the honest event is stored");
    server.shutdown().await;
}

/// Regression (issue 29: a scope kept every event it was sent): over HTTP, a scope past
/// its limit answers 429, keeps exactly one `ledger_overflow` event counting what it
/// refused, and nothing more.
#[tokio::test]
async fn regression_a_flooded_scope_answers_429_and_stores_one_overflow_event() {
    let options = ServerOptions {
        ledger: LedgerLimits {
            scope_events: 5,
            ..LedgerLimits::default()
        },
        ..ServerOptions::default()
    };
    let (server, key) = FixtureServer::start_with(SocketAddr::from(([127, 0, 0, 1], 0)), options)
        .await
        .unwrap();
    let addr = server.addr();
    let scope = Scope::parse("flood").unwrap();
    key.open(&scope);
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(http(addr, click("flood")).await);
    }
    assert_eq!(statuses, [204, 204, 204, 204, 204, 429, 429, 429]);
    assert_eq!(http(addr, search("flood")).await, 429);
    let ledger = key.take(&scope);
    assert_eq!(ledger.events.len(), 6);
    let overflows: Vec<_> = ledger.of_kind("ledger_overflow").collect();
    assert_eq!(overflows.len(), 1);
    assert_eq!(overflows[0].data["reason"], "scope_events");
    assert_eq!(overflows[0].data["refused_events"], 4);
    server.shutdown().await;
}

/// `faultline serve` (a person inspecting pages) opens any valid scope on its first
/// event, as before, but within the same limits: past the total, a new scope is refused.
#[tokio::test]
async fn serve_mode_opens_any_scope_on_demand_within_the_limits() {
    let options = ServerOptions {
        open_scopes_on_demand: true,
        ledger: LedgerLimits {
            scope_events: 10,
            scope_bytes: 1 << 20,
            total_bytes: 4096,
        },
        ..ServerOptions::default()
    };
    let (server, key) = FixtureServer::start_with(SocketAddr::from(([127, 0, 0, 1], 0)), options)
        .await
        .unwrap();
    let addr = server.addr();
    assert_eq!(http(addr, click("inspect")).await, 204);
    assert_eq!(http(addr, search("inspect")).await, 200);
    assert_eq!(key.read(&Scope::parse("inspect").unwrap()).events.len(), 2);
    let mut refused = None;
    for i in 0..100 {
        if http(addr, click(&format!("typed{i}"))).await == 429 {
            refused = Some(i);
            break;
        }
    }
    let refused = refused.expect("the total limit refuses new scopes");
    assert!(
        refused > 1,
        "several scopes opened before the limit: {refused}"
    );
    assert!(key
        .read(&Scope::parse(&format!("typed{refused}")).unwrap())
        .events
        .is_empty());
    // Taking a scope frees room for another.
    key.take(&Scope::parse("inspect").unwrap());
    assert_eq!(http(addr, click(&format!("typed{refused}"))).await, 204);
    server.shutdown().await;
}

/// Regression (issue 29: 12,000 half-open connections were held 88 s, there was no
/// header-read timeout): connections that send nothing, or half a request line and
/// nothing more, are closed once the header-read timeout passes, a normal request is
/// answered meanwhile, and shutdown does not wait for them.
#[tokio::test]
async fn regression_connections_with_slow_headers_are_closed_after_the_timeout() {
    let timeout = Duration::from_millis(1500);
    let options = ServerOptions {
        header_read_timeout: timeout,
        ..ServerOptions::default()
    };
    let (server, _key) = FixtureServer::start_with(SocketAddr::from(([127, 0, 0, 1], 0)), options)
        .await
        .unwrap();
    let addr = server.addr();
    let started = Instant::now();
    let mut slow = Vec::new();
    for i in 0..50 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"GET /s/x/gr").await.unwrap();
        }
        slow.push(s);
    }
    assert_eq!(http(addr, get("/warm")).await, 200, "served meanwhile");
    let closed = futures::future::join_all(slow.into_iter().map(|mut s| async move {
        let mut buf = [0u8; 256];
        // Closed: end of stream (or a reset). Anything read first is hyper's answer to
        // a timed-out request, if it sends one.
        loop {
            match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Some(Instant::now()),
                Ok(Ok(_)) => continue,
                Err(_) => return None,
            }
        }
    }))
    .await;
    for (i, at) in closed.iter().enumerate() {
        let at = at.unwrap_or_else(|| panic!("connection {i} was still open after 10 s"));
        let after = at - started;
        assert!(
            after >= timeout - Duration::from_millis(200) && after < timeout * 3,
            "connection {i} closed after {after:?}, timeout {timeout:?}"
        );
    }

    // Shutdown with half-open connections held does not wait for their timeout.
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(b"GET / HT").await.unwrap();
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = Instant::now();
    server.shutdown().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(3),
        "shutdown took {:?}",
        stopping.elapsed()
    );
}
