//! The environment API against a real external harness: the Playwright-for-Python
//! reference harness (its own headless Chromium, parser, executor and verifier) claiming
//! the default tasks' items from a real `faultline run` / `faultline env` process, the
//! fixture server's ledger scoring every report.
//!
//! Needs python3 with Playwright (`pip install playwright`; no browser download: the
//! harness drives the system's headless shell). `.ci/run` installs it.

mod common;

use common::external::{reference_command, Env};
use faultline_tasks::{InfraErrorKind, InfraKind};
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn playwright_available() {
    let ok = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "these tests drive the reference harness, which needs Playwright for Python: pip install playwright"
    );
}

/// A config running the default tasks' reference probes through the reference harness
/// with `flags`.
fn config(dir: &Path, layouts: u32, workers: usize, flags: &[&str], extra: &str) -> PathBuf {
    let command = reference_command(flags);
    let text = format!(
        "seed = 1\nlayouts = {layouts}\ntasks = [\"search\", \"grid\", \"frame\", \"chart\"]\nfaults = [\"reference\"]\n\n[harness]\nname = \"playwright\"\ncommand = {command:?}\nworkers = {workers}\n{extra}"
    );
    let path = dir.join("harness.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn faultline(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("faultline runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `config` into `out`; panics with the output when it fails.
fn run(config: &Path, out: &Path) {
    let (code, stdout, stderr) = faultline(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        config.parent().unwrap(),
    );
    assert_eq!(code, 0, "faultline run failed\n{stdout}\n{stderr}");
}

/// One stored trial: its key, fault, fired, truth and the harness's verdict.
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    fault: Option<String>,
    fired: Option<bool>,
    truth: bool,
    verdict: String,
}

fn stored(out: &Path) -> BTreeMap<String, Stored> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT t.trial_key, t.fault, t.fired, t.truth_achieved, v.verdict, v.policy
             FROM trials t JOIN verdicts v USING (trial_key)",
        )
        .unwrap();
    stmt.query_map([], |r| {
        let policy: String = r.get(5)?;
        assert_eq!(
            policy, "playwright",
            "the harness's verdicts are stored under its name"
        );
        Ok((
            r.get::<_, String>(0)?,
            Stored {
                fault: r.get(1)?,
                fired: r.get(2)?,
                truth: r.get(3)?,
                verdict: r.get(4)?,
            },
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn infra_kinds(out: &Path) -> Vec<InfraErrorKind> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db.prepare("SELECT kind FROM infra_errors").unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|kind| kind.unwrap().parse().unwrap())
        .collect()
}

/// The faults whose defect the harness showed: a stage probe that fired, or the
/// feedback probe (whose situation always arises) judged wrongly by its verifier.
fn defects(rows: &BTreeMap<String, Stored>) -> BTreeSet<String> {
    rows.values()
        .filter_map(|s| {
            let fault = s.fault.clone()?;
            let shows = match fault.as_str() {
                "feedback.iframe_no_change" => (s.verdict == "success") != s.truth,
                _ => s.fired == Some(true),
            };
            shows.then_some(fault)
        })
        .collect()
}

#[test]
fn the_clean_reference_harness_shows_no_defect_and_its_verdicts_are_stored_like_a_policys() {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clean");
    run(&config(dir.path(), 3, 2, &[], ""), &out);
    let rows = stored(&out);
    assert_eq!(rows.len(), 24, "4 tasks x 3 layouts x (probe + working)");
    assert_eq!(defects(&rows), BTreeSet::new(), "{rows:#?}");
    for (key, s) in &rows {
        assert!(
            s.truth,
            "{key}: the clean harness achieves every item: {s:?}"
        );
        match s.fault.as_deref() {
            // The iframe probe's situation always arises; the verifier must see it.
            Some("feedback.iframe_no_change") => assert_eq!(s.fired, Some(true), "{key}"),
            Some(_) => assert_eq!(s.fired, Some(false), "{key}: no defect, not fired"),
            None => assert_eq!(s.fired, None, "{key}"),
        }
    }
    assert!(infra_kinds(&out).is_empty());
    // The tables and report of a built-in run.
    let detection = std::fs::read_to_string(out.join("detection.csv")).unwrap();
    assert!(
        detection.contains("feedback.iframe_no_change,feedback,frame,playwright,3,3,0,"),
        "{detection}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("playwright"), "{report}");
    assert!(out.join("view/index.html").exists());
}

#[test]
fn each_planted_defect_shows_in_exactly_its_probes_rows() {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    // Six layouts: enough for the gate's exact McNemar test to confirm 0/6 -> 6/6.
    let clean = dir.path().join("clean");
    run(&config(dir.path(), 6, 4, &[], ""), &clean);
    for (flag, fault) in [
        ("--no-scale", "execute.unscaled_coordinates"),
        ("--no-strip-tokens", "parse.token_leak"),
        ("--trust-tool", "feedback.iframe_no_change"),
        ("--no-settle", "observe.capture_before_tooltip"),
    ] {
        let out = dir.path().join(flag.trim_start_matches('-'));
        let sub = dir.path().join(format!("cfg{flag}"));
        std::fs::create_dir_all(&sub).unwrap();
        run(&config(&sub, 6, 4, &[flag], ""), &out);
        let rows = stored(&out);
        assert_eq!(
            defects(&rows),
            BTreeSet::from([fault.to_string()]),
            "{flag}: {rows:#?}"
        );
        let probes: Vec<&Stored> = rows
            .values()
            .filter(|s| s.fault.as_deref() == Some(fault))
            .collect();
        assert_eq!(probes.len(), 6, "{flag}");
        for s in probes {
            assert_eq!(s.fired, Some(true), "{flag}: {s:?}");
            if fault == "feedback.iframe_no_change" {
                assert!(
                    s.truth,
                    "the click worked: the ledger says the row is selected"
                );
                assert_eq!(s.verdict, "no_change", "the trusting verifier missed it");
            } else {
                assert!(!s.truth, "{flag}: the defect broke the outcome: {s:?}");
            }
        }
        // Items of other stages are untouched by this defect.
        for (key, s) in &rows {
            let chart_needs_the_observation = flag == "--no-settle" && key.contains("/chart/");
            if s.fault.as_deref() != Some(fault) && !chart_needs_the_observation {
                assert!(s.truth, "{flag}: {key} should be unaffected: {s:?}");
            }
        }
        assert!(infra_kinds(&out).is_empty(), "{flag}");
        // The gate against the clean harness's run fails, naming the defect's cell.
        let (code, stdout, stderr) = faultline(
            &["gate", clean.to_str().unwrap(), out.to_str().unwrap()],
            dir.path(),
        );
        assert_eq!(code, 1, "{flag}: the gate fails\n{stdout}\n{stderr}");
        let regressions = stdout
            .split("### Regressions")
            .nth(1)
            .unwrap_or_else(|| panic!("{flag}: no regression listed\n{stdout}"));
        let metric = match fault {
            "feedback.iframe_no_change" => "| detection |",
            _ => "| defects |",
        };
        let row = regressions
            .lines()
            .find(|l| l.contains(fault))
            .unwrap_or_else(|| panic!("{flag}: {fault} not among the regressions\n{stdout}"));
        assert!(row.starts_with(metric), "{flag}: {row}");
    }
}

/// The detection and false-alarm tables of a run.
fn tables(out: &Path) -> (String, String) {
    (
        std::fs::read_to_string(out.join("detection.csv")).unwrap(),
        std::fs::read_to_string(out.join("false_alarms.csv")).unwrap(),
    )
}

#[test]
fn a_misbehaving_worker_is_an_infra_error_and_the_tables_equal_an_undisturbed_runs() {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    let calm = dir.path().join("calm");
    run(&config(dir.path(), 1, 1, &[], ""), &calm);
    let expected = tables(&calm);
    let calm_rows = stored(&calm);
    for (misbehaviour, kind) in [
        ("crash", InfraKind::WorkerExited),
        ("never-report", InfraKind::LeaseExpired),
        ("garbage", InfraKind::BadReport),
        ("double", InfraKind::BadReport),
    ] {
        let sub = dir.path().join(misbehaviour);
        std::fs::create_dir_all(&sub).unwrap();
        let marker = sub.join("marker");
        let out = sub.join("run");
        let cfg = config(
            &sub,
            1,
            1,
            &[
                "--misbehave",
                misbehaviour,
                "--misbehave-marker",
                marker.to_str().unwrap(),
            ],
            // Long enough for a chart item under load, short enough to wait out.
            if misbehaviour == "never-report" {
                "lease_ms = 8000\n"
            } else {
                ""
            },
        );
        run(&cfg, &out);
        assert!(marker.exists(), "{misbehaviour}: the worker misbehaved");
        assert_eq!(infra_kinds(&out), [kind.into()], "{misbehaviour}");
        assert_eq!(
            tables(&out),
            expected,
            "{misbehaviour}: tables as undisturbed"
        );
        assert_eq!(
            stored(&out),
            calm_rows,
            "{misbehaviour}: every item stored once"
        );
    }
}

/// `faultline env` serving a one-layout run of the reference probes.
fn serve(dir: &Path, out: &Path) -> Env {
    serve_with(dir, out, "")
}

/// [`serve`], with `extra` at the end of the config (after `[harness]`).
fn serve_with(dir: &Path, out: &Path, extra: &str) -> Env {
    Env::serve(&config(dir, 1, 1, &[], extra), out)
}

/// `GET /v1/run` of `env`.
async fn run_info(http: &reqwest::Client, env: &Env) -> serde_json::Value {
    http.get(format!("{}/v1/run", env.url))
        .bearer_auth(&env.token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_api_refuses_what_it_must_and_reveals_no_fault_before_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::create_dir_all(&b_dir).unwrap();
    let a = serve(&a_dir, &dir.path().join("run-a"));
    let b = serve(&b_dir, &dir.path().join("run-b"));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let post = |env: &Env, path: &str, token: Option<&str>, body: Vec<u8>| {
        let mut r = http.post(format!("{}{path}", env.url)).body(body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    // No token, a wrong token, another run's token: refused with one line of JSON.
    for token in [None, Some("nope"), Some(b.token.as_str())] {
        let r = post(&a, "/v1/claim", token, Vec::new()).await.unwrap();
        assert_eq!(r.status(), 401);
        let body: serde_json::Value = r.json().await.unwrap();
        assert!(body["error"].is_string(), "{body}");
    }
    let info = run_info(&http, &a).await;
    assert_eq!(info["api_version"], 1);
    assert_eq!(info["items"]["pending"], 8);
    // Every claim names no fault and no stored key.
    let mut leases = Vec::new();
    for _ in 0..8 {
        let r = post(
            &a,
            "/v1/claim",
            Some(&a.token),
            b"{\"worker\":\"t\"}".to_vec(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        for secret in [
            "detection/",
            "token_leak",
            "unscaled",
            "iframe_no_change",
            "capture_before",
            "working",
        ] {
            assert!(
                !text.contains(secret),
                "the claim reveals `{secret}`: {text}"
            );
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            v["item"].get("fault").is_none() && v["item"].get("key").is_none(),
            "{text}"
        );
        assert!(v["item"]["start_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"));
        leases.push(v["item"]["lease"].as_str().unwrap().to_string());
    }
    let none: serde_json::Value = post(&a, "/v1/claim", Some(&a.token), Vec::new())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(none["item"], serde_json::Value::Null);
    assert_eq!(none["done"], false, "items are leased, not stored");
    let report = serde_json::to_vec(&serde_json::json!({ "verdict": "success" })).unwrap();
    // A lease of run A reported into run B, and a lease no run issued: not found.
    let to_b = post(
        &b,
        &format!("/v1/leases/{}/report", leases[0]),
        Some(&b.token),
        report.clone(),
    )
    .await
    .unwrap();
    assert_eq!(to_b.status(), 404);
    let unknown = post(
        &a,
        "/v1/leases/feedface/report",
        Some(&a.token),
        report.clone(),
    )
    .await
    .unwrap();
    assert_eq!(unknown.status(), 404);
    // An oversized body is refused (413, or the connection closed mid-upload); the
    // lease stays out, unreported.
    let huge = reqwest::Client::new()
        .post(format!("{}/v1/leases/{}/report", a.url, leases[1]))
        .bearer_auth(&a.token)
        .body(vec![b' '; 13 << 20])
        .send()
        .await;
    if let Ok(r) = huge {
        assert_eq!(r.status(), 413);
    }
    let info = run_info(&http, &a).await;
    assert_eq!(info["items"]["leased"], 8, "{info}");
    assert_eq!(info["items"]["stored"], 0, "{info}");
    // A malformed report: 400 naming the field; the lease ends and a second try is gone.
    let bad = post(
        &a,
        &format!("/v1/leases/{}/report", leases[2]),
        Some(&a.token),
        b"{\"verdict\": \"maybe\"}".to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
    let msg: serde_json::Value = bad.json().await.unwrap();
    assert!(msg["error"].as_str().unwrap().contains("verdict"), "{msg}");
    let again = post(
        &a,
        &format!("/v1/leases/{}/report", leases[2]),
        Some(&a.token),
        report.clone(),
    )
    .await
    .unwrap();
    assert_eq!(again.status(), 410);
    // A good report is stored and only now names the fault; a second one conflicts.
    let ok = post(
        &a,
        &format!("/v1/leases/{}/report", leases[3]),
        Some(&a.token),
        report.clone(),
    )
    .await
    .unwrap();
    assert_eq!(ok.status(), 200);
    let told: serde_json::Value = ok.json().await.unwrap();
    assert!(
        told["stored"].as_str().unwrap().starts_with("detection/"),
        "{told}"
    );
    assert!(told.get("fault").is_some(), "{told}");
    let twice = post(
        &a,
        &format!("/v1/leases/{}/report", leases[3]),
        Some(&a.token),
        report,
    )
    .await
    .unwrap();
    assert_eq!(twice.status(), 409);
    drop(a);
    drop(b);
}

// ---- recovery episodes served to the harness ----------------------------------------

/// A config serving `tasks`' reference probes and their recovery episodes (`runs` per
/// layout) to the reference harness with `flags`; `extra` goes into `[harness]`.
fn recovery_config(
    dir: &Path,
    tasks: &[&str],
    layouts: u32,
    runs: u32,
    flags: &[&str],
    extra: &str,
    recovery_extra: &str,
) -> PathBuf {
    let command = reference_command(flags);
    let text = format!(
        "seed = 1\nlayouts = {layouts}\ntasks = {tasks:?}\nfaults = [\"reference\"]\n\n[harness]\nname = \"playwright\"\ncommand = {command:?}\nworkers = 2\n{extra}\n[recovery]\nruns = {runs}\nlayouts = {layouts}\n{recovery_extra}"
    );
    let path = dir.join("harness.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// One stored episode, as the recovery tables read it.
#[derive(Debug, Clone, PartialEq)]
struct Episode {
    task: String,
    fault: String,
    policy: String,
    agent: String,
    fired: bool,
    success: bool,
    detected: bool,
    steps: u32,
    stop_reason: String,
}

fn episodes(out: &Path) -> BTreeMap<String, Episode> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT episode_key, task, fault, policy, agent, fired, success,
                    detected_at_first_step, steps, stop_reason
             FROM episodes",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Episode {
                task: r.get(1)?,
                fault: r.get(2)?,
                policy: r.get(3)?,
                agent: r.get(4)?,
                fired: r.get(5)?,
                success: r.get(6)?,
                detected: r.get(7)?,
                steps: r.get(8)?,
                stop_reason: r.get(9)?,
            },
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// `recovery_summary.csv`'s (n fired, successes, not fired) per task and fault.
fn recovery_cells(out: &Path) -> BTreeMap<(String, String), (u64, u64, u64)> {
    let csv = std::fs::read_to_string(out.join("recovery_summary.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[col("policy")], "playwright", "{l}");
            assert_eq!(f[col("agent")], "playwright", "{l}");
            (
                (f[col("task")].to_string(), f[col("fault")].to_string()),
                (
                    f[col("n")].parse().unwrap(),
                    f[col("successes")].parse().unwrap(),
                    f[col("not_fired")].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// The cells the stored episodes give: fired episodes, those recovered, those not fired.
fn cells_of(rows: &BTreeMap<String, Episode>) -> BTreeMap<(String, String), (u64, u64, u64)> {
    let mut cells = BTreeMap::new();
    for e in rows.values() {
        let c = cells
            .entry((e.task.clone(), e.fault.clone()))
            .or_insert((0, 0, 0));
        match e.fired {
            true => {
                c.0 += 1;
                c.1 += u64::from(e.success);
            }
            false => c.2 += 1,
        }
    }
    cells
}

/// Regression: a harness that reports the instant its click returns (no settle) can beat
/// the page's ledger request for that click to the server; the report must still be
/// scored with it. Here the "page" sends its event 50 ms after the report was sent.
#[tokio::test]
async fn an_event_the_page_sent_just_before_the_report_is_in_the_stored_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let env = serve(dir.path(), &out);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let claim: serde_json::Value = env
        .post_json(&http, "/v1/claim", &serde_json::json!({ "worker": "t" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let item = &claim["item"];
    let start = item["start_url"].as_str().unwrap();
    // http://127.0.0.1:PORT/s/SCOPE/TASK?...
    let (origin, rest) = start.split_once("/s/").unwrap();
    let scope = rest.split('/').next().unwrap();
    let report = env
        .post_json(
            &http,
            &format!("/v1/leases/{}/report", item["lease"].as_str().unwrap()),
            &serde_json::json!({ "verdict": "success" }),
        )
        .send();
    let late_event = async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        http.post(format!("{origin}/s/{scope}/event"))
            .json(&serde_json::json!({
                "kind": "click",
                "page_ms": 1.0,
                "data": { "target": "sent-just-before-the-report" }
            }))
            .send()
            .await
            .unwrap()
    };
    let (told, sent) = tokio::join!(report, late_event);
    let told: serde_json::Value = told.unwrap().json().await.unwrap();
    let key = told["stored"].as_str().unwrap_or_else(|| panic!("{told}"));
    drop(env);
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let ledger: String = db
        .query_row(
            "SELECT ledger FROM trials WHERE trial_key = ?1",
            [key],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        ledger.contains("sent-just-before-the-report"),
        "the late event (answered {}) is missing from the stored ledger: {ledger}",
        sent.status()
    );
}

#[test]
fn recovery_episodes_are_stored_under_the_harness_and_a_persistent_defect_is_never_recovered() {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    let (layouts, runs) = (2, 2);
    let tasks = ["grid", "frame"];
    let mut measured = BTreeMap::new();
    for flag in [None, Some("--no-scale")] {
        let sub = dir
            .path()
            .join(flag.unwrap_or("clean").trim_start_matches('-'));
        std::fs::create_dir_all(&sub).unwrap();
        let flags: Vec<&str> = flag.into_iter().collect();
        let out = sub.join("run");
        run(
            &recovery_config(&sub, &tasks, layouts, runs, &flags, "", ""),
            &out,
        );
        assert!(infra_kinds(&out).is_empty(), "{flag:?}");
        let rows = episodes(&out);
        // Every (task, reference fault) pair, layout and run: one episode each, stored
        // with the harness as both the policy and the agent.
        assert_eq!(
            rows.len(),
            tasks.len() * (layouts * runs) as usize,
            "{rows:#?}"
        );
        for (key, e) in &rows {
            assert!(key.starts_with("recovery/"), "{key}");
            assert_eq!(
                (e.policy.as_str(), e.agent.as_str()),
                ("playwright", "playwright")
            );
            assert!(e.steps >= 1, "{key}: {e:?}");
        }
        // The tables are the stored rows' (fired episodes only, not fired apart).
        assert_eq!(recovery_cells(&out), cells_of(&rows), "{flag:?}");
        assert!(out.join("recovery.csv").exists());
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains("episode(s)"), "{report}");
        measured.insert(flag, rows);
    }
    let grid = |rows: &BTreeMap<String, Episode>| -> Vec<Episode> {
        rows.values()
            .filter(|e| e.task == "grid")
            .cloned()
            .collect()
    };
    // The clean harness has no unscaled-coordinates defect: its grid episodes are not
    // fired, and each achieved the task; its frame episodes (whose situation always
    // arises) are fired and recovered, its verifier right at the first step.
    let clean = &measured[&None];
    for e in grid(clean) {
        assert!(!e.fired && e.success, "{e:?}");
    }
    for e in clean.values().filter(|e| e.task == "frame") {
        assert!(e.fired && e.success && e.detected, "{e:?}");
    }
    // The unscaled executor fires on every grid episode, and no retry through the same
    // executor ever recovers it; the other task is untouched.
    let no_scale = &measured[&Some("--no-scale")];
    for e in grid(no_scale) {
        assert!(e.fired && !e.success, "{e:?}");
    }
    let cells = cells_of(no_scale);
    let n = u64::from(layouts * runs);
    assert_eq!(
        cells[&("grid".into(), "execute.unscaled_coordinates".into())],
        (n, 0, 0)
    );
    assert_eq!(
        cells[&("frame".into(), "feedback.iframe_no_change".into())],
        cells_of(clean)[&("frame".into(), "feedback.iframe_no_change".into())]
    );
}

#[test]
fn a_worker_misbehaving_mid_episode_is_an_infra_error_and_the_recovery_tables_equal_an_undisturbed_runs(
) {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    let tasks = ["grid", "frame"];
    // A short episode lease (time limit + lease_ms), for the never-report case.
    let (harness_extra, recovery_extra) = ("lease_ms = 4000\n", "time_limit_ms = 6000\n");
    let calm = dir.path().join("calm");
    std::fs::create_dir_all(&calm).unwrap();
    let calm_out = calm.join("run");
    run(
        &recovery_config(&calm, &tasks, 1, 1, &[], harness_extra, recovery_extra),
        &calm_out,
    );
    let expected = std::fs::read_to_string(calm_out.join("recovery_summary.csv")).unwrap();
    let calm_rows = episodes(&calm_out);
    assert_eq!(calm_rows.len(), 2);
    for (misbehaviour, kind) in [
        ("crash", InfraKind::WorkerExited),
        ("never-report", InfraKind::LeaseExpired),
        ("garbage", InfraKind::BadReport),
    ] {
        let sub = dir.path().join(misbehaviour);
        std::fs::create_dir_all(&sub).unwrap();
        let marker = sub.join("marker");
        let out = sub.join("run");
        let flags = [
            "--misbehave",
            misbehaviour,
            "--misbehave-on",
            "episode",
            "--misbehave-marker",
            marker.to_str().unwrap(),
        ];
        run(
            &recovery_config(&sub, &tasks, 1, 1, &flags, harness_extra, recovery_extra),
            &out,
        );
        assert!(marker.exists(), "{misbehaviour}: the worker misbehaved");
        assert_eq!(infra_kinds(&out), [kind.into()], "{misbehaviour}");
        assert_eq!(
            std::fs::read_to_string(out.join("recovery_summary.csv")).unwrap(),
            expected,
            "{misbehaviour}: the recovery table as undisturbed"
        );
        assert_eq!(
            episodes(&out),
            calm_rows,
            "{misbehaviour}: every episode stored once"
        );
    }
}

#[tokio::test]
async fn an_episode_is_claimed_with_its_budget_and_its_steps_and_report_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let env = serve_with(
        dir.path(),
        &dir.path().join("run"),
        "\n[recovery]\nruns = 1\nbudget = 2\n",
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let post = |path: String, body: &str| {
        http.post(format!("{}{path}", env.url))
            .bearer_auth(&env.token)
            .body(body.to_string())
            .send()
    };
    let info = run_info(&http, &env).await;
    assert_eq!(
        info["items"]["pending"], 12,
        "8 trials and 4 episodes: {info}"
    );
    let (mut trials, mut eps) = (Vec::new(), Vec::new());
    for _ in 0..12 {
        let text = post("/v1/claim".into(), "")
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for secret in [
            "recovery/",
            "detection/",
            "token_leak",
            "unscaled",
            "iframe_no_change",
            "capture_before",
        ] {
            assert!(
                !text.contains(secret),
                "the claim reveals `{secret}`: {text}"
            );
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let item = v["item"].clone();
        match item["kind"].as_str().unwrap() {
            "trial" => {
                assert!(item.get("budget").is_none(), "{item}");
                trials.push(item);
            }
            "episode" => {
                assert_eq!(item["budget"]["browser_actions"], 2, "{item}");
                assert_eq!(item["budget"]["max_steps"], 8, "{item}");
                assert!(item["reply"].is_string() && item["instruction"].is_string());
                eps.push(item);
            }
            other => panic!("kind {other}"),
        }
    }
    assert_eq!((trials.len(), eps.len()), (8, 4));
    // An episode's lease covers its time limit; a trial's does not need to.
    assert!(eps[0]["lease_ms"].as_u64() > trials[0]["lease_ms"].as_u64());
    let steps =
        |item: &serde_json::Value| format!("/v1/leases/{}/steps", item["lease"].as_str().unwrap());
    let report =
        |item: &serde_json::Value| format!("/v1/leases/{}/report", item["lease"].as_str().unwrap());
    // A trial has no steps.
    let r = post(steps(&trials[0]), "{}").await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("detection trial"));
    // A malformed step: 400 naming the field; the lease ends (an infra error).
    let r = post(steps(&eps[0]), r#"{"verdikt": "success"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("verdikt"));
    assert_eq!(post(steps(&eps[0]), "{}").await.unwrap().status(), 410);
    // A report before any step.
    let r = post(report(&eps[1]), r#"{"stop_reason": "stopped"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("post step 0"));
    // A step over the budget.
    let r = post(
        steps(&eps[2]),
        r#"{"verdict": "no_change", "message": "m"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let told: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        (
            told["step"].as_u64(),
            told["browser_actions_left"].as_u64(),
            told["steps_left"].as_u64()
        ),
        (Some(0), Some(2), Some(7))
    );
    assert!(
        told.get("truth").is_none() && told.get("truth_achieved").is_none(),
        "{told}"
    );
    let r = post(
        steps(&eps[2]),
        r#"{"reply": "click(1, 2)\nclick(3, 4)\nclick(5, 6)"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("steps[1].reply"));
    // A well-formed episode is stored, and only now names its fault.
    assert_eq!(
        post(steps(&eps[3]), r#"{"verdict": "no_change"}"#)
            .await
            .unwrap()
            .status(),
        200
    );
    let r = post(steps(&eps[3]), r#"{"reply": "stop()"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = post(report(&eps[3]), r#"{"stop_reason": "stopped"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let told: serde_json::Value = r.json().await.unwrap();
    assert!(
        told["stored"].as_str().unwrap().starts_with("recovery/"),
        "{told}"
    );
    assert!(
        told["fault"].is_string() && told.get("recovered").is_some(),
        "{told}"
    );
    let info = run_info(&http, &env).await;
    assert_eq!(info["items"]["stored"], 1, "{info}");
    drop(env);
}

#[test]
fn served_episodes_resume_and_shard_like_a_built_in_runs() {
    playwright_available();
    let dir = tempfile::tempdir().unwrap();
    let cfg = recovery_config(dir.path(), &["grid", "frame"], 1, 2, &[], "", "");
    let whole = dir.path().join("whole");
    run(&cfg, &whole);
    let expected = (
        stored(&whole),
        episodes(&whole),
        std::fs::read_to_string(whole.join("recovery_summary.csv")).unwrap(),
    );
    assert_eq!(expected.1.len(), 4, "2 pairs x 1 layout x 2 runs");
    let same = |out: &Path, what: &str| {
        assert_eq!(stored(out), expected.0, "{what}: trials");
        assert_eq!(episodes(out), expected.1, "{what}: episodes");
        assert_eq!(
            std::fs::read_to_string(out.join("recovery_summary.csv")).unwrap(),
            expected.2,
            "{what}: recovery table"
        );
    };
    // Stopped after one episode, then resumed: every episode stored once.
    let partial = dir.path().join("partial");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            partial.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        faultline(&a, dir.path())
    };
    let (code, o, e) = args(&["--max-episodes", "1"]);
    assert_eq!(code, 0, "{o}\n{e}");
    assert_eq!(episodes(&partial).len(), 1);
    let (code, o, e) = args(&["--resume"]);
    assert_eq!(code, 0, "{o}\n{e}");
    same(&partial, "resumed");
    // Two shards, merged: the unsharded run's rows and tables.
    let sharded = dir.path().join("sharded");
    for shard in ["1/2", "2/2"] {
        let (code, o, e) = faultline(
            &[
                "run",
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                sharded.to_str().unwrap(),
                "--shard",
                shard,
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{shard}\n{o}\n{e}");
    }
    let merged = dir.path().join("merged");
    let (code, o, e) = faultline(
        &[
            "merge",
            sharded.join("shard-1-of-2").to_str().unwrap(),
            sharded.join("shard-2-of-2").to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{o}\n{e}");
    same(&merged, "merged");
}
