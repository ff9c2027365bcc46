//! What both phases share: the items not yet stored, the scheduler and progress.
//!
//! A phase's items are fixed before anything runs; those already stored (resume) are
//! skipped; the rest run at most `jobs` at once (see [`super::jobs`]; an item parked on a
//! call the page does not answer makes room for another, see `engine::waiting`), each finished
//! result handed to the phase's store function in completion order (storage order does
//! not affect results).
//!
//! Progress is a bar when a person watches (both stdout and stderr are terminals), and
//! otherwise — a CI log, a pod's log, a Slurm output file — one plain line on stderr
//! every tenth of the phase or every 10 seconds, whichever comes first: done/total, rate
//! and ETA.

use crate::engine::cost::{PhaseCost, PhaseMeter};
use crate::engine::waiting::Waiting;
use anyhow::{Context, Result};
use faultline_analysis::db::PhaseCostRow;
use faultline_tasks::Phase;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Counts, wall time and cost of one phase.
#[derive(Debug, Clone)]
pub struct PhaseSummary {
    /// Items of the phase, stored before or now.
    pub total: usize,
    /// Items run now (stored, or failed for infrastructure reasons).
    pub run: usize,
    /// Items already stored (skipped on resume).
    pub skipped: usize,
    /// Wall-clock time of the phase.
    pub wall: Duration,
    /// Failed attempts that were retried or given up on (infrastructure failures).
    pub infra_failures: usize,
    /// Items that failed every attempt: listed, not stored; `--resume` tries them again.
    pub failed: usize,
    /// Of the infrastructure failures, the agent's cassette misses in `replay` mode (no
    /// recorded answer, no call allowed): the run is incomplete until they are recorded.
    pub cassette_misses: usize,
    /// Judgements a policy could not make (an external verifier failed): stored as
    /// infrastructure errors, never verdicts.
    pub policy_errors: usize,
    /// When the phase started, in Unix seconds.
    pub started_at: f64,
    /// CPU and memory the phase used (faultline and Chromium).
    pub cost: PhaseCost,
    /// At most how many items worked at once (items parked on an unanswered call not
    /// counted: see `engine::waiting`).
    pub jobs: usize,
}

impl PhaseSummary {
    /// The phase's cost as a stored row (isolated as `isolation`).
    pub fn cost_row(&self, phase: Phase, isolation: &str) -> PhaseCostRow {
        PhaseCostRow {
            phase,
            started_at: format!("{:.3}", self.started_at),
            items: self.run as u64,
            jobs: self.jobs as u64,
            isolation: isolation.to_string(),
            wall_ms: self.wall.as_secs_f64() * 1000.0,
            cpu_ours_ms: self.cost.cpu.ours_ms,
            cpu_browser_ms: self.cost.cpu.browser_ms,
            peak_rss_ours_kib: self.cost.peak_rss_ours_kib,
            peak_rss_browser_kib: self.cost.peak_rss_browser_kib,
        }
    }
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

/// The order a phase starts its items in: those for which `long` holds (they wait out a
/// deadline: tens of seconds where most items take one or two) spread evenly over the
/// first half, one every few short items; the rest in their own order. Started last,
/// the long ones formed the phase's tail (the last 10 of 990 catalogue episodes took
/// 14 s); all at once, they would fill the places parked items may take. Results do not
/// depend on the order, only the wall time does.
pub fn long_items_early<T>(items: Vec<T>, long: impl Fn(&T) -> bool) -> Vec<T> {
    let (longs, shorts): (Vec<T>, Vec<T>) = items.into_iter().partition(|i| long(i));
    if longs.is_empty() {
        return shorts;
    }
    let between = (shorts.len() / 2) / longs.len();
    let mut shorts = shorts.into_iter();
    let mut out = Vec::with_capacity(longs.len() + shorts.len());
    for l in longs {
        out.push(l);
        out.extend(shorts.by_ref().take(between));
    }
    out.extend(shorts);
    out
}

/// How a phase shows its progress.
enum Progress {
    Off,
    Bar(ProgressBar),
    /// Plain lines for logs.
    Lines(LineProgress),
}

struct LineProgress {
    what: String,
    total: usize,
    done: usize,
    /// Already stored when the phase started (not counted in the rate).
    skipped: usize,
    started: Instant,
    last_line: Instant,
    last_tenth: usize,
}

/// The interval between two progress lines when fewer than a tenth of the items finish.
const LINE_EVERY: Duration = Duration::from_secs(10);

impl LineProgress {
    fn new(what: &str, total: usize, skipped: usize) -> LineProgress {
        let now = Instant::now();
        let p = LineProgress {
            what: what.trim().to_string(),
            total,
            done: skipped,
            skipped,
            started: now,
            last_line: now,
            last_tenth: tenth(skipped, total),
        };
        eprintln!(
            "{}: {} items, {} already stored, {} to run",
            p.what,
            total,
            skipped,
            total - skipped
        );
        p
    }

