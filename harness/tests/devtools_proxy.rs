//! The DevTools proxy against a real Chromium (faultline's own launcher) and real
//! clients: Playwright for Python's `connect_over_cdp` as a separate process, and
//! chromiumoxide in this process. With no fault armed a client must see through the
//! proxy exactly what it sees without it; with a protocol fault armed the fault must
//! fire on a real page, leave its record, and change what the page itself recorded.
//!
//! Needs python3 with Playwright (no browser download: the tests launch the system's
//! headless shell themselves).

mod common;

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
  onclick="const c=document.getElementById('clicks'); c.textContent=String(+c.textContent+1);
           setTimeout(() => document.getElementById('late').textContent = 'settled', 300)">press</button>
<div id="clicks" style="position:absolute;left:400px;top:100px">0</div>
<div id="late" style="position:absolute;left:500px;top:100px;font-size:30px">waiting</div>
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
        !common::processes::alive(pid),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_screenshot_is_the_frame_from_before_the_click() {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let armed = Arc::new(Armed::new(ProtocolFault::StaleScreenshot));
    let tamper: Arc<dyn Tamper> = armed.clone();
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), Some(tamper))
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    let shot = || async {
        page.screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
            .await
            .unwrap()
    };
    let before = shot().await;
    assert!(
        !armed.fired(),
        "no action yet: the first capture is relayed"
    );
    page.click(chromiumoxide::layout::Point::new(200.0, 130.0))
        .await
        .unwrap();
    assert_eq!(
        eval(&page, "document.getElementById('clicks').textContent").await,
        "1"
    );
    let after = shot().await;
    let fresh = shot().await;
    let _ = browser.close().await;
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
    assert_eq!(
        after, before,
        "the capture after the click is the frame from before it"
    );
    assert_ne!(
        fresh, before,
        "a capture with no action since is fresh (it shows the count)"
    );
    let changes = armed.changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].method, "Page.captureScreenshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsettled_screenshot_is_the_frame_from_right_after_the_click() {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let armed = Arc::new(Armed::new(ProtocolFault::UnsettledScreenshot));
    let tamper: Arc<dyn Tamper> = armed.clone();
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), Some(tamper))
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    let shot = || async {
        page.screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
            .await
            .unwrap()
    };
    let before = shot().await;
    page.click(chromiumoxide::layout::Point::new(200.0, 130.0))
        .await
        .unwrap();
    // The harness waits for the page to settle (the late change comes at 300 ms).
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        eval(&page, "document.getElementById('late').textContent").await,
        "settled"
    );
    let after = shot().await;
    let fresh = shot().await;
    let _ = browser.close().await;
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
    assert_ne!(after, before, "the unsettled frame shows the click's count");
    assert_ne!(
        after, fresh,
        "but not the page's late change: it was taken before it"
    );
    let changes = armed.changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(
        changes[0].what.contains("before the page settled"),
        "{changes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_click_ends_the_page_not_the_browser() {
    let (site, server) = test_site().await;
    let chrome = chromium().await;
    let armed = Arc::new(Armed::new(ProtocolFault::CrashAfterInput));
    let tamper: Arc<dyn Tamper> = armed.clone();
    let proxy = Proxy::start(chrome.devtools_addr().unwrap(), Some(tamper))
        .await
        .unwrap();
    let (mut browser, handler) = oxide(&proxy).await;
    let page = browser.new_page(format!("http://{site}/")).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    page.click(chromiumoxide::layout::Point::new(200.0, 130.0))
        .await
        .unwrap();
    let after = tokio::time::timeout(
        Duration::from_secs(5),
        page.evaluate_expression("document.getElementById('clicks').textContent"),
    )
    .await;
    assert!(
        !matches!(after, Ok(Ok(_))),
        "the page answered after its crash: {after:?}"
    );
    let changes = armed.changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].changed["method"], "Page.crash");
    assert_eq!(changes[0].method, "Input.dispatchMouseEvent");
    // The browser itself lives on: a new page through the same proxy works.
    let again = browser.new_page(format!("http://{site}/")).await.unwrap();
    again.wait_for_navigation().await.unwrap();
    assert_eq!(eval(&again, "document.title").await, "proxy test");
    let _ = browser.close().await;
    handler.abort();
    proxy.stop();
    close(chrome).await;
    server.abort();
}

