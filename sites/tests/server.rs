//! The fixture server over real HTTP on loopback.

use faultline_sites::{FixtureServer, Scope};
use faultline_tasks::{Layout, TaskKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `request` and returns the whole response: status line, headers and body.
async fn http_raw(addr: std::net::SocketAddr, request: String) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

async fn http(addr: std::net::SocketAddr, request: String) -> (u16, String) {
    let text = http_raw(addr, request).await;
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(path: &str, auth: Option<&str>) -> String {
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n")
}

/// The search task's results URL for `layout`'s target under `scope`: a submission the
/// server records in the scope's ledger.
fn search_submission(scope: &str, layout: &Layout) -> String {
    format!(
        "/s/{scope}/search/results?q={}&layout=0&seed={}",
        layout.target(),
        layout.seed
    )
}

#[tokio::test]
async fn binds_loopback_and_guards_the_ledger_with_the_run_key() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    assert!(server.addr().ip().is_loopback());
    let scope = Scope::parse("t1").unwrap();
    key.open(&scope);
    let layout = Layout::for_root(1, TaskKind::Search, 0);
    // A real submission is recorded server-side.
    let (status, body) = http(server.addr(), get(&search_submission("t1", &layout), None)).await;
    assert_eq!(status, 200);
    assert!(body.contains(layout.target()));

    let ledger_path = "/api/ledger/t1";
    assert_eq!(http(server.addr(), get(ledger_path, None)).await.0, 401);
    assert_eq!(
        http(server.addr(), get(ledger_path, Some(&"0".repeat(64))))
            .await
            .0,
        401
    );
    let (status, body) = http(server.addr(), get(ledger_path, Some(&key.bearer_token()))).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"submitted\""), "{body}");

    let ledger = key.take(&scope);
    assert_eq!(ledger.events.len(), 1);
    assert_eq!(ledger.events[0].data["query"], layout.target());
    assert!(faultline_sites::judge(&layout, &ledger).achieved);
    assert!(key.take(&scope).events.is_empty(), "take forgets the scope");
    server.shutdown().await;
}

