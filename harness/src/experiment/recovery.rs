//! The recovery phase: episodes of decision x fault x policy x run, the agent acting on
//! the policy's feedback; and the rows an episode is stored as.

use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{with_retries, Attempted};
use super::RunRequest;
use crate::agent::cassette::is_replay_miss;
use crate::agent::Agent;
use crate::engine::cost::{Span, Stage};
use crate::engine::episode::{run_episode, EpisodeResult, EpisodeSpec};
use crate::engine::liveness::InfraKind;
use crate::engine::Engine;
use crate::experiment::jobs::Phase;
use anyhow::{anyhow, Context, Result};
use faultline_analysis::db::{EpisodeRow, EpisodeStepRow, InfraErrorRow, ResultsDb};
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::VerificationPolicy;
use faultline_tasks::seed::derive;
use faultline_tasks::{Decision, DecisionSet};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// An episode to run.
pub struct EpisodeTask {
    key: String,
    decision: Arc<Decision>,
    fault: Fault,
    policy: String,
    agent: Arc<dyn Agent>,
    run: u32,
    seed: u64,
}

impl EpisodeTask {
    /// `recovery/<task>/<fault>/<policy>/<agent>/r<run>/<layout>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The task the replayed decision was recorded for.
    pub fn task(&self) -> faultline_tasks::TaskKind {
        self.decision.task
    }

    /// The key as the owned string it is stored as.
    pub fn key_string(&self) -> &String {
        &self.key
    }

    /// The recorded decision replayed at step 0.
    pub fn decision(&self) -> &Arc<Decision> {
        &self.decision
    }

    /// The fault armed for the whole episode.
    pub fn fault(&self) -> Fault {
        self.fault
    }

    /// The repetition, from 0.
    pub fn run(&self) -> u32 {
        self.run
    }

    /// The episode's seed (derived from the root seed and the key).
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

/// Every episode of the recovery phase, in a fixed order.
pub fn episodes(
    config: &crate::config::ExperimentConfig,
    decisions: &DecisionSet,
    agents: &[Arc<dyn Agent>],
) -> Vec<EpisodeTask> {
    let rc = &config.recovery;
    // Fixed before any agent call: for every agent, the first `layouts` layouts of every
    // task, every (task, fault) pair, every policy, every run.
    let mut tasks = Vec::new();
    for agent in agents {
        for (task, fault) in config.recovery_pairs() {
            for policy in &rc.policies {
                for run in 0..rc.runs {
                    for index in 0..rc.layouts {
                        let Some(decision) = decisions.find(task, config.seed, index) else {
                            continue;
                        };
                        let key = format!(
                            "recovery/{task}/{}/{policy}/{}/r{run}/{index:03}",
                            fault.id(),
                            agent.name()
                        );
                        tasks.push(EpisodeTask {
                            seed: derive(config.seed, &["episode", &key]),
                            key,
                            decision: Arc::new(decision.clone()),
                            fault,
                            policy: policy.clone(),
                            agent: agent.clone(),
                            run,
                        });
                    }
                }
            }
        }
    }
    tasks
}

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
                store_episode(db, shots, &task, &agent_name, r, failures)
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
        .filter(|f| f.kind == InfraKind::AgentEndpoint.name() && is_replay_miss(&f.reason))
        .count()
}

/// Stores a finished episode: its screenshots, its row and its steps.
fn store_episode(
    db: &mut ResultsDb,
    shots: &Path,
    task: &EpisodeTask,
    agent: &str,
    mut r: EpisodeResult,
    mut failed_attempts: Vec<InfraErrorRow>,
) -> Result<()> {
    let span = Span::start(Stage::Storage);
    // The policy could not judge: nothing was measured. The error is stored (and
    // reported); the episode is not, so a resumed run tries it again.
    if let Some(e) = &r.infra_error {
        failed_attempts.push(crate::plugin::policy::infra_row(&task.key, &task.policy, e));
        return db.insert_infra_errors(&failed_attempts);
    }
    let stem = task.key.replace('/', "-");
    super::detection::write_shot(&shots.join(format!("{stem}.before.png")), &r.before.png)?;
    let d = &task.decision;
    let mut steps = Vec::new();
    for s in &r.steps {
        let screenshot = match &s.observation {
            Some(o) => {
                let name = format!("{stem}.s{}.png", s.step);
                super::detection::write_shot(&shots.join(&name), &o.png)?;
                Some(format!("shots/{name}"))
            }
            None => None,
        };
        steps.push(EpisodeStepRow {
            episode_key: task.key.clone(),
            step: s.step,
            source: if s.from_decision { "decision" } else { "agent" }.into(),
            reply: s.reply.clone(),
            parse_error: s.parse_error.clone(),
            actions: serde_json::to_string(&s.actions)?,
            executed: s.executed_json.clone(),
            browser_actions: s.browser_actions,
            tool_message: s.tool_message.clone(),
            verdict: s.feedback.as_ref().map(|f| f.verdict),
            policy_message: s.feedback.as_ref().map(|f| f.message.clone()),
            observation_text: s.observation.as_ref().map(|o| o.text.clone()),
            screenshot,
            witness: s.witness.as_ref().map(serde_json::to_string).transpose()?,
            truth_achieved: s.truth.achieved,
            truth_detail: s.truth.detail.clone(),
            ledger_events: serde_json::to_string(&s.ledger_events)?,
            usage: s.usage.as_ref().map(serde_json::to_string).transpose()?,
        });
    }
    let row = EpisodeRow {
        episode_key: task.key.clone(),
        task: d.task,
        fault: task.fault,
        stage: task.fault.stage(),
        layer: task.fault.layer(),
        policy: task.policy.clone(),
        agent: agent.to_string(),
        run: task.run,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        episode_seed: task.seed,
        fired: r.fired,
        success: r.truth.achieved,
        truth_detail: r.truth.detail.clone(),
        browser_actions: r.browser_actions,
        steps: r.steps.len() as u32,
        stop_reason: r.stop_reason,
        detected_at_first_step: r.detected_at_first_step,
        first_verdict: r.first_verdict,
        error: r.error.clone(),
        model_calls: r.model_calls,
        prompt_tokens: r.usage.map(|u| u.prompt_tokens),
        completion_tokens: r.usage.map(|u| u.completion_tokens),
        ledger: serde_json::to_string(&r.ledger)?,
        duration_ms: r.duration_ms,
    };
    // The costs go in the same transaction, as for a trial.
    let path = db.path().display().to_string();
    db.insert_episode_with_costs(&row, &steps, &failed_attempts, || {
        span.end(&mut r.costs);
        super::detection::cost_rows(&task.key, &r.costs)
    })
    .with_context(|| format!("writing {path}"))
}
