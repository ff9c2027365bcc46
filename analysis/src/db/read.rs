//! Typed reads: a stored name the vocabulary does not know is an error that names the
//! table, the key and the column.

use super::*;
use anyhow::{anyhow, Result};
use rusqlite::Row;
use std::collections::BTreeSet;
use std::fmt::Display;
use std::str::FromStr;

impl ResultsDb {
    /// Keys of trials already stored.
    pub fn finished_keys(&self) -> Result<BTreeSet<String>> {
        let mut stmt = self.conn.prepare("SELECT trial_key FROM trials")?;
        let keys = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<BTreeSet<String>>>()?;
        Ok(keys)
    }

    /// Every stored infrastructure error, ordered by item, policy and attempt (none in a
    /// database older than version 3).
    pub fn infra_errors(&self) -> Result<Vec<InfraErrorRow>> {
        if !self.has_table("infra_errors")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT item_key, policy, kind, reason, stderr_tail, attempt FROM infra_errors ORDER BY item_key, policy, attempt",
        )?;
        let rows = stmt.query_map([], |r| Ok(infra_error_row(r)))?;
        collect(rows)
    }

    /// Every stored stage cost, by item and stage (none before version 4).
    pub fn stage_costs(&self) -> Result<Vec<StageCostRow>> {
        if !self.has_table("stage_costs")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT item_key, stage, wall_ms, cpu_ms FROM stage_costs ORDER BY item_key, stage",
        )?;
        let rows = stmt.query_map([], |r| Ok(stage_cost_row(r)))?;
        collect(rows)
    }

    /// Every stored phase cost, in the order the phases ran (none before version 4).
    pub fn phase_costs(&self) -> Result<Vec<PhaseCostRow>> {
        if !self.has_table("phase_costs")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT phase, started_at, items, jobs, isolation, wall_ms, cpu_ours_ms, cpu_browser_ms, peak_rss_ours_kib, peak_rss_browser_kib FROM phase_costs ORDER BY rowid",
        )?;
        let rows = stmt.query_map([], |r| Ok(phase_cost_row(r)))?;
        collect(rows)
    }

    /// Every stored trial, ordered by key.
    pub fn trials(&self) -> Result<Vec<TrialRow>> {
        // Version 1 has no layer or not_fired_reason columns: read them as NULL.
        let extra = if self.version >= 2 {
            "layer, not_fired_reason"
        } else {
            "NULL, NULL"
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT trial_key, experiment, task, layout_index, layout_seed, trial_seed, condition, fault, stage, fired, witness, decision_source, reply, actions, executed, tool_message, observation_text, before_png, after_png, evidence, truth_achieved, truth_detail, ledger, duration_ms, {extra} FROM trials ORDER BY trial_key",
        ))?;
        let rows = stmt.query_map([], |r| Ok(trial_row(r)))?;
        collect(rows)
    }

    /// Every stored verdict, ordered by trial key and policy.
    pub fn verdicts(&self) -> Result<Vec<VerdictRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT trial_key, policy, verdict, message FROM verdicts ORDER BY trial_key, policy",
        )?;
        let rows = stmt.query_map([], |r| Ok(verdict_row(r)))?;
        collect(rows)
    }

    /// Keys of episodes already stored.
    pub fn finished_episode_keys(&self) -> Result<BTreeSet<String>> {
        if self.version < 2 {
            return Ok(BTreeSet::new());
        }
        let mut stmt = self.conn.prepare("SELECT episode_key FROM episodes")?;
        let keys = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<BTreeSet<String>>>()?;
        Ok(keys)
    }

    /// Every stored episode, ordered by key (none in a version-1 database).
    pub fn episodes(&self) -> Result<Vec<EpisodeRow>> {
        if self.version < 2 {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT episode_key, task, fault, stage, layer, policy, agent, run, layout_index, layout_seed, episode_seed, fired, success, truth_detail, browser_actions, steps, stop_reason, detected_at_first_step, first_verdict, error, model_calls, prompt_tokens, completion_tokens, ledger, duration_ms FROM episodes ORDER BY episode_key",
        )?;
        let rows = stmt.query_map([], |r| Ok(episode_row(r)))?;
        collect(rows)
    }

    /// The transcript of one episode, in step order.
    pub fn episode_steps(&self, episode_key: &str) -> Result<Vec<EpisodeStepRow>> {
        if self.version < 2 {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT episode_key, step, source, reply, parse_error, actions, executed, browser_actions, tool_message, verdict, policy_message, observation_text, screenshot, witness, truth_achieved, truth_detail, ledger_events, usage FROM episode_steps WHERE episode_key = ?1 ORDER BY step",
        )?;
        let rows = stmt.query_map([episode_key], |r| Ok(step_row(r)))?;
        collect(rows)
    }
}

