//! The faults on the DevTools protocol under faultline's own engine: with
//! `[browser] devtools_proxy = true` the engine's one browser connection goes through the
//! DevTools proxy, and each item's protocol fault is armed on its own page's session.
//!
//! - The proxy is transparent: the reference faults give the same verdicts, truths,
//!   fired flags and tables through it as without it.
//! - Each protocol fault fires on a real page with the ledger effect its entry states,
//!   leaves the proxy's record as its witness, and is judged by the built-in policies;
//!   its effects on the page (a crash, an answer held past the call deadline, a refused
//!   input) are the item's outcome, never an infrastructure error; a fault whose
//!   situation never came (a hover is no input action) is stored as not fired.

use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn config(dir: &Path, name: &str, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, body).unwrap();
    path
}

fn run(config: &Path, out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--config"])
        .arg(config)
        .arg("--out")
        .arg(out)
        .output()
        .expect("faultline runs");
    assert!(
        o.status.success(),
        "faultline run failed\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
}

/// Every stored trial: its key -> (fault, fired, truth, every policy's verdict).
type Row = (Option<String>, Option<bool>, bool, String);

fn stored(out: &Path) -> BTreeMap<String, Row> {
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT t.trial_key, t.fault, t.fired, t.truth_achieved,
                    group_concat(v.policy || '=' || v.verdict, ' ')
             FROM trials t JOIN (SELECT * FROM verdicts ORDER BY policy) v USING (trial_key)
             GROUP BY t.trial_key",
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

fn infra_errors(out: &Path) -> usize {
    Connection::open(out.join("results.sqlite"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM infra_errors", [], |r| r.get(0))
        .unwrap()
}

/// Every policy's verdict on `fault`'s faulty grid trial, as `policy=verdict` words.
fn grid_verdicts(db: &Connection, fault: &str) -> String {
    db.query_row(
        "SELECT group_concat(v.policy || '=' || v.verdict, ' ') FROM trials t JOIN verdicts v USING (trial_key)
         WHERE t.condition = 'faulty' AND t.task = 'grid' AND t.fault = ?1",
        [fault],
        |r| r.get(0),
    )
    .unwrap()
}

const REFERENCE: &str = "seed = 1\nlayouts = 2\ntasks = [\"search\", \"grid\", \"frame\", \"chart\"]\nfaults = [\"reference\"]\n";

#[test]
fn the_engine_through_the_proxy_gets_the_same_results_as_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, proxied) = (dir.path().join("plain"), dir.path().join("proxied"));
    run(&config(dir.path(), "plain", REFERENCE), &plain);
    run(
        &config(
            dir.path(),
            "proxied",
            &format!("{REFERENCE}\n[browser]\ndevtools_proxy = true\n"),
        ),
        &proxied,
    );
    let (a, b) = (stored(&plain), stored(&proxied));
    assert_eq!(a.len(), 16, "4 tasks x 2 layouts x (faulty + working)");
    assert_eq!(b, a, "the proxy changed a verdict, a truth or a fired flag");
    for table in ["detection.csv", "false_alarms.csv"] {
        assert_eq!(
            std::fs::read(proxied.join(table)).unwrap(),
            std::fs::read(plain.join(table)).unwrap(),
            "{table}"
        );
    }
}

#[test]
fn each_protocol_fault_fires_on_the_engine_with_its_ledger_effect_and_no_infrastructure_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("devtools");
    run(
        &config(
            dir.path(),
            "devtools",
            "seed = 1\nlayouts = 1\ntasks = [\"grid\", \"chart\"]\npolicies = [\"unverified\", \"generic\", \"pixel\", \"outcome\"]\nfaults = [\"*.devtools_*\"]\n[browser]\ndevtools_proxy = true\n",
        ),
        &out,
    );
    assert_eq!(
        infra_errors(&out),
        0,
        "a protocol fault's effect is the item's outcome"
    );
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let grid: BTreeMap<String, (bool, bool, String, String)> = db
        .prepare(
            "SELECT fault, fired, truth_achieved, COALESCE(witness, ''), tool_message
             FROM trials WHERE condition = 'faulty' AND task = 'grid'",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // (fault, whether the target ends selected, what the tool reports)
    for (fault, selected, tool) in [
        // The click lands at twice its point: off the target.
        ("execution.devtools_device_pixels", false, "Clicked at"),
        // A press without a release is no click.
        ("execution.devtools_dropped_release", false, "Clicked at"),
        // The click happened; only the observation is an older frame.
        ("tool.devtools_stale_screenshot", true, "Clicked at"),
        ("tool.devtools_unsettled_screenshot", true, "Clicked at"),
        // The click happened; only the DOM the policies read is from before it.
        ("tool.devtools_stale_dom", true, "Clicked at"),
        // The press never reached the page; the tool says so.
        ("tool.devtools_protocol_error", false, "Error: "),
        // The whole click landed, then the renderer was crashed.
        (
            "tool.devtools_crash_after_input",
            true,
            "Error: the page crashed",
        ),
        // The press's answer was held past the engine's 10 s call deadline: it gives up
        // on the click and never sends the release.
        (
            "tool.devtools_held_answer",
            false,
            "Error: the page stopped responding",
        ),
    ] {
        let (fired, truth, witness, message) = grid
            .get(fault)
            .unwrap_or_else(|| panic!("{fault} ran on grid: {grid:?}"));
        assert!(fired, "{fault}");
        assert_eq!(*truth, selected, "{fault}: {message}");
        assert!(message.starts_with(tool), "{fault}: {message}");
        let w: serde_json::Value = serde_json::from_str(witness).unwrap();
        assert_eq!(w["fault"], fault, "{w}");
        let changes = w["changes"].as_array().expect("the proxy's record");
        assert!(!changes.is_empty(), "{fault}: {w}");
        if fault == "tool.devtools_held_answer" {
            let held = changes[0]["changed"]["answered_after_ms"].as_u64().unwrap();
            assert!((12_000..=14_000).contains(&held), "{w}");
        }
    }
    // The stale frame reached the engine: the pixel policy saw no change where the DOM
    // (read fresh) shows the selection.
    let stale = grid_verdicts(&db, "tool.devtools_stale_screenshot");
    assert!(stale.contains("pixel=no_change"), "{stale}");
    assert!(stale.contains("generic=success"), "{stale}");
    // And the stale DOM: the DOM-reading policy saw no change where the screenshot did.
    let stale_dom = grid_verdicts(&db, "tool.devtools_stale_dom");
    assert!(stale_dom.contains("generic=no_change"), "{stale_dom}");
    assert!(stale_dom.contains("pixel=success"), "{stale_dom}");
    // A hover is no input action: the chart's items are stored as not fired, with why.
    let chart: Vec<(String, Option<bool>, Option<String>)> = db
        .prepare(
            "SELECT fault, fired, not_fired_reason FROM trials WHERE condition = 'faulty' AND task = 'chart'",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        chart.len(),
        6,
        "the six protocol faults that apply to the chart"
    );
    for (fault, fired, why) in chart {
        let spec = fault.parse::<faultline_faults::Fault>().unwrap().spec();
        assert_eq!(fired, Some(false), "{fault}");
        assert_eq!(why.as_deref(), Some(spec.not_fired_when), "{fault}");
    }
}
