//! The browser driver: a real headless Chromium over CDP.
//!
//! We start Chromium ourselves rather than through chromiumoxide's launcher so that the
//! child gets `PR_SET_PDEATHSIG = SIGKILL`: if faultline dies for any reason (even
//! SIGKILL), the kernel kills its browser too, and no Chromium outlives a run or a test.
//! It is forked from a thread that lives as long as the harness ([`crate::children`]):
//! the signal follows the thread that started the browser. Its profile directory is
//! named for the harness's pid, and a browser start removes those of dead runs
//! ([`remove_stale_profiles`]).
//!
//! Trials are kept apart in one of two ways ([`Isolation`]): each gets a page in a new
//! browser context (fresh cookies, storage and cache, and a new renderer process), or a
//! page and its context serve trial after trial and are reset between them to the state
//! of a fresh one. The second skips the context and the renderer process a trial would
//! otherwise start; `harness/tests/isolation.rs` proves no storage kind crosses the reset.

use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::liveness::{guard, InfraFailure, InfraKind, Liveness, Vital, VitalSender};
use anyhow::{anyhow, bail, Context, Result};
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::emulation::{
    SetDeviceMetricsOverrideParams, SetScriptExecutionDisabledParams,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::inspector;
use chromiumoxide::cdp::browser_protocol::network::{
    ClearBrowserCacheParams, ClearBrowserCookiesParams,
};
use chromiumoxide::cdp::browser_protocol::page::CrashParams;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, NavigateParams, ResetNavigationHistoryParams,
    StopLoadingParams, Viewport,
};
use chromiumoxide::cdp::browser_protocol::storage::ClearDataForOriginParams;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams, EventTargetCrashed, EventTargetDestroyed,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, ExecutionContextId};
use chromiumoxide::types::{Command, CommandResponse};
use chromiumoxide::{Browser, Page};
use faultline_policies::{Control, FrameSnapshot, PageState};
use faultline_tasks::{Point, Size};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command as Process;

/// Where to find Chromium: `$FAULTLINE_CHROMIUM`, else the first of the usual names on
/// the PATH. `chromium-headless-shell` (Chromium's automation build: same Blink and V8,
/// no browser UI) comes first because a fresh context and a screenshot cost about a
/// quarter of the CPU they cost in the full browser's headless mode; the full browser
/// is the fallback. Distribution wrapper scripts are resolved to the binary they start
/// (see [`resolve_wrapper`]).
pub fn find_chromium(configured: Option<&Path>) -> Result<PathBuf> {
    // A configured path must exist: finding out at launch would be after the run
    // directory was set up.
    let given = |p: &Path, from: &str| {
        if p.is_file() {
            Ok(resolve_wrapper(p))
        } else {
            Err(anyhow!("{from}: no Chromium executable at {}", p.display()))
        }
    };
    if let Some(p) = configured {
        return given(p, "browser.executable");
    }
    if let Some(p) = std::env::var_os("FAULTLINE_CHROMIUM") {
        return given(Path::new(&p), "FAULTLINE_CHROMIUM");
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in CHROMIUM_NAMES {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(resolve_wrapper(&candidate));
            }
        }
    }
    bail!("no Chromium found: install it (`apt-get install chromium-headless-shell` or `apt-get install chromium`), put it on the PATH, or set FAULTLINE_CHROMIUM")
}

/// Executable names tried on the PATH, best first.
const CHROMIUM_NAMES: &[&str] = &[
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "chrome",
];

/// If `path` is a small shell script that starts a binary by absolute path (Debian's
/// `/usr/bin/chromium-headless-shell` runs `/usr/lib/chromium/chromium-headless-shell`
/// *without* `exec`), returns that binary. Starting the binary directly matters: the
/// kernel's parent-death signal only reaches our direct child, so a wrapper shell would
/// die while the browser it started lived on.
pub fn resolve_wrapper(path: &Path) -> PathBuf {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 64 * 1024);
    let Some(bytes) = small.then(|| std::fs::read(path).ok()).flatten() else {
        return path.to_path_buf();
    };
    if !bytes.starts_with(b"#!") {
        return path.to_path_buf();
    }
    let text = String::from_utf8_lossy(&bytes);
    let stem = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .filter(|t| t.starts_with('/') && !t.starts_with("/bin/") && t.len() > 1)
        .map(Path::new)
        .find(|t| {
            t.file_name().and_then(|n| n.to_str()) == Some(stem)
                && t != &path
                && starts_with_elf_magic(t)
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| path.to_path_buf())
}

fn starts_with_elf_magic(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"\x7fELF"
}

/// Command-line switches for a quiet, deterministic, offline headless Chromium.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    // No page is kept for going back (a harness never goes back, and a reused page's
    // history is reset anyway); same-site navigations keep their frame host and do not
    // hold the old page's last paint: each saves work on every navigation.
    "--disable-back-forward-cache",
    "--disable-features=Translate,MediaRouter,OptimizationHints,BackForwardCache,PaintHolding,RenderDocument",
    "--hide-scrollbars",
    "--mute-audio",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
    "--window-size=1200,800",
    "--remote-debugging-port=0",
];

/// A running Chromium and its CDP connection.
///
/// Its death is noticed at once, not at the next timeout: a task waits on the process
/// (its exit marks the browser dead) and another drives the DevTools connection (its end
/// marks the browser dead too). Every CDP call made through the handle or its pages is
/// raced against that signal (see [`crate::engine::liveness`]).
pub struct BrowserHandle {
    browser: Arc<Browser>,
    pid: u32,
    version: String,
    /// The profile directory, removed on drop once the browser's processes are gone.
    profile: PathBuf,
    handler: tokio::task::JoinHandle<()>,
    /// Owns the child process and waits for its exit; aborting it kills the child.
    reaper: tokio::task::JoinHandle<()>,
    alive: Vital,
    liveness: Liveness,
}

impl BrowserHandle {
    /// Starts Chromium with a fresh profile directory and connects to it, with the
    /// default deadlines.
    pub async fn launch(executable: &Path) -> Result<BrowserHandle> {
        Self::launch_with(executable, Liveness::default()).await
    }

