//! The results database: one SQLite file per run, schema-versioned.
//!
//! The harness writes through [`ResultsDb`]; analysis reads through it too, so the schema
//! lives in exactly one place. Every trial is inserted together with its verdicts in one
//! transaction, keyed by a stable `trial_key`: a run killed half way leaves only whole
//! trials behind, and `--resume` skips keys that are already present.

use anyhow::{anyhow, bail, Context, Result};
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::{Condition, StopReason, TaskKind, Verdict};
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Bumped whenever a table or column changes meaning.
pub const SCHEMA_VERSION: i64 = 4;

/// Schema history, so older databases still open:
///
/// - 1: `meta`, `trials`, `verdicts` (detection only).
/// - 2: `trials` gains `layer` (the fault's catalogue layer) and `not_fired_reason`
///   (why a faulty trial's fault left no witness); new tables `episodes` and
///   `episode_steps` hold the recovery experiment. A version-1 database is migrated in
///   place when opened for writing (columns added, nothing rewritten) and read as is
///   when opened read-only.
/// - 3: new table `infra_errors`: a (trial or episode, policy) an external policy could
///   not judge (crash, hang, malformed answer, wrong protocol version), stored apart from
///   the verdicts. Older databases gain the (empty) table when opened for writing; read
///   only, they simply have no infrastructure errors.
/// - 4: new tables `stage_costs` (wall and CPU milliseconds per stage of every trial and
///   episode) and `phase_costs` (each phase's wall time, CPU of faultline and of Chromium,
///   peak memory, jobs and isolation). They hold costs, not results: no table, CSV or
///   report section reads them, and two runs with the same seed differ only there.
///   Older databases gain the (empty) tables when opened for writing; read only, they
///   have no costs.
const MIGRATE_1_TO_2: &str = r#"
ALTER TABLE trials ADD COLUMN layer TEXT;
ALTER TABLE trials ADD COLUMN not_fired_reason TEXT;
"#;

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
    duration_ms      REAL NOT NULL,
    layer            TEXT,
    not_fired_reason TEXT
);
CREATE TABLE IF NOT EXISTS verdicts (
    trial_key TEXT NOT NULL REFERENCES trials(trial_key),
    policy    TEXT NOT NULL,
    verdict   TEXT NOT NULL CHECK (verdict IN ('success', 'no_change', 'fail')),
    message   TEXT NOT NULL,
    PRIMARY KEY (trial_key, policy)
);
CREATE TABLE IF NOT EXISTS episodes (
    episode_key            TEXT PRIMARY KEY,
    task                   TEXT NOT NULL,
    fault                  TEXT NOT NULL,
    stage                  TEXT NOT NULL,
    layer                  TEXT NOT NULL,
    policy                 TEXT NOT NULL,
    agent                  TEXT NOT NULL,
    run                    INTEGER NOT NULL,
    layout_index           INTEGER NOT NULL,
    layout_seed            TEXT NOT NULL,
    episode_seed           TEXT NOT NULL,
    fired                  INTEGER NOT NULL,
    success                INTEGER NOT NULL,
    truth_detail           TEXT NOT NULL,
    browser_actions        INTEGER NOT NULL,
    steps                  INTEGER NOT NULL,
    stop_reason            TEXT NOT NULL CHECK (stop_reason IN ('stopped', 'answered', 'parse_error', 'over_budget', 'step_cap', 'agent_error')),
    detected_at_first_step INTEGER NOT NULL,
    first_verdict          TEXT NOT NULL CHECK (first_verdict IN ('success', 'no_change', 'fail', 'none')),
    error                  TEXT,
    model_calls            INTEGER NOT NULL,
    prompt_tokens          INTEGER,
    completion_tokens      INTEGER,
    ledger                 TEXT NOT NULL,
    duration_ms            REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS episode_steps (
    episode_key      TEXT NOT NULL REFERENCES episodes(episode_key),
    step             INTEGER NOT NULL,
    source           TEXT NOT NULL CHECK (source IN ('decision', 'agent')),
    reply            TEXT NOT NULL,
    parse_error      TEXT,
    actions          TEXT NOT NULL,
    executed         TEXT NOT NULL,
    browser_actions  INTEGER NOT NULL,
    tool_message     TEXT NOT NULL,
    verdict          TEXT CHECK (verdict IS NULL OR verdict IN ('success', 'no_change', 'fail')),
    policy_message   TEXT,
    observation_text TEXT,
    screenshot       TEXT,
    witness          TEXT,
    truth_achieved   INTEGER NOT NULL,
    truth_detail     TEXT NOT NULL,
    ledger_events    TEXT NOT NULL,
    usage            TEXT,
    PRIMARY KEY (episode_key, step)
);
CREATE TABLE IF NOT EXISTS stage_costs (
    item_key TEXT NOT NULL,
    stage    TEXT NOT NULL,
    wall_ms  REAL NOT NULL,
    cpu_ms   REAL NOT NULL,
    PRIMARY KEY (item_key, stage)
);
CREATE TABLE IF NOT EXISTS phase_costs (
    phase               TEXT NOT NULL,
    started_at          TEXT NOT NULL,
    items               INTEGER NOT NULL,
    jobs                INTEGER NOT NULL,
    isolation           TEXT NOT NULL,
    wall_ms             REAL NOT NULL,
    cpu_ours_ms         REAL NOT NULL,
    cpu_browser_ms      REAL NOT NULL,
    peak_rss_ours_kib   INTEGER NOT NULL,
    peak_rss_browser_kib INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS infra_errors (
    item_key    TEXT NOT NULL,
    policy      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    stderr_tail TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    PRIMARY KEY (item_key, policy, attempt)
);
"#;

/// What one stage of one trial or episode cost (see schema version 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCostRow {
    /// The trial or episode key.
    pub item_key: String,
    /// The stage's name (`setup`, `navigation`, `actions`, `settle`, `capture`, `dom`,
    /// `witness`, `policies`, `agent`, `scoring`, `storage`).
    pub stage: String,
    /// Wall milliseconds spent in the stage.
    pub wall_ms: f64,
    /// CPU milliseconds of faultline and Chromium during the stage (attributable to the
    /// item only when one item ran at a time).
    pub cpu_ms: f64,
}

/// What one phase of one invocation cost (see schema version 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseCostRow {
    /// `detection` or `recovery`.
    pub phase: String,
    /// When the phase started, in Unix seconds (`1764777600.123`); a resumed run adds a
    /// row.
    pub started_at: String,
    /// Items run (not those already stored).
    pub items: u64,
    /// Items run at once.
    pub jobs: u64,
    /// How items were isolated from each other (e.g. `fresh_context`).
    pub isolation: String,
    /// Wall milliseconds of the phase.
    pub wall_ms: f64,
    /// CPU of faultline itself.
    pub cpu_ours_ms: f64,
    /// CPU of Chromium (every process it started).
    pub cpu_browser_ms: f64,
    /// faultline's peak resident set, in KiB.
    pub peak_rss_ours_kib: u64,
    /// The largest sampled sum of Chromium's processes' resident sets, in KiB.
    pub peak_rss_browser_kib: u64,
}

