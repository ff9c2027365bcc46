//! The page pool: trial pages opened ahead of time, and under
//! [`Isolation::ReusedContext`] reset and handed out again.

use super::launch::BrowserHandle;
use super::open::open_trial_page;
use super::page::{Reuse, TrialPage};
use crate::engine::liveness::{guard, Liveness, Vital};
use anyhow::{anyhow, Result};
use faultline_tasks::Size;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

impl BrowserHandle {
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
