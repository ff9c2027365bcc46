//! Inserts: an item with everything stored about it, in one transaction.

use super::*;
use anyhow::{Context, Result};
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::Verdict;
use rusqlite::params;

impl ResultsDb {
    /// Inserts a trial and its verdicts atomically. A key that is already present is an
    /// error: resuming must skip it, never write it twice.
    pub fn insert_trial(&mut self, t: &TrialRow, verdicts: &[VerdictRow]) -> Result<()> {
        self.insert_trial_with_infra(t, verdicts, &[])
    }

    /// Inserts a trial, its verdicts and the infrastructure errors of the policies that
    /// could not judge it, atomically.
    pub fn insert_trial_with_infra(
        &mut self,
        t: &TrialRow,
        verdicts: &[VerdictRow],
        infra: &[InfraErrorRow],
    ) -> Result<()> {
        self.insert_trial_with_costs(t, verdicts, infra, Vec::new)
    }

    /// [`ResultsDb::insert_trial_with_infra`], with the trial's stage costs in the same
    /// transaction: `costs` is called once the result rows are inserted, just before the
    /// commit (so a storage stage it reports can cover the inserts), and a stored trial
    /// always has its costs.
    pub fn insert_trial_with_costs(
        &mut self,
        t: &TrialRow,
        verdicts: &[VerdictRow],
        infra: &[InfraErrorRow],
        costs: impl FnOnce() -> Vec<StageCostRow>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO trials (trial_key, experiment, task, layout_index, layout_seed, trial_seed, condition, fault, stage, fired, witness, decision_source, reply, actions, executed, tool_message, observation_text, before_png, after_png, evidence, truth_achieved, truth_detail, ledger, duration_ms, layer, not_fired_reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
            params![
                t.trial_key,
                t.experiment.name(),
                t.task.name(),
                t.layout_index,
                t.layout_seed.to_string(),
                t.trial_seed.to_string(),
                t.condition.name(),
                t.fault.map(Fault::id),
                t.stage.map(Stage::name),
                t.fired,
                t.witness,
                t.decision_source,
                t.reply,
                t.actions,
                t.executed,
                t.tool_message,
                t.observation_text,
                t.before_png,
                t.after_png,
                t.evidence,
                t.truth_achieved,
                t.truth_detail,
                t.ledger,
                t.duration_ms,
                t.layer.map(Layer::name),
                t.not_fired_reason,
            ],
        )
        .with_context(|| format!("storing trial {}", t.trial_key))?;
        for v in verdicts {
            tx.execute(
                "INSERT INTO verdicts (trial_key, policy, verdict, message) VALUES (?1, ?2, ?3, ?4)",
                params![v.trial_key, v.policy, v.verdict.name(), v.message],
            )?;
        }
        for e in infra {
            insert_infra(&tx, e)?;
        }
        insert_costs(&tx, &costs())?;
        tx.commit()?;
        Ok(())
    }

