//! Tables computed from stored trials and verdicts.
//!
//! Scoring rules (the ledger's truth is `truth_achieved`, stored with every trial):
//!
//! - On a faulty trial whose fault **fired**, a verdict is *caught* when it agrees with
//!   the truth: `Success` when the intended outcome happened (e.g. the feedback fault
//!   lied about a click that worked), anything else when it did not. `alarms` counts
//!   verdicts other than `Success` regardless of truth. Trials whose fault did not fire
//!   are counted separately and never as caught or missed.
//! - On a working trial, a *false alarm* is a verdict other than `Success` on a trial
//!   where the ledger confirms the outcome.
//!
//! Rows about faults are ordered by the catalogue's layer ([`Layer::ALL`]), then the fault
//! id, then the task ([`TaskKind::rank`]), then the policy (run order, then others by
//! name). A trial's layer is [`TrialRow::fault_layer`]: the stored one, or in a version-1
//! database (which stores none) the fault's own.
//!
//! One room per table (computed, then its CSV text): [`detection`] (and the layer table),
//! [`false_alarms`], [`firing`] (and the catalogue table), [`answer_key`], [`verifier_cards`]
//! (each policy's error rates over the trials of the two tables before it); the scoring
//! helpers they share are here. Their Markdown is written by [`crate::report`].

use crate::db::{TrialRow, VerdictRow};
use faultline_faults::{Fault, Layer};
use faultline_tasks::{Condition, Phase, TaskKind, Verdict};
use std::collections::HashMap;

mod answer_key;
mod detection;
mod false_alarms;
mod firing;
mod verifier_cards;

pub use answer_key::*;
pub use detection::*;
pub use false_alarms::*;
pub use firing::*;
pub use verifier_cards::*;

/// Policies in the order given, then any others alphabetically.
pub(crate) fn policy_rank(order: &[String], policy: &str) -> (usize, String) {
    (
        order.iter().position(|p| p == policy).unwrap_or(usize::MAX),
        policy.to_string(),
    )
}

/// Sort key of a fault x task row: layer rank, fault id, task rank.
pub(crate) type FaultTaskKey = (usize, &'static str, usize);

pub(crate) fn fault_task_key(layer: Layer, fault: Fault, task: TaskKind) -> FaultTaskKey {
    (layer.rank(), fault.id(), task.rank())
}

/// Sort key of a detection row: the fault x task key, then the policy rank and name.
type DetectionKey = (FaultTaskKey, (usize, String));

/// Verdicts indexed by trial key.
pub fn index_verdicts(verdicts: &[VerdictRow]) -> HashMap<&str, Vec<&VerdictRow>> {
    let mut by_trial: HashMap<&str, Vec<&VerdictRow>> = HashMap::new();
    for v in verdicts {
        by_trial.entry(v.trial_key.as_str()).or_default().push(v);
    }
    by_trial
}

/// The faulty trials of the detection experiment with their fault and its layer (a faulty
/// row without a fault, which the harness never writes, is skipped).
fn faulty_trials(trials: &[TrialRow]) -> impl Iterator<Item = (&TrialRow, Fault, Layer)> {
    trials
        .iter()
        .filter(|t| t.experiment == Phase::Detection && t.condition == Condition::Faulty)
        .filter_map(|t| {
            let fault = t.fault?;
            Some((t, fault, t.fault_layer()?))
        })
}

/// The working trials of the detection experiment: the trials the false-alarm table is
/// computed on.
pub(crate) fn working_trials(trials: &[TrialRow]) -> impl Iterator<Item = &TrialRow> {
    trials
        .iter()
        .filter(|t| t.experiment == Phase::Detection && t.condition == Condition::Working)
}

/// The fired faulty trials of the detection experiment, each with its verdicts (in stored
/// order): the trials every detection table and comparison is computed on.
pub(crate) fn detected_fired<'a>(
    trials: &'a [TrialRow],
    verdicts: &'a [VerdictRow],
) -> impl Iterator<Item = (&'a TrialRow, std::vec::IntoIter<&'a VerdictRow>)> {
    let by_trial = index_verdicts(verdicts);
    trials
        .iter()
        .filter(|t| {
            t.experiment == Phase::Detection
                && t.condition == Condition::Faulty
                && t.fired == Some(true)
        })
        .map(move |t| {
            let vs: Vec<&'a VerdictRow> = by_trial
                .get(t.trial_key.as_str())
                .cloned()
                .unwrap_or_default();
            (t, vs.into_iter())
        })
}

/// Whether a verdict on a fired faulty trial agrees with the ledger (see the module docs).
pub(crate) fn caught(t: &TrialRow, v: &VerdictRow) -> bool {
    (v.verdict == Verdict::Success) == t.truth_achieved
}

#[cfg(test)]
pub(crate) mod tests;
