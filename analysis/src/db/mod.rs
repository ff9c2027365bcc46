//! The results database: one SQLite file per run, schema-versioned.
//!
//! The harness writes through [`ResultsDb`]; analysis reads through it too, so the schema
//! lives in exactly one place. Every trial is inserted together with its verdicts in one
//! transaction, keyed by a stable `trial_key`: a run killed half way leaves only whole
//! trials behind, and `--resume` skips keys that are already present.
//!
//! The rooms: [`schema`] (the tables, their CHECK lists generated from the vocabulary, and
//! the migrations), [`rows`] (the typed rows), `write` (inserts, one transaction an item),
//! `read` (typed reads; a stored name the vocabulary does not know is an error naming the
//! table, key and column) and `merge` (a shard's rows copied into the merged run).

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

mod cost_stage;
pub mod manifest;
mod merge;
mod read;
pub mod rows;
pub mod schema;
mod write;

pub use cost_stage::CostStage;
pub use manifest::{GateIdentity, Manifest, Shard};
pub use rows::*;
pub use schema::SCHEMA_VERSION;

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
        let mut conn = conn;
        schema::create_and_migrate(&mut conn, path)?;
        let db = ResultsDb {
            conn,
            version: SCHEMA_VERSION,
            path: path.to_path_buf(),
        };
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
        // A database whose tables are all still in its `-wal` file (copied off a node
        // without it while the run wrote) has no meta table: say so, naming the file.
        let version = db.meta("schema_version").map_err(|e| {
            anyhow::anyhow!(
                "{}: not a faultline results database ({e}); a copy made while its run was writing needs its -wal file too",
                path.display()
            )
        })?;
        match version.map(|v| v.parse::<i64>()) {
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

    /// The run's manifest, typed (`None` before a run has started in this file).
    pub fn manifest(&self) -> Result<Option<Manifest>> {
        self.meta("manifest")?
            .map(|text| {
                serde_json::from_str(&text).with_context(|| {
                    format!(
                        "{}: meta.manifest is not a run manifest",
                        self.path.display()
                    )
                })
            })
            .transpose()
    }

    /// Stores the run's manifest (pretty JSON, as every release has).
    pub fn set_manifest(&self, m: &Manifest) -> Result<()> {
        self.set_meta("manifest", &serde_json::to_string_pretty(m)?)
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

    fn has_table(&self, name: &str) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )?)
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
pub(crate) mod tests;