/// One stored trial (the columns analysis needs are typed; the rest are JSON text).
///
/// The vocabulary columns are the vocabulary's types; they are stored as their names, and
/// [`ResultsDb`] converts at the boundary (a stored name it does not know is an error that
/// names the table, the key and the column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    /// Stable key, `detection/<task>/<layout>/<fault id|working>` (`trial_key`, primary key).
    pub trial_key: String,
    /// The experiment the trial belongs to (`detection`).
    pub experiment: String,
    /// The task the recorded decision was made for.
    pub task: TaskKind,
    /// The layout's index within the task (the layout cluster of the statistics).
    pub layout_index: u32,
    /// The layout's own seed; with `task` and `layout_index` it regenerates the page.
    pub layout_seed: u64,
    /// The trial's seed, derived from the root seed and the trial key; the fault draws its
    /// parameters from it.
    pub trial_seed: u64,
    /// Faulty (a fault injected) or working (the clean replay).
    pub condition: Condition,
    /// `None` on working trials.
    pub fault: Option<Fault>,
    /// The fault's round-trip stage (`None` on working trials).
    pub stage: Option<Stage>,
    /// `None` on working trials.
    pub fired: Option<bool>,
    /// The fault's witness (JSON) when it fired; `None` when it did not, or on working trials.
    pub witness: Option<String>,
    /// Who made the replayed decision: `oracle`, `model:<name>` or `import:<format>`.
    pub decision_source: String,
    /// The recorded reply text, as the model wrote it.
    pub reply: String,
    /// The actions the (possibly faulted) parser produced (JSON).
    pub actions: String,
    /// Executed actions with their viewport points and honest messages (JSON).
    pub executed: String,
    /// What the tool reported (after any feedback fault).
    pub tool_message: String,
    /// The "after" observation's text (after any observe fault).
    pub observation_text: String,
    /// The "before" screenshot, relative to the run directory (`shots/...`).
    pub before_png: Option<String>,
    /// The "after" screenshot, relative to the run directory (`shots/...`).
    pub after_png: Option<String>,
    /// The page states before and after the step and the text before it, as the policies
    /// judged them (JSON).
    pub evidence: String,
    /// The ledger's verdict: whether the task's outcome was really achieved.
    pub truth_achieved: bool,
    /// The truth check's explanation of `truth_achieved`.
    pub truth_detail: String,
    /// The trial's whole ledger (JSON).
    pub ledger: String,
    /// Wall-clock time of the trial, in milliseconds.
    pub duration_ms: f64,
    /// The fault's catalogue layer as stored (`None` on working trials and in version-1
    /// databases; [`TrialRow::fault_layer`] falls back to the fault's own).
    pub layer: Option<Layer>,
    /// Why a faulty trial's fault did not fire (`None` when it fired, or on working trials).
    pub not_fired_reason: Option<String>,
}

