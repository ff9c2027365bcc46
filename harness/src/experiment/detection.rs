//! The detection phase: every recorded decision replayed once with each of its faults
//! (faulty trials) and once clean (a working trial), every policy judging the same
//! stored trial; and the rows a trial is stored as.

use super::phase::{long_items_early, pending, run_phase, PhaseSummary};
use super::retry::{with_retries, Attempted};
use super::RunRequest;
use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::trial::{run_trial, Condition, TrialResult};
use crate::engine::Engine;
use crate::experiment::jobs::Phase;
use anyhow::{Context, Result};
use faultline_analysis::db::{InfraErrorRow, ResultsDb, StageCostRow, TrialRow, VerdictRow};
use faultline_faults::{Fault, FaultPlan};
use faultline_tasks::seed::derive;
use faultline_tasks::{Decision, DecisionSet};
use std::path::Path;
use std::sync::Arc;

/// A trial to run: faulty when it has a fault, working when not.
#[derive(Clone)]
pub struct TrialSpec {
    key: String,
    decision: Arc<Decision>,
    fault: Option<Fault>,
    trial_seed: u64,
}

impl TrialSpec {
    /// `detection/<task>/<layout>/<fault id|working>`.
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

    /// The recorded decision the trial replays.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The trial's fault; `None` for the working trial.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// The trial's own seed (the fault's parameters are drawn from it).
    pub fn trial_seed(&self) -> u64 {
        self.trial_seed
    }

    /// The recorded decision of an episode, replayed with its fault at step 0 under the
    /// episode's key and seed: what an external harness is handed first for an episode.
    pub(crate) fn episode_start(
        key: &str,
        decision: Arc<Decision>,
        fault: Fault,
        seed: u64,
    ) -> TrialSpec {
        TrialSpec {
            key: key.to_string(),
            decision,
            fault: Some(fault),
            trial_seed: seed,
        }
    }
}

/// Every trial of the detection phase, in a fixed order: per task, per layout, each of the
/// task's faults and then the working trial.
pub fn specs(config: &crate::config::ExperimentConfig, decisions: &DecisionSet) -> Vec<TrialSpec> {
    let pairs = config.detection_pairs();
    let mut specs = Vec::new();
    for task in &config.tasks {
        let faults: Vec<Fault> = pairs
            .iter()
            .filter(|(t, _)| t == task)
            .map(|(_, f)| *f)
            .collect();
        if faults.is_empty() {
            continue;
        }
        for index in 0..config.layouts {
            // Only a decision file can lack layouts (see `preload_decisions`).
            let Some(decision) = decisions.find(*task, config.seed, index) else {
                continue;
            };
            let decision = Arc::new(decision.clone());
            let mut conditions: Vec<Option<Fault>> = faults.iter().copied().map(Some).collect();
            conditions.push(None);
            for fault in conditions {
                let key = format!(
                    "detection/{task}/{index:03}/{}",
                    fault.map_or("working", Fault::id)
                );
                specs.push(TrialSpec {
                    trial_seed: derive(config.seed, &["trial", &key]),
                    key,
                    decision: decision.clone(),
                    fault,
                });
            }
        }
    }
    specs
}

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
                store(db, shots, &spec, r, failures)
            }
            Attempted::Failed(failures) => {
                infra_failures += failures.len();
                failed += 1;
                db.insert_infra_errors(&failures)
                    .with_context(|| format!("writing {}", db.path().display()))
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

/// `costs` as stored rows for `item_key`.
pub fn cost_rows(item_key: &str, costs: &StageCosts) -> Vec<StageCostRow> {
    costs
        .rows()
        .into_iter()
        .map(|(stage, wall_ms, cpu_ms)| StageCostRow {
            item_key: item_key.to_string(),
            stage,
            wall_ms,
            cpu_ms,
        })
        .collect()
}

/// Stores a finished trial: its screenshots, its row and every policy's verdict.
fn store(
    db: &mut ResultsDb,
    shots: &Path,
    spec: &TrialSpec,
    mut r: TrialResult,
    failed_attempts: Vec<InfraErrorRow>,
) -> Result<()> {
    let span = Span::start(Stage::Storage);
    let stem = spec.key.replace('/', "-");
    let before = format!("shots/{stem}.before.png");
    let after = format!("shots/{stem}.after.png");
    write_shot(&shots.join(format!("{stem}.before.png")), &r.before_png)?;
    write_shot(&shots.join(format!("{stem}.after.png")), &r.after_png)?;
    let d = &spec.decision;
    let condition = if spec.fault.is_some() {
        Condition::Faulty
    } else {
        Condition::Working
    };
    let row = TrialRow {
        trial_key: spec.key.clone(),
        experiment: Phase::Detection,
        task: d.task,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        trial_seed: spec.trial_seed,
        condition,
        fault: spec.fault,
        stage: spec.fault.map(|f| f.stage()),
        fired: spec.fault.map(|_| r.witness.is_some()),
        witness: r.witness.as_ref().map(serde_json::to_string).transpose()?,
        decision_source: d.source.clone(),
        reply: d.reply.clone(),
        actions: serde_json::to_string(&r.actions)?,
        executed: r.executed_json,
        tool_message: r.tool_message,
        observation_text: r.observation_text,
        before_png: Some(before),
        after_png: Some(after),
        evidence: r.evidence_json,
        truth_achieved: r.truth.achieved,
        truth_detail: r.truth.detail,
        ledger: serde_json::to_string(&r.ledger)?,
        duration_ms: r.duration_ms,
        layer: spec.fault.map(|f| f.layer()),
        not_fired_reason: match (spec.fault, &r.witness) {
            (Some(f), None) => Some(f.spec().not_fired_when.to_string()),
            _ => None,
        },
    };
    // A verdict row for every real judgement; an infrastructure-error row, never a
    // verdict, for a policy that could not judge.
    let mut verdicts = Vec::new();
    let mut infra: Vec<InfraErrorRow> = failed_attempts;
    for (policy, outcome) in &r.judgements {
        match outcome {
            Ok(j) => verdicts.push(VerdictRow {
                trial_key: spec.key.clone(),
                policy: policy.clone(),
                verdict: j.verdict,
                message: j.message.clone(),
            }),
            Err(e) => infra.push(crate::plugin::policy::infra_row(&spec.key, policy, e)),
        }
    }
    // The costs go in the same transaction (timing data, in their own table); storage
    // covers the screenshots and the inserts, not the commit.
    let path = db.path().display().to_string();
    db.insert_trial_with_costs(&row, &verdicts, &infra, || {
        span.end(&mut r.costs);
        cost_rows(&spec.key, &r.costs)
    })
    .with_context(|| format!("writing {path}"))
}

/// Writes a screenshot; a full disk names the file.
pub(crate) fn write_shot(path: &Path, png: &[u8]) -> Result<()> {
    std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
}
