//! The DevTools proxy's added latency per command (`just bench-proxy`): the same page
//! commands sent to a real Chromium directly and through a transparent proxy (and one
//! armed with a fault that parses every message), interleaved so the machine's load
//! falls on both alike; p50 and p95 of each, and the difference.

use async_tungstenite::tokio::{connect_async_with_config, ConnectStream};
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::WebSocketStream;
use faultline::engine::browser::{find_chromium, BrowserHandle};
use faultline_devtools::fault::{Armed, ProtocolFault};
use faultline_devtools::{Proxy, Tamper};
use futures::StreamExt;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Ws = WebSocketStream<ConnectStream>;

const ROUNDS: usize = 200;
const SCREENSHOT_ROUNDS: usize = 60;

async fn page_socket(addr: SocketAddr, target: &str) -> Ws {
    let config = WebSocketConfig::default()
        .max_message_size(Some(256 << 20))
        .max_frame_size(Some(256 << 20));
    connect_async_with_config(format!("ws://{addr}/devtools/page/{target}"), Some(config))
        .await
        .expect("a page WebSocket")
        .0
}

/// One command's round trip, in microseconds.
async fn timed(ws: &mut Ws, id: i64, method: &str, params: &Value) -> f64 {
    let msg = json!({ "id": id, "method": method, "params": params }).to_string();
    let start = Instant::now();
    ws.send(Message::text(msg)).await.unwrap();
    while let Some(m) = ws.next().await {
        if let Ok(Message::Text(t)) = m {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return start.elapsed().as_secs_f64() * 1e6;
            }
        }
    }
    panic!("{method}: the connection ended");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let chrome = BrowserHandle::launch(&find_chromium(None).expect("a Chromium"))
        .await
        .expect("Chromium starts");
    let upstream = chrome.devtools_addr().unwrap();
    let transparent = Proxy::start(upstream, None).await.unwrap();
    let armed: Arc<dyn Tamper> = Arc::new(Armed::new(ProtocolFault::ModifierLost));
    let parsing = Proxy::start(upstream, Some(armed)).await.unwrap();
    let list: Value = reqwest::get(format!("http://{upstream}/json/list"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let target = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page")
        .expect("a page target")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut direct = page_socket(upstream, &target).await;
    let mut through = page_socket(transparent.addr(), &target).await;
    let mut parsed = page_socket(parsing.addr(), &target).await;
    let setup = json!({"width": 900, "height": 600, "deviceScaleFactor": 1, "mobile": false});
    timed(&mut direct, 1, "Emulation.setDeviceMetricsOverride", &setup).await;
    let html = "data:text/html,<body style='font:20px sans-serif'><h1>proxy bench</h1><button>press</button></body>";
    timed(&mut direct, 2, "Page.navigate", &json!({ "url": html })).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    println!("DevTools proxy: added latency per command against a real Chromium (round trip, microseconds)");
    println!(
        "load average before: {}, {} cores",
        load(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<30} {:>5} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12}",
        "command", "n", "direct p50", "p95", "proxy p50", "p95", "parsed p50", "p95"
    );
    let commands: [(&str, Value, usize); 3] = [
        ("Runtime.evaluate", json!({"expression": "1 + 1"}), ROUNDS),
        (
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": 100, "y": 100}),
            ROUNDS,
        ),
        (
            "Page.captureScreenshot",
            json!({"format": "png"}),
            SCREENSHOT_ROUNDS,
        ),
    ];
    let mut id = 10;
    for (method, params, n) in commands {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            id += 1;
            a.push(timed(&mut direct, id, method, &params).await);
            b.push(timed(&mut through, id, method, &params).await);
            c.push(timed(&mut parsed, id, method, &params).await);
        }
        for v in [&mut a, &mut b, &mut c] {
            v.sort_by(f64::total_cmp);
        }
        let p = |v: &[f64], q| percentile(v, q);
        println!(
            "{:<30} {:>5} {:>10.0} {:>10.0} {:>12.0} {:>12.0} {:>12.0} {:>12.0}",
            method,
            n,
            p(&a, 0.5),
            p(&a, 0.95),
            p(&b, 0.5),
            p(&b, 0.95),
            p(&c, 0.5),
            p(&c, 0.95)
        );
        println!(
            "{:<30} {:>5} {:>10} {:>10} {:>+12.0} {:>+12.0} {:>+12.0} {:>+12.0}",
            "  added by the proxy",
            "",
            "",
            "",
            p(&b, 0.5) - p(&a, 0.5),
            p(&b, 0.95) - p(&a, 0.95),
            p(&c, 0.5) - p(&a, 0.5),
            p(&c, 0.95) - p(&a, 0.95)
        );
    }
    println!("load average after: {}", load());
    println!("(\"parsed\": a proxy with a fault armed, which parses every message to look for its situation)");
    drop((direct, through, parsed));
    transparent.stop();
    parsing.stop();
    chrome.close().await;
}
