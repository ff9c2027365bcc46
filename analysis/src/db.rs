//! The results database: one SQLite file per run, schema-versioned.
//!
//! The harness writes through [`ResultsDb`]; analysis reads through it too, so the schema
//! lives in exactly one place. Every trial is inserted together with its verdicts in one
//! transaction, keyed by a stable `trial_key`: a run killed half way leaves only whole
//! trials behind, and `--resume` skips keys that are already present.

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// Bumped whenever a table or column changes meaning.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    trial_key        TEXT PRIMARY KEY,
    experiment       TEXT NOT NULL,
    task             TEXT NOT NULL,
    layout_index     INTEGER NOT NULL,
    layout_seed      TEXT NOT NULL,
    trial_seed       TEXT NOT NULL,
    condition        TEXT NOT NULL CHECK (condition IN ('faulty', 'working')),
    fault            TEXT,
    stage            TEXT,
    fired            INTEGER,
    witness          TEXT,
    decision_source  TEXT NOT NULL,
    reply            TEXT NOT NULL,
    actions          TEXT NOT NULL,
    executed         TEXT NOT NULL,
    tool_message     TEXT NOT NULL,
    observation_text TEXT NOT NULL,
    before_png       TEXT,
    after_png        TEXT,
    evidence         TEXT NOT NULL,
    truth_achieved   INTEGER NOT NULL,
    truth_detail     TEXT NOT NULL,
    ledger           TEXT NOT NULL,
    duration_ms      REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
    trial_key TEXT NOT NULL REFERENCES trials(trial_key),
    policy    TEXT NOT NULL,
    verdict   TEXT NOT NULL CHECK (verdict IN ('success', 'no_change', 'fail')),
    message   TEXT NOT NULL,
    PRIMARY KEY (trial_key, policy)
);
"#;

/// One stored trial (the columns analysis needs are typed; the rest are JSON text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    pub trial_key: String,
    pub experiment: String,
    pub task: String,
    pub layout_index: u32,
    pub layout_seed: u64,
    pub trial_seed: u64,
    /// `faulty` or `working`.
    pub condition: String,
    pub fault: Option<String>,
    pub stage: Option<String>,
    /// `None` on working trials.
    pub fired: Option<bool>,
    pub witness: Option<String>,
    pub decision_source: String,
    pub reply: String,
    pub actions: String,
    pub executed: String,
    pub tool_message: String,
    pub observation_text: String,
    pub before_png: Option<String>,
    pub after_png: Option<String>,
    pub evidence: String,
    pub truth_achieved: bool,
    pub truth_detail: String,
    pub ledger: String,
    pub duration_ms: f64,
}

/// One policy's verdict on one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRow {
    pub trial_key: String,
    pub policy: String,
    pub verdict: String,
    pub message: String,
}

/// An open results database.
pub struct ResultsDb {
    conn: Connection,
}

