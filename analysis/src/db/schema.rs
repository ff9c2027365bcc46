//! The tables, their version history and the migrations that bring an older file up to date.
//!
//! A column that stores a vocabulary name carries a CHECK list, and that list is generated
//! from the vocabulary type itself ([`Verdict::ALL`], [`StopReason::ALL`], ...): the
//! vocabulary and the schema cannot drift apart. When they differ in a stored file (a
//! release added a value), `create_and_migrate` rebuilds that table.

use super::CostStage;
use anyhow::{bail, Context, Result};
use faultline_tasks::{Condition, Phase, StopReason, Verdict};
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// Bumped whenever a table or column changes meaning.
pub const SCHEMA_VERSION: i64 = 5;

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
/// - 5: the CHECK lists of the vocabulary columns (`condition`, `verdict`, `stop_reason`,
///   `first_verdict`) are generated from the vocabulary's types, so a value the harness
///   can produce is always one the table accepts (version 4 listed six stop reasons by
///   hand and refused `time_limit`). A table whose stored CHECK list differs from the
///   vocabulary's is rebuilt when the file is opened for writing (rows copied by column
///   name, in one transaction); read only, an older file is read as is. The cost tables'
///   `stage` and `phase` columns gained their generated lists the same way, without a new
///   version: a file whose cost tables lack them is rebuilt like one missing a vocabulary
///   value.
const MIGRATE_1_TO_2: &str = r#"
ALTER TABLE trials ADD COLUMN layer TEXT;
ALTER TABLE trials ADD COLUMN not_fired_reason TEXT;
"#;

/// The tables, in creation order (referenced tables first): a name and the column list,
/// where `{condition}`, `{verdict}`, `{step_verdict}`, `{stop_reason}`, `{first_verdict}`,
/// `{cost_stage}` and `{phase}` stand for the CHECK constraints [`vocabulary_checks`]
/// generates.
const TABLES: [(&str, &str); 8] = [
    (
        "meta",
        r#"
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
"#,
    ),
    (
        "trials",
        r#"
    trial_key        TEXT PRIMARY KEY,
    experiment       TEXT NOT NULL,
    task             TEXT NOT NULL,
    layout_index     INTEGER NOT NULL,
    layout_seed      TEXT NOT NULL,
    trial_seed       TEXT NOT NULL,
    condition        TEXT NOT NULL {condition},
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
"#,
    ),
    (
        "verdicts",
        r#"
    trial_key TEXT NOT NULL REFERENCES trials(trial_key),
    policy    TEXT NOT NULL,
    verdict   TEXT NOT NULL {verdict},
    message   TEXT NOT NULL,
    PRIMARY KEY (trial_key, policy)
"#,
    ),
    (
        "episodes",
        r#"
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
    stop_reason            TEXT NOT NULL {stop_reason},
    detected_at_first_step INTEGER NOT NULL,
    first_verdict          TEXT NOT NULL {first_verdict},
    error                  TEXT,
    model_calls            INTEGER NOT NULL,
    prompt_tokens          INTEGER,
    completion_tokens      INTEGER,
    ledger                 TEXT NOT NULL,
    duration_ms            REAL NOT NULL
"#,
    ),
    (
        "episode_steps",
        r#"
    episode_key      TEXT NOT NULL REFERENCES episodes(episode_key),
    step             INTEGER NOT NULL,
    source           TEXT NOT NULL CHECK (source IN ('decision', 'agent')),
    reply            TEXT NOT NULL,
    parse_error      TEXT,
    actions          TEXT NOT NULL,
    executed         TEXT NOT NULL,
    browser_actions  INTEGER NOT NULL,
    tool_message     TEXT NOT NULL,
    verdict          TEXT {step_verdict},
    policy_message   TEXT,
    observation_text TEXT,
    screenshot       TEXT,
    witness          TEXT,
    truth_achieved   INTEGER NOT NULL,
    truth_detail     TEXT NOT NULL,
    ledger_events    TEXT NOT NULL,
    usage            TEXT,
    PRIMARY KEY (episode_key, step)
"#,
    ),
    (
        "stage_costs",
        r#"
    item_key TEXT NOT NULL,
    stage    TEXT NOT NULL {cost_stage},
    wall_ms  REAL NOT NULL,
    cpu_ms   REAL NOT NULL,
    PRIMARY KEY (item_key, stage)
"#,
    ),
    (
        "phase_costs",
        r#"
    phase               TEXT NOT NULL {phase},
    started_at          TEXT NOT NULL,
    items               INTEGER NOT NULL,
    jobs                INTEGER NOT NULL,
    isolation           TEXT NOT NULL,
    wall_ms             REAL NOT NULL,
    cpu_ours_ms         REAL NOT NULL,
    cpu_browser_ms      REAL NOT NULL,
    peak_rss_ours_kib   INTEGER NOT NULL,
    peak_rss_browser_kib INTEGER NOT NULL
"#,
    ),
    (
        "infra_errors",
        r#"
    item_key    TEXT NOT NULL,
    policy      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    stderr_tail TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    PRIMARY KEY (item_key, policy, attempt)
"#,
    ),
];

/// `CHECK (column IN ('a', 'b', ...))` over `names`, `NULL` allowed when `nullable`.
fn one_of<'a>(column: &str, names: impl IntoIterator<Item = &'a str>, nullable: bool) -> String {
    let list = names
        .into_iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    match nullable {
        true => format!("CHECK ({column} IS NULL OR {column} IN ({list}))"),
        false => format!("CHECK ({column} IN ({list}))"),
    }
}

