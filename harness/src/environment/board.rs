//! The board: which items wait to be claimed, which are leased to a worker and until
//! when, and how often each has failed.
//!
//! A claimed item holds a fresh ledger scope with its fault armed. However the lease
//! ends — reported, expired, its worker gone, the run over — the scope is disarmed and
//! its ledger taken, so no scope outlives its item and no page can write into a ledger
//! that is scored later.

use super::offer::Offered;
use super::progress::EpisodeProgress;
use super::Shared;
use crate::experiment::detection::TrialSpec;
use crate::experiment::retry::HARNESS;
use faultline_analysis::db::InfraErrorRow;
use faultline_sites::Scope;
use faultline_tasks::InfraKind;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// An episode on the board: its step 0 (the recorded decision with its fault, under the
/// episode's key and seed) and its repetition.
#[derive(Clone)]
pub struct EpisodeItem {
    /// The recorded decision replayed at step 0, with the episode's fault, key and seed.
    pub start: TrialSpec,
    /// The repetition, from 0.
    pub run: u32,
}

/// An item leased to a worker.
pub struct Lease {
    /// The item's index on the board.
    pub item: usize,
    /// The item's ledger scope for this attempt.
    pub scope: Scope,
    /// What the worker was handed, and what the ledger will be asked about it.
    pub offered: Offered,
    /// When the worker claimed it.
    pub claimed: Instant,
    /// When it is taken back unless reported.
    pub deadline: Instant,
    /// The worker that claimed it, as it named itself (`FAULTLINE_WORKER`).
    pub worker: Option<String>,
    /// An episode's steps checkpointed so far (`None` for a trial).
    pub episode: Option<EpisodeProgress>,
    /// Its DevTools proxy, when the claim named the harness's browser (stopped when the
    /// lease is dropped, however it ends).
    pub devtools: Option<super::devtools::ItemProxy>,
}

/// One item of the board: a detection trial, or a recovery episode.
#[derive(Clone)]
pub enum Item {
    /// A detection trial: the harness replays the reply and reports its verdict.
    Trial(TrialSpec),
    /// A recovery episode: the harness replays the reply, then its agent acts until it
    /// stops, checkpointing each step.
    Episode(EpisodeItem),
}

impl Item {
    /// The item's stable key (a trial's or an episode's).
    pub fn key(&self) -> &str {
        self.spec().key()
    }

    /// What is handed first: the recorded decision with its fault (an episode's step 0).
    pub fn spec(&self) -> &TrialSpec {
        match self {
            Item::Trial(s) => s,
            Item::Episode(e) => &e.start,
        }
    }
}

/// The items of one environment run and their leases. See the module documentation.
pub struct Board {
    items: Vec<Item>,
    pending: VecDeque<usize>,
    leases: HashMap<String, Lease>,
    /// Leases already reported, with the item they were for (a second report is refused).
    reported: HashMap<String, usize>,
    /// Leases that ended unreported, and why.
    ended: HashMap<String, InfraKind>,
    failures: Vec<u32>,
    retries: u32,
    lease: Duration,
    episode_lease: Duration,
    stored: usize,
    given_up: usize,
}

impl Board {
    /// A board offering `items` in order, each failing at most `retries + 1` times, a
    /// trial's lease lasting `lease` and an episode's `episode_lease`.
    pub fn new(items: Vec<Item>, retries: u32, lease: Duration, episode_lease: Duration) -> Board {
        Board {
            pending: (0..items.len()).collect(),
            failures: vec![0; items.len()],
            items,
            leases: HashMap::new(),
            reported: HashMap::new(),
            ended: HashMap::new(),
            retries,
            lease,
            episode_lease,
            stored: 0,
            given_up: 0,
        }
    }

    /// The item at `index`.
    pub fn item(&self, index: usize) -> &Item {
        &self.items[index]
    }

    /// The next item to offer, if any waits.
    pub fn next_pending(&mut self) -> Option<usize> {
        self.pending.pop_front()
    }

    /// Leases `item` under the new lease id `id`.
    pub fn lease(
        &mut self,
        id: String,
        item: usize,
        scope: Scope,
        offered: Offered,
        worker: Option<String>,
    ) -> Instant {
        let now = Instant::now();
        let (lease, episode) = match &self.items[item] {
            Item::Trial(_) => (self.lease, None),
            Item::Episode(_) => (self.episode_lease, Some(EpisodeProgress::default())),
        };
        let deadline = now + lease;
        self.leases.insert(
            id,
            Lease {
                item,
                scope,
                offered,
                claimed: now,
                deadline,
                worker,
                episode,
                devtools: None,
            },
        );
        deadline
    }

    /// Lease `id`, while it is out.
    pub fn leased(&self, id: &str) -> Option<&Lease> {
        self.leases.get(id)
    }

    /// Lease `id`, while it is out (an episode's step is checkpointed into it).
    pub fn lease_mut(&mut self, id: &str) -> Option<&mut Lease> {
        self.leases.get_mut(id)
    }

    /// Gives lease `id` its DevTools proxy; hands it back if the lease is gone.
    pub fn attach_devtools(
        &mut self,
        id: &str,
        proxy: super::devtools::ItemProxy,
    ) -> Result<(), super::devtools::ItemProxy> {
        match self.leases.get_mut(id) {
            Some(lease) => {
                lease.devtools = Some(proxy);
                Ok(())
            }
            None => Err(proxy),
        }
    }

