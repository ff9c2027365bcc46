//! Copying a shard's rows into the merged run.

use super::ResultsDb;
use anyhow::{bail, Context, Result};
use std::path::Path;

impl ResultsDb {
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
}
