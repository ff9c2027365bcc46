//! Bounded retries of an item interrupted by an infrastructure failure, apart from
//! everything that is measured.
//!
//! A trial or an episode that fails because the browser died, its renderer crashed
//! (when no fault of the catalogue crashed it), a page stopped answering, the fixture
//! page could not be loaded or the model endpoint could not be reached has measured
//! nothing. It is tried again, up to `liveness.retries` more times (a dead browser is
//! first replaced, within `liveness.browser_restarts` per run; a dead model endpoint is
//! not retried within the run: the agent already retried it with backoff). Every failed
//! attempt is stored in `infra_errors` under the policy name [`HARNESS`], with its kind,
//! reason and attempt number:
//!
//! - an item that then succeeds is stored as usual, with its failed attempts in the same
//!   transaction; its result is exactly what an undisturbed run gives (a fresh page, the
//!   same seed);
//! - an item that fails every attempt is not stored as a trial or an episode (so it is
//!   in no denominator) and is listed as a final infrastructure failure; a resumed run
//!   tries it again.
//!
//! Neither is ever a verdict, a detection, a recovery or a false alarm. Every failed
//! attempt, whatever its kind, is also said on stderr as one line (the item, the
//! attempt, the kind and reason, and what happens next), so a run that is retrying
//! never looks healthy on the console.
//!
//! What the failed attempts of a stored item cost (their wall and CPU time, a browser
//! restart included) is stored with the item's costs as the stage `retried`, outside the
//! item's own duration; an item that fails every attempt has no cost rows.

use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::liveness::{InfraFailure, InfraKind};
use crate::engine::{Engine, Generation};
use anyhow::Result;
use faultline_analysis::db::InfraErrorRow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The `policy` of an `infra_errors` row the harness itself (not a policy) failed on.
pub const HARNESS: &str = faultline_analysis::infra::HARNESS;

/// How an item ended after its attempts.
pub enum Attempted<R> {
    /// It finished (possibly after failed attempts, listed, whose cost is the third
    /// field's [`Stage::Retried`]).
    Done(R, Vec<InfraErrorRow>, Box<StageCosts>),
    /// Every attempt failed for an infrastructure reason (each listed).
    Failed(Vec<InfraErrorRow>),
}

/// A shared page's failed attempts as one of the items it served stores them: the same
/// failures under `key` (a page that failed for good fails every item of its group).
pub fn failures_for(failures: &[InfraErrorRow], key: &str) -> Vec<InfraErrorRow> {
    failures
        .iter()
        .map(|f| InfraErrorRow {
            item_key: key.to_string(),
            ..f.clone()
        })
        .collect()
}

/// Runs `attempt` for item `key` until it succeeds, fails for a reason that is not worth
/// retrying now, or has been tried `1 + retries` times. Fails only when the browser died
/// and no new one may be started (the run stops; `--resume` continues it).
pub async fn with_retries<R, Fut>(
    env: &Arc<Engine>,
    key: &str,
    retries: u32,
    mut attempt: impl FnMut() -> Fut,
) -> Result<Attempted<R>>
where
    Fut: Future<Output = Result<R>>,
{
    let mut failures = Vec::new();
    let mut retried = Box::<StageCosts>::default();
    for n in 1..=retries + 1 {
        let generation = env.browsers.current();
        let span = Span::start(Stage::Retried);
        let e = match attempt().await {
            Ok(r) => return Ok(Attempted::Done(r, failures, retried)),
            Err(e) => e,
        };
        let f = classify(&e, &generation).await;
        tracing::warn!(item = key, attempt = n, kind = %f.kind, "{}", f.reason);
        failures.push(InfraErrorRow {
            item_key: key.to_string(),
            policy: HARNESS.to_string(),
            kind: f.kind.into(),
            reason: f.reason.clone(),
            stderr_tail: String::new(),
            attempt: n,
        });
        // The agent already retried with backoff; a resumed run tries again.
        let gives_up = n == retries + 1 || f.kind == InfraKind::AgentEndpoint;
        let mut next = Vec::new();
        if f.kind == InfraKind::BrowserDied {
            env.browsers.restart(generation.id).await?;
            next.push(format!(
                "started a new browser (restart {} of at most {})",
                env.browsers.restarts(),
                env.liveness.browser_restarts
            ));
        }
        next.push(match gives_up {
            true => "given up on; --resume tries it again".to_string(),
            false => "trying again".to_string(),
        });
        eprintln!("{}", attempt_line(key, n, &f, &next.join("; ")));
        if gives_up {
            break;
        }
        span.end(&mut retried);
    }
    Ok(Attempted::Failed(failures))
}

/// The line said on stderr for every failed attempt, whatever its kind: the item, the
/// attempt (as stored in `infra_errors`), the kind and reason, and what happens next.
fn attempt_line(key: &str, attempt: u32, f: &InfraFailure, next: &str) -> String {
    format!(
        "faultline: {key}: attempt {attempt} failed ({}): {}; {next}",
        f.kind, f.reason
    )
}

/// What an attempt's error was. A browser found dead (now, or within a short grace: the
/// process exit can be noticed a moment after the failed call) explains any error; an
/// error that names no infrastructure failure is the harness's own.
async fn classify(e: &anyhow::Error, generation: &Generation) -> InfraFailure {
    let found = InfraFailure::find(e).cloned();
    // The agent's failures say nothing about the browser.
    if let Some(f) = found
        .as_ref()
        .filter(|f| matches!(f.kind, InfraKind::AgentEndpoint | InfraKind::AgentProcess))
    {
        return f.clone();
    }
    let vital = generation.handle.vital();
    if found.as_ref().map(|f| f.kind) != Some(InfraKind::BrowserDied) {
        let _ = tokio::time::timeout(Duration::from_millis(300), vital.died()).await;
    }
    if let Some(why) = vital.dead() {
        return match found {
            Some(f) if f.kind == InfraKind::BrowserDied => f,
            _ => InfraFailure::new(InfraKind::BrowserDied, format!("{why} ({e:#})")),
        };
    }
    match found {
        Some(f) => InfraFailure::new(f.kind, format!("{e:#}")),
        None => InfraFailure::new(InfraKind::Harness, format!("{e:#}")),
    }
}
