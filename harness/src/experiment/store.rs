//! Storing results as rows: the run's manifest when it starts, then each finished
//! trial (`trial`) or episode (`episode`) with its screenshots, verdicts, steps,
//! infrastructure errors and stage costs, each in one transaction.

use super::items::{EpisodeTask, TrialSpec};
use super::{RunRequest, GIT_COMMIT, VERSION};
use crate::config::ExperimentConfig;
use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::episode::EpisodeResult;
use crate::engine::trial::{Condition, TrialResult};
use crate::experiment::jobs::Phase;
use anyhow::{Context, Result};
use faultline_analysis::db::manifest::{ConfigAsPassed, Manifest, RecoveryDesign};
use faultline_analysis::db::{
    EpisodeRow, EpisodeStepRow, InfraErrorRow, ResultsDb, StageCostRow, TrialRow, VerdictRow,
};
use faultline_tasks::DecisionSet;
use std::path::Path;

/// Stores the run's manifest (and, for a shard, which items it owns) the first time the
/// run starts; a resumed run keeps the one it has.
pub(crate) fn store_manifest(
    req: &RunRequest,
    db: &mut ResultsDb,
    decisions: &(DecisionSet, String),
    chromium_version: String,
    shard_items: Option<(String, usize)>,
    design: &RecoveryDesign,
) -> Result<()> {
    let config = &req.config;
    if db.meta("manifest")?.is_none() {
        db.set_manifest(&Manifest {
            chromium_version,
            config_as_passed: Some(ConfigAsPassed {
                name: req.config_text.name.clone(),
                overrides: serde_json::to_value(&req.overrides)?,
                text: req.config_text.text.clone(),
            }),
            config_resolved: serde_json::to_value(config)?,
            decisions: decisions.1.clone(),
            decisions_sha256: Some(decisions_sha256(config, &decisions.0)),
            faultline_version: VERSION.into(),
            faults: config.faults.clone(),
            git_commit: GIT_COMMIT.into(),
            layouts: config.layouts,
            merged_shards: None,
            policies: config.policies.clone(),
            recovery: config.recovery.enabled.then(|| design.clone()),
            root_seed: config.seed,
            settle: Some(config.timing.settle_mode().into()),
            shard: req.shard,
            tasks: config.tasks.clone(),
        })?;
        if let (Some(s), Some((keys, total))) = (req.shard, &shard_items) {
            db.set_meta("shard", &s.to_string())?;
            db.set_meta("shard_items", keys)?;
            db.set_meta("shard_total_items", &total.to_string())?;
        }
        db.set_meta("policies", &serde_json::to_string(&config.policies)?)?;
        if !config.external_policies.is_empty() {
            let names: Vec<&str> = config
                .external_policies
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            db.set_meta("external_policies", &serde_json::to_string(&names)?)?;
        }
    }
    Ok(())
}

/// The SHA-256 of the decisions the run replays (every task's layouts in order, one JSON
/// line each): what two runs must share to be compared or merged, wherever the decisions
/// were recorded to.
pub fn decisions_sha256(config: &ExperimentConfig, decisions: &DecisionSet) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for task in &config.tasks {
        for index in 0..config.layouts {
            if let Some(d) = decisions.find(*task, config.seed, index) {
                hash.update(serde_json::to_string(d).expect("decisions serialize"));
                hash.update(b"\n");
            }
        }
    }
    hex::encode(hash.finalize())
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
pub(super) fn trial(
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

/// Stores a finished episode: its screenshots, its row and its steps.
pub(super) fn episode(
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
    write_shot(&shots.join(format!("{stem}.before.png")), &r.before.png)?;
    let d = &task.decision;
    let mut steps = Vec::new();
    for s in &r.steps {
        let screenshot = match &s.observation {
            Some(o) => {
                let name = format!("{stem}.s{}.png", s.step);
                write_shot(&shots.join(&name), &o.png)?;
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
        cost_rows(&task.key, &r.costs)
    })
    .with_context(|| format!("writing {path}"))
}
