//! The DevTools proxy against a real Chromium (faultline's own launcher) and real
//! clients: Playwright for Python's `connect_over_cdp` as a separate process, and
//! chromiumoxide in this process. With no fault armed a client must see through the
//! proxy exactly what it sees without it; with a protocol fault armed the fault must
//! fire on a real page, leave its record, and change what the page itself recorded.
//!
//! Needs python3 with Playwright (no browser download: the tests launch the system's
//! headless shell themselves).

use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::Browser;
use faultline::engine::browser::{find_chromium, BrowserHandle};
use faultline_devtools::fault::{Armed, ProtocolFault};
use faultline_devtools::{Proxy, Tamper};
use futures::StreamExt;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The test page: a button that counts its clicks, a text field, and two iframes (one
/// same-origin, one cross-site: an out-of-process frame with its own target session).
fn page(port: u16) -> String {
    format!(
        r#"<!doctype html><html><head><title>proxy test</title></head>
<body style="margin:0">
<button id="button" style="position:absolute;left:100px;top:100px;width:200px;height:60px"
  onclick="const c=document.getElementById('clicks'); c.textContent=String(+c.textContent+1)">press</button>
<div id="clicks" style="position:absolute;left:400px;top:100px">0</div>
<input id="field" style="position:absolute;left:100px;top:200px;width:300px;height:30px">
<iframe src="http://127.0.0.1:{port}/inner" style="position:absolute;left:0;top:300px;width:300px;height:100px"></iframe>
<iframe src="http://localhost:{port}/inner" style="position:absolute;left:400px;top:300px;width:300px;height:100px"></iframe>
<script>
  document.addEventListener('mousedown', e => window.lastDown = [e.clientX, e.clientY]);
  document.addEventListener('mouseup', e => window.lastUp = [e.clientX, e.clientY]);
</script>
</body></html>"#
    )
}

/// Serves [`page`] at `/` and an iframe document at `/inner` that names its host.
async fn test_site() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    use axum::http::HeaderMap;
    use axum::response::Html;
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let port = addr.port();
    let app = axum::Router::new()
        .route("/", get(move || async move { Html(page(port)) }))
        .route(
            "/inner",
            get(|headers: HeaderMap| async move {
                let host = headers
                    .get("host")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("?")
                    .split(':')
                    .next()
                    .unwrap_or("?")
                    .to_string();
                Html(format!(
                    "<!doctype html><p id=\"inner\">inner at {host}</p>"
                ))
            }),
        );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

async fn chromium() -> BrowserHandle {
    BrowserHandle::launch(&find_chromium(None).expect("a Chromium is installed"))
        .await
        .expect("Chromium starts")
}

/// The browser's process is gone once the handle is closed: the test left nothing.
async fn close(browser: BrowserHandle) {
    let pid = browser.pid().unwrap();
    browser.close().await;
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "Chromium {pid} survived its close"
    );
}

/// Runs the Playwright client against `endpoint`; its JSON, or the failure.
fn playwright(endpoint: &str, url: &str) -> Result<Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/devtools/cdp_client.py");
    let out = Command::new("python3")
        .arg(script)
        .args([endpoint, url])
        .output()
        .expect("python3 runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("client output: {e}"))
}

