//! No Chromium outlives faultline: not after a normal close, and not after the process
//! that started it is SIGKILLed. And none dies before it: not when the thread that
//! started it exits. A profile directory a SIGKILLed run left behind is removed by the
//! next browser start.

use faultline::engine::browser::{find_chromium, BrowserHandle, Isolation, PoolSize};
use faultline_tasks::Size;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::processes::{self, alive};

/// Running processes in process group `pgid` (the browser is started as a group leader,
/// so this is it and everything it started that stayed in its group).
fn group_members(pgid: u32) -> Vec<u32> {
    processes::running()
        .into_iter()
        .filter(|(_, s)| s.pgrp == pgid)
        .map(|(pid, _)| pid)
        .collect()
}

/// Waits until `pid` and every process of its group are gone (a browser started through
/// a wrapper script that does not `exec` would leave the real browser in the group).
fn wait_dead(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !alive(pid) && group_members(pid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[tokio::test]
async fn close_ends_the_browser_process() {
    let b = BrowserHandle::launch(&find_chromium(None).unwrap())
        .await
        .unwrap();
    let pid = b.pid().unwrap();
    assert!(alive(pid));
    assert!(
        group_members(pid).len() > 1,
        "the browser leads a process group with its helpers"
    );
    assert!(
        b.version().contains('/'),
        "product string like Chrome/156: {}",
        b.version()
    );
    b.close().await;
    assert!(wait_dead(pid), "chromium {pid} survived close()");
}

/// Child half of the SIGKILL test: launches a browser, prints its pid, then waits.
#[tokio::test]
async fn child_holds_a_browser() {
    if std::env::var_os("FAULTLINE_TEST_CHILD").is_none() {
        return;
    }
    let b = BrowserHandle::launch(&find_chromium(None).unwrap())
        .await
        .unwrap();
    println!("CHROMIUM_PID={}", b.pid().unwrap());
    tokio::time::sleep(Duration::from_secs(60)).await;
    b.close().await;
}

/// Starts this test binary's `child_holds_a_browser` in a child process whose temp
/// directory (where profiles go, and where a browser start sweeps dead runs' profiles)
/// is `temp`; returns the child and its browser's pid once the browser runs.
fn child_with_a_browser(temp: &Path) -> (std::process::Child, u32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_a_browser",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FAULTLINE_TEST_CHILD", "1")
        .env("TMPDIR", temp)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let pid: u32 = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // libtest prints "test child_holds_a_browser ... " on the same line.
        .find_map(|l| {
            l.split_once("CHROMIUM_PID=")
                .map(|(_, p)| p.trim().parse().unwrap())
        })
        .expect("child printed the browser pid");
    (child, pid)
}

/// The profile directory a running browser was given.
fn profile_of(pid: u32) -> PathBuf {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    cmdline
        .split(|&b| b == 0)
        .find_map(|arg| arg.strip_prefix(b"--user-data-dir="))
        .map(|dir| PathBuf::from(String::from_utf8_lossy(dir).into_owned()))
        .expect("the browser names its profile directory")
}

#[test]
fn sigkilled_parent_takes_its_browser_with_it() {
    let temp = tempfile::tempdir().unwrap();
    let (mut child, pid) = child_with_a_browser(temp.path());
    assert!(alive(pid));
    child.kill().unwrap(); // SIGKILL: no destructor runs in the child.
    child.wait().unwrap();
    assert!(
        wait_dead(pid),
        "chromium {pid} survived its parent's SIGKILL"
    );
}

/// Regression: a run that was SIGKILLed never removed its profile directory (its
/// destructor never ran), and nothing else did; the next browser start now removes every
/// profile directory whose owning process is dead.
///
/// Both runs get a temp directory of their own. Regression: with the shared one, a browser
/// started by another test of this binary in between swept the dead run's profile before
/// the test could see it left behind, and the test failed on its precondition.
#[test]
fn regression_a_profile_left_by_a_sigkilled_run_is_removed_at_the_next_browser_start() {
    let temp = tempfile::tempdir().unwrap();
    let (mut killed, pid) = child_with_a_browser(temp.path());
    let profile = profile_of(pid);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(wait_dead(pid), "chromium {pid} survived its parent");
    assert!(
        profile.is_dir(),
        "the killed run left {}",
        profile.display()
    );
    // The next run's browser is running once its pid is printed: its start swept.
    let (mut next, next_pid) = child_with_a_browser(temp.path());
    let swept = !profile.exists();
    assert!(
        profile_of(next_pid).is_dir(),
        "the live run's profile is kept"
    );
    next.kill().unwrap();
    next.wait().unwrap();
    assert!(
        wait_dead(next_pid),
        "chromium {next_pid} survived its parent"
    );
    assert!(
        swept,
        "the dead run's profile {} is still there",
        profile.display()
    );
}

/// Regression: Chromium gets `PR_SET_PDEATHSIG`, which fires when the *thread* that
/// forked it exits, not the harness. A browser started (or restarted) from a thread that
/// later exits (a tokio worker that gave its work away in `block_in_place` and then idled
/// out of the blocking pool) was SIGKILLed under the run.
#[test]
fn regression_a_browser_outlives_the_thread_that_started_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let executable = find_chromium(None).unwrap();
    let handle = runtime.handle().clone();
    let browser = std::thread::spawn(move || handle.block_on(BrowserHandle::launch(&executable)))
        .join()
        .unwrap()
        .unwrap();
    let pid = browser.pid().unwrap();
    // The starting thread is gone; a parent-death signal would have arrived by now.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        alive(pid),
        "chromium {pid} died with the thread that started it"
    );
    runtime.block_on(async {
        let pool = browser.page_pool(
            Size {
                width: 400,
                height: 300,
            },
            PoolSize::fixed(1),
            faultline::engine::browser::SiteOrigins::blank(),
            Isolation::FreshContext,
        );
        let page = pool.take().await.expect("the browser opens a page");
        assert_eq!(page.eval("6 * 7").await.unwrap(), 42);
        page.close().await;
        drop(pool);
        browser.close().await;
    });
    assert!(wait_dead(pid), "chromium {pid} survived close()");
}