/// One recovery episode: the recorded decision replayed with its fault, then the agent
/// acting on what the policy told it, scored by the ledger at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRow {
    /// `recovery/<task>/<fault>/<policy>/<agent>/r<run>/<layout>`.
    pub episode_key: String,
    /// The task the episode ran.
    pub task: TaskKind,
    /// The fault armed for the whole episode.
    pub fault: Fault,
    /// The fault's round-trip stage.
    pub stage: Stage,
    /// The fault's catalogue layer.
    pub layer: Layer,
    /// The verification policy whose messages the agent was given.
    pub policy: String,
    /// The agent's registry name.
    pub agent: String,
    /// Repetition number, from 0.
    pub run: u32,
    /// The layout's index within the task (the layout cluster of the statistics).
    pub layout_index: u32,
    /// The layout's own seed; with `task` and `layout_index` it regenerates the page.
    pub layout_seed: u64,
    /// Derived from the root seed and the episode key.
    pub episode_seed: u64,
    /// Whether the fault left a witness at any step.
    pub fired: bool,
    /// The ledger's verdict at the end of the episode.
    pub success: bool,
    /// The truth check's explanation of `success`.
    pub truth_detail: String,
    /// Browser actions the agent took after the replayed decision (what the budget counts).
    pub browser_actions: u32,
    /// Steps in all, the replayed decision included.
    pub steps: u32,
    /// Why the episode ended.
    pub stop_reason: StopReason,
    /// The policy's verdict on the replayed decision agreed with the ledger (the detection
    /// experiment's "caught", on this episode's first step).
    pub detected_at_first_step: bool,
    /// The policy's verdict on the replayed decision (`None`, stored as `none`, when its
    /// reply did not parse, so nothing was judged).
    pub first_verdict: Option<Verdict>,
    /// The parse or agent error that ended the episode, if any.
    pub error: Option<String>,
    /// Model calls the agent made (0 for agents that call no model).
    pub model_calls: u32,
    /// Prompt tokens over the episode, when the agent's model reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens over the episode, when the agent's model reported them.
    pub completion_tokens: Option<u64>,
    /// The episode's whole ledger (JSON).
    pub ledger: String,
    /// Wall-clock time of the episode, in milliseconds.
    pub duration_ms: f64,
}

/// One step of an episode's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeStepRow {
    /// The episode the step belongs to ([`EpisodeRow::episode_key`]).
    pub episode_key: String,
    /// From 0 (the replayed decision).
    pub step: u32,
    /// `decision` for step 0, `agent` after.
    pub source: String,
    /// The reply text (the recorded decision at step 0, the agent's reply after).
    pub reply: String,
    /// Why the reply did not parse (`None` when it did).
    pub parse_error: Option<String>,
    /// Parsed actions (JSON).
    pub actions: String,
    /// Executed actions with their viewport points and honest messages (JSON).
    pub executed: String,
    /// Browser actions this step performed.
    pub browser_actions: u32,
    /// What the tool reported (after any feedback fault).
    pub tool_message: String,
    /// The policy's verdict on this step (`None` when the step was not judged: a parse
    /// error, or a reply that only answered or stopped).
    pub verdict: Option<Verdict>,
    /// The active policy's message to the agent on this step (`None` when not judged).
    pub policy_message: Option<String>,
    /// The observation's text after this step (`None` when there was no observation).
    pub observation_text: Option<String>,
    /// The observation's screenshot, relative to the run directory.
    pub screenshot: Option<String>,
    /// The fault's witness, when it fired on this step (JSON).
    pub witness: Option<String>,
    /// The ledger's verdict right after this step.
    pub truth_achieved: bool,
    /// The truth check's explanation of `truth_achieved`.
    pub truth_detail: String,
    /// Ledger events recorded during this step (JSON list).
    pub ledger_events: String,
    /// Model token usage for this reply (JSON), when a model wrote it.
    pub usage: Option<String>,
}

/// One policy's verdict on one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRow {
    /// The trial this verdict is on ([`TrialRow::trial_key`]).
    pub trial_key: String,
    /// The policy's name.
    pub policy: String,
    /// What the policy said happened.
    pub verdict: Verdict,
    /// The policy's message, as an agent would have read it.
    pub message: String,
}

impl TrialRow {
    /// The fault's catalogue layer: the stored one or, in a version-1 database (which
    /// stores none), the fault's own, which for the four reference faults of that release
    /// is their stage's (`parse`, `feedback`, `observe` are the harness's tool, `execute`
    /// is execution). `None` on working trials.
    pub fn fault_layer(&self) -> Option<Layer> {
        self.layer.or_else(|| self.fault.map(Fault::layer))
    }
}

/// A (trial or episode, policy) the policy could not judge: an infrastructure error, not
/// a verdict (schema version 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraErrorRow {
    /// The trial key (detection) or the episode key (recovery).
    pub item_key: String,
    /// The name of the policy that could not judge.
    pub policy: String,
    /// `spawn`, `crash`, `timeout`, `malformed`, `unknown_verdict` or `protocol`.
    pub kind: String,
    /// What went wrong, in words.
    pub reason: String,
    /// The last bytes the process wrote to stderr.
    pub stderr_tail: String,
    /// Which incarnation of the process failed (1 for the first).
    pub attempt: u32,
}

/// An open results database.
pub struct ResultsDb {
    conn: Connection,
    /// The schema version of the file (older versions are read-only).
    version: i64,
    /// The database file, for error messages.
    path: std::path::PathBuf,
}

