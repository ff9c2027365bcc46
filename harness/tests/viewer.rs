//! The trace viewer end to end: a small real run writes its view, which opens from disk
//! (`file://`) in the real Chromium faultline drives, without a console error; the run
//! page lists as many trials and episodes as the database holds, its filters count what
//! SQL counts, a trial page shows both screenshots and every policy's verdict, an
//! episode page shows every step, and generating the view again gives identical bytes.
//!
//! Screenshots of the run, trial and episode pages are saved in
//! `$CARGO_TARGET_TMPDIR/viewer-shots` (and copied to `$FAULTLINE_VIEWER_SHOTS` when
//! set). `FAULTLINE_VIEWER_RUN=<run dir>` checks an existing run instead of making one
//! (its view is written to a temporary directory; the run is only read).

mod common;

use chromiumoxide::cdp::browser_protocol::log::{
    EnableParams as LogEnable, EventEntryAdded, LogEntryLevel,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown,
};
use common::files;
use faultline_tasks::Size;
use futures::StreamExt;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn count(db: &Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Polls `expression` until it is truthy (or fails after 10 s) and returns its value.
async fn until(
    page: &faultline::engine::browser::TrialPage,
    expression: &str,
) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(v) = page.eval(expression).await {
            let truthy = !matches!(&v, serde_json::Value::Null | serde_json::Value::Bool(false))
                && v != serde_json::json!(0)
                && v != serde_json::json!("");
            if truthy {
                return v;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for `{expression}`"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sets the run page's hash and returns the browser's count once it has re-rendered.
async fn filtered(page: &faultline::engine::browser::TrialPage, hash: &str) -> i64 {
    page.eval(&format!(
        "document.getElementById('count').dataset.count = ''; location.hash = {:?}; true",
        hash
    ))
    .await
    .unwrap();
    until(
        page,
        "document.getElementById('count').dataset.count !== ''",
    )
    .await;
    page.eval("Number(document.getElementById('count').dataset.count)")
        .await
        .unwrap()
        .as_i64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_opens_from_disk_and_agrees_with_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, view) = match std::env::var_os("FAULTLINE_VIEWER_RUN") {
        Some(dir) => {
            let run = PathBuf::from(dir);
            let view = tmp.path().join("view");
            faultline_viewer::generate(&run, &view).unwrap();
            (run, view)
        }
        None => {
            let run = tmp.path().join("run");
            let summary = common::run_limited(&run, 2, false, None, None).await;
            // `faultline run` writes the view beside the report.
            assert_eq!(summary.view, run.join("view/index.html"));
            assert!(summary.view.is_file());
            (run.clone(), run.join("view"))
        }
    };

    // Generating again gives identical files, in place and from scratch elsewhere.
    let first = files(&view);
    faultline_viewer::generate(&run, &view).unwrap();
    assert!(first == files(&view), "regenerating changed the view");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    faultline_viewer::generate(&run, &a).unwrap();
    faultline_viewer::generate(&run, &b).unwrap();
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (p, bytes) in &fa {
        assert!(
            bytes == &fb[p],
            "{} differs between two generations",
            p.display()
        );
    }
    // A view outside the run carries copies of the screenshots it shows.
    assert!(fa.keys().any(|p| p.starts_with("run/shots")));

    let db = Connection::open_with_flags(
        run.join("results.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let trials = count(&db, "SELECT COUNT(*) FROM trials");
    let episodes = count(&db, "SELECT COUNT(*) FROM episodes");
    assert!(trials > 0 && episodes > 0);

    let harness = common::harness().await;
    let shots_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("viewer-shots");
    std::fs::create_dir_all(&shots_dir).unwrap();
    let result = async {
        let page = harness.env.take_page().await.unwrap();
        page.emulate_viewport(Size {
            width: 1280,
            height: 1000,
        })
        .await
        .unwrap();
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        let cdp = page.cdp_page().clone();
        cdp.execute(LogEnable::default()).await.unwrap();
        let mut log = cdp.event_listener::<EventEntryAdded>().await.unwrap();
        let mut console = cdp.event_listener::<EventConsoleApiCalled>().await.unwrap();
        let mut thrown = cdp.event_listener::<EventExceptionThrown>().await.unwrap();
        let sink = errors.clone();
        let collector = tokio::spawn(async move {
            loop {
                tokio::select! {
                    Some(e) = log.next() => if e.entry.level == LogEntryLevel::Error {
                        sink.lock().unwrap().push(format!("log: {} {:?}", e.entry.text, e.entry.url));
                    },
                    Some(e) = console.next() => if e.r#type == ConsoleApiCalledType::Error {
                        sink.lock().unwrap().push(format!("console.error: {:?}", e.args.iter().map(|a| a.value.clone()).collect::<Vec<_>>()));
                    },
                    Some(e) = thrown.next() => {
                        sink.lock().unwrap().push(format!("exception: {:?}", e.exception_details));
                    },
                    else => break,
                }
            }
        });
        let save = |name: &str, png: &[u8]| {
            std::fs::write(shots_dir.join(name), png).unwrap();
            if let Some(extra) = std::env::var_os("FAULTLINE_VIEWER_SHOTS") {
                std::fs::create_dir_all(&extra).unwrap();
                std::fs::write(Path::new(&extra).join(name), png).unwrap();
            }
        };
        let url = |page: &str| {
            format!(
                "file://{}/{page}",
                std::fs::canonicalize(&view).unwrap().display()
            )
        };
        // Screenshots of the emulated 1280 px wide viewport.
        let snap = || async {
            cdp.screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
                .await
                .unwrap()
        };

        // The run page: every trial, then every episode.
        let started = std::time::Instant::now();
        page.goto(&url("index.html")).await.unwrap();
        until(&page, "document.getElementById('count').dataset.total").await;
        eprintln!("run page ready in {:?}", started.elapsed());
        assert_eq!(filtered(&page, "#kind=trials").await, trials);
        assert_eq!(
            page.eval("Number(document.getElementById('count').dataset.total)")
                .await
                .unwrap(),
            serde_json::json!(trials)
        );
        assert_eq!(filtered(&page, "#kind=episodes").await, episodes);

        // Filters count what SQL counts.
        let caught = count(
            &db,
            "SELECT COUNT(*) FROM trials t JOIN verdicts v ON v.trial_key = t.trial_key
             WHERE v.policy = 'outcome' AND t.condition = 'faulty' AND t.fired = 1
             AND (v.verdict = 'success') = (t.truth_achieved = 1)",
        );
        assert_eq!(
            filtered(&page, "#kind=trials&policy=outcome&outcome=caught").await,
            caught
        );
        let missed_unverified = count(
            &db,
            "SELECT COUNT(*) FROM trials t JOIN verdicts v ON v.trial_key = t.trial_key
             WHERE v.policy = 'unverified' AND t.condition = 'faulty' AND t.fired = 1
             AND (v.verdict = 'success') != (t.truth_achieved = 1)",
        );
        assert_eq!(
            filtered(&page, "#kind=trials&policy=unverified&outcome=missed").await,
            missed_unverified
        );
        let grid = count(&db, "SELECT COUNT(*) FROM trials WHERE task = 'grid'");
        assert_eq!(filtered(&page, "#kind=trials&task=grid").await, grid);
        let recovered = count(&db, "SELECT COUNT(*) FROM episodes WHERE success = 1");
        assert_eq!(
            filtered(&page, "#kind=episodes&recovered=recovered").await,
            recovered
        );
        let stopped = count(
            &db,
            "SELECT COUNT(*) FROM episodes WHERE stop_reason = 'stopped' AND policy = 'outcome'",
        );
        assert_eq!(
            filtered(&page, "#kind=episodes&stop=stopped&policy=outcome").await,
            stopped
        );

        filtered(&page, "#kind=trials").await;
        page.eval("window.scrollTo(0, 0)").await.unwrap();
        save("run.png", &snap().await);
        page.eval("document.getElementById('tables').scrollIntoView(); true")
            .await
            .unwrap();
        save("run-tables.png", &snap().await);

        // Click through to a trial whose fault fired.
        let fired_trial: String = db
            .query_row(
                "SELECT trial_key FROM trials WHERE fired = 1 AND fault = 'execute.unscaled_coordinates' ORDER BY trial_key",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let id = faultline_viewer::trial_id(&fired_trial);
        filtered(&page, "#kind=trials&fault=execute.unscaled_coordinates").await;
        page.eval(&format!(
            "document.querySelector('#list a[href^=\"trial.html#{id}\"]').click(); true"
        ))
        .await
        .unwrap();
        until(&page, "document.querySelectorAll('#verdicts tbody tr[data-policy]').length").await;
        until(
            &page,
            "Array.from(document.querySelectorAll('.shotbox img')).filter(i => i.complete && i.naturalWidth > 0).length === 2",
        )
        .await;
        let policies: Vec<String> = {
            let mut st = db
                .prepare("SELECT policy FROM verdicts WHERE trial_key = ?1 ORDER BY policy")
                .unwrap();
            st.query_map([&fired_trial], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        let mut shown: Vec<String> = serde_json::from_value(
            page.eval("Array.from(document.querySelectorAll('#verdicts tbody tr[data-policy]')).map(r => r.dataset.policy)")
                .await
                .unwrap(),
        )
        .unwrap();
        shown.sort();
        assert_eq!(shown, policies);
        // The click overlay: intended and executed points over the before screenshot.
        let marks = page
            .eval("document.querySelectorAll('.shotbox svg text').length")
            .await
            .unwrap();
        assert!(marks.as_u64().unwrap() >= 2, "points drawn: {marks}");
        page.eval("window.scrollTo(0, 0)").await.unwrap();
        save("trial.png", &snap().await);

        // The episode with the most steps shows every one of them.
        let (episode, steps): (String, i64) = db
            .query_row(
                "SELECT episode_key, (SELECT COUNT(*) FROM episode_steps s WHERE s.episode_key = e.episode_key) AS n
                 FROM episodes e ORDER BY n DESC, episode_key LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        page.goto(&url(&format!(
            "episode.html#{}",
            faultline_viewer::episode_id(&episode)
        )))
        .await
        .unwrap();
        let n = until(&page, "document.querySelectorAll('#timeline > li.step:not(.end)').length").await;
        assert_eq!(n, serde_json::json!(steps));
        until(&page, "document.querySelector('#step-end') !== null").await;
        // Keyboard: the down arrow moves to the first step.
        page.press("ArrowDown").await.unwrap();
        until(&page, "document.activeElement && document.activeElement.id === 'step-0'").await;
        page.eval("window.scrollTo(0, 0)").await.unwrap();
        until(
            &page,
            "Array.from(document.querySelectorAll('.shotbox img')).slice(0, 1).every(i => i.complete && i.naturalWidth > 0)",
        )
        .await;
        save("episode.png", &snap().await);

        // A moment for late events, then no error may have been reported.
        tokio::time::sleep(Duration::from_millis(300)).await;
        collector.abort();
        let errors = errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        page.close().await;
    }
    .await;
    harness.shutdown().await;
    result
}

/// Regression (`faultline view` wrote a second copy of every screenshot it shows: 110 MB
/// beside a 122 MB catalogue run). In the default layout (the view inside the run) the
/// pages reference the run's own `shots/` and no screenshot's bytes are in the view; a
/// view elsewhere on the same filesystem hard-links them rather than copying, and
/// generating it twice still gives the same files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_view_never_duplicates_a_screenshot() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    common::run_limited(&run, 1, false, Some(8), Some(2)).await;
    let shots = files(&run.join("shots"));
    assert!(!shots.is_empty());
    let shot_bytes: std::collections::BTreeSet<&Vec<u8>> = shots.values().collect();

    let inside = files(&run.join("view"));
    let duplicated: Vec<&PathBuf> = inside
        .iter()
        .filter(|(_, bytes)| shot_bytes.contains(bytes))
        .map(|(p, _)| p)
        .collect();
    assert!(
        duplicated.is_empty(),
        "screenshots duplicated in the view: {duplicated:?}"
    );

    let elsewhere = tmp.path().join("elsewhere");
    faultline_viewer::generate(&run, &elsewhere).unwrap();
    let first = files(&elsewhere);
    let linked: Vec<&PathBuf> = first
        .keys()
        .filter(|p| p.starts_with("run/shots"))
        .collect();
    assert!(
        !linked.is_empty(),
        "a view elsewhere still shows screenshots"
    );
    for p in linked {
        let (view, source) = (
            std::fs::metadata(elsewhere.join(p)).unwrap(),
            std::fs::metadata(run.join(p.strip_prefix("run").unwrap())).unwrap(),
        );
        assert_eq!(
            (view.dev(), view.ino()),
            (source.dev(), source.ino()),
            "{} is a copy, not a link to the run's screenshot",
            p.display()
        );
    }
    faultline_viewer::generate(&run, &elsewhere).unwrap();
    assert!(first == files(&elsewhere), "regenerating changed the view");
    assert!(
        files(&run.join("shots")) == shots,
        "the run's screenshots are untouched"
    );
}