impl ResultsDb {
    /// Opens (creating if needed) a database for writing.
    pub fn open(path: &Path) -> Result<ResultsDb> {
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        let db = ResultsDb { conn };
        match db.meta("schema_version")? {
            None => db.set_meta("schema_version", &SCHEMA_VERSION.to_string())?,
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) => bail!(
                "{}: schema_version is {v}, this faultline reads version {SCHEMA_VERSION}",
                path.display()
            ),
        }
        Ok(db)
    }

    /// Opens an existing database read-only.
    pub fn open_read_only(path: &Path) -> Result<ResultsDb> {
        if !path.is_file() {
            bail!("{}: no such results database", path.display());
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", path.display()))?;
        let db = ResultsDb { conn };
        match db.meta("schema_version")? {
            Some(v) if v == SCHEMA_VERSION.to_string() => Ok(db),
            Some(v) => bail!(
                "{}: schema_version is {v}, this faultline reads version {SCHEMA_VERSION}",
                path.display()
            ),
            None => bail!(
                "{}: not a faultline results database (no schema_version)",
                path.display()
            ),
        }
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Keys of trials already stored.
    pub fn finished_keys(&self) -> Result<BTreeSet<String>> {
        let mut stmt = self.conn.prepare("SELECT trial_key FROM trials")?;
        let keys = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<BTreeSet<String>>>()?;
        Ok(keys)
    }

    /// Inserts a trial and its verdicts atomically. A key that is already present is an
    /// error: resuming must skip it, never write it twice.
    pub fn insert_trial(&mut self, t: &TrialRow, verdicts: &[VerdictRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO trials (trial_key, experiment, task, layout_index, layout_seed, trial_seed, condition, fault, stage, fired, witness, decision_source, reply, actions, executed, tool_message, observation_text, before_png, after_png, evidence, truth_achieved, truth_detail, ledger, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params![
                t.trial_key,
                t.experiment,
                t.task,
                t.layout_index,
                t.layout_seed.to_string(),
                t.trial_seed.to_string(),
                t.condition,
                t.fault,
                t.stage,
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
            ],
        )
        .with_context(|| format!("storing trial {}", t.trial_key))?;
        for v in verdicts {
            tx.execute(
                "INSERT INTO verdicts (trial_key, policy, verdict, message) VALUES (?1, ?2, ?3, ?4)",
                params![v.trial_key, v.policy, v.verdict, v.message],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every stored trial, ordered by key.
    pub fn trials(&self) -> Result<Vec<TrialRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT trial_key, experiment, task, layout_index, layout_seed, trial_seed, condition, fault, stage, fired, witness, decision_source, reply, actions, executed, tool_message, observation_text, before_png, after_png, evidence, truth_achieved, truth_detail, ledger, duration_ms FROM trials ORDER BY trial_key",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(TrialRow {
                    trial_key: r.get(0)?,
                    experiment: r.get(1)?,
                    task: r.get(2)?,
                    layout_index: r.get(3)?,
                    layout_seed: parse_u64(r.get::<_, String>(4)?),
                    trial_seed: parse_u64(r.get::<_, String>(5)?),
                    condition: r.get(6)?,
                    fault: r.get(7)?,
                    stage: r.get(8)?,
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
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Every stored verdict, ordered by trial key and policy.
    pub fn verdicts(&self) -> Result<Vec<VerdictRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT trial_key, policy, verdict, message FROM verdicts ORDER BY trial_key, policy",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(VerdictRow {
                    trial_key: r.get(0)?,
                    policy: r.get(1)?,
                    verdict: r.get(2)?,
                    message: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Counts rows, for tests and progress reports.
    pub fn count(&self, table: &str) -> Result<u64> {
        if !matches!(table, "trials" | "verdicts" | "meta") {
            bail!("unknown table `{table}`");
        }
        Ok(self
            .conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }
}

fn parse_u64(s: String) -> u64 {
    s.parse().unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn verdict(key: &str, policy: &str, verdict: &str) -> VerdictRow {
        VerdictRow {
            trial_key: key.into(),
            policy: policy.into(),
            verdict: verdict.into(),
            message: String::new(),
        }
    }

    pub(crate) fn row(key: &str) -> TrialRow {
        TrialRow {
            trial_key: key.into(),
            experiment: "detection".into(),
            task: "grid".into(),
            layout_index: 1,
            layout_seed: u64::MAX,
            trial_seed: 7,
            condition: "faulty".into(),
            fault: Some("execute.unscaled_coordinates".into()),
            stage: Some("execute".into()),
            fired: Some(true),
            witness: Some("{}".into()),
            decision_source: "oracle".into(),
            reply: "click(1, 2)".into(),
            actions: "[]".into(),
            executed: "[]".into(),
            tool_message: "Clicked.".into(),
            observation_text: String::new(),
            before_png: None,
            after_png: None,
            evidence: "{}".into(),
            truth_achieved: false,
            truth_detail: "clicked blank".into(),
            ledger: "{}".into(),
            duration_ms: 1.0,
        }
    }

    #[test]
    fn trials_round_trip_and_keys_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let mut db = ResultsDb::open(&path).unwrap();
        let v = VerdictRow {
            trial_key: "a".into(),
            policy: "outcome".into(),
            verdict: "fail".into(),
            message: "m".into(),
        };
        db.insert_trial(&row("a"), std::slice::from_ref(&v))
            .unwrap();
        // A duplicate key fails and leaves the first copy (and its verdicts) intact.
        assert!(db
            .insert_trial(&row("a"), std::slice::from_ref(&v))
            .is_err());
        drop(db);
        let db = ResultsDb::open_read_only(&path).unwrap();
        assert_eq!(db.trials().unwrap(), vec![row("a")]);
        assert_eq!(db.verdicts().unwrap(), vec![v]);
        assert_eq!(db.count("trials").unwrap(), 1);
    }

    #[test]
    fn a_failed_verdict_insert_rolls_back_the_trial() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
        let bad = VerdictRow {
            trial_key: "b".into(),
            policy: "outcome".into(),
            verdict: "maybe".into(),
            message: String::new(),
        };
        assert!(db.insert_trial(&row("b"), &[bad]).is_err());
        assert_eq!(db.count("trials").unwrap(), 0);
    }

    #[test]
    fn refuses_other_schema_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let db = ResultsDb::open(&path).unwrap();
        db.set_meta("schema_version", "99").unwrap();
        drop(db);
        let e = ResultsDb::open(&path).err().unwrap().to_string();
        assert!(e.contains("schema_version is 99"), "{e}");
    }
}
