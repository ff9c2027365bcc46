//! What both phases share: the items not yet stored, the scheduler and progress.
//!
//! A phase's items are fixed before anything runs; those already stored (resume) are
//! skipped; the rest run at most `jobs` at once, each finished result handed to the
//! phase's store function in completion order (storage order does not affect results).

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Counts and wall time of one phase.
#[derive(Debug, Clone)]
pub struct PhaseSummary {
    pub total: usize,
    pub run: usize,
    pub skipped: usize,
    pub wall: Duration,
}

/// Of a phase's `items` (fixed before anything runs), those not yet stored, at most
/// `max`: returns (total, already stored, to run).
pub fn pending<T>(
    items: Vec<T>,
    key: impl Fn(&T) -> &String,
    finished: &BTreeSet<String>,
    max: Option<usize>,
) -> (usize, usize, Vec<T>) {
    let total = items.len();
    let todo: Vec<T> = items
        .into_iter()
        .filter(|i| !finished.contains(key(i)))
        .collect();
    let skipped = total - todo.len();
    let todo = todo.into_iter().take(max.unwrap_or(usize::MAX)).collect();
    (total, skipped, todo)
}

fn progress_bar(show: bool, what: &str, total: usize, skipped: usize) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}}  {{elapsed}} elapsed, ETA {{eta}}"
        ))
        .expect("valid template"),
    );
    bar.set_position(skipped as u64);
    bar.reset_eta();
    bar
}

/// Runs a phase: `work` on every item with at most `jobs` at once, each finished result
/// handed to `store` in completion order (storage order does not affect results), with a
/// progress bar over the phase's `(total, already stored)`.
pub async fn run_phase<S, R, Fut>(
    progress: bool,
    name: &str,
    (total, skipped): (usize, usize),
    items: Vec<S>,
    jobs: usize,
    work: impl Fn(S) -> Fut,
    mut store: impl FnMut(R) -> Result<()>,
) -> Result<PhaseSummary>
where
    Fut: std::future::Future<Output = Result<R>> + Send + 'static,
    R: Send + 'static,
{
    let bar = progress_bar(progress, name, total, skipped);
    let started = Instant::now();
    let mut run = 0usize;
    let mut queue = items.into_iter();
    let mut running: JoinSet<Result<R>> = JoinSet::new();
    for item in queue.by_ref().take(jobs.max(1)) {
        running.spawn(work(item));
    }
    while let Some(joined) = running.join_next().await {
        let result = joined.context("a task panicked")??;
        store(result)?;
        run += 1;
        bar.inc(1);
        if let Some(next) = queue.next() {
            running.spawn(work(next));
        }
    }
    bar.finish_and_clear();
    Ok(PhaseSummary {
        total,
        run,
        skipped,
        wall: started.elapsed(),
    })
}
