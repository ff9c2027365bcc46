//! Judging: every verification policy, built-in or external, judges the same evidence
//! here, for a detection trial and for each step of an episode.
//!
//! A built-in policy judges on the executor; an external one blocks on its process, so
//! judging moves off the executor when any policy may block. A policy judges the page's
//! real URLs, but what it says is stored and told to the agent without the run's port and
//! scope ([`SiteAddress::relative`]), so a message never makes two runs differ.

use crate::agent::portable::SiteAddress;
use faultline_policies::{Evidence, Judgement, PolicyOutcome, VerificationPolicy};

/// Judges with every policy, moving off the executor when any of them may block. Each
/// message is made relative to `site`, as the agent reads it.
pub fn judge_all(
    site: &SiteAddress,
    policies: &[Box<dyn VerificationPolicy>],
    ev: &Evidence<'_>,
) -> Vec<(String, PolicyOutcome)> {
    let all = || {
        policies
            .iter()
            .map(|p| (p.name().to_string(), as_told(site, p.judge(ev))))
            .collect()
    };
    if policies.iter().any(|p| p.blocks()) {
        off_executor(all)
    } else {
        all()
    }
}

/// Judges with one policy, off the executor when it may block. The message is made
/// relative to `site`, as the agent reads it.
pub fn judge_one(
    site: &SiteAddress,
    policy: &dyn VerificationPolicy,
    ev: &Evidence<'_>,
) -> PolicyOutcome {
    let outcome = if policy.blocks() {
        off_executor(|| policy.judge(ev))
    } else {
        policy.judge(ev)
    };
    as_told(site, outcome)
}

/// A policy judges the page's real URLs; what it says is stored and told without the
/// run's port and scope (see [`crate::agent::portable`]).
fn as_told(site: &SiteAddress, outcome: PolicyOutcome) -> PolicyOutcome {
    outcome.map(|j| Judgement {
        message: site.relative(&j.message),
        ..j
    })
}

/// Runs blocking work (an external policy's or agent's round trip) without stalling the async executor: on a
/// multi-threaded tokio runtime the worker hands its other tasks over first; elsewhere it
/// simply runs.
pub fn off_executor<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
