//! The recovery phase: episodes of decision x fault x policy x run, the agent acting on
//! the policy's feedback. Its episodes are planned in [`super::items`] and stored by
//! [`super::store`].

use super::items::{page_groups, EpisodeTask};
use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{failures_for, with_retries, Attempted};
use super::{store, RunRequest};
use crate::agent::cassette::is_replay_miss;
use crate::engine::episode::{run_together, EpisodeLimits, EpisodeResult, EpisodeSpec, Follower};
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
    // One item per group of episodes that may share a page (the same item under the
    // different policies and agents); the phase counts episodes.
    let todo = long_items_early(page_groups(todo), |g| g[0].fault.waits_out_a_deadline());
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
        |group: Vec<EpisodeTask>| {
            let env = env.clone();
            let policies: Vec<Arc<dyn VerificationPolicy>> =
                group.iter().map(|t| policies[&t.policy].clone()).collect();
            async move { run_group(&env, group, policies, limits, retries).await }
        },
        |episodes: Vec<(EpisodeTask, Attempted<EpisodeResult>)>| {
            let stored = episodes.len();
            for (task, result) in episodes {
                let agent_name = task.agent.name().to_string();
                match result {
                    Attempted::Done(mut r, failures, retried) => {
                        infra_failures += failures.len();
                        cassette_misses += replay_misses(&failures);
                        policy_errors += usize::from(r.infra_error.is_some());
                        r.costs.merge(&retried);
                        store::episode(db, shots, &task, &agent_name, r, failures)?;
                    }
                    Attempted::Failed(failures) => {
                        infra_failures += failures.len();
                        cassette_misses += replay_misses(&failures);
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
    summary.cassette_misses = cassette_misses;
    summary.policy_errors = policy_errors;
    if summary.run > 0 {
        db.insert_phase_cost(&summary.cost_row(Phase::Recovery, config.isolation.as_str()))
            .with_context(|| format!("writing {}", db.path().display()))?;
    }
    Ok(summary)
}

/// Runs a group of episodes (one item under several policies and agents, see
/// [`super::items::page_groups`]): the first on a page that also serves the others for
/// as long as each goes the same way, then again among those that left, until every
/// episode has finished or failed. A browser, renderer or page failure is retried on a
/// fresh page (and a new browser when it died), a bounded number of times; a run that
/// failed for good fails every episode it was running.
async fn run_group(
    env: &Arc<Engine>,
    group: Vec<EpisodeTask>,
    policies: Vec<Arc<dyn VerificationPolicy>>,
    limits: EpisodeLimits,
    retries: u32,
) -> Result<Vec<(EpisodeTask, Attempted<EpisodeResult>)>> {
    let mut done = Vec::with_capacity(group.len());
    let mut left: Vec<(EpisodeTask, Arc<dyn VerificationPolicy>)> =
        group.into_iter().zip(policies).collect();
    while !left.is_empty() {
        let (lead, lead_policy) = &left[0];
        let spec = EpisodeSpec {
            decision: &lead.decision,
            fault: FaultPlan::new(lead.fault, lead.seed),
            policy: lead_policy.as_ref(),
            agent: lead.agent.as_ref(),
            limits,
            seed: lead.seed,
        };
        let followers: Vec<Follower<'_>> = left[1..]
            .iter()
            .map(|(t, p)| Follower {
                policy: p.as_ref(),
                agent: t.agent.as_ref(),
                seed: t.seed,
            })
            .collect();
        let attempted = with_retries(env, &lead.key, retries, || {
            run_together(env, &spec, &followers)
        })
        .await
        .with_context(|| format!("episode {}", lead.key))?;
        let mut next = Vec::new();
        match attempted {
            Attempted::Done(results, failures, retried) => {
                // The failed attempts and their cost belong to the leader's page.
                let mut page = Some((failures, retried));
                for ((task, policy), result) in left.into_iter().zip(results) {
                    match result {
                        Some(r) => {
                            let (failures, retried) = page.take().unwrap_or_default();
                            done.push((task, Attempted::Done(r, failures, retried)));
                        }
                        None => next.push((task, policy)),
                    }
                }
            }
            Attempted::Failed(failures) => {
                for (task, _) in left {
                    let mine = failures_for(&failures, &task.key);
                    done.push((task, Attempted::Failed(mine)));
                }
            }
        }
        left = next;
    }
    Ok(done)
}

/// How many of `failures` are the agent's cassette misses in `replay` mode.
fn replay_misses(failures: &[InfraErrorRow]) -> usize {
    failures
        .iter()
        .filter(|f| f.kind == InfraKind::AgentEndpoint.into() && is_replay_miss(&f.reason))
        .count()
}