#[tokio::test]
async fn rejects_unknown_event_kinds_and_bad_scopes() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    key.open(&Scope::parse("t2").unwrap());
    let post = |scope: &str, body: &str| {
        format!(
            "POST /s/{scope}/event HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    assert_eq!(
        http(server.addr(), post("t2", r#"{"kind":"clik","data":{}}"#))
            .await
            .0,
        400
    );
    assert_eq!(
        http(server.addr(), post("T2!", r#"{"kind":"click","data":{}}"#))
            .await
            .0,
        400
    );
    assert_eq!(
        http(
            server.addr(),
            post(
                "t2",
                r#"{"kind":"click","page_ms":1.5,"data":{"target":null}}"#
            )
        )
        .await
        .0,
        204
    );
    let ledger = key.read(&Scope::parse("t2").unwrap());
    assert_eq!(ledger.events.len(), 1);
    assert_eq!(ledger.events[0].page_ms, Some(1.5));
    server.shutdown().await;
}

#[tokio::test]
async fn every_task_page_renders_its_layout() {
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    for task in TaskKind::ALL {
        let layout = Layout::for_root(1, task, 4);
        let path = format!("/s/t3/{task}?layout=4&seed={}", layout.seed);
        let (status, body) = http(server.addr(), get(&path, None)).await;
        assert_eq!(status, 200, "{task}");
        assert!(body.contains("/static/ledger.js"));
        if task == TaskKind::Grid {
            assert!(body.contains(&format!(">{}</button>", layout.target())));
        }
        if task == TaskKind::Chart {
            // The value is script data, not visible text, until the tooltip shows it.
            assert!(body.contains("role=\"tooltip\" hidden"));
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn regression_the_index_page_does_not_reflect_the_host_header() {
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let evil = "x\"><script>alert(1)</script>";
    let (status, body) = http(
        server.addr(),
        format!("GET / HTTP/1.1\r\nHost: {evil}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!body.contains("<script>"), "{body}");
    assert!(!body.contains("alert(1)"), "{body}");
    assert!(body.contains("href=\"/s/inspect/search?layout=0"), "{body}");
    server.shutdown().await;
}

/// The harness tells a slow site from a slow machine by asking the server what it still
/// owes a scope: a response the fault layer delays counts as in flight until it is sent,
/// another scope's never does, and nothing is left counted afterwards.
#[tokio::test]
async fn a_delayed_response_is_in_flight_for_its_scope_until_it_is_sent() {
    use faultline_faults::site::{NetworkEffect, NetworkRule, Route, SiteInjection};
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let (slow, other) = (
        Scope::parse("slow").unwrap(),
        Scope::parse("other").unwrap(),
    );
    key.open(&slow);
    key.open(&other);
    server.arm(
        &slow,
        SiteInjection {
            fault: "transport.slow_response".into(),
            network: vec![NetworkRule {
                route: Route::SearchResults,
                effect: NetworkEffect::Delay { ms: 1500 },
                times: None,
                fires: true,
            }],
            page: vec![],
        },
    );
    let layout = Layout::for_root(1, TaskKind::Search, 0);
    let path = format!("/s/slow/search/results?q=x&layout=0&seed={}", layout.seed);
    let addr = server.addr();
    let request = tokio::spawn(async move { http(addr, get(&path, None)).await });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while server.in_flight(&slow) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(server.in_flight(&slow), 1, "the delayed response is owed");
    assert_eq!(server.in_flight(&other), 0);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        server.in_flight(&slow),
        1,
        "still owed while the delay runs"
    );
    assert_eq!(request.await.unwrap().0, 200);
    assert_eq!(server.in_flight(&slow), 0, "answered: nothing owed");
    // An undelayed request is counted out as soon as it is answered.
    let path = format!("/s/other/search/results?q=x&layout=0&seed={}", layout.seed);
    assert_eq!(http(addr, get(&path, None)).await.0, 200);
    assert_eq!(server.in_flight(&other), 0);
}

fn post_json(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The main-thread-hang fault blocks its page on a request the server holds: the hang
/// is witnessed when the request arrives (the blocked page can report nothing), held for
/// the asked time, and refused at once on a scope with no fault armed.
#[tokio::test]
async fn a_hang_request_is_witnessed_on_arrival_and_held_only_on_an_armed_scope() {
    use faultline_faults::site::{PageMod, SiteInjection};
    use std::time::{Duration, Instant};
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let hung = Scope::parse("hung").unwrap();
    server.arm(
        &hung,
        SiteInjection {
            fault: "execution.main_thread_hang".into(),
            network: vec![],
            page: vec![PageMod::HangAfterClick { ms: 3000 }],
        },
    );
    let body = r#"{"kind":"hung","page_ms":12.5,"data":{"ms":3000}}"#;
    let started = Instant::now();
    let (status, _) = http(server.addr(), post_json("/s/unarmed/hang", body)).await;
    assert_eq!(status, 409, "no fault armed: refused");
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "and not held"
    );

    let addr = server.addr();
    let started = Instant::now();
    let request = tokio::spawn(async move { http(addr, post_json("/s/hung/hang", body)).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.in_flight(&hung) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.in_flight(&hung), 1, "the hang is held");
    assert_eq!(request.await.unwrap().0, 204);
    assert!(
        started.elapsed() >= Duration::from_millis(3000),
        "held for its length"
    );
    let (status, _) = http(
        server.addr(),
        post_json("/s/hung/hang", r#"{"kind":"hung","data":{}}"#),
    )
    .await;
    assert_eq!(status, 400, "a hang with no length is refused");
    let witnessed = server.disarm(&hung);
    assert_eq!(witnessed.len(), 1, "{witnessed:?}");
    assert_eq!(witnessed[0].kind, "hung");
    assert_eq!(witnessed[0].data["ms"], 3000);
    assert_eq!(witnessed[0].page_ms, Some(12.5));
    server.shutdown().await;
}

/// The late-stylesheet fault times its delay from the page's first click, not from the
/// request: the stylesheet is held while no click is reported, released `ms` after the
/// click's witness arrives, and released anyway once `max_wait_ms` passed without one.
#[tokio::test]
async fn a_delay_after_a_witness_holds_the_response_until_the_page_reports_it() {
    use faultline_faults::site::{NetworkEffect, NetworkRule, Route, SiteInjection};
    use std::time::{Duration, Instant};
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let arm = |scope: &Scope| {
        server.arm(
            scope,
            SiteInjection {
                fault: "resource.stylesheet_delayed".into(),
                network: vec![NetworkRule {
                    route: Route::GridStyle,
                    effect: NetworkEffect::DelayAfterWitness {
                        after: "click_before_stylesheet".into(),
                        ms: 300,
                        max_wait_ms: 2500,
                    },
                    times: None,
                    fires: false,
                }],
                page: vec![],
            },
        )
    };
    let (clicked, never) = (
        Scope::parse("clicked").unwrap(),
        Scope::parse("never").unwrap(),
    );
    arm(&clicked);
    arm(&never);
    let addr = server.addr();
    let seed = Layout::for_root(1, TaskKind::Grid, 0).seed;
    let css = move |scope: &str| {
        get(
            &format!("/s/{scope}/static/grid.css?layout=0&seed={seed}"),
            None,
        )
    };
    let started = Instant::now();
    let (a, b) = (css("clicked"), css("never"));
    let style = tokio::spawn(async move { http(addr, a).await });
    let unclicked = tokio::spawn(async move { http(addr, b).await });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!style.is_finished(), "released before the click");
    let click = r#"{"kind":"click_before_stylesheet","page_ms":1000.0,"data":{"x":1,"y":2}}"#;
    let clicked_at = Instant::now();
    assert_eq!(
        http(addr, post_json("/s/clicked/witness", click)).await.0,
        204
    );
    let (status, _) = style.await.unwrap();
    assert_eq!(status, 200);
    let after_click = clicked_at.elapsed();
    assert!(
        after_click >= Duration::from_millis(300) && after_click < Duration::from_millis(1300),
        "released {after_click:?} after the click, expected its 300 ms delay"
    );
    assert_eq!(unclicked.await.unwrap().0, 200);
    assert!(
        started.elapsed() >= Duration::from_millis(2800),
        "without a click: held for max_wait_ms, then the delay"
    );
    let delayed = |w: Vec<faultline_sites::SiteWitness>| {
        w.into_iter()
            .find(|e| e.kind == "delayed")
            .expect("the delay is witnessed")
            .data
    };
    assert_eq!(
        delayed(server.disarm(&clicked))["after"],
        "click_before_stylesheet"
    );
    assert_eq!(delayed(server.disarm(&never))["after"], "max_wait");
    server.shutdown().await;
}

/// The twin port (the second origin a reused browser page alternates with) serves the
/// same pages into the same ledgers, on the same loopback address.
#[tokio::test]
async fn the_twin_port_serves_the_same_site_into_the_same_ledgers() {
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let twin: std::net::SocketAddr = server
        .twin_base_url()
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(twin.ip(), server.addr().ip());
    assert_ne!(twin.port(), server.addr().port());
    let scope = Scope::parse("twin1").unwrap();
    key.open(&scope);
    let layout = Layout::for_root(1, TaskKind::Search, 0);
    let page = FixtureServer::page_url_on(&server.twin_base_url(), &scope, &layout);
    assert!(page.starts_with(&server.twin_base_url()), "{page}");
    let path = page.strip_prefix(&server.twin_base_url()).unwrap();
    let (status, body) = http(twin, get(path, None)).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        http(server.addr(), get(path, None)).await.1,
        "both ports serve the same page"
    );
    let (status, _) = http(twin, get(&search_submission("twin1", &layout), None)).await;
    assert_eq!(status, 200);
    let ledger = key.take(&scope);
    assert_eq!(ledger.events.len(), 1, "{:?}", ledger.events);
    assert!(faultline_sites::judge(&layout, &ledger).achieved);
    server.shutdown().await;
}

/// A reused page's HTTP cache is never cleared between items (the harness's reset): that
/// holds only while no response of the site, a refused or missing one included, may be
/// stored.
#[tokio::test]
async fn every_response_forbids_caching() {
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let layout = Layout::for_root(1, TaskKind::Grid, 4);
    let paths = [
        "/".to_string(),
        "/static/ledger.js".to_string(),
        format!("/s/t9/grid?layout=4&seed={}", layout.seed),
        "/s/t9/static/grid.js".to_string(),
        "/no/such/page".to_string(),
        "/s/bad%20scope/grid?layout=0&seed=1".to_string(),
    ];
    for path in paths {
        let text = http_raw(server.addr(), get(&path, None))
            .await
            .to_lowercase();
        let (head, _) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.lines().any(|l| l == "cache-control: no-store"),
            "{path}: {head}"
        );
    }
    server.shutdown().await;
}