/// The placeholders of [`TABLES`] and the CHECK constraints they stand for, each generated
/// from its vocabulary type.
fn vocabulary_checks() -> [(&'static str, String); 7] {
    let verdicts = || Verdict::ALL.map(Verdict::name);
    [
        (
            "{condition}",
            one_of("condition", Condition::ALL.map(Condition::name), false),
        ),
        ("{verdict}", one_of("verdict", verdicts(), false)),
        ("{step_verdict}", one_of("verdict", verdicts(), true)),
        (
            "{stop_reason}",
            one_of("stop_reason", StopReason::ALL.map(StopReason::name), false),
        ),
        // An episode whose first reply did not parse has no first verdict: `none`.
        (
            "{first_verdict}",
            one_of(
                "first_verdict",
                verdicts().into_iter().chain(["none"]),
                false,
            ),
        ),
        (
            "{cost_stage}",
            one_of("stage", CostStage::ALL.map(CostStage::name), false),
        ),
        (
            "{phase}",
            one_of("phase", Phase::ALL.map(Phase::name), false),
        ),
    ]
}

/// One table's column list with its CHECK constraints filled in, and the constraints it
/// holds (what a stored copy of the table must contain to be current).
fn columns(template: &str) -> (String, Vec<String>) {
    let mut text = template.trim_matches('\n').to_string();
    let mut checks = Vec::new();
    for (placeholder, check) in vocabulary_checks() {
        if text.contains(placeholder) {
            text = text.replace(placeholder, &check);
            checks.push(check);
        }
    }
    (text, checks)
}

/// Every `CREATE TABLE` statement of the current schema, in creation order.
pub fn create_statements() -> Vec<String> {
    TABLES
        .iter()
        .map(|(name, template)| {
            format!(
                "CREATE TABLE IF NOT EXISTS {name} (\n{}\n);",
                columns(template).0
            )
        })
        .collect()
}

/// Creates the tables a file lacks, migrates an older file in place and rebuilds every
/// table whose stored CHECK lists are not the vocabulary's, then records the current
/// schema version. For a file opened for writing; `path` is for error messages.
pub(super) fn create_and_migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let has_meta: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |r| r.get(0),
    )?;
    let stored: Option<String> = match has_meta {
        true => conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()?,
        false => None,
    };
    let from = match stored.as_deref().map(str::parse::<i64>) {
        None => SCHEMA_VERSION,
        Some(Ok(v)) if (1..=SCHEMA_VERSION).contains(&v) => v,
        Some(_) => bail!(
            "{}: schema_version is {}, this faultline reads versions 1 to {SCHEMA_VERSION}",
            path.display(),
            stored.unwrap_or_default()
        ),
    };
    let stale = stale_tables(conn)?;
    // Rebuilding a referenced table needs foreign keys off, which SQLite only allows
    // outside a transaction; the check below runs before the commit instead.
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let migrated = (|| -> Result<()> {
        let tx = conn.transaction()?;
        if from == 1 {
            tx.execute_batch(MIGRATE_1_TO_2)?;
        }
        for (name, columns) in &stale {
            rebuild(&tx, name, columns)?;
        }
        // Versions 2 to 4 only added tables, which this creates.
        tx.execute_batch(&create_statements().join("\n"))?;
        let broken: Option<String> = tx
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .optional()?;
        if let Some(table) = broken {
            bail!("a row of `{table}` lost the row it refers to");
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION.to_string()],
        )?;
        tx.commit()?;
        Ok(())
    })()
    .with_context(|| format!("{}: migrating schema {from} to {SCHEMA_VERSION}", path.display()));
    conn.pragma_update(None, "foreign_keys", "ON")?;
    migrated
}

/// The existing tables whose stored definition lacks one of the CHECK constraints the
/// vocabulary generates for it, with the current column list of each.
fn stale_tables(conn: &Connection) -> Result<Vec<(&'static str, String)>> {
    let mut stale = Vec::new();
    for (name, template) in TABLES {
        let stored: Option<String> = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?;
        let (columns, checks) = columns(template);
        if let Some(sql) = stored {
            if checks.iter().any(|c| !sql.contains(c.as_str())) {
                stale.push((name, columns));
            }
        }
    }
    Ok(stale)
}

/// Rebuilds `name` with `columns` (SQLite's way to change a constraint): a new table, every
/// row copied by column name, the old one dropped and the new one renamed in its place.
fn rebuild(tx: &rusqlite::Transaction<'_>, name: &str, columns: &str) -> Result<()> {
    let old: Vec<String> = tx
        .prepare(&format!("PRAGMA table_info(\"{name}\")"))?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    let list = old
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    tx.execute_batch(&format!(
        "CREATE TABLE \"{name}_rebuilt\" (\n{columns}\n);
         INSERT INTO \"{name}_rebuilt\" ({list}) SELECT {list} FROM \"{name}\" ORDER BY rowid;
         DROP TABLE \"{name}\";
         ALTER TABLE \"{name}_rebuilt\" RENAME TO \"{name}\";"
    ))
    .with_context(|| format!("rebuilding table `{name}` with the vocabulary's CHECK lists"))?;
    Ok(())
}
