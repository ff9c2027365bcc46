//! The CI gate: is a candidate run worse than a baseline run, cell by cell, beyond chance?
//!
//! A harness team runs the benchmark on every change and wants one bit out of it — did
//! detection, false alarms or recovery get worse — plus the numbers behind that bit. The
//! gate answers with three ideas, in this order.
//!
//! **Comparability first.** Two runs are only compared when they measured the same thing:
//! the same root seed, layouts, tasks, fault selection, recorded decisions and recovery
//! design, and therefore the same work items (trial and episode keys). When they differ
//! the gate refuses with one line naming the first difference ([`Comparability`]); a
//! different Chromium version or settle mode is only a warning, since a browser upgrade or
//! a change of timing is exactly the kind of change a gate exists to judge. What counts is
//! the run record's gate identity ([`crate::db::GateIdentity`]), one of the three "same
//! run" rules written together in [`crate::db::manifest`]. Policies may differ, but see
//! below: a policy the candidate dropped is a failure, one it added is only a warning.
//!
//! **Paired, per cell.** Because both runs replayed the same decisions on the same
//! layouts, every item of the baseline has a twin in the candidate, and the comparison is
//! paired: per (fault, task, policy) the caught outcome of each fired faulty trial in
//! both runs; per (task, policy) the false alarm on each working trial the ledger
//! confirmed in both; per (task, fault, policy, agent) the recovery of each episode whose
//! fault fired in both. The difference in rates (candidate minus baseline) comes with the
//! layout-cluster bootstrap interval (Tango's score interval when the bootstrap is
//! degenerate, so no interval is ever zero-width) and McNemar's test on the discordant
//! items (exact on independent pairs, Durkalski's clustered test when several items share
//! a layout) — the machinery of the report's policy comparisons
//! ([`crate::compare::paired_outcomes`]).
//!
//! **A regression is a drop beyond the margin that the paired test confirms.** A cell
//! regresses when it moved the wrong way by more than its metric's margin *and* the test
//! named in the rules says so at the rules' level ([`rules::Significance`]): McNemar's
//! p below `1 - level` (default), or the cell's interval entirely on the bad side of
//! zero, or `none` (the margin alone, for tiny smoke runs). Improvements are the mirror
//! image. Optional floors and ceilings hold a pooled rate of the candidate to an absolute
//! bound (`outcome` catches at least 95% of fired faults), whatever the baseline did.
//!
//! **It fails closed.** Silence is never a pass. Every cell of the baseline must reappear
//! in the candidate with at least one paired item: a cell the candidate lacks — a policy
//! it did not run, items its external verifier could only answer with infrastructure
//! errors, a fault that no longer fires — is [`Status::Missing`] ([`MissingReason`] says
//! which) and fails the gate like a regression, unless the rules' `allow_missing` names
//! its policy or the cell. A floor without a single matching candidate item is not met. A
//! rule that selects no cell of either run (a floor on a policy, task or fault neither
//! has, an `allow_missing` entry naming nothing) is a bad rules file, an error before
//! anything is judged; a baseline file holding one item twice is refused when read.
//!
//! Inputs are run directories, `results.sqlite` files or a *baseline file*: the small JSON
//! ([`Snapshot`]) `faultline baseline export` writes, holding the run's identity and every
//! item's outcome — enough to pair, small enough to commit. A database is read into the
//! same [`Snapshot`], so both sides of a comparison always go through one code path.
//!
//! The verdict ([`GateReport`]) is written as Markdown (fit for `$GITHUB_STEP_SUMMARY`
//! or a pull-request comment: regressions and improvements first, each with both rates,
//! the difference and its interval), JUnit XML (one test case per cell, failures carrying
//! the numbers; missing cells fail as `missing`) and JSON ([`render`]).
//!
//! Where things are: `snapshot.rs` reads either side into a [`Snapshot`]; [`rules`] parses
//! the rules file; `comparable.rs` decides whether the runs compare; `cells.rs` groups a
//! run's items into cells; `evaluate.rs` runs the gate (rules checked, cells compared,
//! floors); `verdict.rs` holds what it returns; [`render`] writes it out.

mod cells;
mod comparable;
mod evaluate;
pub mod render;
pub mod rules;
mod snapshot;
mod verdict;

pub use comparable::comparability;
pub use evaluate::gate;
pub use rules::{Floor, Metric, MetricRule, Rules, Significance};
pub use snapshot::{
    load_input, EpisodeOutcome, InfraError, Snapshot, TrialOutcome, BASELINE_FORMAT,
    BASELINE_VERSION,
};
pub use verdict::{
    CellResult, Comparability, FloorResult, GateReport, MissingCell, MissingReason, Status,
};

#[cfg(test)]
mod tests;
