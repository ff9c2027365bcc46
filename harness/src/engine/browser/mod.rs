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
//!
//! The pieces, one room each:
//!
//! - `chromium`: which Chromium to start (a configured path,
//!   `$FAULTLINE_CHROMIUM` or the PATH), a wrapper script resolved to its binary;
//! - `launch`: starting it in its own process group and the [`BrowserHandle`] that owns
//!   it, its liveness signal and its shutdown;
//! - `profile`: the profile directories, named for the harness's pid;
//! - `pool`: the [`PagePool`] ([`PoolSize`], [`Isolation`]): pages opened ahead of time
//!   by one task, one at a time;
//! - `open`: opening one page (its context, its target, the watcher of its renderer);
//! - `page`: the [`TrialPage`] and its guarded CDP calls, navigation and evaluation;
//! - `ready`: the waits on a page ([`Readiness`]: loaded, stable, overdue timers run);
//! - `input`: trusted mouse, wheel and keyboard events;
//! - `capture`: a screenshot and every frame's DOM, bracketed by the page clock
//!   ([`Capture`]);
//! - `reset`: a page's end: reset and handed back to its pool, or closed.
//!
//! Liveness: the browser's death is noticed at once, not at the next timeout. A task
//! waits on the process and another drives the DevTools connection; either end marks the
//! browser dead ([`crate::engine::liveness::Vital`]). Each page has its own signal, set
//! when its renderer crashes or its target goes away. Every CDP call a page makes has a
//! deadline and is raced against both signals, and a call left unanswered for long parks
//! its item (see [`crate::engine::waiting`]). A dead browser opens no more pages.

mod capture;
mod chromium;
mod input;
mod launch;
mod open;
mod page;
mod pool;
mod profile;
mod ready;
mod reset;

pub use capture::Capture;
pub use chromium::{find_chromium, resolve_wrapper};
pub use launch::BrowserHandle;
pub use page::{Shot, TrialPage};
pub use pool::{Isolation, PagePool, PoolSize, SiteOrigins};
pub use profile::{remove_stale_profiles, PROFILE_PREFIX};
pub use ready::Readiness;