fn parse_u64(s: String) -> u64 {
    s.parse().unwrap_or(0)
}

/// Rows whose typed columns may each fail to convert.
fn collect<T>(rows: impl Iterator<Item = rusqlite::Result<Result<T>>>) -> Result<Vec<T>> {
    rows.map(|r| r?).collect()
}

/// A stored name read back as its vocabulary type; a name the type does not know is an
/// error naming the table, the row's key and the column.
fn parse_name<T: FromStr<Err = E>, E: Display>(
    text: &str,
    table: &str,
    key: &str,
    column: &str,
) -> Result<T> {
    text.parse()
        .map_err(|e| anyhow!("{table} `{key}`: column `{column}` holds `{text}`: {e}"))
}

/// Column `i` (text) of row `r` as a vocabulary type (see [`parse_name`]).
fn column<T: FromStr<Err = E>, E: Display>(
    r: &Row<'_>,
    i: usize,
    table: &str,
    key: &str,
    name: &str,
) -> Result<T> {
    parse_name(&r.get::<_, String>(i)?, table, key, name)
}

/// Column `i` (nullable text) of row `r` as a vocabulary type.
fn optional_column<T: FromStr<Err = E>, E: Display>(
    r: &Row<'_>,
    i: usize,
    table: &str,
    key: &str,
    name: &str,
) -> Result<Option<T>> {
    r.get::<_, Option<String>>(i)?
        .map(|text| parse_name(&text, table, key, name))
        .transpose()
}

fn infra_error_row(r: &Row<'_>) -> Result<InfraErrorRow> {
    let key: String = r.get(0)?;
    let policy: String = r.get(1)?;
    Ok(InfraErrorRow {
        kind: column(
            r,
            2,
            "infra_errors",
            &format!("{key}, policy {policy}"),
            "kind",
        )?,
        item_key: key,
        policy,
        reason: r.get(3)?,
        stderr_tail: r.get(4)?,
        attempt: r.get(5)?,
    })
}

fn stage_cost_row(r: &Row<'_>) -> Result<StageCostRow> {
    let key: String = r.get(0)?;
    Ok(StageCostRow {
        stage: column(r, 1, "stage_costs", &key, "stage")?,
        wall_ms: r.get(2)?,
        cpu_ms: r.get(3)?,
        item_key: key,
    })
}

fn phase_cost_row(r: &Row<'_>) -> Result<PhaseCostRow> {
    let started_at: String = r.get(1)?;
    Ok(PhaseCostRow {
        phase: column(r, 0, "phase_costs", &started_at, "phase")?,
        started_at,
        items: r.get::<_, i64>(2)? as u64,
        jobs: r.get::<_, i64>(3)? as u64,
        isolation: r.get(4)?,
        wall_ms: r.get(5)?,
        cpu_ours_ms: r.get(6)?,
        cpu_browser_ms: r.get(7)?,
        peak_rss_ours_kib: r.get::<_, i64>(8)? as u64,
        peak_rss_browser_kib: r.get::<_, i64>(9)? as u64,
    })
}