mod abuse {
    //! A client that misbehaves ends at most its own connection.

    use super::*;
    use async_tungstenite::tokio::connect_async_with_config;
    use async_tungstenite::tungstenite::protocol::WebSocketConfig;
    use async_tungstenite::tungstenite::Message;

    type Ws = async_tungstenite::WebSocketStream<async_tungstenite::tokio::ConnectStream>;

    async fn connect(proxy: &Proxy, path: &str) -> Ws {
        let config = WebSocketConfig::default()
            .max_message_size(Some(256 << 20))
            .max_frame_size(Some(256 << 20));
        connect_async_with_config(format!("ws://{}{path}", proxy.addr()), Some(config))
            .await
            .unwrap_or_else(|e| panic!("connecting to {path}: {e}"))
            .0
    }

    /// The browser endpoint's path, as the proxy hands it out.
    async fn browser_path(proxy: &Proxy) -> String {
        let (_, body) = get(proxy.addr(), "/json/version", "").await;
        let v: Value = serde_json::from_str(&body).unwrap();
        let url = v["webSocketDebuggerUrl"].as_str().unwrap().to_string();
        url.split_once("/devtools/")
            .map(|(_, p)| format!("/devtools/{p}"))
            .unwrap()
    }

    /// The first page target's path.
    async fn page_path(proxy: &Proxy) -> String {
        let (_, body) = get(proxy.addr(), "/json/list", "").await;
        let v: Value = serde_json::from_str(&body).unwrap();
        let page = v
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .expect("a page target");
        format!("/devtools/page/{}", page["id"].as_str().unwrap())
    }

    /// Sends a command and waits (10 s at most) for the answer with its id.
    async fn call(ws: &mut Ws, id: i64, method: &str, params: Value) -> Value {
        let msg = serde_json::json!({ "id": id, "method": method, "params": params });
        ws.send(Message::text(msg.to_string())).await.unwrap();
        answer(ws, id).await
    }

