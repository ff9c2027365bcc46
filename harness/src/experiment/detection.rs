//! The detection phase: every recorded decision replayed once with each of its faults
//! (faulty trials) and once clean (a working trial), every policy judging the same
//! stored trial. Its trials are planned in [`super::items`] and stored by
//! [`super::store`].

use super::items::working_page_groups;
use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{failures_for, with_retries, Attempted};
use super::{store, RunRequest};
use crate::engine::trial::{run_trials, TrialResult};
use crate::engine::Engine;
use crate::experiment::jobs::Phase;
use anyhow::{Context, Result};
use faultline_analysis::db::ResultsDb;
use faultline_faults::{Fault, FaultPlan};
use std::path::Path;
use std::sync::Arc;

// The phase's items and its screenshot writer, by the names the environment API uses.
pub use super::items::{specs, TrialSpec};
pub(crate) use super::store::write_shot;

/// Runs the detection phase's pending trials among `specs` (the whole phase, or one
/// shard's part of it).
pub async fn run(
    req: &RunRequest,
    env: &Arc<Engine>,
    db: &mut ResultsDb,
    specs: Vec<TrialSpec>,
    shots: &Path,
) -> Result<PhaseSummary> {
    let config = &req.config;
    let finished = db.finished_keys()?;
    let (total, skipped, todo) = pending(specs, |s| &s.key, &finished, req.max_trials);
    // One item per page: a decision's working trial with its trials whose fault acts
    // only on the feedback; the phase counts trials.
    let todo = long_items_early(working_page_groups(todo), |g| {
        g[0].fault.is_some_and(Fault::waits_out_a_deadline)
    });
    let retries = env.liveness.retries;
    let (mut infra_failures, mut failed, mut policy_errors) = (0, 0, 0);
    let mut summary = run_phase(
        req.progress,
        "detection",
        (total, skipped),
        todo,
        config.jobs.of(Phase::Detection),
        |group: Vec<TrialSpec>| {
            let env = env.clone();
            async move { run_group(&env, group, retries).await }
        },
        |trials: Vec<(TrialSpec, Attempted<TrialResult>)>| {
            let stored = trials.len();
            for (spec, result) in trials {
                match result {
                    Attempted::Done(mut r, failures, retried) => {
                        infra_failures += failures.len();
                        policy_errors += r.judgements.iter().filter(|(_, o)| o.is_err()).count();
                        r.costs.merge(&retried);
                        store::trial(db, shots, &spec, r, failures)?;
                    }
                    Attempted::Failed(failures) => {
                        infra_failures += failures.len();
                        failed += 1;
                        db.insert_infra_errors(&failures)
                            .with_context(|| format!("writing {}", db.path().display()))?;
                    }
                }
            }
            Ok(stored)
        },
    )
    .await?;
    summary.infra_failures = infra_failures;
    summary.failed = failed;
    summary.policy_errors = policy_errors;
    if summary.run > 0 {
        db.insert_phase_cost(&summary.cost_row(Phase::Detection, config.isolation.as_str()))
            .with_context(|| format!("writing {}", db.path().display()))?;
    }
    Ok(summary)
}

/// Runs a group of trials on one page (see [`working_page_groups`]), its first trial's fault
/// armed. A browser, renderer or page failure is retried on a fresh page (and a new
/// browser when it died), a bounded number of times; the failed attempts and their cost
/// belong to the first trial, whose page it was, and a page that failed for good fails
/// every trial of the group.
async fn run_group(
    env: &Arc<Engine>,
    group: Vec<TrialSpec>,
    retries: u32,
) -> Result<Vec<(TrialSpec, Attempted<TrialResult>)>> {
    let plan = |s: &TrialSpec| s.fault.map(|f| FaultPlan::new(f, s.trial_seed));
    let lead = &group[0];
    let followers: Vec<Option<FaultPlan>> = group[1..].iter().map(plan).collect();
    let attempted = with_retries(env, &lead.key, retries, || {
        run_trials(env, &lead.decision, plan(lead), &followers)
    })
    .await
    .with_context(|| format!("trial {}", lead.key))?;
    Ok(match attempted {
        Attempted::Done(results, failures, retried) => {
            let mut page = Some((failures, retried));
            group
                .into_iter()
                .zip(results)
                .map(|(spec, r)| {
                    let (failures, retried) = page.take().unwrap_or_default();
                    (spec, Attempted::Done(r, failures, retried))
                })
                .collect()
        }
        Attempted::Failed(failures) => group
            .into_iter()
            .map(|spec| {
                let mine = failures_for(&failures, &spec.key);
                (spec, Attempted::Failed(mine))
            })
            .collect(),
    })
}
