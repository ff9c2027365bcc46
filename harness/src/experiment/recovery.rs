//! The recovery phase: episodes of decision x fault x policy x run, the agent acting on
//! the policy's feedback. Its episodes are planned in [`super::items`] and stored by
//! [`super::store`].

use super::items::EpisodeTask;
use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{with_retries, Attempted};
use super::{store, RunRequest};
use crate::agent::cassette::is_replay_miss;
use crate::engine::episode::{run_episode, EpisodeSpec};
use crate::engine::liveness::InfraKind;
use crate::engine::Engine;
use crate::experiment::jobs::Phase;
use anyhow::{anyhow, Context, Result};
use faultline_analysis::db::{InfraErrorRow, ResultsDb};
use faultline_faults::FaultPlan;
use faultline_policies::VerificationPolicy;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Runs the recovery phase's pending episodes among `tasks` (the whole phase, or one
/// shard's part of it).
pub async fn run(
    req: &RunRequest,
    env: &Arc<Engine>,
    db: &mut ResultsDb,
    tasks: Vec<EpisodeTask>,
    shots: &Path,
) -> Result<PhaseSummary> {
    let config = &req.config;
    let rc = &config.recovery;
    let registry = &env.policy_registry;
    let mut policies: BTreeMap<String, Arc<dyn VerificationPolicy>> = BTreeMap::new();
    for name in &rc.policies {
        let p = registry.build(name).map_err(|e| anyhow!(e))?;
        policies.insert(name.clone(), Arc::from(p));
    }
    let finished = db.finished_episode_keys()?;
    let (total, skipped, todo) = pending(tasks, |t| &t.key, &finished, req.max_episodes);
    let todo = long_items_early(todo, |t| t.fault.waits_out_a_deadline());
    let limits = rc.limits;
    let retries = env.liveness.retries;
    let (mut infra_failures, mut failed, mut cassette_misses) = (0, 0, 0);
    let mut policy_errors = 0;
    let mut summary = run_phase(
        req.progress,
        "recovery ",
        (total, skipped),
        todo,
        config.jobs.of(Phase::Recovery),
        |task: EpisodeTask| {
            let env = env.clone();
            let agent = task.agent.clone();
            let policy = policies[&task.policy].clone();
            async move {
                let spec = EpisodeSpec {
                    decision: &task.decision,
                    fault: FaultPlan::new(task.fault, task.seed),
                    policy: policy.as_ref(),
                    agent: agent.as_ref(),
                    limits,
                    seed: task.seed,
                };
                // A browser, renderer or page failure is retried on a fresh page (and a
                // new browser when it died), a bounded number of times.
                let result = with_retries(&env, &task.key, retries, || run_episode(&env, &spec))
                    .await
                    .with_context(|| format!("episode {}", task.key))?;
                Ok((task, agent.name().to_string(), result))
            }
        },
        |(task, agent_name, result)| match result {
            Attempted::Done(mut r, failures, retried) => {
                infra_failures += failures.len();
                cassette_misses += replay_misses(&failures);
                policy_errors += usize::from(r.infra_error.is_some());
                r.costs.merge(&retried);
                store::episode(db, shots, &task, &agent_name, r, failures)
            }
            Attempted::Failed(failures) => {
                infra_failures += failures.len();
                cassette_misses += replay_misses(&failures);
                failed += 1;
                db.insert_infra_errors(&failures)
                    .with_context(|| format!("writing {}", db.path().display()))
            }
        },
    )
    .await?;
    summary.infra_failures = infra_failures;
    summary.failed = failed;
    summary.cassette_misses = cassette_misses;
    summary.policy_errors = policy_errors;
    if summary.run > 0 {
        db.insert_phase_cost(&summary.cost_row(Phase::Recovery, config.isolation.as_str()))
            .with_context(|| format!("writing {}", db.path().display()))?;
    }
    Ok(summary)
}

/// How many of `failures` are the agent's cassette misses in `replay` mode.
fn replay_misses(failures: &[InfraErrorRow]) -> usize {
    failures
        .iter()
        .filter(|f| f.kind == InfraKind::AgentEndpoint.into() && is_replay_miss(&f.reason))
        .count()
}
