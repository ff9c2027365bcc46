//! The engine: everything that touches a real Chromium, and nothing about which
//! experiment is being run.
//!
//! From the bottom up:
//!
//! - [`browser`]: launching Chromium (its own process group, a private profile), the pool
//!   of fresh pages (one browser context each) and the CDP calls a trial makes;
//! - [`session`]: one page under one ledger scope with the fault's site side armed — the
//!   unit a trial, an episode and both recorders work in. It is a guard: however the work
//!   ends, the scope is disarmed, its ledger released and the page closed;
//! - [`roundtrip`]: one reply through the four stages, each in its own module
//!   ([`roundtrip::parse`], [`roundtrip::execute`], [`roundtrip::feedback`],
//!   [`roundtrip::observe`]), with the armed fault offered every hook;
//! - [`scorer`]: the only holder of the ledger key; reads the ledger after the policies
//!   have judged;
//! - [`trial`]: one detection trial (replay, every policy judges, then score);
//! - [`episode`]: one recovery episode (replay, then the agent acts on the policy's
//!   feedback until it stops or runs out of budget).

pub mod browser;
pub mod episode;
pub mod roundtrip;
pub mod scorer;
pub mod session;
pub mod trial;

pub use scorer::Scorer;
pub use session::Session;

use browser::{BrowserHandle, PagePool};
use faultline_policies::{Registry, VerificationPolicy};
use faultline_sites::FixtureServer;
use faultline_tasks::Size;
use roundtrip::Timing;
use std::sync::Arc;

/// What every session of a run shares: the browser and its pool of fresh pages, the
/// fixture server, the scorer (the ledger key), the detection policies and the timing.
pub struct Engine {
    /// The running Chromium and its CDP connection.
    pub browser: Arc<BrowserHandle>,
    /// Fresh pages opened ahead of time, one browser context each.
    pub pages: PagePool,
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
    /// The viewport every page is laid out for.
    pub viewport: Size,
}
