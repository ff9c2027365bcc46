//! How many items a phase runs at once.
//!
//! A trial or an episode spends most of its wall time on timers (the settle after every
//! action, 1.4 s after a hover, an agent's 1.5 s wait) and the rest in Chromium's CPU.
//! The right concurrency is the lowest that keeps the cores busy: fewer leaves them idle
//! while items wait, more only adds contention (more renderers, more switching) and
//! costs CPU per item. The two phases differ there, so by default each has its own
//! number per core, measured on 2 cores with the default config, machine otherwise idle:
//!
//! | phase | at once | wall | cores busy | CPU per item |
//! |---|---:|---:|---:|---:|
//! | detection (320 trials), a page per trial | 10 | 34.9 s | 1.75 | 0.190 s |
//! | detection, a page per trial | 20 | 35.4 s | 1.91 | 0.211 s |
//! | detection, reused pages (three runs) | 10 | 30.9-34.1 s | 1.6-1.7 | 0.157-0.180 s |
//! | detection, reused pages (three runs) | 20 | 28.0-29.4 s | 1.8 | 0.165-0.172 s |
//! | detection, reused pages (three runs) | 30 | 25.9-29.7 s | 1.9 | 0.152-0.176 s |
//! | recovery (1440 episodes: 3 runs each, as then) | 10 | 271.9 s | 1.37 | 0.258 s |
//! | recovery | 20 | 191.8 s | 1.86 | 0.247 s |
//! | recovery | 30 | 235.4 s | 1.94 | 0.317 s |
//! | recovery | 40 | 243.4 s | 1.93 | 0.326 s |
//!
//! Recovery, whose episodes wait longer, needs about 10 per core and loses past that.
//! Detection was CPU-bound from about 5 per core while every trial opened a page of its
//! own. Since pages are reused, a trial costs less CPU but waits as long (its settle), so
//! 5 per core left more of the cores idle, and 10 per core was faster in each of three
//! alternated pairs at the same CPU per trial, with 15 no faster again. Hence
//! [`Jobs::PerPhase`] gives 10 per core to both phases today; it stays per phase because
//! the two were measured apart and moved apart before. `jobs = N` (or `--jobs N`) fixes
//! one number for both.
//!
//! A controller that moved the limit while the phase ran, from the CPU the process tree
//! used every few seconds, was tried and not kept: the load swings with the items' own
//! rhythm (a batch of navigations, then a batch of waits), so the limit swung between 4
//! and 28 and recovery took 205 s against 182 s at a fixed 20 in the same session.
//!
//! The number counts items at work. An item whose CDP call goes unanswered for
//! seconds (a hung page, a held request) is parked and makes room for another
//! (`engine::waiting`), up to [`in_flight`] items in all: those waits use no CPU, and in
//! the catalogue config they held about a third of recovery's places.
//!
//! Results do not depend on the number (every item's seed and key are fixed before the
//! phase starts, and the tests compare tables across job counts); it changes only how
//! long a run takes. What a phase ran with is stored with its costs (`phase_costs.jobs`).

use serde::{Deserialize, Serialize};

/// The most items a run may have in flight (working or parked).
pub const MAX_JOBS: usize = 64;

/// Detection trials at once per core, by default.
pub const DETECTION_PER_CORE: usize = 10;
/// Recovery episodes at once per core, by default.
pub const RECOVERY_PER_CORE: usize = 10;

/// A run's phases (part of the vocabulary: their names are stored in
/// `phase_costs.phase`).
pub use faultline_tasks::Phase;

/// How many items run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "usize", into = "usize")]
pub enum Jobs {
    /// Exactly this many in every phase (`--jobs N`, `jobs = N`).
    Fixed(usize),
    /// The default (`jobs = 0` or absent): per core, the number measured best for each
    /// phase ([`DETECTION_PER_CORE`], [`RECOVERY_PER_CORE`]).
    PerPhase {
        /// The cores faultline may use (`std::thread::available_parallelism`).
        cores: usize,
    },
}

impl From<usize> for Jobs {
    /// 0 is the per-phase default on this machine's cores, as in the config file.
    fn from(n: usize) -> Jobs {
        match n {
            0 => Jobs::per_phase(),
            n => Jobs::Fixed(n),
        }
    }
}

impl From<Jobs> for usize {
    fn from(j: Jobs) -> usize {
        match j {
            Jobs::Fixed(n) => n,
            Jobs::PerPhase { .. } => 0,
        }
    }
}

impl Jobs {
    /// The per-phase default, on the cores this process may use.
    pub fn per_phase() -> Jobs {
        Jobs::PerPhase {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        }
    }

    /// Items at once in `phase`.
    pub fn of(self, phase: Phase) -> usize {
        match self {
            Jobs::Fixed(n) => n.clamp(1, MAX_JOBS),
            Jobs::PerPhase { cores } => {
                let per_core = match phase {
                    Phase::Detection => DETECTION_PER_CORE,
                    Phase::Recovery => RECOVERY_PER_CORE,
                };
                (per_core * cores.max(1)).min(MAX_JOBS)
            }
        }
    }

    /// The most items working at once in any phase.
    pub fn most(self) -> usize {
        self.of(Phase::Detection).max(self.of(Phase::Recovery))
    }
}

/// The most items in flight when `jobs` work at once: as many again may be parked on a
/// call the page does not answer (see `engine::waiting`), within [`MAX_JOBS`]. Each holds
/// a page, so this bounds the browser's memory (about 43 MiB per page measured).
pub fn in_flight(jobs: usize) -> usize {
    (2 * jobs).min(MAX_JOBS).max(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_gives_each_phase_ten_items_per_core() {
        let j = Jobs::PerPhase { cores: 2 };
        assert_eq!(
            (j.of(Phase::Detection), j.of(Phase::Recovery), j.most()),
            (20, 20, 20)
        );
        let big = Jobs::PerPhase { cores: 16 };
        assert_eq!(
            (big.of(Phase::Detection), big.of(Phase::Recovery)),
            (64, 64)
        );
    }

    #[test]
    fn a_fixed_number_holds_in_every_phase() {
        let j = Jobs::Fixed(3);
        assert_eq!(
            (j.of(Phase::Detection), j.of(Phase::Recovery), j.most()),
            (3, 3, 3)
        );
        assert_eq!((in_flight(1), in_flight(40), in_flight(64)), (2, 64, 64));
    }

    #[test]
    fn jobs_read_and_written_as_a_number_zero_being_the_default() {
        assert_eq!(Jobs::from(3), Jobs::Fixed(3));
        assert!(matches!(Jobs::from(0), Jobs::PerPhase { .. }));
        assert_eq!(usize::from(Jobs::PerPhase { cores: 4 }), 0);
        assert_eq!(serde_json::to_string(&Jobs::Fixed(7)).unwrap(), "7");
        assert_eq!(serde_json::from_str::<Jobs>("7").unwrap(), Jobs::Fixed(7));
        assert!(matches!(
            serde_json::from_str::<Jobs>("0").unwrap(),
            Jobs::PerPhase { .. }
        ));
    }
}