    /// Takes lease `id` off the board to report it.
    pub fn take(&mut self, id: &str) -> Option<Lease> {
        self.leases.remove(id)
    }

    /// The item a lease already reported was for, if `id` is one.
    pub fn reported_item(&self, id: &str) -> Option<usize> {
        self.reported.get(id).copied()
    }

    /// Why lease `id` ended unreported, if it did.
    pub fn ended(&self, id: &str) -> Option<InfraKind> {
        self.ended.get(id).copied()
    }

    /// Marks lease `id` (for `item`) reported and stored.
    pub fn stored(&mut self, id: String, item: usize) {
        self.reported.insert(id, item);
        self.stored += 1;
    }

    /// Counts one failed attempt of `item`; offers it again unless its retries are used
    /// up. Returns the attempt's number and whether it was given up on.
    pub fn failed(&mut self, item: usize) -> (u32, bool) {
        self.failures[item] += 1;
        let n = self.failures[item];
        let gives_up = n > self.retries;
        if gives_up {
            self.given_up += 1;
        } else {
            self.pending.push_back(item);
        }
        (n, gives_up)
    }

    /// Leases past their deadline, taken off the board.
    pub fn take_expired(&mut self, now: Instant) -> Vec<(String, Lease)> {
        let ids: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        ids.into_iter()
            .filter_map(|id| self.leases.remove(&id).map(|l| (id, l)))
            .collect()
    }

    /// Leases held by `worker`, taken off the board.
    pub fn take_held_by(&mut self, worker: &str) -> Vec<(String, Lease)> {
        let ids: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.worker.as_deref() == Some(worker))
            .map(|(id, _)| id.clone())
            .collect();
        ids.into_iter()
            .filter_map(|id| self.leases.remove(&id).map(|l| (id, l)))
            .collect()
    }

    /// Every lease still out, taken off the board (the run is ending).
    pub fn take_all(&mut self) -> Vec<Lease> {
        self.leases.drain().map(|(_, l)| l).collect()
    }

    /// Whether every item is stored or given up on.
    pub fn settled(&self) -> bool {
        self.stored + self.given_up == self.items.len()
    }

    /// Items waiting to be claimed, leased, stored, given up on.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.pending.len(),
            self.leases.len(),
            self.stored,
            self.given_up,
        )
    }
}

/// Ends a lease that will not be reported: its scope disarmed and its ledger dropped,
/// an infrastructure error of `kind` for its item, the item offered again or given up
/// on. Returns the error's row.
pub(crate) fn fail_lease(
    shared: &Shared,
    id: &str,
    lease: Lease,
    kind: InfraKind,
    reason: &str,
) -> InfraErrorRow {
    discard_scope(shared, &lease);
    let mut board = shared.board.lock().expect("not poisoned");
    let key = board.item(lease.item).key().to_string();
    let (attempt, gives_up) = board.failed(lease.item);
    board.ended.insert(id.to_string(), kind);
    drop(board);
    let next = match gives_up {
        true => "given up on; --resume offers it again",
        false => "offered again",
    };
    eprintln!("faultline: {key}: attempt {attempt} failed ({kind}): {reason}; {next}");
    InfraErrorRow {
        attempt,
        ..infra_row(&key, kind, reason)
    }
}

/// An infrastructure error of the external harness on `key` (numbered after the item's
/// stored ones).
pub(crate) fn infra_row(key: &str, kind: InfraKind, reason: &str) -> InfraErrorRow {
    InfraErrorRow {
        item_key: key.to_string(),
        policy: HARNESS.to_string(),
        kind: kind.into(),
        reason: reason.to_string(),
        stderr_tail: String::new(),
        attempt: 0,
    }
}

/// Disarms a lease's scope and drops its ledger.
pub(crate) fn discard_scope(shared: &Shared, lease: &Lease) {
    let _ = shared.server.disarm(&lease.scope);
    let layout = shared
        .board
        .lock()
        .expect("not poisoned")
        .item(lease.item)
        .spec()
        .decision()
        .layout();
    let _ = shared.scorer.score(&lease.scope, &layout);
}

/// Takes back every lease past its deadline; returns their infrastructure errors.
pub(crate) fn expire_leases(shared: &Shared) -> Vec<InfraErrorRow> {
    let expired = shared
        .board
        .lock()
        .expect("not poisoned")
        .take_expired(Instant::now());
    expired
        .into_iter()
        .map(|(id, lease)| {
            let held = lease.claimed.elapsed();
            let worker = lease.worker.clone().unwrap_or_else(|| "a worker".into());
            fail_lease(
                shared,
                &id,
                lease,
                InfraKind::LeaseExpired,
                &format!(
                    "{worker} held the item for {} ms without reporting it (harness.lease_ms)",
                    held.as_millis()
                ),
            )
        })
        .collect()
}

/// Releases every lease still out when the run ends (their scopes disarmed; the items
/// stay unstored, for `--resume`).
pub(crate) fn release_all(shared: &Shared) {
    let leases = shared.board.lock().expect("not poisoned").take_all();
    for lease in &leases {
        discard_scope(shared, lease);
    }
}
