//! The environment API's DevTools proxy: a claim that names the harness's own browser
//! gets a proxy in front of it for that lease, and the reference harness driving its
//! items through it (`--devtools`) gets exactly the verdicts it gets without it.
//!
//! Needs python3 with Playwright (`pip install playwright`; no browser download).

use faultline::engine::browser::{find_chromium, BrowserHandle};
mod common;

use common::external::{reference_command, Env};
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default tasks' reference probes, `layouts` of each, through the reference
/// harness with `flags`.
fn config(dir: &Path, layouts: u32, flags: &[&str]) -> PathBuf {
    let command = reference_command(flags);
    let text = format!(
        "seed = 1\nlayouts = {layouts}\ntasks = [\"search\", \"grid\", \"frame\", \"chart\"]\nfaults = [\"reference\"]\n\n[harness]\nname = \"playwright\"\ncommand = {command:?}\nworkers = 2\n"
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("harness.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(config: &Path, out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(config.parent().unwrap())
        .output()
        .expect("faultline runs");
    assert!(
        o.status.success(),
        "faultline run failed\n{}\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(out.join("harness-w1.log")).unwrap_or_default()
    );
}

/// Every stored item: (fault, fired, truth, the harness's verdict).
type Row = (Option<String>, Option<bool>, bool, String);

fn stored(out: &Path) -> BTreeMap<String, Row> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT t.trial_key, t.fault, t.fired, t.truth_achieved, v.verdict
             FROM trials t JOIN verdicts v USING (trial_key)",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn the_reference_harness_gets_the_same_verdicts_through_the_proxy_as_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    let proxied = dir.path().join("proxied");
    run(&config(&dir.path().join("a"), 2, &[]), &plain);
    run(&config(&dir.path().join("b"), 2, &["--devtools"]), &proxied);
    let logs: String = ["w1", "w2"]
        .iter()
        .map(|w| {
            std::fs::read_to_string(proxied.join(format!("harness-{w}.log"))).unwrap_or_default()
        })
        .collect();
    assert_eq!(
        logs.matches("over the DevTools proxy http://127.0.0.1:")
            .count(),
        16,
        "every item went through its proxy: {logs}"
    );
    let (plain, proxied) = (stored(&plain), stored(&proxied));
    assert_eq!(plain.len(), 16, "4 tasks x 2 layouts x (probe + working)");
    assert_eq!(
        proxied, plain,
        "the proxy changed a verdict, a truth or a fired flag"
    );
    assert!(
        proxied.values().all(|(_, _, truth, _)| *truth),
        "{proxied:#?}"
    );
}

/// `faultline env` serving a one-layout run of the reference probes.
fn serve(dir: &Path, out: &Path) -> Env {
    Env::serve(&config(dir, 1, &[]), out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_naming_the_harness_browser_gets_a_proxy_for_its_lease_only() {
    let dir = tempfile::tempdir().unwrap();
    let env = serve(&dir.path().join("cfg"), &dir.path().join("run"));
    let chrome = BrowserHandle::launch(&find_chromium(None).unwrap())
        .await
        .unwrap();
    let upstream = chrome.devtools_addr().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let claim = |body: serde_json::Value| env.post_json(&http, "/v1/claim", &body).send();
    // An endpoint beyond loopback is refused before any item is taken.
    let r = claim(serde_json::json!({"devtools_upstream": "http://192.0.2.1:9222"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: serde_json::Value = r.json().await.unwrap();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("devtools_upstream:"),
        "{e}"
    );
    // Without the field, no proxy.
    let plain: serde_json::Value = claim(serde_json::json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(plain["item"].get("devtools").is_none(), "{plain}");
    // With it, the item's own proxy, in front of the named browser.
    let v: serde_json::Value =
        claim(serde_json::json!({"devtools_upstream": format!("http://{upstream}")}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let proxy = v["item"]["devtools"]
        .as_str()
        .expect("a devtools endpoint")
        .to_string();
    assert!(
        proxy.starts_with("http://127.0.0.1:") && !proxy.contains(&upstream.port().to_string()),
        "{proxy}"
    );
    let version: serde_json::Value = http
        .get(format!("{proxy}/json/version"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ws = version["webSocketDebuggerUrl"].as_str().unwrap();
    assert!(ws.starts_with(&proxy.replace("http://", "ws://")), "{ws}");
    assert_eq!(
        version["Browser"].as_str().map(|b| b.is_empty()),
        Some(false)
    );
    // Reported, the lease ends and its proxy with it.
    let lease = v["item"]["lease"].as_str().unwrap();
    let r = env
        .post_json(
            &http,
            &format!("/v1/leases/{lease}/report"),
            &serde_json::json!({"verdict": "no_change"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let after = http.get(format!("{proxy}/json/version")).send().await;
    assert!(after.is_err(), "the proxy outlived its lease: {after:?}");
    drop(env);
    chrome.close().await;
}

/// A grid run with one protocol fault through the reference harness with `flags`.
fn fault_config(dir: &Path, fault: &str, flags: &[&str]) -> PathBuf {
    let command = reference_command(flags);
    let text = format!(
        "seed = 1\nlayouts = 2\ntasks = [\"grid\"]\nfaults = [\"{fault}\"]\n\n[harness]\nname = \"playwright\"\ncommand = {command:?}\nworkers = 1\n"
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("harness.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs [`fault_config`] under `dir/name` and returns the run directory.
fn fault_run(dir: &Path, name: &str, fault: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    run(
        &fault_config(&dir.join(format!("cfg-{name}")), fault, flags),
        &out,
    );
    out
}

/// The fault items' rows: (fired, truth, witness, not-fired reason, ledger).
type FaultRow = (Option<bool>, bool, Option<String>, Option<String>, String);

fn fault_rows(out: &Path) -> Vec<FaultRow> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT fired, truth_achieved, witness, not_fired_reason, ledger FROM trials WHERE fault IS NOT NULL",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_scaled_click_on_the_harness_connection_lands_off_target_and_fired_is_honest() {
    let dir = tempfile::tempdir().unwrap();
    let fault = "execution.devtools_scaled_pointer";
    let proxied = fault_run(dir.path(), "proxied", fault, &["--devtools"]);
    let rows = fault_rows(&proxied);
    assert_eq!(rows.len(), 2, "2 layouts of the grid");
    for (fired, truth, witness, reason, ledger) in &rows {
        assert_eq!(*fired, Some(true), "{witness:?} {reason:?}");
        assert!(!truth, "the click landed off its target: {ledger}");
        let w: serde_json::Value = serde_json::from_str(witness.as_deref().unwrap()).unwrap();
        let changes = w["changes"].as_array().expect("the proxy's changes");
        let press = changes
            .iter()
            .find(|c| c["original"]["type"] == "mousePressed")
            .unwrap_or_else(|| panic!("the press was changed: {w}"));
        let (ox, cx) = (
            press["original"]["x"].as_f64().unwrap(),
            press["changed"]["x"].as_f64().unwrap(),
        );
        assert!((cx - ox * 0.75).abs() < 0.01, "{press}");
        // The page's own ledger has the click where the proxy sent it, not where the
        // harness aimed.
        let ledger: serde_json::Value = serde_json::from_str(ledger).unwrap();
        let click = ledger["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "click")
            .unwrap_or_else(|| panic!("the page recorded a click: {ledger}"));
        let lx = click["data"]["x"].as_f64().unwrap();
        assert!(
            (lx - cx).abs() <= 1.0 && (lx - ox).abs() > 1.0,
            "ledger x {lx}, sent {ox}, changed {cx}"
        );
    }
    // The same items without the proxy: the fault could not act, and says why.
    let plain = fault_run(dir.path(), "plain", fault, &[]);
    for (fired, truth, _, reason, _) in fault_rows(&plain) {
        assert_eq!(fired, Some(false));
        assert!(truth, "untouched, the harness's click lands");
        assert!(reason
            .unwrap()
            .contains("did not connect through the DevTools proxy"));
    }
}

/// The harness's verdict on each fault item, and the run's infrastructure errors.
fn verdicts_and_infra(out: &Path) -> (Vec<String>, usize) {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let verdicts = db
        .prepare("SELECT v.verdict FROM trials t JOIN verdicts v USING (trial_key) WHERE t.fault IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let infra: usize = db
        .query_row("SELECT COUNT(*) FROM infra_errors", [], |r| r.get(0))
        .unwrap();
    (verdicts, infra)
}

#[test]
fn each_protocol_fault_fires_on_the_reference_harness_with_its_ledger_effect() {
    let dir = tempfile::tempdir().unwrap();
    // (fault, the ledger's truth once it fired, the verdict the reference harness gives)
    for (fault, truth, verdict) in [
        // The click lands at twice its point, or outside the viewport.
        ("execution.devtools_device_pixels", false, None),
        // The page saw a press and no release: nothing selected; the harness's verifier
        // sees no change.
        ("execution.devtools_dropped_release", false, None),
        // The click happened; only the harness's observation is stale.
        ("tool.devtools_stale_screenshot", true, None),
        // The click happened; the harness's observation is from before the page settled.
        ("tool.devtools_unsettled_screenshot", true, None),
        // The click happened; the harness's DOM reads after it get their answers from
        // before it, so its verifier sees no change.
        ("tool.devtools_stale_dom", true, Some("no_change")),
        // The click never reached the page; the harness reports its tool's error.
        ("tool.devtools_protocol_error", false, Some("fail")),
        // The click landed, then the page crashed: the harness reports the lost page.
        ("tool.devtools_crash_after_input", true, Some("fail")),
        // The click landed at once; only its answer came 12-14 s late. The reference
        // harness waits for it (it sets no per-call deadline), so the item is slow, not
        // an infrastructure error.
        ("tool.devtools_held_answer", true, None),
    ] {
        let out = fault_run(dir.path(), fault, fault, &["--devtools"]);
        let rows = fault_rows(&out);
        assert_eq!(rows.len(), 2, "{fault}");
        for (fired, achieved, witness, reason, ledger) in &rows {
            assert_eq!(*fired, Some(true), "{fault}: {reason:?}");
            assert_eq!(*achieved, truth, "{fault}: {ledger}");
            let w: serde_json::Value = serde_json::from_str(witness.as_deref().unwrap()).unwrap();
            assert_eq!(w["fault"], fault);
            assert!(!w["changes"].as_array().unwrap().is_empty(), "{fault}: {w}");
            if fault == "tool.devtools_held_answer" {
                let held = w["changes"][0]["changed"]["answered_after_ms"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("the hold is in the witness: {w}"));
                assert!((12_000..=14_000).contains(&held), "{w}");
            }
        }
        let (verdicts, infra) = verdicts_and_infra(&out);
        assert_eq!(
            infra, 0,
            "{fault}: the fault's effect is the item's outcome, not an infrastructure error"
        );
        if let Some(v) = verdict {
            assert!(verdicts.iter().all(|x| x == v), "{fault}: {verdicts:?}");
        }
    }
}

#[test]
fn a_chrome_offset_moves_the_click_by_the_seeds_offset() {
    let dir = tempfile::tempdir().unwrap();
    let fault = "execution.devtools_chrome_offset";
    let out = fault_run(dir.path(), "offset", fault, &["--devtools"]);
    let rows = fault_rows(&out);
    assert_eq!(rows.len(), 2);
    for (fired, _, witness, _, ledger) in &rows {
        assert_eq!(*fired, Some(true));
        let w: serde_json::Value = serde_json::from_str(witness.as_deref().unwrap()).unwrap();
        let press = w["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["original"]["type"] == "mousePressed")
            .cloned()
            .unwrap_or_else(|| panic!("{w}"));
        let dy = press["changed"]["y"].as_f64().unwrap() - press["original"]["y"].as_f64().unwrap();
        assert!((72.0..=112.0).contains(&dy), "{press}");
        assert_eq!(press["changed"]["x"], press["original"]["x"]);
        let ledger: serde_json::Value = serde_json::from_str(ledger).unwrap();
        let click = ledger["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "click")
            .unwrap_or_else(|| panic!("{ledger}"));
        let ly = click["data"]["y"].as_f64().unwrap();
        assert!(
            (ly - press["changed"]["y"].as_f64().unwrap()).abs() <= 1.0,
            "ledger y {ly}: {press}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_scoped_proxy_serves_all_its_items_one_at_a_time_and_outlives_each_lease() {
    let dir = tempfile::tempdir().unwrap();
    let env = serve(&dir.path().join("cfg"), &dir.path().join("run"));
    let chrome = BrowserHandle::launch(&find_chromium(None).unwrap())
        .await
        .unwrap();
    let upstream = format!("http://{}", chrome.devtools_addr().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let claim = |body: serde_json::Value| env.post_json(&http, "/v1/claim", &body).send();
    let report = |lease: String| {
        let body = serde_json::json!({"verdict": "no_change"});
        env.post_json(&http, &format!("/v1/leases/{lease}/report"), &body)
            .send()
    };
    // The worker scope needs a worker to belong to.
    let r = claim(serde_json::json!({"devtools_upstream": upstream, "devtools_scope": "worker"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "{}", r.text().await.unwrap());
    let body = serde_json::json!({"worker": "w9", "devtools_upstream": upstream, "devtools_scope": "worker"});
    let first: serde_json::Value = claim(body.clone()).await.unwrap().json().await.unwrap();
    let proxy = first["item"]["devtools"]
        .as_str()
        .expect("a proxy")
        .to_string();
    // A second item while the first is held on the worker's proxy: refused, nothing taken.
    let r = claim(body.clone()).await.unwrap();
    assert_eq!(r.status(), 409);
    let e: serde_json::Value = r.json().await.unwrap();
    assert!(
        e["error"].as_str().unwrap().contains("still holds lease"),
        "{e}"
    );
    let r = report(first["item"]["lease"].as_str().unwrap().to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // Reported, the lease is over and the worker's proxy is still there ...
    let version = http
        .get(format!("{proxy}/json/version"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        version.status(),
        200,
        "the worker's proxy ended with its lease"
    );
    // ... and the worker's next item is served on it.
    let second: serde_json::Value = claim(body).await.unwrap().json().await.unwrap();
    assert_eq!(second["item"]["devtools"], proxy.as_str(), "{second}");
    assert_ne!(second["item"]["item"], first["item"]["item"]);
    drop(env);
    chrome.close().await;
}

#[test]
fn a_harness_keeping_one_connection_gets_each_items_fault_on_that_item() {
    let dir = tempfile::tempdir().unwrap();
    let fault = "execution.devtools_scaled_pointer";
    let out = fault_run(dir.path(), "worker", fault, &["--devtools-worker"]);
    let log = std::fs::read_to_string(out.join("harness-w1.log")).unwrap();
    assert_eq!(
        log.matches("one connection to").count(),
        1,
        "one proxy, one connection for the worker's items: {log}"
    );
    let rows = fault_rows(&out);
    assert_eq!(rows.len(), 2);
    for (fired, truth, witness, reason, ledger) in &rows {
        assert_eq!(*fired, Some(true), "{reason:?}");
        assert!(!truth, "the scaled click lands off its target: {ledger}");
        let w: serde_json::Value = serde_json::from_str(witness.as_deref().unwrap()).unwrap();
        assert_eq!(w["fault"], fault);
    }
    // The working items of the same run (no protocol fault) are untouched on the same
    // connection: each claim re-arms the worker's proxy with its own item's fault, none
    // for a working item.
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let working: Vec<bool> = db
        .prepare("SELECT truth_achieved FROM trials WHERE fault IS NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!working.is_empty(), "the run has working items");
    assert!(working.iter().all(|&t| t), "{working:?}");
}