fn trial_row(r: &Row<'_>) -> Result<TrialRow> {
    let key: String = r.get(0)?;
    let k = key.as_str();
    Ok(TrialRow {
        experiment: column(r, 1, "trials", k, "experiment")?,
        task: column(r, 2, "trials", k, "task")?,
        layout_index: r.get(3)?,
        layout_seed: parse_u64(r.get::<_, String>(4)?),
        trial_seed: parse_u64(r.get::<_, String>(5)?),
        condition: column(r, 6, "trials", k, "condition")?,
        fault: optional_column(r, 7, "trials", k, "fault")?,
        stage: optional_column(r, 8, "trials", k, "stage")?,
        fired: r.get(9)?,
        witness: r.get(10)?,
        decision_source: r.get(11)?,
        reply: r.get(12)?,
        actions: r.get(13)?,
        executed: r.get(14)?,
        tool_message: r.get(15)?,
        observation_text: r.get(16)?,
        before_png: r.get(17)?,
        after_png: r.get(18)?,
        evidence: r.get(19)?,
        truth_achieved: r.get(20)?,
        truth_detail: r.get(21)?,
        ledger: r.get(22)?,
        duration_ms: r.get(23)?,
        layer: optional_column(r, 24, "trials", k, "layer")?,
        not_fired_reason: r.get(25)?,
        trial_key: key,
    })
}

fn verdict_row(r: &Row<'_>) -> Result<VerdictRow> {
    let key: String = r.get(0)?;
    let policy: String = r.get(1)?;
    Ok(VerdictRow {
        verdict: column(
            r,
            2,
            "verdicts",
            &format!("{key}` policy `{policy}"),
            "verdict",
        )?,
        trial_key: key,
        policy,
        message: r.get(3)?,
    })
}

fn episode_row(r: &Row<'_>) -> Result<EpisodeRow> {
    let key: String = r.get(0)?;
    let k = key.as_str();
    let first_verdict: String = r.get(18)?;
    Ok(EpisodeRow {
        task: column(r, 1, "episodes", k, "task")?,
        fault: column(r, 2, "episodes", k, "fault")?,
        stage: column(r, 3, "episodes", k, "stage")?,
        layer: column(r, 4, "episodes", k, "layer")?,
        policy: r.get(5)?,
        agent: r.get(6)?,
        run: r.get(7)?,
        layout_index: r.get(8)?,
        layout_seed: parse_u64(r.get::<_, String>(9)?),
        episode_seed: parse_u64(r.get::<_, String>(10)?),
        fired: r.get(11)?,
        success: r.get(12)?,
        truth_detail: r.get(13)?,
        browser_actions: r.get(14)?,
        steps: r.get(15)?,
        stop_reason: column(r, 16, "episodes", k, "stop_reason")?,
        detected_at_first_step: r.get(17)?,
        first_verdict: match first_verdict.as_str() {
            "none" => None,
            text => Some(parse_name(text, "episodes", k, "first_verdict")?),
        },
        error: r.get(19)?,
        model_calls: r.get(20)?,
        prompt_tokens: r.get(21)?,
        completion_tokens: r.get(22)?,
        ledger: r.get(23)?,
        duration_ms: r.get(24)?,
        episode_key: key,
    })
}

fn step_row(r: &Row<'_>) -> Result<EpisodeStepRow> {
    let key: String = r.get(0)?;
    let step: u32 = r.get(1)?;
    Ok(EpisodeStepRow {
        verdict: optional_column(r, 9, "episode_steps", &format!("{key}#{step}"), "verdict")?,
        episode_key: key,
        step,
        source: r.get(2)?,
        reply: r.get(3)?,
        parse_error: r.get(4)?,
        actions: r.get(5)?,
        executed: r.get(6)?,
        browser_actions: r.get(7)?,
        tool_message: r.get(8)?,
        policy_message: r.get(10)?,
        observation_text: r.get(11)?,
        screenshot: r.get(12)?,
        witness: r.get(13)?,
        truth_achieved: r.get(14)?,
        truth_detail: r.get(15)?,
        ledger_events: r.get(16)?,
        usage: r.get(17)?,
    })
}
