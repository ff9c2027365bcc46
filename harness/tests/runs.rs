//! Whole runs through the runner: determinism and resume.

mod common;

use common::copy_dir;
use faultline_analysis::db::ResultsDb;
use std::collections::BTreeSet;

fn tables(dir: &std::path::Path) -> Vec<String> {
    [
        "detection.csv",
        "false_alarms.csv",
        "recovery.csv",
        "recovery_summary.csv",
        "detection_recovery.csv",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_same_tables_and_an_interrupted_run_resumes_without_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    let layouts = 3;
    let total = 4 * layouts as usize * 2;
    // 4 tasks x 2 recovery layouts x 2 policies x 1 run.
    let episodes = 4 * 2 * 2;

    let first = common::run_into(&a, layouts, false, None).await;
    assert_eq!((first.trials_total, first.trials_run), (total, total));
    let rec = first.recovery.clone().expect("the recovery phase ran");
    assert_eq!((rec.total, rec.run), (episodes, episodes));
    common::run_into(&b, layouts, false, None).await;
    assert_eq!(
        tables(&a),
        tables(&b),
        "same seed and config, byte-identical tables"
    );
    let t = tables(&a);
    let (detection, false_alarms) = (&t[0], &t[1]);
    assert_eq!(t[2].lines().count(), 1 + episodes, "a row per episode");
    assert_eq!(
        detection.lines().count(),
        1 + 4 * 4,
        "a row per fault x policy"
    );
    assert_eq!(
        false_alarms.lines().count(),
        1 + 4 * 4,
        "a row per task x policy"
    );

    // Interrupted after 5 trials (before any episode), resumed and interrupted again
    // after 3 episodes, then resumed to the end.
    let partial = common::run_limited(&c, layouts, false, Some(5), Some(0)).await;
    assert_eq!(partial.trials_run, 5);
    assert_eq!(partial.recovery.as_ref().unwrap().run, 0);
    assert_eq!(
        ResultsDb::open_read_only(&c.join("results.sqlite"))
            .unwrap()
            .count("trials")
            .unwrap(),
        5
    );
    let middle = common::run_limited(&c, layouts, true, None, Some(3)).await;
    assert_eq!((middle.trials_skipped, middle.trials_run), (5, total - 5));
    assert_eq!(middle.recovery.as_ref().unwrap().run, 3);
    let resumed = common::run_into(&c, layouts, true, None).await;
    assert_eq!(resumed.trials_run, 0);
    let r = resumed.recovery.as_ref().unwrap();
    assert_eq!((r.skipped, r.run), (3, episodes - 3));
    assert_eq!(
        tables(&c),
        tables(&a),
        "resumed run, same tables as an uninterrupted one"
    );
    let db = ResultsDb::open_read_only(&c.join("results.sqlite")).unwrap();
    let trials = db.trials().unwrap();
    let keys: BTreeSet<_> = trials.iter().map(|t| t.trial_key.clone()).collect();
    assert_eq!((trials.len(), keys.len()), (total, total));
    assert_eq!(db.count("verdicts").unwrap(), total as u64 * 4);
    assert_eq!(db.count("episodes").unwrap(), episodes as u64);
    let eps = db.episodes().unwrap();
    let ep_keys: BTreeSet<_> = eps.iter().map(|e| e.episode_key.clone()).collect();
    assert_eq!(ep_keys.len(), episodes);
    for e in &eps {
        let steps = db.episode_steps(&e.episode_key).unwrap();
        assert_eq!(steps.len() as u32, e.steps, "{}", e.episode_key);
        assert_eq!(steps[0].source, "decision");
        assert_ne!(e.episode_seed, 0);
        for s in steps.iter().filter_map(|s| s.screenshot.as_ref()) {
            assert!(c.join(s).is_file(), "{s}");
        }
    }
    // Resuming a finished run runs nothing.
    let again = common::run_into(&c, layouts, true, None).await;
    assert_eq!(again.trials_run, 0);
    assert_eq!(again.recovery.as_ref().unwrap().run, 0);
    // The report rebuilds from the database alone, with no Chromium anywhere on the PATH.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(a.join("results.sqlite"), copy.join("results.sqlite")).unwrap();
    copy_dir(&a.join("shots"), &copy.join("shots"));
    let empty_path = tmp.path().join("empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["report", copy.join("results.sqlite").to_str().unwrap()])
        .env("PATH", &empty_path)
        .env_remove("FAULTLINE_CHROMIUM")
        .status()
        .unwrap();
    assert!(status.success());
    for file in [
        "detection.csv",
        "false_alarms.csv",
        "comparisons.csv",
        "verifier_cards.csv",
        "report.md",
        "plots/detection_heatmap.svg",
        "plots/detection_heatmap.png",
        "plots/false_alarm_heatmap.svg",
        "plots/paired_differences.svg",
        "plots/click_overlay.svg",
        "plots/click_overlay.png",
        "recovery.csv",
        "recovery_summary.csv",
        "detection_recovery.csv",
        "recovery_comparisons.csv",
        "plots/recovery_bars.svg",
    ] {
        assert_eq!(
            std::fs::read(a.join(file)).unwrap(),
            std::fs::read(copy.join(file)).unwrap(),
            "{file} differs when regenerated from the database"
        );
    }
    let report = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert!(report.contains("![Click overlay](plots/click_overlay.svg)"));
    assert!(report.contains("wilson") || report.contains("Wilson"));

    // Every trial row carries its seeds and its ledger snapshot.
    for t in &trials {
        assert_ne!(t.trial_seed, 0);
        assert!(t.ledger.contains("\"events\""));
        assert!(c.join(t.after_png.as_ref().unwrap()).is_file());
    }
}

/// Two busy-loop processes, one per core, for as long as the guard lives.
struct Saturated(Vec<std::process::Child>);

impl Saturated {
    fn start() -> Saturated {
        Saturated(
            (0..2)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("starting a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for Saturated {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Two races made the tables depend on the machine's load. The early-capture witness
/// raced the chart's tooltip timer (the capture could end after the tooltip appeared):
/// the page now holds its tooltip until the harness has captured, so the order is
/// enforced. And a search submitted under load could take longer than the navigation
/// timeout to finish loading, so the tool reported a load error (a `parse.token_leak`
/// row flipped for `unverified`): past the timeout the round trip now asks the site
/// whether it still owes the page a response, and waits on when it does not. Every
/// deterministic table must match the idle run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_tables_do_not_flip_while_two_busy_loops_saturate_both_cores() {
    let tmp = tempfile::tempdir().unwrap();
    let (idle, loaded) = (tmp.path().join("idle"), tmp.path().join("loaded"));
    common::run_into(&idle, 2, false, None).await;
    let load = Saturated::start();
    common::run_into(&loaded, 2, false, None).await;
    drop(load);
    for ((name, a), (_, b)) in common::tables(&idle)
        .iter()
        .zip(common::tables(&loaded).iter())
    {
        assert_eq!(a, b, "{name} differs with both cores saturated");
    }
}

/// Regression (a run killed while the oracle recorded its decisions could not be
/// resumed: the directory held the schema and part of `decisions.jsonl` but no config
/// identity yet, so `--resume` said "not a faultline run to resume" while a plain rerun
/// said "pass --resume"). The `faultline` process is SIGKILLed once the oracle has
/// recorded its first decision; `--resume` then finishes the recording and the run, with
/// every decision and every trial stored once.
#[test]
fn regression_a_run_killed_while_the_oracle_records_decisions_resumes() {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    const LAYOUTS: usize = 6;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("record.toml");
    // Root seed 11 has no committed decisions: the oracle records all of them first.
    std::fs::write(
        &cfg,
        format!("seed = 11\ntasks = [\"grid\"]\nlayouts = {LAYOUTS}\npolicies = [\"unverified\"]\nfaults = [\"reference\"]\njobs = 1\n[recovery]\nenabled = false\n"),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let args = |resume: bool| {
        let mut a = vec![
            "run".to_string(),
            "--config".into(),
            cfg.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let recorded = out.join("decisions.jsonl");
    let lines = || {
        std::fs::read_to_string(&recorded)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args(false))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while lines() < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: nothing is cleaned up or finished.
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "killed, not finished");
    let at = lines();
    assert!(
        (1..LAYOUTS).contains(&at),
        "killed while recording, after {at} of {LAYOUTS} decisions"
    );

    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args(true))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "resume failed: {stderr}");

    // Every decision once.
    let text = std::fs::read_to_string(&recorded).unwrap();
    let layouts: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["layout_index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let distinct: BTreeSet<u64> = layouts.iter().copied().collect();
    assert_eq!(layouts.len(), LAYOUTS, "{text}");
    assert_eq!(distinct.len(), LAYOUTS, "{text}");
    // Every trial once, and the run complete.
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    let db = ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap();
    let trials = db.trials().unwrap();
    let keys: BTreeSet<&str> = trials.iter().map(|t| t.trial_key.as_str()).collect();
    assert_eq!(keys.len(), trials.len(), "a trial stored twice");
    assert!(
        stdout.contains(&format!(
            "{} trials run, 0 already stored, {} in all",
            trials.len(),
            trials.len()
        )),
        "{stdout}"
    );
    assert!(db.manifest().unwrap().is_some(), "the manifest is written");
}
