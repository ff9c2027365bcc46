//! The detection phase: every recorded decision replayed once with each of its faults
//! (faulty trials) and once clean (a working trial), every policy judging the same
//! stored trial. Its trials are planned in [`super::items`] and stored by
//! [`super::store`].

use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{with_retries, Attempted};
use super::{store, RunRequest};
use crate::engine::trial::run_trial;
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
    let todo = long_items_early(todo, |s| s.fault.is_some_and(Fault::waits_out_a_deadline));
    let retries = env.liveness.retries;
    let (mut infra_failures, mut failed, mut policy_errors) = (0, 0, 0);
    let mut summary = run_phase(
        req.progress,
        "detection",
        (total, skipped),
        todo,
        config.jobs.of(Phase::Detection),
        |spec: TrialSpec| {
            let env = env.clone();
            async move {
                let plan = spec.fault.map(|f| FaultPlan::new(f, spec.trial_seed));
                // A browser, renderer or page failure is retried on a fresh page (and a
                // new browser when it died), a bounded number of times.
                let result = with_retries(&env, &spec.key, retries, || {
                    run_trial(&env, &spec.decision, plan)
                })
                .await
                .with_context(|| format!("trial {}", spec.key))?;
                Ok((spec, result))
            }
        },
        |(spec, result)| match result {
            Attempted::Done(mut r, failures, retried) => {
                infra_failures += failures.len();
                policy_errors += r.judgements.iter().filter(|(_, o)| o.is_err()).count();
                r.costs.merge(&retried);
                store::trial(db, shots, &spec, r, failures).map(|()| 1)
            }
            Attempted::Failed(failures) => {
                infra_failures += failures.len();
                failed += 1;
                db.insert_infra_errors(&failures)
                    .with_context(|| format!("writing {}", db.path().display()))
                    .map(|()| 1)
            }
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