    /// Starts Chromium with a fresh profile directory and connects to it; its CDP calls
    /// get the deadlines of `liveness`.
    pub async fn launch_with(executable: &Path, liveness: Liveness) -> Result<BrowserHandle> {
        let temp = std::env::temp_dir();
        remove_stale_profiles(&temp);
        let profile = tempfile::Builder::new()
            .prefix(&format!("{PROFILE_PREFIX}{}-", std::process::id()))
            .tempdir_in(&temp)
            .context("creating a Chromium profile directory")?;
        let mut cmd = Process::new(executable);
        // Extra switches for odd machines, space-separated.
        let extra = std::env::var("FAULTLINE_CHROMIUM_ARGS").unwrap_or_default();
        cmd.args(CHROMIUM_ARGS)
            .args(extra.split_whitespace())
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // The browser needs no secret of ours: a model API key stays in this process.
            .env_remove("FAULTLINE_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .kill_on_drop(true)
            // Its own process group, so closing kills every process it started even when
            // `executable` is a wrapper that does not `exec`.
            .process_group(0);
        let mut child = crate::children::spawn_async(cmd)
            .await
            .with_context(|| format!("starting Chromium at {}", executable.display()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let ws = tokio::time::timeout(Duration::from_secs(20), async {
            let mut seen = Vec::new();
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Ok::<_, anyhow::Error>(url.trim().to_string());
                }
                seen.push(line);
            }
            Err(anyhow!(
                "Chromium exited before opening DevTools: {}",
                seen.join(" | ")
            ))
        })
        .await
        .map_err(|_| anyhow!("Chromium did not open DevTools within 20 s"))??;
        // Keep draining stderr so Chromium never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        let pid = child
            .id()
            .ok_or_else(|| anyhow!("Chromium exited at once"))?;
        let (dead, alive) = Vital::new();
        let on_exit = dead.clone();
        let reaper = tokio::spawn(async move {
            let status = child.wait().await;
            on_exit.dead(match status {
                Ok(s) => format!("the browser process exited ({s})"),
                Err(e) => format!("the browser process is gone ({e})"),
            });
        });
        let (browser, mut handler) = match Browser::connect(ws).await {
            Ok(v) => v,
            Err(e) => {
                reaper.abort();
                // SAFETY: killpg only sends a signal; the group is the one we created.
                unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
                return Err(anyhow!(e).context("connecting to Chromium over CDP"));
            }
        };
        // Drive the handler until it ends; individual errors are unparseable events from
        // a newer protocol and must not stop it. Its end is the connection's end.
        let handler = tokio::spawn(async move {
            while handler.next().await.is_some() {}
            dead.dead("the DevTools connection closed");
        });
        // Its processes' CPU and memory count as the run's (see `engine::cost`).
        crate::engine::cost::register_browser(pid);
        let version = browser
            .version()
            .await
            .map(|v| v.product)
            .unwrap_or_else(|_| "unknown".into());
        Ok(BrowserHandle {
            browser: Arc::new(browser),
            pid,
            version,
            profile: profile.keep(),
            handler,
            reaper,
            alive,
            liveness,
        })
    }

    /// The Chromium process id (for leak checks).
    pub fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    /// The browser's liveness signal: why it died, once it did.
    pub fn vital(&self) -> &Vital {
        &self.alive
    }

    /// The deadlines its calls get.
    pub fn liveness(&self) -> Liveness {
        self.liveness
    }

    /// The browser's product string, e.g. `Chrome/156.0.8078.114`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// A pool of pages, each in its own new browser context and already showing
    /// `warm_url` (a blank page on the fixture server's origin), opened ahead of time. A
    /// fresh context starts its renderer process on the first navigation to a site; doing
    /// that ahead of time, while other trials wait on settle timers, hides part of that
    /// cost, and the trial's own navigation is then same-site.
    ///
    /// One task opens the pages, one at a time: opening a context keeps Chromium's
    /// browser process busy for a few hundred milliseconds, and several at once would
    /// stall other trials' CDP calls.
    ///
    /// Under [`Isolation::FreshContext`] every trial takes a new page and the pool keeps
    /// `size.ahead` waiting. Under [`Isolation::ReusedContext`] a closed page is reset and
    /// handed out again (see [`TrialPage::close`]); the pool opens `size.ahead` pages at
    /// first, then a new one only when fewer than two wait unused (more items run at once
    /// than before, or a page could not be reset), and never holds more than
    /// `size.most + 2`.
    pub fn page_pool(
        &self,
        viewport: Size,
        size: PoolSize,
        warm_url: String,
        isolation: Isolation,
    ) -> PagePool {
        let ahead = size.ahead.max(1);
        // Fresh pages: `ahead` wait opened. Reused ones: at most `most + 2` exist, and
        // the queue has room for all of them, so handing a reset page back never waits.
        let (limit, capacity) = match isolation {
            Isolation::FreshContext => (None, ahead),
            Isolation::ReusedContext => {
                let most = size.most.max(ahead) + SPARE_PAGES;
                (Some(Arc::new(tokio::sync::Semaphore::new(most))), most)
            }
        };
        // Pages for the items at work and the spares; one more per item parked on an
        // unanswered call (it holds its page). Bounded by `working` alone, a pool that
        // may hold `most` grew to it: on a loaded machine a reset takes long enough that
        // the spares often run low for a moment, and each extra page costs a renderer.
        let eager = size.working.max(ahead) + SPARE_PAGES;
        let slots = limit.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(capacity);
        let taken = Arc::new(tokio::sync::Notify::new());
        let browser = self.browser.clone();
        let alive = self.alive.clone();
        let liveness = self.liveness;
        let recycle_tx = tx.clone();
        let demand = taken.clone();
        let opener = tokio::spawn(async move {
            let mut opened = 0usize;
            // A dead browser opens no more pages: the pool says why once and stops.
            while alive.dead().is_none() {
                // Reused pages come back: past the first `ahead`, a new one is opened
                // only when the spares run low and fewer than `eager` (plus the parked
                // items' pages) are open.
                if let Some(limit) = &limit {
                    loop {
                        let spares = tx.max_capacity() - tx.capacity();
                        let open = capacity - limit.available_permits();
                        let room = eager + crate::engine::waiting::parked_in_process();
                        if opened < ahead || (spares < SPARE_PAGES && open < room) {
                            break;
                        }
                        demand.notified().await;
                    }
                }
                let permit = match &limit {
                    Some(limit) => match limit.clone().acquire_owned().await {
                        Ok(p) => Some(p),
                        Err(_) => return,
                    },
                    None => None,
                };
                let page = open_trial_page(
                    browser.clone(),
                    &alive,
                    liveness,
                    viewport,
                    warm_url.clone(),
                )
                .await
                .map(|mut page| {
                    page.reuse = permit.map(|permit| Reuse {
                        pool: recycle_tx.clone(),
                        warm_url: warm_url.clone(),
                        _permit: permit,
                    });
                    page
                });
                opened += 1;
                if tx.send(page).await.is_err() {
                    return;
                }
            }
        });
        PagePool {
            rx: tokio::sync::Mutex::new(rx),
            pages: slots.map(|l| (l, capacity)),
            taken,
            opener,
            alive: self.alive.clone(),
            liveness: self.liveness,
        }
    }

    /// Closes the browser and waits for the process and its group to exit.
    pub async fn close(self) {
        self.shutdown().await;
    }

    /// Kills the browser's process group and waits (a few seconds at most) until every
    /// process of it is gone, so its profile directory can be removed.
    pub async fn shutdown(&self) {
        // Stop reading the socket first, so the kill is not reported as a CDP error.
        self.handler.abort();
        self.kill_group();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline
            && (!self.reaper.is_finished() || group_alive(self.pid))
        {
            // Helpers that outlived the browser's main process are the harness's own
            // children under `faultline` (see `crate::children`): zombies until reaped.
            crate::children::reap_adopted();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills the browser as a crash would (for tests of the harness's recovery).
    pub fn kill(&self) {
        // SAFETY: kill only sends a signal to the process we started.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
    }

    fn kill_group(&self) {
        crate::engine::cost::unregister_browser(self.pid);
        // SAFETY: killpg only sends a signal; the group is the one we created.
        unsafe { libc::killpg(self.pid as libc::pid_t, libc::SIGKILL) };
    }
}

/// How every profile directory's name starts: the prefix, then the pid of the process
/// that owns it (`faultline-chromium-<pid>-<random>`), so a later run can tell a dead
/// run's directory from a live one's.
pub const PROFILE_PREFIX: &str = "faultline-chromium-";

/// Removes the profile directories in `temp` whose owning process is dead: a run killed
/// by SIGKILL never ran the destructor that removes its own. A directory whose owner
/// lives, whose name carries no pid (an older faultline's) or that is not ours to remove
/// is left alone.
pub fn remove_stale_profiles(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if owner > 0 && !process_exists(owner) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` exists (a zombie or another user's process included).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether any process of group `pgid` is still there (zombies included: a renderer not
/// yet reaped still holds files of the profile open).
fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

impl Drop for BrowserHandle {
    fn drop(&mut self) {
        self.handler.abort();
        self.kill_group();
        self.reaper.abort();
        // Killed processes can still be writing for a moment: remove the profile until
        // it stays removed (two seconds at most).
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while self.profile.exists() && std::time::Instant::now() < deadline {
            if std::fs::remove_dir_all(&self.profile).is_err() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// How trials are kept apart in the browser.
///
/// Both give every trial the state of a page no trial has used: no cookie, storage,
/// cache entry, service worker, history entry, window name, pointer position or viewport
/// override of an earlier trial (`harness/tests/isolation.rs` plants each kind and looks
/// for it in the next trial). They differ in cost: a new context starts a renderer
/// process for every trial, a reused one keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Every trial gets a page in a new browser context, closed after the trial.
    FreshContext,
    /// A page in its own context serves trial after trial; between two trials the
    /// page's scripts are stopped, its session and local storage and window name
    /// cleared, it is navigated to `about:blank`, the fixture origin's data (cookies,
    /// local storage, IndexedDB, Cache Storage, service workers), the context's HTTP
    /// cache and cookies and the page's history are cleared, the pointer is moved off
    /// the page and the viewport restored. A page that crashed, hung or fails any step of that is
    /// closed instead and a fresh one opened. The default: on the default run it cut
    /// Chromium's CPU per detection trial by about a fifth, with identical tables.
    #[default]
    ReusedContext,
}

impl Isolation {
    /// The name used in configs, flags and stored rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::FreshContext => "fresh_context",
            Isolation::ReusedContext => "reused_context",
        }
    }
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Isolation, String> {
        match s {
            "fresh_context" => Ok(Isolation::FreshContext),
            "reused_context" => Ok(Isolation::ReusedContext),
            other => Err(format!(
                "unknown isolation `{other}` (expected fresh_context or reused_context)"
            )),
        }
    }
}

/// Trial pages, opened ahead of time (and, reused, reset). See [`BrowserHandle::page_pool`].
pub struct PagePool {
    rx: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Result<TrialPage>>>,
    /// A reusing pool's page slots and how many there are.
    pages: Option<(Arc<tokio::sync::Semaphore>, usize)>,
    /// Tells the opener a page was taken or is waited for (it may be time to open another).
    taken: Arc<tokio::sync::Notify>,
    opener: tokio::task::JoinHandle<()>,
    alive: Vital,
    liveness: Liveness,
}

/// How many pages a [`PagePool`] opens ahead of time, and how many items take pages from
/// it at once at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    /// Pages opened before anyone asks.
    pub ahead: usize,
    /// The most items working at once: up to this many pages (and the spares) are kept
    /// ready ahead of demand.
    pub working: usize,
    /// The most pages in use at once, parked items' included (see `waiting`): past
    /// `working` and the spares, one more page per item parked now.
    pub most: usize,
}

impl PoolSize {
    /// For `n` items at once, all of them opened ahead.
    pub fn fixed(n: usize) -> PoolSize {
        PoolSize {
            ahead: n,
            working: n,
            most: n,
        }
    }
}

/// Reset pages a reusing pool keeps waiting unused before it opens another.
const SPARE_PAGES: usize = 2;

/// What a reusable page needs to go back into its pool.
struct Reuse {
    pool: tokio::sync::mpsc::Sender<Result<TrialPage>>,
    warm_url: String,
    /// One of the pool's page slots, given back when the page is closed for good.
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl PagePool {
    /// Pages a reusing pool has open now (in use, waiting, being reset or being opened);
    /// `None` for a pool of fresh pages, which closes each page after its trial.
    pub fn pages_open(&self) -> Option<usize> {
        self.pages
            .as_ref()
            .map(|(slots, all)| all - slots.available_permits())
    }

    /// The next page: a new one, or a reset one under [`Isolation::ReusedContext`]. The
    /// wait has a deadline
    /// (`unresponsive` past it) and ends at once when the browser dies.
    pub async fn take(&self) -> Result<TrialPage> {
        self.taken.notify_one();
        let mut rx = self.rx.lock().await;
        guard(
            "waiting for a fresh page",
            self.liveness.page(),
            &self.alive,
            None,
            async {
                let page = rx
                    .recv()
                    .await
                    .unwrap_or_else(|| Err(anyhow!("the page pool has stopped")));
                self.taken.notify_one();
                page
            },
        )
        .await
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        self.opener.abort();
    }
}

async fn open_trial_page(
    browser: Arc<Browser>,
    alive: &Vital,
    liveness: Liveness,
    viewport: Size,
    url: String,
) -> Result<TrialPage> {
    let setup = Span::start(Stage::SetupAhead);
    let call = liveness.call();
    let context = guard(
        "creating a browser context",
        call,
        alive,
        None,
        browser.create_browser_context(CreateBrowserContextParams::default()),
    )
    .await?;
    let params = CreateTargetParams::builder()
        .url(url)
        .browser_context_id(context.clone())
        .build()
        .map_err(|e| anyhow!(e))?;
    let page = guard(
        "opening a page",
        liveness.page(),
        alive,
        None,
        browser.new_page(params),
    )
    .await?;
    // The page's own signal: its renderer crashed, or its target went away.
    let (dead, page_alive) = Vital::new();
    let watcher = watch_page(&browser, &page, dead, alive, call).await?;
    let mut trial = TrialPage {
        browser,
        context: Some(context),
        page,
        viewport,
        captures: 0,
        browser_alive: alive.clone(),
        alive: page_alive,
        watcher,
        liveness,
        costs: StageCosts::default(),
        reuse: None,
    };
    trial
        .cdp(
            "setting the viewport",
            SetDeviceMetricsOverrideParams::new(
                i64::from(viewport.width),
                i64::from(viewport.height),
                1.0,
                false,
            ),
        )
        .await?;
    setup.end(&mut trial.costs);
    Ok(trial)
}

/// Starts the task that marks a page dead when its renderer crashes
/// (`Inspector.targetCrashed` on the page's session, `Target.targetCrashed` on the
/// browser's) or its target is destroyed while the harness still holds it.
async fn watch_page(
    browser: &Browser,
    page: &Page,
    dead: VitalSender,
    alive: &Vital,
    call: Duration,
) -> Result<tokio::task::JoinHandle<()>> {
    let mut inspector_crash = guard(
        "listening for renderer crashes",
        call,
        alive,
        None,
        page.event_listener::<inspector::EventTargetCrashed>(),
    )
    .await?;
    let mut target_crash = guard(
        "listening for renderer crashes",
        call,
        alive,
        None,
        browser.event_listener::<EventTargetCrashed>(),
    )
    .await?;
    let mut destroyed = guard(
        "listening for closed targets",
        call,
        alive,
        None,
        browser.event_listener::<EventTargetDestroyed>(),
    )
    .await?;
    guard(
        "enabling the Inspector domain",
        call,
        alive,
        None,
        page.execute(inspector::EnableParams::default()),
    )
    .await?;
    let id = page.target_id().clone();
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(_) = inspector_crash.next() => {
                    dead.dead("the renderer crashed (Inspector.targetCrashed)");
                    return;
                }
                Some(ev) = target_crash.next() => if ev.target_id == id {
                    dead.dead(format!("the renderer crashed (Target.targetCrashed: {}, code {})", ev.status, ev.error_code));
                    return;
                },
                Some(ev) = destroyed.next() => if ev.target_id == id {
                    dead.dead("the page's target was destroyed");
                    return;
                },
                else => return,
            }
        }
    }))
}

/// One trial's page in its own browser context.
///
/// Every CDP call it makes has a deadline and ends at once when the browser or the
/// page's renderer dies (see [`crate::engine::liveness`]).
pub struct TrialPage {
    browser: Arc<Browser>,
    context: Option<BrowserContextId>,
    page: Page,
    viewport: Size,
    captures: u64,
    browser_alive: Vital,
    alive: Vital,
    watcher: tokio::task::JoinHandle<()>,
    liveness: Liveness,
    /// What the page has cost so far, stage by stage (opening it, ahead of time, is
    /// [`Stage::SetupAhead`]).
    pub costs: StageCosts,
    /// Where the page goes when it is closed, under [`Isolation::ReusedContext`].
    reuse: Option<Reuse>,
}

impl Drop for TrialPage {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// What [`TrialPage::capture`] returns: the observation and the page state read at the
/// same instant, bracketed by the page clock.
pub struct Capture {
    /// Capture number within the page, from 0.
    pub id: u64,
    /// The screenshot (PNG), scaled to `size`.
    pub png: Vec<u8>,
    /// The screenshot's size (the `image` it was captured at).
    pub size: Size,
    /// Every frame's URL, DOM and controls, read just after the screenshot.
    pub state: PageState,
    /// Every non-empty frame's visible text, trimmed, joined by newlines.
    pub text: String,
    /// The page clock just before the screenshot, in milliseconds.
    pub begin_ms: f64,
    /// The page clock at the DOM read just after the screenshot, in milliseconds.
    pub end_ms: f64,
}

#[derive(Deserialize)]
struct RawFrame {
    now: f64,
    url: String,
    html: String,
    text: String,
    controls: Vec<Control>,
    selected: Vec<String>,
}

const SNAPSHOT_JS: &str = r#"(() => {
  const now = performance.now();
  const name = (e) => (e.getAttribute('aria-label') || e.innerText || e.textContent || '').trim();
  const selected = Array.from(document.querySelectorAll('[aria-pressed="true"],[aria-selected="true"],[aria-checked="true"]')).map(name);
  const controls = Array.from(document.querySelectorAll('input,textarea,select'))
    .filter((e) => e.type !== 'hidden')
    .map((e) => ({
      tag: e.tagName.toLowerCase(),
      kind: (e.type || '').toLowerCase(),
      name: e.name || e.id || '',
      label: ((e.labels && e.labels[0]) ? e.labels[0].innerText : (e.getAttribute('aria-label') || '')).trim(),
      value: String(e.value),
      checked: e.checked === true,
    }));
  return { now, url: location.href, html: document.documentElement.outerHTML,
           text: document.body ? document.body.innerText : '', controls, selected };
})()"#;

/// How a wait for a page to be ready ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every document is complete and no navigation is under way.
    Ready,
    /// The deadline passed first. `answering`: the page's main thread still answered the
    /// checks in the window's last second (it is loading, or the machine is slow); when
    /// false it stopped answering (hung).
    NotReady {
        /// Whether a check answered within the last second before the deadline.
        answering: bool,
    },
}

impl TrialPage {
    /// The deadlines this page's calls keep.
    pub fn liveness(&self) -> Liveness {
        self.liveness
    }

    /// The page's viewport size, in CSS pixels.
    pub fn viewport(&self) -> Size {
        self.viewport
    }

    /// One CDP command on the page, with the call deadline and the liveness signals.
    async fn cdp<T: Command>(&self, what: &str, params: T) -> Result<CommandResponse<T::Response>> {
        self.guarded(what, self.liveness.call(), self.page.execute(params))
            .await
    }

    /// Any wait on the page, with a deadline and the liveness signals.
    async fn guarded<T, E: Into<anyhow::Error>>(
        &self,
        what: &str,
        limit: Duration,
        call: impl std::future::Future<Output = std::result::Result<T, E>>,
    ) -> Result<T> {
        // A call the page leaves unanswered for long parks the item (see `waiting`): the
        // page is not working for it, so another item may. Waits for a page from the
        // pool do not come here: they wait for the pool, not on a page.
        let call = guard(what, limit, &self.browser_alive, Some(&self.alive), call);
        crate::engine::waiting::unanswered(call).await
    }

    /// Why the page's renderer died, if it did.
    pub fn crashed(&self) -> Option<String> {
        self.alive.dead()
    }

    /// Crashes the page's renderer (CDP `Page.crash`): what the renderer-crash fault of
    /// the catalogue does after the action. Waits (within the call deadline) until the
    /// crash has been noticed.
    pub async fn crash_renderer(&self) -> Result<()> {
        // The command itself gets no answer: the renderer that would answer is gone.
        let page = self.page.clone();
        tokio::spawn(async move {
            let _ = page.execute(CrashParams::default()).await;
        });
        match tokio::time::timeout(self.liveness.call(), self.alive.died()).await {
            Ok(_) => Ok(()),
            Err(_) => Err(anyhow!(InfraFailure::new(
                InfraKind::Unresponsive,
                "Page.crash was sent but no crash was reported",
            ))),
        }
    }

    /// The underlying CDP page, for callers that need its events (console messages and
    /// exceptions, e.g. to check that a page loads without errors).
    pub fn cdp_page(&self) -> &Page {
        &self.page
    }

    /// Navigates and waits for the load event, web fonts and the frames' documents.
    pub async fn goto(&self, url: &str) -> Result<()> {
        let nav = self
            .guarded(
                "navigating",
                self.liveness.navigation(10_000),
                self.page.goto(NavigateParams::new(url)),
            )
            .await;
        if let Err(e) = nav {
            // A dead browser or renderer keeps its own name; anything else is a failed
            // navigation to the fixture server.
            return Err(match InfraFailure::find(&e) {
                Some(f) if f.kind != InfraKind::Unresponsive => e,
                _ => anyhow!(InfraFailure::new(
                    InfraKind::NavigationFailed,
                    format!("navigating to {url}: {e:#}")
                )),
            });
        }
        self.wait_ready(Duration::from_secs(10))
            .await
            .map_err(|e| match InfraFailure::find(&e) {
                Some(_) => e,
                None => anyhow!(InfraFailure::new(
                    InfraKind::NavigationFailed,
                    format!("{url}: {e:#}")
                )),
            })
    }

    /// Evaluates `expression` in the top document (awaiting promises).
    pub async fn eval(&self, expression: &str) -> Result<serde_json::Value> {
        self.eval_in(None, expression).await
    }

    async fn eval_in(
        &self,
        context: Option<ExecutionContextId>,
        expression: &str,
    ) -> Result<serde_json::Value> {
        let mut params = EvaluateParams::new(expression);
        params.await_promise = Some(true);
        params.return_by_value = Some(true);
        params.context_id = context;
        let resp = self.cdp("evaluating in the page", params).await?;
        if let Some(ex) = &resp.result.exception_details {
            bail!("page script threw: {}", ex.text);
        }
        Ok(resp
            .result
            .result
            .value
            .clone()
            .unwrap_or(serde_json::Value::Null))
    }

    /// Waits until the top document and every frame report `readyState == complete`, and
    /// no navigation away from the top document is under way (a submitted form leaves the
    /// old, complete document on screen until the new one commits; on a busy machine that
    /// can outlast any fixed settle time).
    pub async fn wait_ready(&self, timeout: Duration) -> Result<()> {
        match self.poll_ready(timeout).await? {
            Readiness::Ready => Ok(()),
            Readiness::NotReady { .. } => {
                bail!("the page did not finish loading within {timeout:?}")
            }
        }
    }

    /// Waits for a navigation an action started, the way a harness with a navigation
    /// timeout does, but without measuring the machine: returns whether the page loaded
    /// (`false`: the tool reports a load error, as a harness would).
    ///
    /// `site_owes` asks the fixture server whether it still owes the page a response.
    /// Past `limit` with the site owing nothing, the wait is not the page's: nothing a
    /// fixture page or a fault does keeps a load going without a request the site holds.
    /// A page still answering is a loaded CPU; a page that stopped answering is a
    /// renderer the machine froze (a fault that hangs the main thread holds a request,
    /// so it is the site's). Either way the wait goes on up to the navigation's liveness
    /// deadline, so a short freeze or a busy machine cannot become a stored load error;
    /// a renderer still silent then is an infrastructure failure (the item is retried),
    /// never the trial's outcome. Without `site_owes`, a load past `limit` is the page's.
    pub async fn wait_loaded(
        &self,
        limit: Duration,
        site_owes: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<bool> {
        let ready = self.poll_ready(limit).await?;
        let site_done = || site_owes.is_some_and(|owes| !owes());
        if ready == Readiness::Ready || !site_done() {
            return Ok(ready == Readiness::Ready);
        }
        let deadline = self.liveness.navigation(limit.as_millis() as u64);
        match self.poll_ready(deadline.saturating_sub(limit)).await? {
            Readiness::Ready => Ok(true),
            Readiness::NotReady { answering: false } if site_done() => {
                Err(anyhow!(InfraFailure::new(
                    InfraKind::Unresponsive,
                    format!(
                        "the renderer stopped answering for {:.1} s while loading a page the site had fully served",
                        deadline.as_secs_f64()
                    ),
                )))
            }
            Readiness::NotReady { .. } => Ok(false),
        }
    }

    /// [`TrialPage::wait_ready`], telling a page that is not ready yet but answers (its
    /// main thread ran the last checks: a slow load, or a slow machine) from one that has
    /// stopped answering (a hung main thread).
    pub async fn poll_ready(&self, timeout: Duration) -> Result<Readiness> {
        const JS: &str = r#"(async () => {
          if (window.__faultline_leaving !== undefined && performance.now() - window.__faultline_leaving < 5000) return false;
          const docs = [document];
          document.querySelectorAll('iframe').forEach((f) => { try { if (f.contentDocument) docs.push(f.contentDocument); } catch (e) {} });
          const frameLoads = Array.from(document.querySelectorAll('iframe')).every((f) => { try { return f.contentDocument && f.contentDocument.readyState === 'complete' && f.contentWindow.location.href !== 'about:blank'; } catch (e) { return true; } });
          if (!frameLoads || !docs.every((d) => d.readyState === 'complete')) return false;
          await document.fonts.ready;
          return true;
        })()"#;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_answer = None;
        loop {
            // Errors are expected while a navigation swaps the document; keep polling. A
            // single evaluation can itself stall while a navigation hangs, so it is
            // bounded by the deadline too.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.eval(JS)).await {
                Ok(Ok(serde_json::Value::Bool(true))) => return Ok(Readiness::Ready),
                // A dead browser or renderer will not finish loading: say so at once.
                Ok(Err(e))
                    if InfraFailure::find(&e).is_some_and(|f| {
                        matches!(f.kind, InfraKind::BrowserDied | InfraKind::RendererCrashed)
                    }) =>
                {
                    return Err(e)
                }
                // A check the call deadline gave up on got no answer either.
                Ok(Err(e))
                    if InfraFailure::find(&e)
                        .is_some_and(|f| f.kind == InfraKind::Unresponsive) => {}
                // Any answer (not ready, or an error while a document is swapped) means
                // the renderer ran the check; only a check still pending at the deadline
                // did not answer.
                Ok(_) => last_answer = Some(tokio::time::Instant::now()),
                Err(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                // Answering: a check answered within the window's last second.
                let answering = last_answer.is_some_and(|t| {
                    deadline.saturating_duration_since(t) <= Duration::from_secs(1)
                });
                return Ok(Readiness::NotReady { answering });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The `stable` settle: waits until the top document has had no DOM mutation for
    /// `windows` consecutive windows of `window_ms`, or `cap_ms` has passed. Returns
    /// whether the cap was hit (a page that never settles).
    pub async fn wait_stable(&self, st: crate::engine::timing::StableSettle) -> Result<bool> {
        const MUTATIONS: &str = r#"(() => {
          if (!window.__fl_mo) {
            window.__fl_mutations = 0;
            window.__fl_mo = new MutationObserver((r) => { window.__fl_mutations += r.length; });
            window.__fl_mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
          }
          return window.__fl_mutations;
        })()"#;
        let started = tokio::time::Instant::now();
        let cap = Duration::from_millis(st.cap_ms);
        let mut last = self.eval(MUTATIONS).await?;
        let mut quiet = 0u32;
        loop {
            let left = cap.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(st.window_ms).min(left)).await;
            let now = self.eval(MUTATIONS).await?;
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
            if quiet >= st.windows {
                return Ok(false);
            }
        }
    }

    /// Gives up on a navigation that is still loading (what a browser's Stop button
    /// does), so the page can be observed as it is.
    pub async fn stop_loading(&self) -> Result<()> {
        self.cdp("stopping the page load", StopLoadingParams::default())
            .await?;
        Ok(())
    }

    /// Returns once every page timer already due has run: a zero-delay timer is queued
    /// behind all overdue ones (timers run in deadline order), so after a renderer stall
    /// the page catches up before the harness looks at it.
    pub async fn run_overdue_timers(&self) -> Result<()> {
        self.eval("new Promise((done) => setTimeout(done, 0))")
            .await?;
        Ok(())
    }

    /// The page clock (`performance.now()` of the top document).
    pub async fn page_now(&self) -> Result<f64> {
        self.eval("performance.now()")
            .await?
            .as_f64()
            .ok_or_else(|| anyhow!("performance.now() did not return a number"))
    }

    async fn mouse(
        &self,
        kind: DispatchMouseEventType,
        p: Point,
        button: Option<(MouseButton, i64)>,
    ) -> Result<()> {
        let mut params = DispatchMouseEventParams::new(kind, p.x, p.y);
        if let Some((button, count)) = button {
            params.buttons = Some(match button {
                MouseButton::Right => 2,
                _ => 1,
            });
            params.button = Some(button);
            params.click_count = Some(count);
        }
        self.cdp("dispatching a mouse event", params).await?;
        Ok(())
    }

    /// A trusted left click at a viewport point.
    pub async fn click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Left, 1).await
    }

    /// A trusted double click at a viewport point: two presses and releases, the second
    /// with click count 2 (what a browser sees from a real double click).
    pub async fn double_click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Left, 2).await
    }

    /// A trusted right click at a viewport point.
    pub async fn right_click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Right, 1).await
    }

    /// Moves to `p`, then presses and releases `button` `count` times with rising click
    /// counts.
    async fn click_with(&self, p: Point, button: MouseButton, count: i64) -> Result<()> {
        self.mouse(DispatchMouseEventType::MouseMoved, p, None)
            .await?;
        for n in 1..=count {
            self.mouse(
                DispatchMouseEventType::MousePressed,
                p,
                Some((button.clone(), n)),
            )
            .await?;
            self.mouse(
                DispatchMouseEventType::MouseReleased,
                p,
                Some((button.clone(), n)),
            )
            .await?;
        }
        Ok(())
    }

    /// Moves the mouse to a viewport point.
    pub async fn hover(&self, p: Point) -> Result<()> {
        self.mouse(DispatchMouseEventType::MouseMoved, p, None)
            .await
    }

    /// Inserts text into the focused element, as an IME commit would.
    pub async fn insert_text(&self, text: &str) -> Result<()> {
        self.cdp("inserting text", InsertTextParams::new(text))
            .await?;
        Ok(())
    }

    /// Presses and releases a key, optionally holding modifiers: `Enter`, `Tab`, `Escape`,
    /// `Backspace`, `Delete`, the arrows, `Home`, `End`, `PageUp`, `PageDown`, `Space`, or
    /// a single character, after any of `Control+`, `Alt+`, `Shift+`, `Meta+`
    /// (`Control+a`).
    pub async fn press(&self, key: &str) -> Result<()> {
        let KeyChord {
            modifiers,
            key,
            code,
            vk,
            text,
        } = key_chord(key)?;
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut p = DispatchKeyEventParams::new(kind.clone());
            p.key = Some(key.clone());
            p.code = Some(code.clone());
            p.windows_virtual_key_code = Some(vk);
            p.native_virtual_key_code = Some(vk);
            if modifiers != 0 {
                p.modifiers = Some(modifiers);
            }
            if kind == DispatchKeyEventType::KeyDown {
                p.text = text.clone();
            }
            self.cdp("dispatching a key", p).await?;
        }
        Ok(())
    }

    /// Scrolls with the mouse wheel at the centre of the viewport.
    pub async fn scroll(&self, dx: f64, dy: f64) -> Result<()> {
        let c = Point::new(
            f64::from(self.viewport.width) / 2.0,
            f64::from(self.viewport.height) / 2.0,
        );
        let mut p = DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, c.x, c.y);
        p.delta_x = Some(dx);
        p.delta_y = Some(dy);
        self.cdp("scrolling", p).await?;
        Ok(())
    }

    /// Whether keyboard input would reach an editable element (an input, a textarea, a
    /// contenteditable), looking into same-origin frames.
    pub async fn has_editable_focus(&self) -> Result<bool> {
        const JS: &str = r#"(() => {
          let a = document.activeElement;
          while (a && a.tagName === 'IFRAME') { try { a = a.contentDocument.activeElement; } catch (e) { break; } }
          if (!a) return false;
          if (a.isContentEditable) return true;
          if (a.tagName === 'TEXTAREA') return !a.disabled && !a.readOnly;
          if (a.tagName !== 'INPUT') return false;
          const t = (a.type || 'text').toLowerCase();
          return !['button', 'submit', 'reset', 'checkbox', 'radio', 'file', 'image', 'range', 'color', 'hidden'].includes(t) && !a.disabled && !a.readOnly;
        })()"#;
        Ok(self.eval(JS).await? == serde_json::Value::Bool(true))
    }

    /// Changes the emulated viewport without changing what the harness believes it is
    /// ([`Self::viewport`]): the layout fault's way of moving the page under the harness.
    pub async fn emulate_viewport(&self, size: Size) -> Result<()> {
        self.cdp(
            "changing the viewport",
            SetDeviceMetricsOverrideParams::new(
                i64::from(size.width),
                i64::from(size.height),
                1.0,
                false,
            ),
        )
        .await?;
        Ok(())
    }

    /// The tag name of the top document's element at a viewport point.
    pub async fn element_tag_at(&self, p: Point) -> Result<Option<String>> {
        let v = self
            .eval(&format!(
                "(() => {{ const e = document.elementFromPoint({}, {}); return e ? e.tagName : null; }})()",
                p.x, p.y
            ))
            .await?;
        Ok(v.as_str().map(str::to_string))
    }

    /// Reads every frame's DOM through its own execution context.
    pub async fn page_state(&self) -> Result<PageState> {
        Ok(self.page_state_at().await?.0)
    }

    /// [`Self::page_state`] plus the top document's clock when it was read.
    async fn page_state_at(&self) -> Result<(PageState, f64)> {
        let mut top_now = f64::NAN;
        let call = self.liveness.call();
        let main = self
            .guarded("reading the frame tree", call, self.page.mainframe())
            .await?;
        let mut frames = Vec::new();
        let mut ids = self
            .guarded("reading the frame tree", call, self.page.frames())
            .await?;
        // Top frame first, the rest in a stable order (by URL) so snapshots compare.
        ids.sort_by_key(|id| Some(id) != main.as_ref());
        for id in ids {
            let is_top = Some(&id) == main.as_ref();
            let context = if is_top {
                None
            } else {
                match self
                    .guarded(
                        "finding a frame's context",
                        call,
                        self.page.frame_execution_context(id.clone()),
                    )
                    .await?
                {
                    Some(c) => Some(c),
                    None => continue,
                }
            };
            let value = match self.eval_in(context, SNAPSHOT_JS).await {
                Ok(v) => v,
                // A detached or navigating child frame is not part of the page now (a
                // dead browser or page is not that).
                Err(e) if !is_top && InfraFailure::find(&e).is_none() => continue,
                Err(e) => return Err(e),
            };
            let raw: RawFrame =
                serde_json::from_value(value).context("reading a frame snapshot")?;
            if is_top {
                top_now = raw.now;
            }
            if raw.url == "about:blank" && !is_top {
                continue;
            }
            frames.push(FrameSnapshot {
                url: raw.url,
                is_top,
                dom_digest: hex::encode(Sha256::digest(raw.html.as_bytes())),
                text: raw.text,
                controls: raw.controls,
                selected: raw.selected,
            });
        }
        frames.sort_by(|a, b| b.is_top.cmp(&a.is_top).then(a.url.cmp(&b.url)));
        let url = frames
            .iter()
            .find(|f| f.is_top)
            .map(|f| f.url.clone())
            .ok_or_else(|| anyhow!("the page has no readable top frame"))?;
        Ok((PageState { url, frames }, top_now))
    }

    /// Captures an observation: a screenshot scaled to `image` plus every frame's DOM and
    /// visible text, bracketed by the page clock (read just before the screenshot and
    /// inside the DOM read just after it), so the ledger can say what the page showed
    /// during the capture.
    pub async fn capture(&mut self, image: Size) -> Result<Capture> {
        let id = self.captures;
        self.captures += 1;
        let span = Span::start(Stage::Capture);
        let begin_ms = self.page_now().await?;
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            optimize_for_speed: Some(true),
            clip: Some(Viewport {
                x: 0.0,
                y: 0.0,
                width: f64::from(self.viewport.width),
                height: f64::from(self.viewport.height),
                scale: f64::from(image.width) / f64::from(self.viewport.width),
            }),
            ..Default::default()
        };
        let shot = self.cdp("taking a screenshot", params).await?;
        let png = base64_decode(shot.result.data.as_ref())?;
        span.end(&mut self.costs);
        let span = Span::start(Stage::Dom);
        let (state, end_ms) = self.page_state_at().await?;
        let text = state
            .frames
            .iter()
            .map(|f| f.text.trim())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        span.end(&mut self.costs);
        Ok(Capture {
            id,
            png,
            size: image,
            state,
            text,
            begin_ms,
            end_ms,
        })
    }

    /// Waits until every ledger request the page (and its frames) sent has been answered.
    pub async fn flush_ledger(&self) -> Result<()> {
        let v = self
            .guarded(
                "waiting for the page's ledger requests",
                Duration::from_secs(5),
                self.eval("window.__faultline_flush ? window.__faultline_flush() : true"),
            )
            .await?;
        if v != serde_json::Value::Bool(true) {
            bail!("ledger flush returned {v}");
        }
        Ok(())
    }

    /// Ends the page's trial: under [`Isolation::ReusedContext`] the page is reset (see
    /// there) and handed back to its pool; otherwise, or when the reset fails, the page
    /// is closed and its browser context disposed of.
    pub async fn close(mut self) {
        if let Some(reuse) = self.reuse.take() {
            let span = Span::start(Stage::SetupAhead);
            if self.reset(&reuse.warm_url).await.is_ok() {
                self.costs = StageCosts::default();
                self.captures = 0;
                span.end(&mut self.costs);
                let pool = reuse.pool.clone();
                self.reuse = Some(reuse);
                // A pool that is gone (the run ended, the browser was replaced) takes no
                // more pages: this one is closed for good.
                if let Err(tokio::sync::mpsc::error::SendError(Ok(page))) =
                    pool.send(Ok(self)).await
                {
                    page.dispose().await;
                }
                return;
            }
        }
        self.dispose().await;
    }

    /// Brings a used page back to the state of a fresh one; see [`Isolation::ReusedContext`].
    async fn reset(&mut self, warm_url: &str) -> Result<()> {
        if let Some(why) = self.crashed() {
            bail!("the page's renderer is gone: {why}");
        }
        // Off the page first: a pointer left over an element would hover it on the next
        // page (Blink re-hit-tests the last pointer position after every layout).
        self.mouse(
            DispatchMouseEventType::MouseMoved,
            Point { x: -1.0, y: -1.0 },
            None,
        )
        .await?;
        self.emulate_viewport(self.viewport).await?;
        // Freeze the trial's page: from here none of its scripts (timers, handlers) runs,
        // so nothing it writes can outlive the clearing below.
        self.cdp(
            "stopping the page's scripts",
            SetScriptExecutionDisabledParams::new(true),
        )
        .await?;
        // Session storage and the window name belong to the tab, not to the origin's
        // stored data: cleared from the trial's page itself, on its own origin.
        self.eval("sessionStorage.clear(); localStorage.clear(); window.name = ''; true")
            .await?;
        // Leave it for a blank document (no request, no layout: about half the CPU of a
        // page from the server), which needs no script.
        self.guarded(
            "navigating to the blank page",
            self.liveness.call(),
            self.page.goto(NavigateParams::new("about:blank")),
        )
        .await?;
        self.cdp(
            "letting the next page's scripts run",
            SetScriptExecutionDisabledParams::new(false),
        )
        .await?;
        let origin = origin_of(warm_url)?;
        self.cdp(
            "clearing the origin's data",
            ClearDataForOriginParams {
                origin,
                storage_types: "all".into(),
            },
        )
        .await?;
        self.cdp("clearing cookies", ClearBrowserCookiesParams {})
            .await?;
        self.cdp("clearing the HTTP cache", ClearBrowserCacheParams {})
            .await?;
        self.cdp(
            "clearing the navigation history",
            ResetNavigationHistoryParams {},
        )
        .await?;
        Ok(())
    }

    /// Closes the page and disposes of its browser context.
    async fn dispose(mut self) {
        self.watcher.abort();
        let call = self.liveness.call();
        if self.browser_alive.dead().is_some() {
            return;
        }
        let _ = tokio::time::timeout(call, self.page.clone().close()).await;
        if let Some(ctx) = self.context.take() {
            let _ = tokio::time::timeout(call, self.browser.dispose_browser_context(ctx)).await;
        }
    }
}

/// The origin (`scheme://host:port`) of an absolute URL.
fn origin_of(url: &str) -> Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| anyhow!("not an absolute URL: {url}"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    Ok(format!("{scheme}://{host}"))
}

/// A key event's fields: what [`TrialPage::press`] sends.
#[derive(Debug, PartialEq)]
struct KeyChord {
    /// CDP's modifier bit field: Alt 1, Control 2, Meta 4, Shift 8.
    modifiers: i64,
    key: String,
    code: String,
    vk: i64,
    /// The text the key inserts (none while Control, Alt or Meta is held).
    text: Option<String>,
}

/// The key names [`TrialPage::press`] supports, for its error message.
const SUPPORTED_KEYS: &str = "Enter, Tab, Escape, Backspace, Delete, ArrowDown, ArrowUp, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space or one character, optionally after Control+, Alt+, Shift+ or Meta+";

fn key_chord(chord: &str) -> Result<KeyChord> {
    // `Control++` presses `+`: the last `+` is the key when the chord ends in two.
    let (mods, name) = match chord.strip_suffix("++") {
        Some(head) => (head, "+"),
        None => match chord.rsplit_once('+') {
            Some((head, tail)) if !tail.is_empty() => (head, tail),
            _ => ("", chord),
        },
    };
    let mut modifiers = 0;
    for m in mods.split('+').filter(|m| !m.is_empty()) {
        modifiers |= match m {
            "Alt" => 1,
            "Control" => 2,
            "Meta" => 4,
            "Shift" => 8,
            other => {
                bail!("unsupported modifier `{other}` in `{chord}` (supported: {SUPPORTED_KEYS})")
            }
        };
    }
    let named = |code: &str, vk: i64, text: Option<&str>| {
        (
            code.to_string(),
            code.to_string(),
            vk,
            text.map(str::to_string),
        )
    };
    let (key, code, vk, text) = match name {
        "Enter" => named("Enter", 13, Some("\r")),
        "Tab" => named("Tab", 9, None),
        "Escape" => named("Escape", 27, None),
        "Backspace" => named("Backspace", 8, None),
        "Delete" => named("Delete", 46, None),
        "ArrowDown" => named("ArrowDown", 40, None),
        "ArrowUp" => named("ArrowUp", 38, None),
        "ArrowLeft" => named("ArrowLeft", 37, None),
        "ArrowRight" => named("ArrowRight", 39, None),
        "Home" => named("Home", 36, None),
        "End" => named("End", 35, None),
        "PageUp" => named("PageUp", 33, None),
        "PageDown" => named("PageDown", 34, None),
        "Space" | " " => (
            " ".to_string(),
            "Space".to_string(),
            32,
            Some(" ".to_string()),
        ),
        one if one.chars().count() == 1 => {
            let c = one.chars().next().expect("one character");
            let (code, vk) = if c.is_ascii_alphabetic() {
                (
                    format!("Key{}", c.to_ascii_uppercase()),
                    i64::from(c.to_ascii_uppercase() as u8),
                )
            } else if c.is_ascii_digit() {
                (format!("Digit{c}"), i64::from(c as u8))
            } else {
                (String::new(), 0)
            };
            (one.to_string(), code, vk, Some(one.to_string()))
        }
        other => bail!("unsupported key `{other}` (supported: {SUPPORTED_KEYS})"),
    };
    // Holding Control, Alt or Meta makes a key a command, not text.
    let text = if modifiers & (1 | 2 | 4) != 0 {
        None
    } else {
        text
    };
    Ok(KeyChord {
        modifiers,
        key,
        code,
        vk,
        text,
    })
}

fn base64_decode(data: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .context("decoding a screenshot")
}

#[cfg(test)]
mod wrapper_tests {
    use super::*;

    #[test]
    fn key_chords() {
        let enter = key_chord("Enter").unwrap();
        assert_eq!(
            (
                enter.modifiers,
                enter.key.as_str(),
                enter.vk,
                enter.text.as_deref()
            ),
            (0, "Enter", 13, Some("\r"))
        );
        let space = key_chord("Space").unwrap();
        assert_eq!((space.key.as_str(), space.code.as_str()), (" ", "Space"));
        let select_all = key_chord("Control+a").unwrap();
        assert_eq!(
            (
                select_all.modifiers,
                select_all.code.as_str(),
                select_all.vk,
                select_all.text
            ),
            (2, "KeyA", 65, None)
        );
        let shift_tab = key_chord("Shift+Tab").unwrap();
        assert_eq!((shift_tab.modifiers, shift_tab.code.as_str()), (8, "Tab"));
        assert_eq!(key_chord("Control++").unwrap().key, "+");
        assert_eq!(key_chord("+").unwrap().key, "+");
        assert!(key_chord("Hyper+a").is_err());
        assert!(key_chord("F13").is_err());
    }

    #[test]
    fn only_profiles_of_dead_owners_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let names = [
            format!("{PROFILE_PREFIX}{dead}-aB3dEf"),
            format!("{PROFILE_PREFIX}{}-aB3dEf", sleeper.id()),
            format!("{PROFILE_PREFIX}{}-aB3dEf", std::process::id()),
            // An older faultline's, whose owner cannot be told.
            format!("{PROFILE_PREFIX}aB3dEf"),
            format!("other-{dead}-aB3dEf"),
        ];
        for name in &names {
            std::fs::create_dir_all(temp.path().join(name).join("Default")).unwrap();
        }
        remove_stale_profiles(temp.path());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        let left: Vec<bool> = names.iter().map(|n| temp.path().join(n).exists()).collect();
        assert_eq!(left, [false, true, true, true, true], "{names:?}");
    }

    #[test]
    fn a_wrapper_script_resolves_to_the_binary_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("lib").join("chromium-headless-shell");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, b"\x7fELF fake binary").unwrap();
        let wrapper = dir.path().join("chromium-headless-shell");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh -e\n\n{} \"$@\"\n", bin.display()),
        )
        .unwrap();
        assert_eq!(resolve_wrapper(&wrapper), bin);
        // A binary, or a script naming nothing usable, is taken as it is.
        assert_eq!(resolve_wrapper(&bin), bin);
        let opaque = dir.path().join("chromium");
        std::fs::write(&opaque, "#!/bin/sh\nexec $LIBDIR/chromium \"$@\"\n").unwrap();
        assert_eq!(resolve_wrapper(&opaque), opaque);
    }
}
