//! The engine: everything that touches a real Chromium, and nothing about which
//! experiment is being run.
//!
//! From the bottom up:
//!
//! - [`cost`]: what each stage of a trial or an episode cost (wall and CPU), and what a
//!   phase cost (CPU of faultline and Chromium, peak memory);
//! - [`browser`]: launching Chromium (its own process group, a private profile), the pool
//!   of fresh pages (one browser context each) and the CDP calls a trial makes;
//! - [`session`]: one page under one ledger scope with the fault's site side armed — the
//!   unit a trial, an episode and both recorders work in. It is a guard: however the work
//!   ends, the scope is disarmed, its ledger released and the page closed;
//! - [`timing`]: the settle and navigation waits of the round trip, read by the browser
//!   too;
//! - [`roundtrip`]: one reply through the four stages, each in its own module
//!   ([`roundtrip::parse`], [`roundtrip::execute`], [`roundtrip::feedback`],
//!   [`roundtrip::observe`]), with the armed fault offered every hook;
//! - [`scorer`]: the only holder of the ledger key; reads the ledger after the policies
//!   have judged;
//! - [`trial`]: one detection trial (replay, every policy judges, then score);
//! - [`episode`]: one recovery episode (replay, then the agent acts on the policy's
//!   feedback until it stops or runs out of budget);
//! - [`protocol`]: faults on the DevTools protocol, armed on one page's session of a
//!   browser connection that goes through faultline's DevTools proxy;
//! - [`waiting`]: an item whose CDP call goes unanswered for long counts as waiting, not
//!   working, so its phase can start another item in its place.

pub mod browser;
pub mod cost;
pub mod episode;
pub mod judge;
pub mod liveness;
pub mod protocol;
pub mod roundtrip;
pub mod scorer;
pub mod session;
pub mod timing;
pub mod trial;
pub mod waiting;

pub use scorer::Scorer;
pub use session::Session;

use anyhow::{anyhow, Result};
use browser::{BrowserHandle, Isolation, PagePool, PoolSize, SiteOrigins, TrialPage};
use faultline_devtools::sessions::SessionFaults;
use faultline_policies::{Registry, VerificationPolicy};
use faultline_sites::FixtureServer;
use faultline_tasks::Size;
use liveness::Liveness;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use timing::Timing;

/// What every session of a run shares: the browser and its pool of fresh pages, the
/// fixture server, the scorer (the ledger key), the detection policies and the timing.
pub struct Engine {
    /// The browser and its pool of fresh pages, replaced when the browser dies.
    pub browsers: Browsers,
    /// The fixture server on loopback: the task pages, their ledgers and the faults' site side.
    pub server: Arc<FixtureServer>,
    /// Reads ledgers and judges truth (the only holder of the ledger key).
    pub scorer: Arc<Scorer>,
    /// The policies every detection trial is judged by.
    pub policies: Arc<Vec<Box<dyn VerificationPolicy>>>,
    /// Every policy the run may name, built-in and external (recovery builds its policies
    /// here, so an external policy's processes are shared by both phases).
    pub policy_registry: Registry,
    /// The round trip's waits.
    pub timing: Timing,
    /// Deadlines, retries and browser restarts.
    pub liveness: Liveness,
    /// The viewport every page is laid out for.
    pub viewport: Size,
}

impl Engine {
    /// A fresh page from the current browser's pool.
    pub async fn take_page(&self) -> Result<TrialPage> {
        self.browsers.current().pages.take().await
    }
}

/// One browser and its pool of fresh pages.
pub struct Generation {
    /// 1 for the run's first browser, then one more per restart.
    pub id: u64,
    /// The running Chromium and its CDP connection.
    pub handle: BrowserHandle,
    /// Fresh pages opened ahead of time on this browser, one browser context each.
    pub pages: PagePool,
}

/// The run's browser, restarted (a bounded number of times) when it dies.
///
/// Items hold the [`Generation`] they started on; when one of them finds its browser
/// dead it asks for a restart *of that generation*: the first to ask starts a new
/// browser and a new pool, the others find it already done.
pub struct Browsers {
    current: std::sync::Mutex<Arc<Generation>>,
    restart: tokio::sync::Mutex<()>,
    restarts: AtomicU32,
    next_id: AtomicU64,
    /// How to start another browser; `None` when this one cannot be replaced.
    relaunch: Option<Relaunch>,
    /// The faults armed per page session, when the browser connection goes through the
    /// DevTools proxy (`[browser] devtools_proxy`); kept across restarts.
    protocol: Option<Arc<SessionFaults>>,
}

