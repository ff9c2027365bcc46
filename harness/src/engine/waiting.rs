//! Telling the scheduler that an item is waiting, not working.
//!
//! A phase runs a fixed number of items at once (`experiment::jobs`), chosen so that the
//! cores stay busy while items sit on their settle timers. Some waits are of another
//! kind: a CDP call the page does not answer for seconds (a main thread blocked by the
//! hang fault, a navigation the server holds, a request that never completes). During
//! such a wait neither faultline nor Chromium works for the item, yet it held one of the
//! phase's places, and in the catalogue those waits held about a third of them.
//!
//! So a call still unanswered after [`PARKED_AFTER`] *parks* its item: the phase's
//! scheduler ([`Waiting`]) may start another item in its place, and the parked one
//! counts again as soon as its call returns (it never waits for a place to come back:
//! an answer is acted on at once, so the timing the item sees is the same). How many
//! items may be in flight at once, parked or not, stays bounded by the scheduler (each
//! holds a page). Only unanswered calls park: fixed waits (settle timers, an agent's
//! `wait`) are what the per-phase numbers were measured with and keep their places.
//!
//! The item's task carries its phase's [`Waiting`] in a task-local ([`Waiting::scope`]);
//! a call made outside any phase (tests, tools, a spawned helper task) is simply not
//! counted.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How long a call may go unanswered before its item counts as waiting. Far above what
/// any call the page answers takes, even on a loaded machine (a navigation under full
/// load takes a few hundred milliseconds), so working items are not parked.
pub const PARKED_AFTER: Duration = Duration::from_millis(1500);

tokio::task_local! {
    static ITEM: Arc<Item>;
}

/// Items of this process parked now, whatever their phase: the page pool keeps a page
/// ready per parked item (each holds its own), beyond those of the items at work.
static PARKED_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);

/// How many items of this process are parked now.
pub fn parked_in_process() -> usize {
    PARKED_IN_PROCESS.load(Ordering::SeqCst)
}

/// What an item's task carries: its phase's count, and how many of its own calls are
/// unanswered past [`PARKED_AFTER`] (calls nest, e.g. a guarded wait on a guarded
/// evaluation, and may run side by side; the item is parked once however many).
struct Item {
    phase: Arc<Waiting>,
    calls: AtomicUsize,
}

/// How many of a phase's items are parked on an unanswered call right now, and a signal
/// for the scheduler when that changes.
#[derive(Debug, Default)]
pub struct Waiting {
    parked: AtomicUsize,
    changed: Notify,
}

impl Waiting {
    /// Items parked now.
    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }

    /// Resolves after the parked count changed (a change since the last call counts:
    /// nothing is missed between a check and the wait).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Runs `item` as one of this phase's items: its unanswered calls park it here.
    pub async fn scope<F: Future>(self: Arc<Self>, item: F) -> F::Output {
        let item_state = Arc::new(Item {
            phase: self,
            calls: AtomicUsize::new(0),
        });
        ITEM.scope(item_state, item).await
    }
}

/// One unanswered call of an item; the item is unparked when its last one ends, also
/// when the call is cancelled (a deadline, a dead browser).
struct Parked(Arc<Item>);

impl Parked {
    fn new(item: Arc<Item>) -> Parked {
        if item.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            PARKED_IN_PROCESS.fetch_add(1, Ordering::SeqCst);
            item.phase.parked.fetch_add(1, Ordering::SeqCst);
            item.phase.changed.notify_one();
        }
        Parked(item)
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::SeqCst) == 1 {
            PARKED_IN_PROCESS.fetch_sub(1, Ordering::SeqCst);
            self.0.phase.parked.fetch_sub(1, Ordering::SeqCst);
            self.0.phase.changed.notify_one();
        }
    }
}

/// Awaits `call`; if it has not finished after [`PARKED_AFTER`], its item counts as
/// parked until it does.
pub async fn unanswered<F: Future>(call: F) -> F::Output {
    let Ok(item) = ITEM.try_with(Arc::clone) else {
        return call.await;
    };
    tokio::pin!(call);
    if let Ok(out) = tokio::time::timeout(PARKED_AFTER, &mut call).await {
        return out;
    }
    let _parked = Parked::new(item);
    call.await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ms
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_answered_in_time_never_parks_and_a_slow_one_parks_until_it_returns() {
        let w = Arc::new(Waiting::default());
        assert_eq!(w.clone().scope(unanswered(call(1400))).await, 1400);
        assert_eq!(w.parked(), 0);

        let slow = tokio::spawn(w.clone().scope(unanswered(call(10_000))));
        tokio::time::sleep(Duration::from_millis(1400)).await;
        assert_eq!(w.parked(), 0, "parked before PARKED_AFTER");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(w.parked(), 1, "not parked after PARKED_AFTER");
        // The change was signalled (stored for a scheduler not yet waiting).
        tokio::time::timeout(Duration::from_millis(1), w.changed())
            .await
            .expect("a park is signalled");
        assert_eq!(slow.await.unwrap(), 10_000);
        assert_eq!(w.parked(), 0, "still parked after the answer");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_call_unparks_and_a_call_outside_a_phase_just_runs() {
        let w = Arc::new(Waiting::default());
        let slow = tokio::spawn(w.clone().scope(unanswered(call(60_000))));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(w.parked(), 1);
        slow.abort();
        assert!(slow.await.unwrap_err().is_cancelled());
        assert_eq!(w.parked(), 0);

        assert_eq!(unanswered(call(5_000)).await, 5_000);
        assert_eq!(w.parked(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_with_nested_and_side_by_side_unanswered_calls_is_parked_once() {
        let w = Arc::new(Waiting::default());
        let item = tokio::spawn(w.clone().scope(async {
            let nested = unanswered(async { unanswered(call(8_000)).await });
            tokio::join!(nested, unanswered(call(4_000)))
        }));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(w.parked(), 1);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(w.parked(), 1, "one call of two still unanswered");
        assert_eq!(item.await.unwrap(), (8_000, 4_000));
        assert_eq!(w.parked(), 0);
    }
}
