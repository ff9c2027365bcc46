//! Launching Chromium and watching it: the [`BrowserHandle`], the browser's process
//! group, its liveness signal and its shutdown.

use super::profile::{remove_stale_profiles, PROFILE_PREFIX};
use crate::engine::liveness::{Liveness, Vital};
use anyhow::{anyhow, Context, Result};
use chromiumoxide::Browser;
use faultline_devtools::sessions::SessionFaults;
use faultline_devtools::{Proxy, Tamper};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command as Process;

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
    // A cookie belongs to its origin's port, as storage does: a reused page's items
    // alternate between two ports of the fixture server (see `SiteOrigins`).
    "--enable-features=EnablePortBoundCookies",
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
    pub(super) browser: Arc<Browser>,
    pid: u32,
    version: String,
    /// The browser's DevTools WebSocket URL (`ws://127.0.0.1:PORT/devtools/browser/...`).
    devtools: String,
    /// The DevTools proxy the connection goes through, when faults on the protocol are
    /// armed per page: held, never read, and stopped when the handle is dropped.
    _proxy: Option<Proxy>,
    /// The profile directory, removed on drop once the browser's processes are gone.
    profile: PathBuf,
    handler: tokio::task::JoinHandle<()>,
    /// Owns the child process and waits for its exit; aborting it kills the child.
    reaper: tokio::task::JoinHandle<()>,
    pub(super) alive: Vital,
    pub(super) liveness: Liveness,
}

/// The Chromium command line: faultline's switches and any extra ones, the profile
/// directory, stderr piped (it says where DevTools listens), no secret of ours.
fn chromium_command(executable: &Path, profile: &Path) -> Process {
    let mut cmd = Process::new(executable);
    // Extra switches for odd machines, space-separated.
    let extra = std::env::var("FAULTLINE_CHROMIUM_ARGS").unwrap_or_default();
    cmd.args(CHROMIUM_ARGS)
        .args(extra.split_whitespace())
        .arg(format!("--user-data-dir={}", profile.display()))
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
    cmd
}

/// Reads Chromium's stderr until it says where DevTools listens (20 s at most), then
/// keeps draining it so Chromium never blocks on a full pipe.
async fn devtools_url(child: &mut tokio::process::Child) -> Result<String> {
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
    Ok(ws)
}

impl BrowserHandle {
    /// Starts Chromium with a fresh profile directory and connects to it, with the
    /// default deadlines.
    pub async fn launch(executable: &Path) -> Result<BrowserHandle> {
        Self::launch_with(executable, Liveness::default()).await
    }

    /// Starts Chromium with a fresh profile directory and connects to it directly, with
    /// `liveness` deadlines (through a DevTools proxy: [`Self::launch_through`]).
    pub async fn launch_with(executable: &Path, liveness: Liveness) -> Result<BrowserHandle> {
        Self::launch_through(executable, liveness, None).await
    }

    /// Starts Chromium with a fresh profile directory and connects to it; its CDP calls
    /// get the deadlines of `liveness`. With `protocol`, the connection goes through a
    /// DevTools proxy on loopback whose tamper is `protocol`, so a fault armed on a
    /// page's session changes that page's messages (see [`crate::engine::protocol`]).
    pub async fn launch_through(
        executable: &Path,
        liveness: Liveness,
        protocol: Option<Arc<SessionFaults>>,
    ) -> Result<BrowserHandle> {
        let temp = std::env::temp_dir();
        remove_stale_profiles(&temp);
        let profile = tempfile::Builder::new()
            .prefix(&format!("{PROFILE_PREFIX}{}-", std::process::id()))
            .tempdir_in(&temp)
            .context("creating a Chromium profile directory")?;
        let cmd = chromium_command(executable, profile.path());
        let mut child = crate::children::spawn_async(cmd)
            .await
            .with_context(|| format!("starting Chromium at {}", executable.display()))?;
        let ws = devtools_url(&mut child).await?;

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
        let proxy = match protocol {
            None => None,
            Some(faults) => match start_proxy(&ws, faults).await {
                Ok(p) => Some(p),
                Err(e) => {
                    reaper.abort();
                    // SAFETY: killpg only sends a signal; the group is the one we created.
                    unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
                    return Err(e);
                }
            },
        };
        // Through the proxy: the same path on the proxy's address.
        let connect_to = match &proxy {
            Some(p) => proxied_url(&ws, p.addr()),
            None => ws.clone(),
        };
        let (browser, mut handler) = match Browser::connect(connect_to).await {
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
            devtools: ws,
            _proxy: proxy,
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

    /// Where the browser's DevTools listen (`127.0.0.1:PORT`, its HTTP discovery and
    /// WebSocket endpoints): what a DevTools proxy relays to.
    pub fn devtools_addr(&self) -> Option<std::net::SocketAddr> {
        devtools_addr_of(&self.devtools)
    }

    /// The browser's product string, e.g. `Chrome/156.0.8078.114`.
    pub fn version(&self) -> &str {
        &self.version
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

/// A DevTools proxy in front of the browser at `ws`, tampering through `faults`.
async fn start_proxy(ws: &str, faults: Arc<SessionFaults>) -> Result<Proxy> {
    let upstream = devtools_addr_of(ws)
        .ok_or_else(|| anyhow!("Chromium's DevTools URL `{ws}` names no address"))?;
    Proxy::start(upstream, Some(faults as Arc<dyn Tamper>))
        .await
        .context("starting the DevTools proxy in front of Chromium")
}

/// `ws` (`ws://HOST:PORT/devtools/browser/ID`) with the proxy's address in place of the
/// browser's.
fn proxied_url(ws: &str, proxy: std::net::SocketAddr) -> String {
    let path = ws
        .strip_prefix("ws://")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    format!("ws://{proxy}{path}")
}

/// The `127.0.0.1:PORT` of a DevTools WebSocket URL.
fn devtools_addr_of(ws: &str) -> Option<std::net::SocketAddr> {
    let rest = ws.strip_prefix("ws://")?;
    rest.split('/').next()?.parse().ok()
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