/// One raw HTTP GET: status line and body.
async fn get(addr: SocketAddr, path: &str, extra: &str) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_answers_point_back_at_the_proxy() {
    let browser = chromium().await;
    let upstream = browser
        .devtools_addr()
        .expect("the browser's DevTools address");
    let proxy = Proxy::start(upstream, None).await.unwrap();
    let own = proxy.addr().to_string();
    for path in ["/json/version", "/json/version/", "/json/list", "/json"] {
        let (status, body) = get(proxy.addr(), path, "").await;
        assert!(status.contains(" 200 "), "{path}: {status} {body}");
        let v: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        assert!(
            !body.contains(&upstream.to_string()),
            "{path} leaks the upstream address: {body}"
        );
        let urls: Vec<&str> = match &v {
            Value::Array(targets) => targets
                .iter()
                .filter_map(|t| t["webSocketDebuggerUrl"].as_str())
                .collect(),
            v => vec![v["webSocketDebuggerUrl"]
                .as_str()
                .expect("a webSocketDebuggerUrl")],
        };
        assert!(!urls.is_empty(), "{path}: {body}");
        for u in urls {
            assert!(
                u.starts_with(&format!("ws://{own}/devtools/")),
                "{path}: {u}"
            );
        }
    }
    let (status, body) = get(proxy.addr(), "/elsewhere", "").await;
    assert!(
        status.contains(" 404 ") && body.contains("\"error\""),
        "{status} {body}"
    );
    let (status, body) = get(proxy.addr(), "/devtools/browser/x", "").await;
    assert!(
        status.contains(" 426 ") && body.contains("WebSocket"),
        "{status} {body}"
    );
    // An upgrade to a target that does not exist: the browser refuses, the client is told.
    let (status, body) = get(
        proxy.addr(),
        "/devtools/page/NO-SUCH-TARGET",
        "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    )
    .await;
    assert!(
        status.contains(" 502 ") && body.contains("refused"),
        "{status} {body}"
    );
    // The proxy relays only to a browser on this machine.
    let far = Proxy::start("192.0.2.1:9222".parse().unwrap(), None).await;
    assert!(far.is_err_and(|e| e.to_string().contains("not on loopback")));
    proxy.stop();
    close(browser).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn playwright_sees_the_same_page_through_the_proxy_as_without_it() {
    let (site, server) = test_site().await;
    let browser = chromium().await;
    let upstream = browser.devtools_addr().unwrap();
    let proxy = Proxy::start(upstream, None).await.unwrap();
    let url = format!("http://{site}/");
    let direct = tokio::task::spawn_blocking({
        let (e, u) = (format!("http://{upstream}"), url.clone());
        move || playwright(&e, &u)
    })
    .await
    .unwrap()
    .expect("Playwright works against the browser itself");
    let proxied = tokio::task::spawn_blocking({
        let (e, u) = (proxy.http_url(), url.clone());
        move || playwright(&e, &u)
    })
    .await
    .unwrap()
    .expect("Playwright works through the proxy");
    assert_eq!(proxied, direct, "the proxy changed what the client saw");
    assert_eq!(proxied["clicks"], "1");
    assert_eq!(proxied["typed"], "hello proxy");
    assert_eq!(proxied["screenshot"], serde_json::json!([800, 600, true]));
    assert_eq!(proxied["frames"]["127.0.0.1"], "inner at 127.0.0.1");
    assert_eq!(
        proxied["frames"]["localhost"], "inner at localhost",
        "the cross-site frame's own session was routed: {proxied}"
    );
    proxy.stop();
    close(browser).await;
    server.abort();
}

/// Connects chromiumoxide through `proxy`, its handler driven until it ends.
async fn oxide(proxy: &Proxy) -> (Browser, tokio::task::JoinHandle<()>) {
    // chromiumoxide reads `/json/version` with reqwest, whose TLS needs a provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (browser, mut handler) = Browser::connect(proxy.http_url())
        .await
        .expect("chromiumoxide connects through the proxy");
    let task = tokio::spawn(async move { while handler.next().await.is_some() {} });
    (browser, task)
}

async fn eval(page: &chromiumoxide::Page, js: &str) -> Value {
    page.evaluate_expression(js)
        .await
        .unwrap_or_else(|e| panic!("{js}: {e}"))
        .value()
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromiumoxide_navigates_clicks_types_captures_and_reads_a_frame_through_the_proxy() {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), None)
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    page.find_element("#button")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page.find_element("#field")
        .await
        .unwrap()
        .click()
        .await
        .unwrap()
        .type_str("typed")
        .await
        .unwrap();
    assert_eq!(
        eval(&page, "document.getElementById('clicks').textContent").await,
        "1"
    );
    assert_eq!(
        eval(&page, "document.getElementById('field').value").await,
        "typed"
    );
    let png = page
        .screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
        .await
        .unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000);
    // The same-origin frame's own execution context.
    let mut inner = Vec::new();
    for _ in 0..50 {
        inner.clear();
        for frame in page.frames().await.unwrap() {
            let Some(ctx) = page.frame_execution_context(frame).await.unwrap() else {
                continue;
            };
            let mut p =
                EvaluateParams::new("document.getElementById('inner')?.textContent ?? null");
            p.context_id = Some(ctx);
            p.return_by_value = Some(true);
            if let Some(v) = page.execute(p).await.unwrap().result.result.value {
                if !v.is_null() {
                    inner.push(v);
                }
            }
        }
        if !inner.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        inner.contains(&Value::from("inner at 127.0.0.1")),
        "{inner:?}"
    );
    browser.close().await.unwrap();
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
}