impl ResultsDb {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens (creating if needed) a database for writing.
    pub fn open(path: &Path) -> Result<ResultsDb> {
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        let mut db = ResultsDb {
            conn,
            version: SCHEMA_VERSION,
            path: path.to_path_buf(),
        };
        match db.meta("schema_version")? {
            None => db.set_meta("schema_version", &SCHEMA_VERSION.to_string())?,
            Some(v) if v == SCHEMA_VERSION.to_string() => {}
            Some(v) if v == "1" || v == "2" || v == "3" => {
                let tx = db.conn.transaction()?;
                if v == "1" {
                    tx.execute_batch(MIGRATE_1_TO_2)?;
                }
                // 2 to 3 and 3 to 4 add tables, which `SCHEMA` has just created.
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                    [SCHEMA_VERSION.to_string()],
                )?;
                tx.commit().with_context(|| {
                    format!(
                        "{}: migrating schema {v} to {SCHEMA_VERSION}",
                        path.display()
                    )
                })?;
            }
            Some(v) => bail!(
                "{}: schema_version is {v}, this faultline reads versions 1 to {SCHEMA_VERSION}",
                path.display()
            ),
        }
        Ok(db)
    }

    /// Opens an existing database read-only.
    ///
    /// A database in WAL mode needs its `-shm` index, which SQLite creates beside it; in a
    /// directory the reader cannot write (a published run, a read-only mount) that fails.
    /// Then, when no `-wal` file holds data the main file lacks (a run that ended
    /// normally checkpoints it), the file is opened as immutable, which needs no index;
    /// when one does (a run that was killed), the error says so and names the file.
    pub fn open_read_only(path: &Path) -> Result<ResultsDb> {
        if !path.is_file() {
            bail!("{}: no such results database", path.display());
        }
        let conn = match Self::connect_read_only(path) {
            Ok(conn) => conn,
            Err(e) if is_read_only_directory(&e) => Self::connect_immutable(path)?,
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        };
        let mut db = ResultsDb {
            conn,
            version: SCHEMA_VERSION,
            path: path.to_path_buf(),
        };
        match db.meta("schema_version")?.map(|v| v.parse::<i64>()) {
            Some(Ok(v)) if (1..=SCHEMA_VERSION).contains(&v) => {
                db.version = v;
                Ok(db)
            }
            Some(_) => bail!(
                "{}: schema_version is {}, this faultline reads versions 1 to {SCHEMA_VERSION}",
                path.display(),
                db.meta("schema_version")?.unwrap_or_default()
            ),
            None => bail!(
                "{}: not a faultline results database (no schema_version)",
                path.display()
            ),
        }
    }

    /// An immutable connection, for a database whose directory is read-only: SQLite then
    /// reads the main file alone, so it is refused while a `-wal` file holds data.
    fn connect_immutable(path: &Path) -> Result<Connection> {
        let wal = wal_path(path);
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            bail!(
                "{}: its directory is read-only and {} holds results not yet in the main file (the run was killed); open it once from a writable copy of the directory (with the -wal file) to fold them in",
                path.display(),
                wal.display()
            );
        }
        let uri = format!("file:{}?immutable=1", uri_path(path));
        Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .with_context(|| format!("opening {} (immutable)", path.display()))
    }

    /// A read-only connection, checked with one read (WAL mode fails there, not at open,
    /// when the `-shm` index cannot be created).
    fn connect_read_only(path: &Path) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(conn)
    }

    /// The `meta` table's value for `key`, if set (e.g. `schema_version`, `manifest`).
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Sets (or replaces) the `meta` table's value for `key`.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Every `meta` entry, by key.
    pub fn meta_entries(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM meta ORDER BY key")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<(String, String)>>>()?;
        Ok(rows)
    }

    /// Copies every row of every table but `meta` from the database at `other` (a shard
    /// of the same run, same schema) into this one, in one transaction; returns the rows
    /// copied per table. Tables are listed from the other file's `sqlite_master` in
    /// creation order (so referenced rows come first) and columns are matched by name, so
    /// a table this code does not know by name is copied all the same; a table or column
    /// this database lacks is an error. A row whose key is already here fails the whole
    /// copy (no item is ever stored twice).
    pub fn copy_rows_from(&mut self, other: &Path) -> Result<Vec<(String, u64)>> {
        let name = other.display().to_string();
        self.conn
            .execute("ATTACH DATABASE ?1 AS other", [&name])
            .with_context(|| format!("opening {name}"))?;
        let result = (|| -> Result<Vec<(String, u64)>> {
            let tables: Vec<String> = {
                let mut stmt = self.conn.prepare(
                    "SELECT name FROM other.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'meta' ORDER BY rowid",
                )?;
                let rows = stmt
                    .query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                rows
            };
            let columns = |schema: &str, table: &str| -> Result<Vec<String>> {
                let mut stmt = self
                    .conn
                    .prepare(&format!("PRAGMA {schema}.table_info(\"{table}\")"))?;
                let rows = stmt
                    .query_map([], |r| r.get::<_, String>(1))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                Ok(rows)
            };
            let mut copied = Vec::new();
            let tx = self.conn.unchecked_transaction()?;
            for table in tables {
                let here = columns("main", &table)?;
                if here.is_empty() {
                    bail!("{name}: table `{table}` is not in this schema");
                }
                let cols = columns("other", &table)?;
                if let Some(c) = cols.iter().find(|c| !here.contains(c)) {
                    bail!("{name}: column `{table}.{c}` is not in this schema");
                }
                let list = cols
                    .iter()
                    .map(|c| format!("\"{c}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                let n = tx
                    .execute(
                        &format!("INSERT INTO main.\"{table}\" ({list}) SELECT {list} FROM other.\"{table}\" ORDER BY rowid"),
                        [],
                    )
                    .with_context(|| format!("{name}: copying table `{table}`"))?;
                copied.push((table, n as u64));
            }
            tx.commit()?;
            Ok(copied)
        })();
        self.conn.execute("DETACH DATABASE other", [])?;
        result
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
                t.experiment,
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

    /// Every stored infrastructure error, ordered by item, policy and attempt (none in a
    /// database older than version 3).
    pub fn infra_errors(&self) -> Result<Vec<InfraErrorRow>> {
        if !self.has_table("infra_errors")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT item_key, policy, kind, reason, stderr_tail, attempt FROM infra_errors ORDER BY item_key, policy, attempt",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(InfraErrorRow {
                    item_key: r.get(0)?,
                    policy: r.get(1)?,
                    kind: r.get(2)?,
                    reason: r.get(3)?,
                    stderr_tail: r.get(4)?,
                    attempt: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
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
                r.phase,
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

    fn has_table(&self, name: &str) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )?)
    }

    /// Every stored stage cost, by item and stage (none before version 4).
    pub fn stage_costs(&self) -> Result<Vec<StageCostRow>> {
        if !self.has_table("stage_costs")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT item_key, stage, wall_ms, cpu_ms FROM stage_costs ORDER BY item_key, stage",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StageCostRow {
                    item_key: r.get(0)?,
                    stage: r.get(1)?,
                    wall_ms: r.get(2)?,
                    cpu_ms: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Every stored phase cost, in the order the phases ran (none before version 4).
    pub fn phase_costs(&self) -> Result<Vec<PhaseCostRow>> {
        if !self.has_table("phase_costs")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT phase, started_at, items, jobs, isolation, wall_ms, cpu_ours_ms, cpu_browser_ms, peak_rss_ours_kib, peak_rss_browser_kib FROM phase_costs ORDER BY rowid",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PhaseCostRow {
                    phase: r.get(0)?,
                    started_at: r.get(1)?,
                    items: r.get::<_, i64>(2)? as u64,
                    jobs: r.get::<_, i64>(3)? as u64,
                    isolation: r.get(4)?,
                    wall_ms: r.get(5)?,
                    cpu_ours_ms: r.get(6)?,
                    cpu_browser_ms: r.get(7)?,
                    peak_rss_ours_kib: r.get::<_, i64>(8)? as u64,
                    peak_rss_browser_kib: r.get::<_, i64>(9)? as u64,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
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

    /// Counts rows, for tests and progress reports.
    pub fn count(&self, table: &str) -> Result<u64> {
        if !matches!(
            table,
            "trials" | "verdicts" | "meta" | "episodes" | "episode_steps" | "infra_errors"
        ) {
            bail!("unknown table `{table}`");
        }
        if self.version < 2 && matches!(table, "episodes" | "episode_steps") {
            return Ok(0);
        }
        if table == "infra_errors" {
            return Ok(self.infra_errors()?.len() as u64);
        }
        Ok(self
            .conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }
}

/// Stage cost rows, replacing any stored for the same item and stage.
fn insert_costs(tx: &rusqlite::Transaction<'_>, rows: &[StageCostRow]) -> Result<()> {
    let mut stmt = tx.prepare(
        "INSERT OR REPLACE INTO stage_costs (item_key, stage, wall_ms, cpu_ms) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for r in rows {
        stmt.execute(params![r.item_key, r.stage, r.wall_ms, r.cpu_ms])?;
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
        params![e.item_key, e.policy, e.kind, e.reason, e.stderr_tail, e.attempt.max(next)],
    )
    .with_context(|| format!("storing the infrastructure error of {} on {}", e.policy, e.item_key))?;
    Ok(())
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

fn trial_row(r: &Row<'_>) -> Result<TrialRow> {
    let key: String = r.get(0)?;
    let k = key.as_str();
    Ok(TrialRow {
        experiment: r.get(1)?,
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

/// Whether SQLite failed because the database's directory (or its `-shm` index) is not
/// writable.
fn is_read_only_directory(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_READONLY_DIRECTORY
                || f.code == rusqlite::ErrorCode::CannotOpen
                || f.code == rusqlite::ErrorCode::ReadOnly
    )
}

/// The write-ahead log beside a database: `<file>-wal`.
fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// `path` for a SQLite `file:` URI: absolute, with the characters URIs reserve escaped.
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn verdict(key: &str, policy: &str, verdict: &str) -> VerdictRow {
        VerdictRow {
            trial_key: key.into(),
            policy: policy.into(),
            verdict: verdict.parse().unwrap(),
            message: String::new(),
        }
    }

    pub(crate) fn row(key: &str) -> TrialRow {
        TrialRow {
            trial_key: key.into(),
            experiment: "detection".into(),
            task: TaskKind::Grid,
            layout_index: 1,
            layout_seed: u64::MAX,
            trial_seed: 7,
            condition: Condition::Faulty,
            fault: Some(Fault::UnscaledCoordinates),
            stage: Some(Stage::Execute),
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
            layer: Some(Layer::Execution),
            not_fired_reason: None,
        }
    }

    pub(crate) fn episode(key: &str) -> EpisodeRow {
        EpisodeRow {
            episode_key: key.into(),
            task: TaskKind::Frame,
            fault: Fault::IframeNoChange,
            stage: Stage::Feedback,
            layer: Layer::Tool,
            policy: "unverified".into(),
            agent: "scripted".into(),
            run: 0,
            layout_index: 3,
            layout_seed: u64::MAX - 1,
            episode_seed: 11,
            fired: true,
            success: true,
            truth_detail: "selected Order 7".into(),
            browser_actions: 1,
            steps: 3,
            stop_reason: StopReason::Stopped,
            detected_at_first_step: false,
            first_verdict: Some(Verdict::NoChange),
            error: None,
            model_calls: 0,
            prompt_tokens: None,
            completion_tokens: None,
            ledger: "{}".into(),
            duration_ms: 2.0,
        }
    }

    pub(crate) fn step(key: &str, step: u32) -> EpisodeStepRow {
        EpisodeStepRow {
            episode_key: key.into(),
            step,
            source: if step == 0 { "decision" } else { "agent" }.into(),
            reply: "click(1, 2)".into(),
            parse_error: None,
            actions: "[]".into(),
            executed: "[]".into(),
            browser_actions: 1,
            tool_message: "No change detected.".into(),
            verdict: Some(Verdict::NoChange),
            policy_message: Some("No change detected.".into()),
            observation_text: Some("Orders".into()),
            screenshot: Some(format!("shots/e-{step}.png")),
            witness: None,
            truth_achieved: true,
            truth_detail: "selected Order 7".into(),
            ledger_events: "[]".into(),
            usage: None,
        }
    }

    #[test]
    fn episodes_round_trip_with_their_transcripts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let mut db = ResultsDb::open(&path).unwrap();
        let steps = vec![step("e", 0), step("e", 1)];
        db.insert_episode(&episode("e"), &steps).unwrap();
        assert!(db.insert_episode(&episode("e"), &steps).is_err());
        drop(db);
        let db = ResultsDb::open_read_only(&path).unwrap();
        assert_eq!(db.episodes().unwrap(), vec![episode("e")]);
        assert_eq!(db.episode_steps("e").unwrap(), steps);
        assert_eq!(
            db.finished_episode_keys()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec!["e".to_string()]
        );
        assert_eq!(db.count("episode_steps").unwrap(), 2);
    }

    #[test]
    fn a_bad_step_rolls_back_the_whole_episode() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
        // A second step 0: the step's primary key fails after the episode row went in.
        assert!(db
            .insert_episode(&episode("e"), &[step("e", 0), step("e", 0)])
            .is_err());
        assert_eq!(db.count("episodes").unwrap(), 0);
        assert_eq!(db.count("episode_steps").unwrap(), 0);
    }

    #[test]
    fn costs_are_stored_apart_from_results() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
        db.insert_trial(&row("t"), &[]).unwrap();
        let before = db.trials().unwrap();
        let cost = |stage: &str, wall_ms: f64| StageCostRow {
            item_key: "t".into(),
            stage: stage.into(),
            wall_ms,
            cpu_ms: 1.5,
        };
        db.insert_stage_costs(&[cost("capture", 40.0), cost("settle", 120.0)])
            .unwrap();
        // Storing the costs again (a retried store) replaces them.
        db.insert_stage_costs(&[cost("capture", 41.0)]).unwrap();
        let phase = PhaseCostRow {
            phase: "detection".into(),
            started_at: "1764777600.000".into(),
            items: 1,
            jobs: 2,
            isolation: "fresh_context".into(),
            wall_ms: 500.0,
            cpu_ours_ms: 20.0,
            cpu_browser_ms: 300.0,
            peak_rss_ours_kib: 30_000,
            peak_rss_browser_kib: 400_000,
        };
        db.insert_phase_cost(&phase).unwrap();
        assert_eq!(
            db.stage_costs().unwrap(),
            vec![cost("capture", 41.0), cost("settle", 120.0)]
        );
        assert_eq!(db.phase_costs().unwrap(), vec![phase]);
        // The results read back exactly as before: costs live in their own tables.
        assert_eq!(db.trials().unwrap(), before);
    }

    /// A database written by schema version 1 (the detection-only release).
    fn version_1_database(path: &Path) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE trials (trial_key TEXT PRIMARY KEY, experiment TEXT NOT NULL, task TEXT NOT NULL, layout_index INTEGER NOT NULL, layout_seed TEXT NOT NULL, trial_seed TEXT NOT NULL, condition TEXT NOT NULL, fault TEXT, stage TEXT, fired INTEGER, witness TEXT, decision_source TEXT NOT NULL, reply TEXT NOT NULL, actions TEXT NOT NULL, executed TEXT NOT NULL, tool_message TEXT NOT NULL, observation_text TEXT NOT NULL, before_png TEXT, after_png TEXT, evidence TEXT NOT NULL, truth_achieved INTEGER NOT NULL, truth_detail TEXT NOT NULL, ledger TEXT NOT NULL, duration_ms REAL NOT NULL);
             CREATE TABLE verdicts (trial_key TEXT NOT NULL, policy TEXT NOT NULL, verdict TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (trial_key, policy));
             INSERT INTO trials VALUES ('detection/grid/000/faulty', 'detection', 'grid', 0, '5', '6', 'faulty', 'execute.unscaled_coordinates', 'execute', 1, '{}', 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);",
        )
        .unwrap();
    }

    #[test]
    fn version_1_databases_are_read_as_is_and_migrated_for_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        version_1_database(&path);
        let ro = ResultsDb::open_read_only(&path).unwrap();
        let trials = ro.trials().unwrap();
        assert_eq!(trials.len(), 1);
        assert_eq!((trials[0].layer, trials[0].layout_seed), (None, 5));
        // The reference fault's own layer stands in for the one version 1 did not store.
        assert_eq!(trials[0].fault_layer(), Some(Layer::Execution));
        assert!(ro.episodes().unwrap().is_empty());
        assert!(ro.stage_costs().unwrap().is_empty());
        assert!(ro.phase_costs().unwrap().is_empty());
        drop(ro);
        // Opening for writing migrates in place and keeps every stored trial.
        let mut db = ResultsDb::open(&path).unwrap();
        assert_eq!(
            db.meta("schema_version").unwrap().as_deref(),
            Some(SCHEMA_VERSION.to_string().as_str())
        );
        assert!(db.infra_errors().unwrap().is_empty());
        assert_eq!(db.trials().unwrap().len(), 1);
        db.insert_episode(&episode("e"), &[step("e", 0)]).unwrap();
        db.insert_trial(&row("new"), &[]).unwrap();
        let new = db
            .trials()
            .unwrap()
            .into_iter()
            .find(|t| t.trial_key == "new");
        assert_eq!(new.unwrap().layer, Some(Layer::Execution));
    }

    #[test]
    fn trials_round_trip_and_keys_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let mut db = ResultsDb::open(&path).unwrap();
        let v = VerdictRow {
            trial_key: "a".into(),
            policy: "outcome".into(),
            verdict: Verdict::Fail,
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
        // Two verdicts of one policy: the verdict's primary key fails after the trial went in.
        let v = verdict("b", "outcome", "fail");
        assert!(db.insert_trial(&row("b"), &[v.clone(), v]).is_err());
        assert_eq!(db.count("trials").unwrap(), 0);
    }

    #[test]
    fn an_unknown_stored_name_is_an_error_naming_table_key_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let mut db = ResultsDb::open(&path).unwrap();
        db.insert_trial(&row("a"), &[verdict("a", "outcome", "fail")])
            .unwrap();
        db.insert_episode(&episode("e"), &[step("e", 0)]).unwrap();
        db.conn
            .execute_batch(
                "UPDATE trials SET layer = 'quantum'; UPDATE episodes SET fault = 'zz.mystery'; UPDATE episodes SET first_verdict = 'none';",
            )
            .unwrap();
        let e = db.trials().unwrap_err().to_string();
        assert!(
            e.starts_with("trials `a`: column `layer` holds `quantum`: unknown layer"),
            "{e}"
        );
        let e = db.episodes().unwrap_err().to_string();
        assert!(
            e.starts_with("episodes `e`: column `fault` holds `zz.mystery`"),
            "{e}"
        );
        db.conn
            .execute_batch("UPDATE episodes SET fault = 'feedback.iframe_no_change'")
            .unwrap();
        // `none` is the stored form of no first verdict.
        assert_eq!(db.episodes().unwrap()[0].first_verdict, None);
    }

    #[test]
    fn infra_errors_are_stored_with_their_trial_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let mut db = ResultsDb::open(&path).unwrap();
        let e = InfraErrorRow {
            item_key: "a".into(),
            policy: "mine".into(),
            kind: "crash".into(),
            reason: "exited with status 3".into(),
            stderr_tail: "Traceback".into(),
            attempt: 1,
        };
        db.insert_trial_with_infra(
            &row("a"),
            &[verdict("a", "outcome", "fail")],
            std::slice::from_ref(&e),
        )
        .unwrap();
        // Another failure of the same (item, policy) is numbered after the first.
        db.insert_infra_errors(std::slice::from_ref(&e)).unwrap();
        drop(db);
        let db = ResultsDb::open_read_only(&path).unwrap();
        let rows = db.infra_errors().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], e);
        assert_eq!(rows[1].attempt, 2);
        assert_eq!(db.count("infra_errors").unwrap(), 2);
        // A version-1 database opened read-only has no such table and no errors.
        let v1 = dir.path().join("v1.sqlite");
        version_1_database(&v1);
        let ro = ResultsDb::open_read_only(&v1).unwrap();
        assert!(ro.infra_errors().unwrap().is_empty());
    }

    #[test]
    fn rows_are_copied_table_by_table_and_never_twice() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
        let mut shard = ResultsDb::open(&a).unwrap();
        shard
            .insert_trial(&row("t1"), &[verdict("t1", "outcome", "fail")])
            .unwrap();
        shard
            .insert_episode(&episode("e"), &[step("e", 0), step("e", 1)])
            .unwrap();
        // A table this code does not name (as a later schema might add) is copied too.
        shard
            .conn
            .execute_batch("CREATE TABLE extra (k TEXT PRIMARY KEY, v INTEGER); INSERT INTO extra VALUES ('x', 1);")
            .unwrap();
        drop(shard);
        let mut merged = ResultsDb::open(&b).unwrap();
        // Missing from this schema: refused, nothing copied.
        let e = merged.copy_rows_from(&a).unwrap_err().to_string();
        assert!(e.contains("table `extra` is not in this schema"), "{e}");
        assert_eq!(merged.count("trials").unwrap(), 0);
        merged
            .conn
            .execute_batch("CREATE TABLE extra (k TEXT PRIMARY KEY, v INTEGER)")
            .unwrap();
        let copied = merged.copy_rows_from(&a).unwrap();
        assert_eq!(
            copied,
            [
                ("trials".to_string(), 1),
                ("verdicts".to_string(), 1),
                ("episodes".to_string(), 1),
                ("episode_steps".to_string(), 2),
                ("stage_costs".to_string(), 0),
                ("phase_costs".to_string(), 0),
                ("infra_errors".to_string(), 0),
                ("extra".to_string(), 1)
            ]
        );
        assert_eq!(merged.trials().unwrap(), vec![row("t1")]);
        assert!(
            merged.copy_rows_from(&a).is_err(),
            "a second copy is refused"
        );
        assert_eq!(merged.count("trials").unwrap(), 1);
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
        let e = ResultsDb::open_read_only(&path).err().unwrap().to_string();
        assert!(e.contains("schema_version is 99"), "{e}");
    }

    /// Regression (a read-only run directory): `report` could not open a database whose
    /// directory it cannot write (WAL mode wants to create the `-shm` index there:
    /// SQLITE_READONLY_DIRECTORY). The directory is made read-only and the database opened
    /// by an unprivileged user (this test re-runs itself as `nobody` through `setpriv`
    /// when it runs as root, who ignores directory permissions).
    #[test]
    fn a_database_in_a_read_only_directory_opens_for_reading() {
        if let Ok(path) = std::env::var("FAULTLINE_TEST_READ_ONLY_DB") {
            let ro = ResultsDb::open_read_only(Path::new(&path)).unwrap();
            assert_eq!(ro.meta("manifest").unwrap().as_deref(), Some("kept"));
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let path = run.join("r.sqlite");
        let db = ResultsDb::open(&path).unwrap();
        db.set_meta("manifest", "kept").unwrap();
        drop(db);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o555)).unwrap();
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout.starts_with(b"0\n"))
            .unwrap_or(false);
        if !root {
            // An unprivileged user: the check runs here.
            let ro = ResultsDb::open_read_only(&path).unwrap();
            assert_eq!(ro.meta("manifest").unwrap().as_deref(), Some("kept"));
        } else {
            // A copy of this test binary where `nobody` can run it (the build directory
            // may sit under a home directory closed to other users).
            let me = dir.path().join("db-test");
            std::fs::copy(std::env::current_exe().unwrap(), &me).unwrap();
            let out = std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&me)
                .args([
                    "--exact",
                    "db::tests::a_database_in_a_read_only_directory_opens_for_reading",
                    "--test-threads=1",
                ])
                .env("FAULTLINE_TEST_READ_ONLY_DB", &path)
                .output()
                .expect("setpriv (util-linux) runs the check as an unprivileged user");
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "as nobody: {text}"
            );
        }
        assert!(!run.join("r.sqlite-shm").exists(), "nothing was written");
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Opened as immutable, SQLite reads the main file only: a killed run's `-wal` file
    /// (rows the main file lacks) is refused by name rather than silently missed.
    #[test]
    fn a_killed_runs_wal_is_named_not_ignored_when_opened_immutable() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live.sqlite");
        let db = ResultsDb::open(&live).unwrap();
        db.conn
            .pragma_update(None, "wal_autocheckpoint", 0)
            .unwrap();
        db.set_meta("manifest", "only in the wal").unwrap();
        // Copy the files while the writer still holds them: what a SIGKILL leaves.
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        std::fs::copy(&live, copy.join("r.sqlite")).unwrap();
        std::fs::copy(wal_path(&live), copy.join("r.sqlite-wal")).unwrap();
        drop(db);
        let e = ResultsDb::connect_immutable(&copy.join("r.sqlite"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("r.sqlite-wal") && e.contains("killed"), "{e}");
        // Once folded in (a writable open), the immutable open reads every row.
        drop(ResultsDb::open(&copy.join("r.sqlite")).unwrap());
        let conn = ResultsDb::connect_immutable(&copy.join("r.sqlite")).unwrap();
        let v: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'manifest'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(v, "only in the wal");
    }
}
