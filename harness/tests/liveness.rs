//! Liveness and the harness's own recovery, on real Chromium: a browser killed mid-run
//! is replaced and the run's tables equal an undisturbed run's; a stopped renderer is
//! found unresponsive within its deadline; a crashed renderer is noticed at once; an
//! unreachable model endpoint is an infrastructure failure (not a failed recovery),
//! retried on resume; replies' waits are capped and episodes have a wall-clock limit;
//! every failed attempt is said on stderr, whatever its kind.
//! No Chromium process and no profile directory outlives any of them; the checks count
//! only this process's, so another faultline run on the machine cannot fail them.

mod common;
use common::processes;

use faultline::config::{self, ConfigText, Overrides};
use faultline::engine::browser::{find_chromium, BrowserHandle};
use faultline::engine::liveness::{InfraFailure, InfraKind, Liveness};
use faultline::experiment::RunRequest;
use faultline_analysis::db::ResultsDb;
use faultline_sites::FixtureServer;
use faultline_tasks::Size;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One test at a time: each checks that no browser or profile directory of this process
/// is left, which a concurrent test's live browser would spoil.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CONFIG: &str = r#"
tasks = ["grid", "frame"]
policies = ["unverified", "generic", "pixel", "outcome"]
decisions = "auto"
faults = ["reference"]
layouts = 2
jobs = 2
[recovery]
enabled = true
layouts = 2
policies = ["unverified", "outcome"]
runs = 1
agent = "scripted"
"#;

/// Processes whose parent is this test process and whose command line names a
/// faultline profile directory: the browsers this process started.
fn our_browsers() -> Vec<u32> {
    browsers_of(std::process::id())
}

/// Processes of process group `pgid` whose command line contains `needle`.
fn group_processes(pgid: u32, needle: &str) -> Vec<u32> {
    processes::running()
        .into_iter()
        .filter(|(pid, s)| s.pgrp == pgid && processes::cmdline(*pid).contains(needle))
        .map(|(pid, _)| pid)
        .collect()
}

/// This process's profile directories in the temp dir (their names carry the owner's
/// pid): another faultline run's on the same machine are not this test's to count.
fn profile_dirs() -> BTreeSet<PathBuf> {
    let ours = format!(
        "{}{}-",
        faultline::engine::browser::PROFILE_PREFIX,
        std::process::id()
    );
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&ours))
        })
        .collect()
}