/// A page opened through a proxy armed with `fault`, clicked at the button's centre
/// (200, 130) by chromiumoxide; the page's own record of the press and release, the
/// click count, and the proxy's record.
async fn click_through(fault: ProtocolFault) -> (Value, Arc<Armed>) {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let armed = Arc::new(Armed::new(fault));
    let tamper: Arc<dyn Tamper> = armed.clone();
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), Some(tamper))
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    let clicked = page
        .click(chromiumoxide::layout::Point::new(200.0, 130.0))
        .await;
    let seen = match clicked {
        Ok(_) => eval(
            &page,
            "({down: window.lastDown ?? null, up: window.lastUp ?? null, clicks: document.getElementById('clicks').textContent})",
        )
        .await,
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    };
    let _ = browser.close().await;
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
    (seen, armed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaled_click_lands_off_target_and_the_proxy_says_what_it_changed() {
    let (seen, armed) = click_through(ProtocolFault::ScaledPointer { factor: 0.75 }).await;
    assert_eq!(seen["down"], serde_json::json!([150, 97]), "{seen}");
    assert_eq!(seen["clicks"], "0", "the click missed the button: {seen}");
    let changes = armed.changes();
    let pressed = changes
        .iter()
        .find(|c| c.original["type"] == "mousePressed")
        .expect("the press was rewritten");
    assert_eq!(pressed.original["x"], 200.0);
    assert_eq!(pressed.changed["x"], 150.0);
    assert_eq!(pressed.method, "Input.dispatchMouseEvent");
    assert!(pressed.session.is_some(), "a flattened page session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_release_leaves_the_button_pressed_and_unclicked() {
    let (seen, armed) = click_through(ProtocolFault::DroppedRelease).await;
    assert_eq!(seen["down"], serde_json::json!([200, 130]), "{seen}");
    assert_eq!(
        seen["up"],
        Value::Null,
        "the page never saw the release: {seen}"
    );
    assert_eq!(seen["clicks"], "0", "{seen}");
    assert_eq!(armed.changes().len(), 1);
    assert_eq!(armed.changes()[0].changed["delivered"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_error_reaches_the_client_and_the_page_saw_nothing() {
    let (seen, armed) = click_through(ProtocolFault::ProtocolError).await;
    let error = seen["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("input was not dispatched"),
        "the client was told: {seen}"
    );
    assert!(armed.fired());
    assert_eq!(armed.changes()[0].original["type"], "mousePressed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_whose_situation_never_came_did_not_fire() {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let armed = Arc::new(Armed::new(ProtocolFault::ScaledPointer { factor: 0.75 }));
    let tamper: Arc<dyn Tamper> = armed.clone();
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), Some(tamper))
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    assert_eq!(eval(&page, "document.title").await, "proxy test");
    let _ = browser.close().await;
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
    assert!(
        !armed.fired(),
        "nothing clicked, nothing changed: {:?}",
        armed.changes()
    );
}