    async fn answer(ws: &mut Ws, id: i64) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(m) = ws.next().await {
                match m {
                    Ok(Message::Text(t)) => {
                        let v: Value = serde_json::from_str(t.as_str()).unwrap();
                        if v["id"] == id {
                            return v;
                        }
                    }
                    Ok(Message::Close(c)) => {
                        return serde_json::json!({ "closed": format!("{c:?}") })
                    }
                    Ok(_) => {}
                    Err(e) => return serde_json::json!({ "failed": e.to_string() }),
                }
            }
            serde_json::json!({ "closed": "end of stream" })
        })
        .await
        .expect("an answer within 10 s")
    }

    /// A message cut to its first 300 characters, for assertion messages.
    fn short(v: &Value) -> String {
        v.to_string().chars().take(300).collect()
    }

    /// The proxy still serves a well-behaved client.
    async fn still_serves(proxy: &Proxy) {
        let mut ws = connect(proxy, &browser_path(proxy).await).await;
        let v = call(&mut ws, 1, "Browser.getVersion", serde_json::json!({})).await;
        assert!(v["result"]["product"].is_string(), "{v}");
    }

    /// A transparent proxy and an armed one (whose hook parses every message).
    async fn proxies(upstream: SocketAddr) -> [Proxy; 2] {
        let armed: Arc<dyn Tamper> =
            Arc::new(Armed::new(ProtocolFault::ScaledPointer { factor: 0.75 }));
        [
            Proxy::start(upstream, None).await.unwrap(),
            Proxy::start(upstream, Some(armed)).await.unwrap(),
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn malformed_json_is_answered_by_the_browser_and_harms_no_one() {
        let chrome = chromium().await;
        for proxy in proxies(chrome.devtools_addr().unwrap()).await {
            let mut ws = connect(&proxy, &browser_path(&proxy).await).await;
            ws.send(Message::text("{not json")).await.unwrap();
            ws.send(Message::binary(vec![0xff, 0x00, 0x7b]))
                .await
                .unwrap();
            // The same connection goes on (or the browser closed it): never the proxy.
            let v = call(&mut ws, 7, "Browser.getVersion", serde_json::json!({})).await;
            assert!(v["result"].is_object() || v.get("closed").is_some(), "{v}");
            still_serves(&proxy).await;
        }
        close(chrome).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_gone_mid_command_leaves_the_others_working() {
        let chrome = chromium().await;
        for proxy in proxies(chrome.devtools_addr().unwrap()).await {
            let mut ws = connect(&proxy, &page_path(&proxy).await).await;
            let slow = serde_json::json!({"id": 1, "method": "Runtime.evaluate", "params": {
                "expression": "new Promise(r => setTimeout(() => r('x'.repeat(1 << 20)), 500))",
                "awaitPromise": true}});
            ws.send(Message::text(slow.to_string())).await.unwrap();
            drop(ws);
            tokio::time::sleep(Duration::from_millis(800)).await;
            still_serves(&proxy).await;
            // The page the gone client was using still answers a new one.
            let mut ws = connect(&proxy, &page_path(&proxy).await).await;
            let v = call(
                &mut ws,
                2,
                "Runtime.evaluate",
                serde_json::json!({"expression": "6 * 7"}),
            )
            .await;
            assert_eq!(v["result"]["result"]["value"], 42, "{v}");
        }
        close(chrome).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fifty_megabyte_messages_pass_both_ways() {
        let chrome = chromium().await;
        for proxy in proxies(chrome.devtools_addr().unwrap()).await {
            let mut ws = connect(&proxy, &page_path(&proxy).await).await;
            // 50 MB from the browser: an answer carrying a 50 MB string.
            let v = call(
                &mut ws,
                1,
                "Runtime.evaluate",
                serde_json::json!({"expression": "'x'.repeat(50 * 1024 * 1024)", "returnByValue": true}),
            )
            .await;
            let len = v["result"]["result"]["value"].as_str().map(str::len);
            assert_eq!(
                len,
                Some(50 << 20),
                "{}",
                &v.to_string()[..200.min(v.to_string().len())]
            );
            // 50 MB to the browser: a command whose expression is 50 MB long.
            let big = format!("'{}'.length", "y".repeat(50 << 20));
            let v = call(
                &mut ws,
                2,
                "Runtime.evaluate",
                serde_json::json!({"expression": big}),
            )
            .await;
            assert_eq!(v["result"]["result"]["value"], 50 << 20, "{}", short(&v));
            still_serves(&proxy).await;
        }
        close(chrome).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hundred_concurrent_connections_are_each_answered() {
        let chrome = chromium().await;
        let proxy = Proxy::start(chrome.devtools_addr().unwrap(), None)
            .await
            .unwrap();
        let path = browser_path(&proxy).await;
        let mut clients = Vec::new();
        for _ in 0..100 {
            clients.push(connect(&proxy, &path).await);
        }
        let answers = futures::future::join_all(clients.iter_mut().enumerate().map(|(i, ws)| {
            call(
                ws,
                i as i64 + 1,
                "Browser.getVersion",
                serde_json::json!({}),
            )
        }))
        .await;
        for (i, v) in answers.iter().enumerate() {
            assert_eq!(v["id"], i + 1, "{v}");
            assert!(v["result"]["product"].is_string(), "{v}");
        }
        drop(clients);
        still_serves(&proxy).await;
        close(chrome).await;
    }
}