/// Waits (a few seconds at most) until no browser of this process and no profile
/// directory that was not there `before` is left, and fails if one is.
fn assert_nothing_left(before: &BTreeSet<PathBuf>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let browsers = our_browsers();
        let dirs: Vec<PathBuf> = profile_dirs().difference(before).cloned().collect();
        if browsers.is_empty() && dirs.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("left behind: browsers {browsers:?}, profile directories {dirs:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn request(out: &Path, text: &str, resume: bool) -> RunRequest {
    let text = ConfigText {
        name: "liveness.toml".into(),
        text: text.into(),
    };
    let overrides = Overrides::default();
    let config = config::resolve(&text, &overrides).unwrap();
    RunRequest {
        out: out.to_path_buf(),
        resume,
        config,
        config_text: text,
        overrides,
        max_trials: None,
        max_episodes: None,
        progress: false,
        shard: None,
    }
}

fn count(db: &Path, table: &str) -> u64 {
    ResultsDb::open_read_only(db)
        .and_then(|d| d.count(table))
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_browser_killed_mid_detection_and_mid_recovery_is_replaced_and_the_tables_match_an_undisturbed_run(
) {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let dir = tempfile::tempdir().unwrap();
    let calm = dir.path().join("calm");
    let killed = dir.path().join("killed");
    faultline::experiment::run(request(&calm, CONFIG, false))
        .await
        .expect("the undisturbed run succeeds");
    assert_nothing_left(&before);

    // Kill the browser once the detection phase has stored 3 trials, and again once the
    // recovery phase has stored 2 episodes.
    let db = killed.join("results.sqlite");
    let killer = std::thread::spawn(move || {
        let mut kills = Vec::new();
        for (table, at) in [("trials", 3), ("episodes", 2)] {
            let deadline = Instant::now() + Duration::from_secs(240);
            while count(&db, table) < at && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            // The browser's main process is the one this process started.
            for pid in our_browsers() {
                // SAFETY: kill only sends a signal to a process this test's run started.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                kills.push((table, pid));
            }
        }
        kills
    });
    let summary = faultline::experiment::run(request(&killed, CONFIG, false))
        .await
        .expect("the run completes although its browser was killed twice");
    let kills = killer.join().unwrap();
    assert_eq!(
        kills.len(),
        2,
        "one browser killed in each phase: {kills:?}"
    );
    assert_eq!(summary.browser_restarts, 2, "a new browser after each kill");
    assert!(summary.infra_failures >= 2, "{}", summary.infra_failures);
    assert_eq!(
        summary.failed_items, 0,
        "every interrupted item was retried"
    );
    for table in common::TABLES {
        assert_eq!(
            std::fs::read_to_string(calm.join(table)).unwrap(),
            std::fs::read_to_string(killed.join(table)).unwrap(),
            "{table} differs from the undisturbed run's"
        );
    }
    // The retries are stored and listed apart.
    let db = ResultsDb::open_read_only(&killed.join("results.sqlite")).unwrap();
    let rows = db.infra_errors().unwrap();
    assert!(rows.iter().all(|r| r.policy == "harness"));
    for phase in ["detection/", "recovery/"] {
        assert!(
            rows.iter()
                .any(|r| r.item_key.starts_with(phase) && r.kind == InfraKind::BrowserDied.into()),
            "no browser_died retry in {phase}: {rows:?}"
        );
    }
    let retries = std::fs::read_to_string(killed.join("infra_retries.csv")).unwrap();
    assert!(retries.starts_with("phase,kind,failed_attempts,items,completed_after_retry,failed\n"));
    assert!(retries.contains("detection,browser_died,"), "{retries}");
    assert!(retries.contains("recovery,browser_died,"), "{retries}");
    let report = std::fs::read_to_string(killed.join("report.md")).unwrap();
    assert!(report.contains("## Harness infrastructure failures"));
    assert!(!calm.join("infra_retries.csv").exists());
    drop(db);
    assert_nothing_left(&before);
}

/// Regression (the soak's first kill): a browser killed while the oracle recorded the
/// run's decisions stopped the run with `browser_died`; recording now replaces the
/// browser and records the interrupted decision again, so the recorded file equals an
/// undisturbed recording's line for line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_browser_killed_while_the_oracle_records_is_replaced_and_the_decisions_match()
{
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let dir = tempfile::tempdir().unwrap();
    // Root seed 7 has no committed decisions: the oracle records all 8.
    let config = r#"
seed = 7
tasks = ["grid", "form"]
policies = ["unverified"]
decisions = "auto"
faults = ["reference"]
layouts = 4
jobs = 1
[recovery]
enabled = false
"#;
    let calm = dir.path().join("calm");
    let killed = dir.path().join("killed");
    faultline::experiment::run(request(&calm, config, false))
        .await
        .expect("the undisturbed run succeeds");
    let recorded = killed.join("decisions.jsonl");
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        let lines = || {
            std::fs::read_to_string(&recorded)
                .map(|t| t.lines().count())
                .unwrap_or(0)
        };
        while lines() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let pids = our_browsers();
        for pid in &pids {
            // SAFETY: kill only sends a signal to a process this test's run started.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        (pids.len(), lines())
    });
    let summary = faultline::experiment::run(request(&killed, config, false))
        .await
        .expect("the run completes although its browser was killed while recording");
    let (kills, at) = killer.join().unwrap();
    assert_eq!(kills, 1, "one browser killed");
    assert!(at < 8, "killed while recording, after {at} of 8 decisions");
    assert_eq!(summary.browser_restarts, 1, "a new browser after the kill");
    assert_eq!(
        std::fs::read_to_string(calm.join("decisions.jsonl")).unwrap(),
        std::fs::read_to_string(killed.join("decisions.jsonl")).unwrap(),
        "the recorded decisions differ from an undisturbed recording's"
    );
    for table in ["detection.csv", "false_alarms.csv"] {
        assert_eq!(
            std::fs::read_to_string(calm.join(table)).unwrap(),
            std::fs::read_to_string(killed.join(table)).unwrap(),
            "{table} differs from the undisturbed run's"
        );
    }
    assert_nothing_left(&before);
}

/// A browser, a fixture server and one fresh page showing a task page.
async fn one_page(
    liveness: Liveness,
) -> (
    BrowserHandle,
    faultline::engine::browser::PagePool,
    faultline::engine::browser::TrialPage,
    FixtureServer,
) {
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let browser = BrowserHandle::launch_with(&find_chromium(None).unwrap(), liveness)
        .await
        .unwrap();
    let pool = browser.page_pool(
        Size::new(1200, 800),
        faultline::engine::browser::PoolSize::fixed(1),
        faultline::engine::browser::SiteOrigins::of(&server),
        faultline::engine::browser::Isolation::FreshContext,
    );
    let page = pool.take().await.unwrap();
    page.goto(&format!("{}/warm", server.base_url()))
        .await
        .unwrap();
    (browser, pool, page, server)
}

/// Another faultline run's browser, as the machine's other runs leave them: not a child
/// of this process, in a session of its own, its profile directory in the shared temp
/// dir and named for its owner's pid. Killed (its whole session) on drop.
struct UnrelatedBrowser {
    pid: u32,
    profile: PathBuf,
}

impl UnrelatedBrowser {
    fn start() -> UnrelatedBrowser {
        // The inner shell is orphaned at once (the outer one exits), execs `setsid` and
        // then Chromium in place, so `$$` is Chromium's pid.
        let inner = r#"d="$1/faultline-chromium-$$-unrelated"; mkdir "$d"; echo "$$ $d"; exec setsid "$2" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$d" --remote-debugging-port=0 about:blank >/dev/null 2>&1 </dev/null"#;
        let mut outer = std::process::Command::new("sh")
            .args(["-c", &format!("sh -c '{inner}' unrelated \"$0\" \"$1\" &")])
            .arg(std::env::temp_dir())
            .arg(find_chromium(None).unwrap())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(outer.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        outer.wait().unwrap();
        let (pid, profile) = line.trim().split_once(' ').expect("pid and profile");
        let unrelated = UnrelatedBrowser {
            pid: pid.parse().unwrap(),
            profile: PathBuf::from(profile),
        };
        // Up, with its helpers, before the checks start.
        let deadline = Instant::now() + Duration::from_secs(10);
        while group_processes(unrelated.pid, "--type=").is_empty() {
            assert!(
                Instant::now() < deadline,
                "the unrelated browser did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        unrelated
    }

    fn alive(&self) -> bool {
        processes::alive(self.pid)
    }
}

impl Drop for UnrelatedBrowser {
    fn drop(&mut self) {
        // SAFETY: only signals the session this test started (its leader is Chromium).
        unsafe { libc::killpg(self.pid as libc::pid_t, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_processes(self.pid, "").is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Regression (an unrelated faultline run on the same machine turned three of these
/// tests red): the checks counted every new `faultline-chromium-*` directory in the
/// temp dir as this test's leak. They count only this process's browsers and profile
/// directories, and leave another run's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_liveness_checks_ignore_another_runs_live_browser_and_profile() {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let unrelated = UnrelatedBrowser::start();
    let (browser, pool, page, server) = one_page(Liveness::default()).await;
    assert_eq!(page.eval("1 + 1").await.unwrap(), serde_json::json!(2));
    drop(page);
    drop(pool);
    browser.close().await;
    server.shutdown().await;
    assert_nothing_left(&before);
    // The other run's browser went on, and its profile was not taken for a dead one's.
    assert!(unrelated.alive(), "the unrelated browser died");
    assert!(
        unrelated.profile.is_dir(),
        "the live run's profile was removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_stopped_renderer_is_detected_as_unresponsive_within_its_deadline() {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let liveness = Liveness {
        call_timeout_ms: 1500,
        ..Liveness::default()
    };
    let (browser, pool, page, server) = one_page(liveness).await;
    assert_eq!(page.eval("1 + 1").await.unwrap(), serde_json::json!(2));
    // What an infinite loop or a reclaimed process looks like from outside: every
    // renderer of this browser stops.
    let renderers = group_processes(browser.pid().unwrap(), "--type=renderer");
    assert!(!renderers.is_empty());
    for pid in &renderers {
        // SAFETY: only signals renderers of the browser this test started.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGSTOP) };
    }
    let started = Instant::now();
    let e = page.eval("1 + 1").await.unwrap_err();
    let took = started.elapsed();
    for pid in &renderers {
        // SAFETY: as above.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGCONT) };
    }
    let f = InfraFailure::find(&e).unwrap_or_else(|| panic!("not an infra failure: {e:#}"));
    assert_eq!(f.kind, InfraKind::Unresponsive, "{f}");
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_millis(4000),
        "detected after {took:?} with a 1.5 s deadline"
    );
    drop(page);
    drop(pool);
    browser.close().await;
    server.shutdown().await;
    assert_nothing_left(&before);
}

/// Stops every renderer of `browser` for `how_long` from a thread of its own, renderers
/// started meanwhile too, so the caller can wait on the page through the freeze.
fn freeze_renderers(browser: u32, how_long: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut stopped = BTreeSet::new();
        let started = Instant::now();
        while started.elapsed() < how_long {
            for pid in group_processes(browser, "--type=renderer") {
                if stopped.insert(pid) {
                    // SAFETY: only signals renderers of the browser this test started.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for pid in &stopped {
            // SAFETY: as above.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGCONT) };
        }
    })
}

/// Starts a navigation that the page itself will only make 200 ms from now (so a freeze
/// begun at once holds it back), marked as under way for the readiness checks, as a
/// submitted form is.
async fn navigate_soon(page: &faultline::engine::browser::TrialPage, to: &str) {
    page.eval(&format!(
        "window.__faultline_leaving = performance.now(); setTimeout(() => {{ location.href = '{to}'; }}, 200); true"
    ))
    .await
    .unwrap();
}

/// Regression (a renderer frozen for 4-5 s mid-detection, longer than the navigation
/// timeout and shorter than the call deadline, changed stored tables: the tool's "the
/// page did not finish loading" was stored as the trial's outcome). With the site owing
/// the page nothing, a silent renderer is the machine's: the wait goes on and the load
/// completes; a renderer still silent at the liveness deadline is an infrastructure
/// failure, never a load error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_short_renderer_freeze_is_not_stored_as_a_page_that_did_not_load() {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let liveness = Liveness {
        call_timeout_ms: 3000,
        ..Liveness::default()
    };
    let (browser, pool, page, server) = one_page(liveness).await;
    let pid = browser.pid().unwrap();
    let limit = Duration::from_secs(3);
    let site_done = || false;
    let base = server.base_url();

    // What the observe stage saw before: a freeze past the navigation timeout is a page
    // that stopped answering, which it reported as the page's load error.
    navigate_soon(&page, &format!("{base}/warm?first")).await;
    let freeze = freeze_renderers(pid, Duration::from_millis(4000));
    let seen = page.poll_ready(limit).await.unwrap();
    assert_eq!(
        seen,
        faultline::engine::browser::Readiness::NotReady { answering: false }
    );
    freeze.join().unwrap();

    // The same freeze, waited out: the page loads, as on an undisturbed machine.
    page.goto(&format!("{base}/warm")).await.unwrap();
    navigate_soon(&page, &format!("{base}/warm?after-freeze")).await;
    let freeze = freeze_renderers(pid, Duration::from_millis(4000));
    let loaded = page.wait_loaded(limit, Some(&site_done)).await.unwrap();
    freeze.join().unwrap();
    assert!(loaded, "the load went on after the renderer resumed");
    assert_eq!(
        page.eval("location.search").await.unwrap(),
        serde_json::json!("?after-freeze")
    );

    // A freeze past the liveness deadline (3 s + 3 s): the machine's failure, retried.
    navigate_soon(&page, &format!("{base}/warm?long-freeze")).await;
    let freeze = freeze_renderers(pid, Duration::from_millis(8000));
    let e = page.wait_loaded(limit, Some(&site_done)).await.unwrap_err();
    freeze.join().unwrap();
    let f = InfraFailure::find(&e).unwrap_or_else(|| panic!("not an infra failure: {e:#}"));
    assert_eq!(f.kind, InfraKind::Unresponsive, "{f}");

    drop(page);
    drop(pool);
    browser.close().await;
    server.shutdown().await;
    assert_nothing_left(&before);
}

/// Regression (a renderer frozen during the hover settle changed stored outcomes: the
/// tooltip's timer, overdue when the renderer resumed, raced the capture, and 4 of 8
/// working chart trials were stored as answered "from a tooltip changing mid-capture").
/// The settle is time the page gets: after it, every timer already due has run before
/// the harness looks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_renderer_frozen_during_the_settle_runs_its_overdue_timers_before_the_capture()
{
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let (browser, pool, page, server) = one_page(Liveness::default()).await;
    let pid = browser.pid().unwrap();
    for round in 0..3 {
        // A tooltip's timer, due 400 ms from now; the renderer stops at once for 1.5 s
        // and the harness settles for 1 s (so the settle ends mid-freeze).
        page.eval(
            "window.__order = []; window.__set = performance.now();              setTimeout(() => { window.__fired = performance.now(); window.__order.push('timer'); }, 400); true",
        )
        .await
        .unwrap();
        let freeze = freeze_renderers(pid, Duration::from_millis(1500));
        tokio::time::sleep(Duration::from_millis(1000)).await;
        page.run_overdue_timers().await.unwrap();
        let seen = page
            .eval("window.__order.push('look'); [window.__order, window.__fired - window.__set]")
            .await
            .unwrap();
        freeze.join().unwrap();
        assert_eq!(
            seen[0],
            serde_json::json!(["timer", "look"]),
            "round {round}"
        );
        // The freeze did hold the timer back (else this round tested nothing).
        let held = seen[1].as_f64().unwrap();
        assert!(
            held > 1000.0,
            "round {round}: the timer ran {held} ms after it was set"
        );
    }
    drop(page);
    drop(pool);
    browser.close().await;
    server.shutdown().await;
    assert_nothing_left(&before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_crashed_renderer_and_a_dead_browser_are_noticed_at_once_not_after_a_timeout()
{
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let liveness = Liveness {
        call_timeout_ms: 20_000,
        ..Liveness::default()
    };
    let (browser, pool, page, server) = one_page(liveness).await;
    let started = Instant::now();
    page.crash_renderer().await.unwrap();
    assert!(page.crashed().is_some());
    let e = page.eval("1").await.unwrap_err();
    assert_eq!(
        InfraFailure::find(&e).map(|f| f.kind),
        Some(InfraKind::RendererCrashed),
        "{e:#}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(page);

    // The browser process killed: the next wait for a page ends at once.
    let started = Instant::now();
    browser.kill();
    let e = loop {
        match pool.take().await {
            Ok(p) => drop(p),
            Err(e) => break e,
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    };
    assert_eq!(
        InfraFailure::find(&e).map(|f| f.kind),
        Some(InfraKind::BrowserDied),
        "{e:#}"
    );
    assert!(browser.vital().dead().is_some());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(pool);
    browser.close().await;
    server.shutdown().await;
    assert_nothing_left(&before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_unreachable_model_endpoint_is_an_infrastructure_failure_retried_on_resume_not_a_failed_recovery(
) {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        r#"
tasks = ["grid"]
policies = ["unverified", "outcome"]
decisions = "auto"
faults = ["reference"]
layouts = 1
jobs = 2
[recovery]
enabled = true
layouts = 1
policies = ["outcome"]
runs = 1
agent = "openai"
[openai]
base_url = "http://127.0.0.1:{port}/v1"
model = "m"
max_retries = 0
timeout_ms = 2000
[cassette]
mode = "record"
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let e = faultline::experiment::run(request(&out, &text, false))
        .await
        .expect_err("a recovery phase with no working agent is a failed run");
    assert!(
        format!("{e:#}").contains("recovery phase measured nothing"),
        "{e:#}"
    );
    let attempts = |out: &Path| {
        let db = ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap();
        assert_eq!(
            db.count("episodes").unwrap(),
            0,
            "no episode stored as failed"
        );
        assert!(db.count("trials").unwrap() > 0, "detection ran");
        let rows = db.infra_errors().unwrap();
        assert!(!rows.is_empty());
        assert!(
            rows.iter()
                .all(|r| r.kind == InfraKind::AgentEndpoint.into()),
            "{rows:?}"
        );
        rows.iter().map(|r| r.attempt).max().unwrap()
    };
    assert_eq!(attempts(&out), 1, "not retried within the run");
    // The report lists them apart, and nothing was scored as a failed recovery.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| recovery | agent_endpoint |"), "{report}");
    // --resume tries them again.
    let e = faultline::experiment::run(request(&out, &text, true))
        .await
        .expect_err("still no working agent");
    assert!(format!("{e:#}").contains("measured nothing"));
    assert_eq!(
        attempts(&out),
        2,
        "the resumed run tried every episode again"
    );
    assert_nothing_left(&before);
}

/// An agent that never answers (a model endpoint that accepts the request and hangs).
struct Silent;

impl faultline::agent::Agent for Silent {
    fn name(&self) -> &str {
        "silent"
    }

    fn reply<'a>(
        &'a self,
        _view: faultline::agent::AgentView<'a>,
    ) -> futures::future::BoxFuture<
        'a,
        Result<faultline::agent::AgentReply, faultline::agent::AgentError>,
    > {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_huge_wait_is_capped_and_an_episode_stops_at_its_wall_clock_limit() {
    use faultline::engine::episode::{run_episode, EpisodeLimits, EpisodeSpec, StopReason};
    use faultline::engine::session::Session;
    use faultline_faults::{Fault, FaultPlan};
    use faultline_tasks::decision::embedded_default;
    use faultline_tasks::seed::DEFAULT_ROOT_SEED;
    use faultline_tasks::{ActionFormat, TaskKind};

    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let d = set.find(TaskKind::Grid, DEFAULT_ROOT_SEED, 0).unwrap();

    // wait(3600000) runs for the cap, and the tool says so.
    let layout = d.layout();
    let mut session = Session::open(&h.env, &layout, None, d.image).await.unwrap();
    session.rt().max_wait_ms = 200;
    let started = Instant::now();
    let step = session
        .rt()
        .step("wait(3600000)", ActionFormat::Faultline, None)
        .await
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        step.tool_message.contains("capped at 200 ms"),
        "{}",
        step.tool_message
    );
    drop(session.finish());

    // An agent that never answers: the episode ends at its time limit.
    let policy = faultline_policies::Registry::default()
        .build("outcome")
        .unwrap();
    let spec = EpisodeSpec {
        decision: d,
        fault: FaultPlan::new(Fault::UnscaledCoordinates, 1),
        policy: policy.as_ref(),
        agent: &Silent,
        limits: EpisodeLimits {
            time_limit_ms: 3000,
            ..EpisodeLimits::default()
        },
        seed: 1,
    };
    let started = Instant::now();
    let r = run_episode(&h.env, &spec).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::TimeLimit);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    h.shutdown().await;
    assert_nothing_left(&before);
}

/// The three faults that break the page are measured trials, not infrastructure
/// failures: each fires with its witness, every built-in policy's verdict is stored, and
/// nothing lands in `infra_errors`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_renderer_crash_hang_and_never_settling_faults_are_measured_trials_with_stored_verdicts(
) {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let text = r#"
tasks = ["grid", "form"]
policies = ["unverified", "generic", "pixel", "outcome"]
decisions = "auto"
faults = ["tool.renderer_crash", "execution.main_thread_hang", "dom.never_settles"]
layouts = 1
jobs = 3
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let summary = faultline::experiment::run(request(&out, text, false))
        .await
        .expect("the run succeeds");
    assert_eq!(summary.infra_failures, 0);
    let db = ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap();
    assert!(
        db.infra_errors().unwrap().is_empty(),
        "no infrastructure failure"
    );
    let trials = db.trials().unwrap();
    let verdicts = db.verdicts().unwrap();
    for fault in [
        "tool.renderer_crash",
        "execution.main_thread_hang",
        "dom.never_settles",
    ] {
        for task in ["grid", "form"] {
            let t = trials
                .iter()
                .find(|t| t.fault.map(|f| f.id()) == Some(fault) && t.task.name() == task)
                .unwrap_or_else(|| panic!("no {fault} trial on {task}"));
            assert_eq!(t.fired, Some(true), "{fault} on {task} did not fire");
            let w = t.witness.as_deref().unwrap();
            assert!(w.contains(fault), "{w}");
            let n = verdicts
                .iter()
                .filter(|v| v.trial_key == t.trial_key)
                .count();
            assert_eq!(n, 4, "{fault} on {task}: every built-in policy judged");
            if fault != "dom.never_settles" {
                assert!(!t.truth_achieved, "{fault} on {task}: {}", t.truth_detail);
                // The crash leaves no page; the hung page's main thread is blocked
                // inside the click's own dispatch, so the click call is the one that
                // gets no answer (once the hang ran on a timer after the click, and
                // whether the tool reported a load timeout or an unresponsive page
                // depended on the machine's load).
                let reported = match fault {
                    "tool.renderer_crash" => "Error: the page crashed",
                    _ => "Error: the page stopped responding (no answer within 10000 ms while dispatching a mouse event)",
                };
                assert!(
                    t.tool_message.contains(reported),
                    "{fault} on {task}: the tool reports it: {}",
                    t.tool_message
                );
                // What the click sent before the thread blocked reached the ledger.
                assert!(
                    t.ledger.contains(r#""kind":"click""#),
                    "{fault} on {task}: the click is in the ledger: {}",
                    t.ledger
                );
            } else {
                assert!(t.truth_achieved, "{fault} on {task}: {}", t.truth_detail);
            }
        }
    }
    drop(db);
    assert_nothing_left(&before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stable_settle_hits_its_cap_on_a_page_that_never_settles_and_ends_early_elsewhere() {
    use faultline::engine::roundtrip::StableSettle;
    use faultline::engine::session::Session;
    use faultline_faults::{Fault, FaultPlan};
    use faultline_tasks::decision::embedded_default;
    use faultline_tasks::seed::DEFAULT_ROOT_SEED;
    use faultline_tasks::TaskKind;

    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let d = set.find(TaskKind::Grid, DEFAULT_ROOT_SEED, 0).unwrap();
    let layout = d.layout();
    let st = StableSettle {
        window_ms: 100,
        windows: 3,
        cap_ms: 1500,
    };
    for fault in [Some(Fault::NeverSettles), None] {
        let plan = fault.map(|f| FaultPlan::new(f, 1));
        let mut session = Session::open(&h.env, &layout, plan, d.image).await.unwrap();
        let started = Instant::now();
        let capped = session.rt().page.wait_stable(st).await.unwrap();
        let took = started.elapsed();
        match fault {
            Some(_) => {
                assert!(capped, "a never-settling page hits the cap");
                assert!(took >= Duration::from_millis(1500), "{took:?}");
            }
            None => {
                assert!(!capped, "a quiet page settles");
                assert!(took < Duration::from_millis(1400), "{took:?}");
            }
        }
        drop(session.finish());
    }
    h.shutdown().await;
    assert_nothing_left(&before);
}

/// The early-capture fault measured under the fixed and the stable settle: both runs
/// complete, the fault fires in both, and the manifest records the mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_early_capture_fault_is_measured_under_both_settle_modes() {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let dir = tempfile::tempdir().unwrap();
    let base = r#"
tasks = ["chart"]
policies = ["unverified", "generic", "pixel", "outcome"]
decisions = "auto"
faults = ["observe.capture_before_tooltip"]
layouts = 2
jobs = 2
"#;
    for mode in ["fixed", "stable"] {
        let text = format!("{base}[timing]\nsettle = \"{mode}\"\n");
        let out = dir.path().join(mode);
        faultline::experiment::run(request(&out, &text, false))
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e:#}"));
        let db = ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap();
        let manifest = db.meta("manifest").unwrap().unwrap();
        assert!(
            manifest.contains(&format!("\"settle\": \"{mode}\"")),
            "{manifest}"
        );
        let trials = db.trials().unwrap();
        let faulty: Vec<_> = trials.iter().filter(|t| t.fault.is_some()).collect();
        assert_eq!(faulty.len(), 2);
        assert!(faulty.iter().all(|t| t.fired == Some(true)), "{mode}");
        let detection = std::fs::read_to_string(out.join("detection.csv")).unwrap();
        println!("settle = {mode}\n{detection}");
    }
    assert_nothing_left(&before);
}

/// Processes whose parent is `parent` and whose command line names a faultline profile
/// directory: the browsers a `faultline` process this test started runs.
fn browsers_of(parent: u32) -> Vec<u32> {
    processes::running()
        .into_iter()
        .filter(|(pid, s)| {
            s.ppid == parent && processes::cmdline(*pid).contains("faultline-chromium-")
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Regression (a browser death printed a line on stderr, but an `unresponsive` page,
/// retried just the same, printed nothing: the run looked healthy while it retried):
/// every failed attempt of an item says one line on stderr, the same way whatever its
/// kind. Once a trial of a running `faultline run` has loaded its page (its debug log
/// says so), every renderer is stopped past the call deadline, then continued; the run
/// completes and its stderr names the `unresponsive` attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_unresponsive_attempt_is_said_on_stderr_like_a_browser_death() {
    let _serial = SERIAL.lock().await;
    let before = profile_dirs();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("stopped.toml");
    std::fs::write(
        &cfg,
        "tasks = [\"grid\", \"frame\"]\nlayouts = 4\npolicies = [\"unverified\"]\nfaults = [\"reference\"]\njobs = 1\n[liveness]\ncall_timeout_ms = 1000\nretries = 3\n[recovery]\nenabled = false\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--config", cfg.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        // The trial stages' debug lines say when a page has loaded: the stop then falls
        // on the round trip's calls, not on a navigation (whose deadline is longer).
        .env("FAULTLINE_LOG", "faultline::engine::trial=debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = child.stderr.take().unwrap();
    let (loaded_tx, loaded) = std::sync::mpsc::channel();
    let said_unresponsive = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let said = said_unresponsive.clone();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr_pipe)) {
            let line = line.unwrap();
            if line.contains("loaded ms=") {
                let _ = loaded_tx.send(());
            }
            if line.contains("(unresponsive)") {
                said.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    // The third trial's page has loaded.
    for _ in 0..3 {
        loaded
            .recv_timeout(Duration::from_secs(120))
            .expect("a trial loads its page");
    }
    let browsers = browsers_of(child.id());
    assert_eq!(browsers.len(), 1, "one browser: {browsers:?}");
    // Every renderer, those started meanwhile too, stays stopped past the deadline, and
    // on a loaded machine until the run says an attempt was unresponsive: the stop may
    // begin after the third trial's calls, on the next trial's navigation, which a
    // stopped renderer makes a measured load failure rather than an unresponsive call.
    let mut renderers = BTreeSet::new();
    let stopped = Instant::now();
    let unresponsive = || said_unresponsive.load(std::sync::atomic::Ordering::SeqCst);
    while stopped.elapsed() < Duration::from_millis(3000)
        || (!unresponsive() && stopped.elapsed() < Duration::from_secs(30))
    {
        for pid in group_processes(browsers[0], "--type=renderer") {
            if renderers.insert(pid) {
                // SAFETY: only signals renderers of the browser this test's run started.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!renderers.is_empty());
    for pid in &renderers {
        // SAFETY: as above.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGCONT) };
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "{stderr}");
    let stored: Vec<String> = ResultsDb::open_read_only(&out.join("results.sqlite"))
        .unwrap()
        .infra_errors()
        .unwrap()
        .into_iter()
        .map(|e| format!("{}: attempt {} failed ({})", e.item_key, e.attempt, e.kind))
        .collect();
    assert!(
        stored.iter().any(|e| e.ends_with("(unresponsive)")),
        "the stopped renderers made an attempt unresponsive: {stored:?}\n{stderr}"
    );
    // One line for each failed attempt, whatever its kind.
    for attempt in &stored {
        let said = stderr
            .lines()
            .filter(|l| l.contains(attempt.as_str()))
            .count();
        assert_eq!(said, 1, "`{attempt}` said once on stderr:\n{stderr}");
    }
    assert_nothing_left(&before);
}