    /// Stores infrastructure errors on their own (an episode whose policy could not
    /// judge is not stored, so a resumed run tries it again; its errors are kept).
    pub fn insert_infra_errors(&mut self, rows: &[InfraErrorRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for e in rows {
            insert_infra(&tx, e)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores what one trial or episode cost, stage by stage. Replaces any costs stored
    /// for the same item and stage.
    pub fn insert_stage_costs(&mut self, rows: &[StageCostRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_costs(&tx, rows)?;
        tx.commit()?;
        Ok(())
    }

    /// Stores what a phase cost.
    pub fn insert_phase_cost(&mut self, r: &PhaseCostRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO phase_costs (phase, started_at, items, jobs, isolation, wall_ms, cpu_ours_ms, cpu_browser_ms, peak_rss_ours_kib, peak_rss_browser_kib) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                r.phase.name(),
                r.started_at,
                r.items as i64,
                r.jobs as i64,
                r.isolation,
                r.wall_ms,
                r.cpu_ours_ms,
                r.cpu_browser_ms,
                r.peak_rss_ours_kib as i64,
                r.peak_rss_browser_kib as i64
            ],
        )?;
        Ok(())
    }

    /// Inserts an episode and its whole transcript atomically; a key already present is
    /// an error (resume skips it, never writes it twice).
    pub fn insert_episode(&mut self, e: &EpisodeRow, steps: &[EpisodeStepRow]) -> Result<()> {
        self.insert_episode_with_infra(e, steps, &[])
    }

    /// Inserts an episode, its steps and the infrastructure errors of its failed
    /// attempts (a retried episode), atomically.
    pub fn insert_episode_with_infra(
        &mut self,
        e: &EpisodeRow,
        steps: &[EpisodeStepRow],
        infra: &[InfraErrorRow],
    ) -> Result<()> {
        self.insert_episode_with_costs(e, steps, infra, Vec::new)
    }

    /// [`ResultsDb::insert_episode_with_infra`], with the episode's stage costs in the
    /// same transaction (`costs` is called just before the commit, as for
    /// [`ResultsDb::insert_trial_with_costs`]).
    pub fn insert_episode_with_costs(
        &mut self,
        e: &EpisodeRow,
        steps: &[EpisodeStepRow],
        infra: &[InfraErrorRow],
        costs: impl FnOnce() -> Vec<StageCostRow>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        for i in infra {
            insert_infra(&tx, i)?;
        }
        tx.execute(
            "INSERT INTO episodes (episode_key, task, fault, stage, layer, policy, agent, run, layout_index, layout_seed, episode_seed, fired, success, truth_detail, browser_actions, steps, stop_reason, detected_at_first_step, first_verdict, error, model_calls, prompt_tokens, completion_tokens, ledger, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
            params![
                e.episode_key,
                e.task.name(),
                e.fault.id(),
                e.stage.name(),
                e.layer.name(),
                e.policy,
                e.agent,
                e.run,
                e.layout_index,
                e.layout_seed.to_string(),
                e.episode_seed.to_string(),
                e.fired,
                e.success,
                e.truth_detail,
                e.browser_actions,
                e.steps,
                e.stop_reason.name(),
                e.detected_at_first_step,
                e.first_verdict.map_or("none", Verdict::name),
                e.error,
                e.model_calls,
                e.prompt_tokens,
                e.completion_tokens,
                e.ledger,
                e.duration_ms,
            ],
        )
        .with_context(|| format!("storing episode {}", e.episode_key))?;
        for s in steps {
            tx.execute(
                "INSERT INTO episode_steps (episode_key, step, source, reply, parse_error, actions, executed, browser_actions, tool_message, verdict, policy_message, observation_text, screenshot, witness, truth_achieved, truth_detail, ledger_events, usage)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                params![
                    s.episode_key,
                    s.step,
                    s.source,
                    s.reply,
                    s.parse_error,
                    s.actions,
                    s.executed,
                    s.browser_actions,
                    s.tool_message,
                    s.verdict.map(Verdict::name),
                    s.policy_message,
                    s.observation_text,
                    s.screenshot,
                    s.witness,
                    s.truth_achieved,
                    s.truth_detail,
                    s.ledger_events,
                    s.usage,
                ],
            )
            .with_context(|| format!("storing step {} of episode {}", s.step, s.episode_key))?;
        }
        insert_costs(&tx, &costs())?;
        tx.commit()?;
        Ok(())
    }
}

/// Stage cost rows, replacing any stored for the same item and stage.
fn insert_costs(tx: &rusqlite::Transaction<'_>, rows: &[StageCostRow]) -> Result<()> {
    let mut stmt = tx.prepare(
        "INSERT OR REPLACE INTO stage_costs (item_key, stage, wall_ms, cpu_ms) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for r in rows {
        stmt.execute(params![r.item_key, r.stage.name(), r.wall_ms, r.cpu_ms])?;
    }
    Ok(())
}

/// One infrastructure error; an attempt already stored for the same (item, policy) is
/// kept and the new one is numbered after it.
fn insert_infra(tx: &rusqlite::Transaction<'_>, e: &InfraErrorRow) -> Result<()> {
    let next: u32 = tx.query_row(
        "SELECT COALESCE(MAX(attempt), 0) + 1 FROM infra_errors WHERE item_key = ?1 AND policy = ?2",
        params![e.item_key, e.policy],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT INTO infra_errors (item_key, policy, kind, reason, stderr_tail, attempt) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            e.item_key,
            e.policy,
            e.kind.name(),
            e.reason,
            e.stderr_tail,
            e.attempt.max(next)
        ],
    )
    .with_context(|| format!("storing the infrastructure error of {} on {}", e.policy, e.item_key))?;
    Ok(())
}