    fn inc(&mut self, n: usize) {
        self.done += n;
        let now = Instant::now();
        let t = tenth(self.done, self.total);
        if t > self.last_tenth || now - self.last_line >= LINE_EVERY || self.done == self.total {
            self.last_tenth = t;
            self.last_line = now;
            eprintln!("{}", self.line(now - self.started));
        }
    }

    /// `detection: 48/480 (10%), 3.2/s, ETA 2m15s`.
    fn line(&self, elapsed: Duration) -> String {
        let ran = self.done - self.skipped;
        let rate = ran as f64 / elapsed.as_secs_f64().max(1e-9);
        let left = self.total - self.done;
        let eta = if left == 0 {
            "done".to_string()
        } else if ran == 0 {
            "ETA unknown".to_string()
        } else {
            format!("ETA {}", duration(left as f64 / rate))
        };
        format!(
            "{}: {}/{} ({}%), {:.1}/s, {} elapsed, {}",
            self.what,
            self.done,
            self.total,
            (100 * self.done).checked_div(self.total).unwrap_or(100),
            rate,
            duration(elapsed.as_secs_f64()),
            eta
        )
    }
}

/// Which tenth of the phase `done` items reach (0 to 10).
fn tenth(done: usize, total: usize) -> usize {
    (10 * done).checked_div(total).unwrap_or(10)
}

/// `2m15s`, `1h02m`, `42s`.
fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

impl Progress {
    fn new(show: bool, what: &str, total: usize, skipped: usize) -> Progress {
        if !show {
            return Progress::Off;
        }
        if !(std::io::stderr().is_terminal() && std::io::stdout().is_terminal()) {
            return Progress::Lines(LineProgress::new(what, total, skipped));
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
        Progress::Bar(bar)
    }

    fn inc(&mut self, n: usize) {
        match self {
            Progress::Off => {}
            Progress::Bar(bar) => bar.inc(n as u64),
            Progress::Lines(lines) => lines.inc(n),
        }
    }

    fn finish(self) {
        if let Progress::Bar(bar) = self {
            bar.finish();
        }
    }
}

/// Runs a phase: `work` on every item with at most `jobs` working at once (and at most
/// [`super::jobs::in_flight`] in flight, parked ones included), each finished result
/// handed to `store` in completion order (storage order does not affect results), with a
/// progress (a bar or log lines, when `progress`) over the phase's `(total, already stored)`.
/// `store` returns how many of the phase's items the result held (an item of work may
/// run several, as the recovery phase's groups do).
pub async fn run_phase<S, R, Fut>(
    progress: bool,
    name: &str,
    (total, skipped): (usize, usize),
    items: Vec<S>,
    jobs: usize,
    work: impl Fn(S) -> Fut,
    mut store: impl FnMut(R) -> Result<usize>,
) -> Result<PhaseSummary>
where
    Fut: std::future::Future<Output = Result<R>> + Send + 'static,
    R: Send + 'static,
{
    let mut bar = Progress::new(progress, name, total, skipped);
    let started_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let meter = PhaseMeter::start();
    let started = Instant::now();
    let mut run = 0usize;
    let mut queue = items.into_iter();
    let mut running: JoinSet<Result<R>> = JoinSet::new();
    let jobs = jobs.max(1);
    let in_flight = super::jobs::in_flight(jobs);
    let waiting = Arc::new(Waiting::default());
    loop {
        // Start items while fewer than `jobs` work (an item parked on an unanswered call
        // does not: see `engine::waiting`) and fewer than `in_flight` hold a page.
        while running.len() < in_flight && running.len().saturating_sub(waiting.parked()) < jobs {
            let Some(item) = queue.next() else { break };
            running.spawn(waiting.clone().scope(work(item)));
        }
        let joined = tokio::select! {
            joined = running.join_next() => match joined {
                Some(joined) => joined,
                None => break,
            },
            () = waiting.changed() => continue,
        };
        let result = joined.context("a task panicked")??;
        let stored = store(result)?;
        run += stored;
        bar.inc(stored);
    }
    bar.finish();
    let wall = started.elapsed();
    Ok(PhaseSummary {
        total,
        run,
        skipped,
        wall,
        infra_failures: 0,
        failed: 0,
        cassette_misses: 0,
        policy_errors: 0,
        started_at,
        cost: meter.finish(),
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs items of (how long the item's one call takes, in ms) with `jobs`, and returns
    /// when (ms after the phase started) each item started, by item.
    async fn start_times(jobs: usize, calls: Vec<u64>) -> Vec<u64> {
        let t0 = tokio::time::Instant::now();
        let mut started = Vec::new();
        let items: Vec<(usize, u64)> = calls.into_iter().enumerate().collect();
        let n = items.len();
        let summary = run_phase(
            false,
            "test",
            (n, 0),
            items,
            jobs,
            |(i, ms)| async move {
                let at = t0.elapsed().as_millis() as u64;
                crate::engine::waiting::unanswered(tokio::time::sleep(Duration::from_millis(ms)))
                    .await;
                Ok((i, at))
            },
            |r| {
                started.push(r);
                Ok(1)
            },
        )
        .await
        .unwrap();
        assert_eq!((summary.run, summary.jobs), (n, jobs));
        started.sort();
        started.into_iter().map(|(_, at)| at).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_parked_on_an_unanswered_call_makes_room_for_another() {
        // Two places; the first two items wait 10 s on their call: parked after 1.5 s,
        // the next two start then instead of after 10 s.
        assert_eq!(
            start_times(2, vec![10_000, 10_000, 100, 100]).await,
            vec![0, 0, 1500, 1500]
        );
        // Calls answered in time park nothing: the third item waits for a place.
        assert_eq!(
            start_times(2, vec![1000, 1000, 100]).await,
            vec![0, 0, 1000]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn parked_items_are_bounded_by_the_most_in_flight() {
        // One place, two in flight: the third item waits until the first one ends.
        assert_eq!(
            start_times(1, vec![10_000, 10_000, 100]).await,
            vec![0, 1500, 10_000]
        );
    }

    #[test]
    fn long_items_are_spread_over_the_first_half_and_the_rest_keep_their_order() {
        let long = |i: &u32| *i >= 100;
        assert_eq!(
            long_items_early(vec![1, 2, 3, 4, 5, 6, 7, 8, 100, 101], long),
            vec![100, 1, 2, 101, 3, 4, 5, 6, 7, 8]
        );
        // More long items than short ones: all long first, in their order.
        assert_eq!(
            long_items_early(vec![1, 100, 101, 102], long),
            vec![100, 101, 102, 1]
        );
        assert_eq!(long_items_early(vec![3, 1, 2], long), vec![3, 1, 2]);
        assert_eq!(long_items_early(Vec::<u32>::new(), long), Vec::<u32>::new());
    }

    #[test]
    fn progress_lines_read_well_in_a_log() {
        let mut p = LineProgress::new("recovery ", 480, 48);
        p.done = 96;
        assert_eq!(
            p.line(Duration::from_secs(15)),
            "recovery: 96/480 (20%), 3.2/s, 15s elapsed, ETA 2m00s"
        );
        p.done = 480;
        assert_eq!(
            p.line(Duration::from_secs(3725)),
            "recovery: 480/480 (100%), 0.1/s, 1h02m elapsed, done"
        );
        assert_eq!((tenth(47, 480), tenth(48, 480), tenth(0, 0)), (0, 1, 10));
    }
}
