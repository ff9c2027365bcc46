//! Liveness: noticing at once that the browser, a renderer or a page stopped answering,
//! and naming what failed.
//!
//! The symptom of every browser-side failure is the same: a CDP command was sent and no
//! answer comes. Waiting for chromiumoxide's own 30-second request timeout turned a dead
//! browser into a run that hung. Instead:
//!
//! - every CDP call the harness waits on goes through [`guard`], which races it against
//!   a deadline (from [`Liveness`], derived from the run's timing) and against two
//!   signals ([`Vital`]): the browser's (its process exited, its DevTools connection
//!   closed) and the page's (`Inspector.targetCrashed`, `Target.targetCrashed`, the
//!   target destroyed behind the harness's back). A signal wins at once;
//! - what failed is an [`InfraFailure`] with an [`InfraKind`]: the unit the run's
//!   bounded retries, the `infra_errors` table and the report work in.
//!
//! An infrastructure failure is never a verdict, a detection or a recovery: the item it
//! interrupted is retried (see `experiment::retry`), and when it fails for good it is
//! listed, not scored.

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;

/// What kind of infrastructure failure interrupted a trial or an episode: part of the
/// vocabulary (its names are stored in `infra_errors.kind`).
pub use faultline_tasks::InfraKind;

/// An infrastructure failure: its kind and what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {reason}")]
pub struct InfraFailure {
    /// What failed.
    pub kind: InfraKind,
    /// What happened, in one line (stored and reported).
    pub reason: String,
}

impl InfraFailure {
    /// A failure of `kind` with its reason.
    pub fn new(kind: InfraKind, reason: impl Into<String>) -> InfraFailure {
        InfraFailure {
            kind,
            reason: reason.into(),
        }
    }

    /// The failure an error carries anywhere in its chain, if it carries one.
    pub fn find(e: &anyhow::Error) -> Option<&InfraFailure> {
        e.chain().find_map(|c| c.downcast_ref::<InfraFailure>())
    }
}

/// The deadlines of the harness's waits. Not part of what a run *is*: they decide when
/// the harness gives up on a hung browser, never what a working trial measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Liveness {
    /// One CDP call: an input event, a screenshot, a JS evaluation. A JS evaluation past
    /// it means the page's main thread is hung (an infinite loop): `unresponsive`.
    pub call_timeout_ms: u64,
    /// The wait for a fresh page from the pool (a new browser context and its renderer).
    pub page_timeout_ms: u64,
    /// Further attempts of an item interrupted by an infrastructure failure.
    pub retries: u32,
    /// New browsers a run may start after its browser died.
    pub browser_restarts: u32,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            call_timeout_ms: 10_000,
            page_timeout_ms: 20_000,
            retries: 2,
            browser_restarts: 5,
        }
    }
}

impl Liveness {
    /// The deadline of one CDP call.
    pub fn call(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// The deadline of a navigation: the run's navigation timeout plus one call.
    pub fn navigation(&self, navigation_timeout_ms: u64) -> Duration {
        Duration::from_millis(navigation_timeout_ms + self.call_timeout_ms)
    }

    /// The deadline of the wait for a fresh page.
    pub fn page(&self) -> Duration {
        Duration::from_millis(self.page_timeout_ms)
    }
}

/// The sending half of a [`Vital`]: says once that something died, and why.
#[derive(Debug, Clone)]
pub struct VitalSender(watch::Sender<Option<String>>);

impl VitalSender {
    /// Marks the watched thing dead (the first reason is kept).
    pub fn dead(&self, reason: impl Into<String>) {
        let reason = reason.into();
        self.0.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }
}

/// Whether something (a browser, a page) is still alive, readable at any time and
/// awaitable: [`Vital::died`] returns as soon as it is marked dead.
#[derive(Debug, Clone)]
pub struct Vital(watch::Receiver<Option<String>>);

impl Vital {
    /// A new signal, alive.
    pub fn new() -> (VitalSender, Vital) {
        let (tx, rx) = watch::channel(None);
        (VitalSender(tx), Vital(rx))
    }

    /// Why it died, if it did.
    pub fn dead(&self) -> Option<String> {
        self.0.borrow().clone()
    }

    /// Waits until it is marked dead; never returns if its sender goes away first (a
    /// closed page's watcher ending is not a death).
    pub async fn died(&self) -> String {
        let mut rx = self.0.clone();
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return r;
            }
            if rx.changed().await.is_err() {
                if let Some(r) = rx.borrow().clone() {
                    return r;
                }
                return std::future::pending().await;
            }
        }
    }
}

/// Races `call` (described by `what`) against `limit` and the browser's and the page's
/// signals. A death wins at once; a call that outlives `limit` is `unresponsive`; a call
/// that fails while the browser or page is found dead is blamed on that death.
pub async fn guard<T, E>(
    what: &str,
    limit: Duration,
    browser: &Vital,
    page: Option<&Vital>,
    call: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T>
where
    E: Into<anyhow::Error>,
{
    let page_died = async {
        match page {
            Some(p) => p.died().await,
            None => std::future::pending().await,
        }
    };
    let died = |kind: InfraKind, why: String| {
        anyhow::Error::new(InfraFailure::new(kind, format!("{why} (while {what})")))
    };
    tokio::select! {
        biased;
        why = browser.died() => Err(died(InfraKind::BrowserDied, why)),
        why = page_died => Err(died(InfraKind::RendererCrashed, why)),
        r = tokio::time::timeout(limit, call) => match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if let Some(why) = browser.dead() {
                    Err(died(InfraKind::BrowserDied, why))
                } else if let Some(why) = page.and_then(Vital::dead) {
                    Err(died(InfraKind::RendererCrashed, why))
                } else {
                    Err(e.into())
                }
            }
            Err(_) => Err(anyhow::Error::new(InfraFailure::new(
                InfraKind::Unresponsive,
                format!("no answer within {} ms while {what}", limit.as_millis()),
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_death_interrupts_a_pending_call_at_once_and_is_named() {
        let (tx, browser) = Vital::new();
        let started = std::time::Instant::now();
        let call = std::future::pending::<Result<(), anyhow::Error>>();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.dead("the browser process exited");
        });
        let e = guard(
            "taking a screenshot",
            Duration::from_secs(30),
            &browser,
            None,
            call,
        )
        .await
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        let f = InfraFailure::find(&e).unwrap();
        assert_eq!(f.kind, InfraKind::BrowserDied);
        assert!(f.reason.contains("taking a screenshot"), "{f}");
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_is_unresponsive_and_a_closed_page_is_not_a_death() {
        let (_btx, browser) = Vital::new();
        let (ptx, page) = Vital::new();
        drop(ptx);
        let call = std::future::pending::<Result<(), anyhow::Error>>();
        let e = guard(
            "evaluating",
            Duration::from_millis(50),
            &browser,
            Some(&page),
            call,
        )
        .await
        .unwrap_err();
        assert_eq!(
            InfraFailure::find(&e).unwrap().kind,
            InfraKind::Unresponsive
        );
        let ok = guard(
            "evaluating",
            Duration::from_millis(50),
            &browser,
            Some(&page),
            async { Ok::<_, anyhow::Error>(7) },
        )
        .await
        .unwrap();
        assert_eq!(ok, 7);
    }
}