/// What starting a replacement browser takes.
struct Relaunch {
    executable: PathBuf,
    liveness: Liveness,
    viewport: Size,
    pool: PoolSize,
    origins: SiteOrigins,
    isolation: Isolation,
    protocol: Option<Arc<SessionFaults>>,
}

impl Browsers {
    /// Starts Chromium at `executable` with a pool of pages (sized `pool`) showing
    /// the blank page of `origins`, keeping trials apart by `isolation`; a dead browser
    /// is replaced up to `liveness.browser_restarts` times. With `protocol`, every
    /// browser's connection goes through a DevTools proxy tampering through it (see
    /// [`protocol`]).
    pub async fn launch(
        executable: PathBuf,
        liveness: Liveness,
        viewport: Size,
        pool: PoolSize,
        origins: SiteOrigins,
        isolation: Isolation,
        protocol: Option<Arc<SessionFaults>>,
    ) -> Result<Browsers> {
        let relaunch = Relaunch {
            executable,
            liveness,
            viewport,
            pool,
            origins,
            isolation,
            protocol: protocol.clone(),
        };
        let first = relaunch.start(1).await?;
        Ok(Browsers {
            current: std::sync::Mutex::new(Arc::new(first)),
            restart: tokio::sync::Mutex::new(()),
            restarts: AtomicU32::new(0),
            next_id: AtomicU64::new(2),
            relaunch: Some(relaunch),
            protocol,
        })
    }

    /// One browser that is never replaced (for tests and tools).
    pub fn fixed(handle: BrowserHandle, pages: PagePool) -> Browsers {
        Browsers {
            current: std::sync::Mutex::new(Arc::new(Generation {
                id: 1,
                handle,
                pages,
            })),
            restart: tokio::sync::Mutex::new(()),
            restarts: AtomicU32::new(0),
            next_id: AtomicU64::new(2),
            relaunch: None,
            protocol: None,
        }
    }

    /// The browser in use now.
    pub fn current(&self) -> Arc<Generation> {
        self.current.lock().expect("not poisoned").clone()
    }

    /// The faults armed per page session, when the connection goes through the proxy.
    pub fn protocol(&self) -> Option<&Arc<SessionFaults>> {
        self.protocol.as_ref()
    }

    /// Browsers started after the first one died.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Replaces generation `dead` with a new browser and pool, unless another item
    /// already did. Fails when the run's restarts are used up.
    pub async fn restart(&self, dead: u64) -> Result<()> {
        let _one_at_a_time = self.restart.lock().await;
        let old = self.current();
        if old.id != dead {
            return Ok(());
        }
        let Some(relaunch) = &self.relaunch else {
            return Err(anyhow!(
                "the browser died and this engine cannot start another"
            ));
        };
        let n = self.restarts.load(Ordering::SeqCst);
        if n >= relaunch.liveness.browser_restarts {
            return Err(anyhow!(
                "the browser died again after {n} restart(s) (liveness.browser_restarts = {}); giving up: --resume continues the run",
                relaunch.liveness.browser_restarts
            ));
        }
        // The old browser's processes go first, so its profile directory can go too.
        old.handle.shutdown().await;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let new = relaunch.start(id).await?;
        self.restarts.fetch_add(1, Ordering::SeqCst);
        *self.current.lock().expect("not poisoned") = Arc::new(new);
        Ok(())
    }

    /// Closes the current browser and waits for its processes to exit.
    pub async fn shutdown(self) {
        let current = self.current();
        current.handle.shutdown().await;
    }
}

impl Relaunch {
    async fn start(&self, id: u64) -> Result<Generation> {
        let handle =
            BrowserHandle::launch_through(&self.executable, self.liveness, self.protocol.clone())
                .await?;
        let pages = handle.page_pool(
            self.viewport,
            self.pool,
            self.origins.clone(),
            self.isolation,
        );
        Ok(Generation { id, handle, pages })
    }
}
