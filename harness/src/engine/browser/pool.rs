//! The page pool: trial pages opened ahead of time, and under
//! [`Isolation::ReusedContext`] reset and handed out again.

use super::launch::BrowserHandle;
use super::open::open_trial_page;
use super::page::{Reuse, TrialPage};
use crate::engine::liveness::{guard, Liveness, Vital};
use anyhow::{anyhow, Result};
use faultline_sites::FixtureServer;
use faultline_tasks::Size;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

impl BrowserHandle {
    /// A pool of pages, each in its own new browser context and already showing the
    /// blank page of the first of `origins` (the fixture server's), opened ahead of time. A
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
        origins: SiteOrigins,
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
            let mut counts = Counts {
                ahead,
                eager,
                capacity,
                opened: 0,
            };
            // A dead browser opens no more pages: the pool says why once and stops.
            while alive.dead().is_none() {
                if let Some(limit) = &limit {
                    wait_for_demand(&tx, limit, &demand, counts).await;
                }
                let permit = match &limit {
                    Some(limit) => match limit.clone().acquire_owned().await {
                        Ok(p) => Some(p),
                        Err(_) => return,
                    },
                    None => None,
                };
                let page = open_trial_page(browser.clone(), &alive, liveness, viewport, &origins)
                    .await
                    .map(|mut page| {
                        page.reuse = permit.map(|permit| Reuse {
                            pool: recycle_tx.clone(),
                            origins: origins.clone(),
                            _permit: permit,
                        });
                        page
                    });
                counts.opened += 1;
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
}

/// What the reused pool's opener counts: pages to open at first (`ahead`), pages for the
/// items at work and the spares (`eager`), the queue's room (`capacity`) and the pages
/// opened so far.
#[derive(Clone, Copy)]
struct Counts {
    ahead: usize,
    eager: usize,
    capacity: usize,
    opened: usize,
}

/// Reused pages come back: past the first `ahead`, a new one is opened only when the
/// spares run low and fewer than `eager` (plus the parked items' pages) are open. Waits
/// (woken each time a page is taken) until that is so.
async fn wait_for_demand<T>(
    tx: &tokio::sync::mpsc::Sender<T>,
    limit: &tokio::sync::Semaphore,
    demand: &tokio::sync::Notify,
    c: Counts,
) {
    loop {
        let spares = tx.max_capacity() - tx.capacity();
        let open = c.capacity - limit.available_permits();
        let room = c.eager + crate::engine::waiting::parked_in_process();
        if c.opened < c.ahead || (spares < SPARE_PAGES && open < room) {
            break;
        }
        demand.notified().await;
    }
}

/// Where a pool's pages load their items from: the fixture server's one site under two
/// origins (its two ports, see [`FixtureServer::twin_base_url`]).
///
/// A reused page takes its items from the two in turn ([`TrialPage::origin`]). An origin's
/// data can only be cleared for good once none of its documents is alive: a document's
/// last scripts (a timer, `pagehide`) run while the next one loads, and write into its
/// own origin. So the reset after an item clears the *other* origin, whose last document
/// ended when this item's page loaded, and the next item loads from that one. What the
/// item just finished writes on its way out lands in its own origin, which the next item
/// does not read (cookies too: the browser binds them to their port) and the reset after
/// it clears. Both origins being one site, the page keeps its renderer process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteOrigins {
    first: String,
    second: String,
    warm_url: String,
}

impl SiteOrigins {
    /// `server`'s two origins.
    pub fn of(server: &FixtureServer) -> SiteOrigins {
        SiteOrigins {
            first: server.base_url(),
            second: server.twin_base_url(),
            warm_url: format!("{}/warm", server.base_url()),
        }
    }

    /// No site: new pages show `about:blank`, for a pool of fresh pages whose callers
    /// navigate where they like (a viewer page, say). A reused page cannot be reset
    /// without a site's two origins: under [`Isolation::ReusedContext`] every page of
    /// such a pool is closed after its item.
    pub fn blank() -> SiteOrigins {
        SiteOrigins {
            first: "about:blank".into(),
            second: "about:blank".into(),
            warm_url: "about:blank".into(),
        }
    }

    /// The origin a new page takes its first item from (the server's
    /// [`FixtureServer::base_url`]).
    pub fn first(&self) -> &str {
        &self.first
    }

    /// The blank page a new page shows until its first item: on the first origin, so
    /// that the item's own navigation is same-origin.
    pub fn warm_url(&self) -> &str {
        &self.warm_url
    }

    /// Whether these are a site's two origins (not [`SiteOrigins::blank`]).
    pub(super) fn is_site(&self) -> bool {
        self.first != self.second
    }

    /// The origin that is not `origin`.
    pub(super) fn other(&self, origin: &str) -> &str {
        if origin == self.first {
            &self.second
        } else {
            &self.first
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
    /// A page in its own context serves trial after trial, taking them from the
    /// server's two origins in turn ([`SiteOrigins`]). Between two trials the pointer
    /// is moved off the page, the viewport restored (when a fault moved it) and the
    /// page's scripts stopped until its next trial; the data of the origin the next trial
    /// loads from (local storage, IndexedDB, Cache Storage, service workers), the
    /// context's cookies and the page's history are cleared, and the next trial's first
    /// document empties its origin's session storage and the window name before its own
    /// scripts run. The HTTP cache holds nothing to clear: every response of the fixture
    /// server is `no-store`. A page that crashed, hung or fails any step of that is
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
        let mut page = guard(
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
        .await?;
        // A reset page waited with its scripts stopped; its next document needs them.
        page.thaw().await?;
        Ok(page)
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        self.opener.abort();
    }
}
