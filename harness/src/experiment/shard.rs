//! Shards: one run's work spread over several processes, machines or pods, and merged
//! back into the run an unsharded process would have written.
//!
//! **Which items a shard runs.** Every work item (detection trial, recovery episode) has
//! a stable key. A run's items are fixed by its config before anything runs, so every
//! shard computes the same list and the same assignment: items are taken from the most
//! to the least expensive (key order breaking ties) and each goes to the shard with the
//! least expected cost so far (lowest index on ties) — greedy longest-processing-time
//! balancing ([`assign`]). Episodes cost more than trials (their agent acts up to the
//! budget), and chart items more than the others (the hover has to settle). Items that
//! may share a page (a decision's working trial and the trials that ride on it; an item's
//! episodes under the different policies and deterministic agents) are assigned as one
//! unit costing what they cost together, so a shard needs no more pages for them than
//! an unsharded run does (`experiment::items`). The assignment depends only on the config, so a shard re-run (a replaced pod with the same
//! index) gets the same items and resumes its own directory without duplicating any.
//!
//! **Where it writes.** Shard `I/N` (1-based) of `--out DIR` writes `DIR/shard-I-of-N/`,
//! a complete run directory whose manifest records the shard, and whose `meta` records
//! the keys assigned to it (`shard_items`).
//!
//! **Merge.** [`merge`] takes the shard directories, or the directories they were
//! written into (a shard's `--out`: the `shard-I-of-N` directories in it are merged,
//! and said so). It checks that the shard directories agree (the config identity,
//! commit, version, decisions and Chromium version; a mismatch names the shard and the
//! field, the first differing config field for the config identity), that shards 1 to N are each present exactly once, and that every assigned item
//! is stored exactly once (a missing or doubled item is named) — or, when every attempt
//! at it failed for infrastructure reasons (the browser died, the model endpoint was
//! down, ...), is listed as such in its shard: such an item is merged as a listed
//! failure (the report's harness section, `infra_retries.csv`), never as a result, and
//! the merge says how many there were; then it copies every
//! table's rows into one fresh database (table by table from `sqlite_master`, so tables
//! added later are merged too), copies the screenshots, and writes the report and the
//! viewer. The tables are computed from sorted rows, so the merged CSVs are byte for byte
//! those of an unsharded run of the same config.

use crate::error::UsageError;
use anyhow::{anyhow, bail, Context, Result};
use faultline_analysis::db::{Manifest, ResultsDb};
use faultline_tasks::TaskKind;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use faultline_analysis::db::Shard;

/// The shard a scheduler gave this process (`--shard auto`), from the first of:
/// `FAULTLINE_SHARD` (`I/N`); a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`
/// (0-based) with `FAULTLINE_SHARD_COUNT`; a Slurm array's `SLURM_ARRAY_TASK_ID`
/// (minus `SLURM_ARRAY_TASK_MIN`) with `SLURM_ARRAY_TASK_COUNT`; a CI matrix's
/// `CI_NODE_INDEX` (1-based) with `CI_NODE_TOTAL`. `FAULTLINE_SHARD_COUNT`, when set,
/// gives the count for every source.
pub fn shard_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
    let num = |name: &str| -> Result<Option<u32>, String> {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("{name}: expected a number, found `{v}`"))
            })
            .transpose()
    };
    if let Some(s) = var("FAULTLINE_SHARD").filter(|v| !v.trim().is_empty()) {
        return s.parse().map_err(|e| format!("FAULTLINE_SHARD: {e}"));
    }
    let count_override = num("FAULTLINE_SHARD_COUNT")?;
    let (index, count, source) = if let Some(i) = num("JOB_COMPLETION_INDEX")? {
        (i + 1, count_override, "JOB_COMPLETION_INDEX")
    } else if let Some(i) = num("SLURM_ARRAY_TASK_ID")? {
        let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let i = i
            .checked_sub(min)
            .ok_or("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN")?;
        (
            i + 1,
            count_override.or(num("SLURM_ARRAY_TASK_COUNT")?),
            "SLURM_ARRAY_TASK_ID",
        )
    } else if let Some(i) = num("CI_NODE_INDEX")? {
        (i, count_override.or(num("CI_NODE_TOTAL")?), "CI_NODE_INDEX")
    } else {
        return Err("--shard auto: no shard in the environment (set FAULTLINE_SHARD=I/N, or run as a Kubernetes Indexed Job, a Slurm array or a CI matrix)".into());
    };
    let count = count.ok_or_else(|| {
        format!("--shard auto: {source} is set but the number of shards is not (set FAULTLINE_SHARD_COUNT)")
    })?;
    format!("{index}/{count}")
        .parse()
        .map_err(|e| format!("--shard auto ({source}): {e}"))
}

/// The expected cost of a work item, in arbitrary units: a trial 2, an episode
/// `2 * (1 + budget)` (the replayed decision and up to `budget` agent actions); chart
/// items half as much again (hover and settle).
pub fn cost(key: &str, task: TaskKind, budget: u32) -> u64 {
    let base = if key.starts_with("recovery/") {
        2 * (1 + u64::from(budget))
    } else {
        2
    };
    match task {
        TaskKind::Chart => base + base / 2,
        _ => base,
    }
}

/// The shard (0-based) of every item, by greedy longest-processing-time balancing:
/// items in decreasing cost (key order on ties), each to the least loaded shard (lowest
/// index on ties). Depends only on the items, never on their order.
pub fn assign(items: &[(String, u64)], count: u32) -> BTreeMap<String, u32> {
    let mut order: Vec<&(String, u64)> = items.iter().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut load = vec![0u64; count.max(1) as usize];
    let mut out = BTreeMap::new();
    for (key, c) in order {
        let (shard, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(i, l)| (**l, *i))
            .expect("at least one shard");
        load[shard] += c;
        out.insert(key.clone(), shard as u32);
    }
    out
}

/// What a merge did.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    /// Shard directories merged.
    pub shards: usize,
    /// Detection trials in the merged database.
    pub trials: u64,
    /// Recovery episodes in the merged database.
    pub episodes: u64,
    /// Items a shard finished without storing because every attempt failed for
    /// infrastructure reasons: merged as listed failures (in the report's harness
    /// section and `infra_retries.csv`), never as results.
    pub failed_items: Vec<String>,
    /// The merged run's `report.md`.
    pub report: PathBuf,
    /// The merged run's trace viewer `index.html`.
    pub view: PathBuf,
}

/// One shard directory, read for the merge.
struct ShardDir {
    dir: PathBuf,
    shard: Shard,
    manifest: Manifest,
    identity: String,
    assigned: BTreeSet<String>,
    total_items: usize,
    stored: BTreeSet<String>,
    /// Items not stored whose every attempt failed for infrastructure reasons.
    failed: BTreeSet<String>,
}

impl ShardDir {
    fn read(dir: &Path) -> Result<ShardDir> {
        let usage = |m: String| anyhow!(UsageError(format!("{}: {m}", dir.display())));
        let db = ResultsDb::open_read_only(&dir.join("results.sqlite"))
            .map_err(|e| anyhow!(UsageError(format!("{e:#}"))))?;
        let manifest: Manifest = db
            .manifest()
            .map_err(|e| usage(format!("{e:#}")))?
            .ok_or_else(|| usage("no run manifest (the shard never started)".into()))?;
        let shard: Shard = manifest.shard.ok_or_else(|| {
            usage("not a shard (its manifest records no shard; run with --shard)".into())
        })?;
        let assigned: BTreeSet<String> = db
            .meta("shard_items")?
            .and_then(|m| serde_json::from_str(&m).ok())
            .ok_or_else(|| usage("no shard_items in meta".into()))?;
        let total_items = db
            .meta("shard_total_items")?
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| usage("no shard_total_items in meta".into()))?;
        let mut stored = db.finished_keys()?;
        stored.extend(db.finished_episode_keys()?);
        let failed = db
            .infra_errors()?
            .into_iter()
            .filter(|e| e.policy == faultline_analysis::infra::HARNESS)
            .map(|e| e.item_key)
            .filter(|k| !stored.contains(k))
            .collect();
        Ok(ShardDir {
            dir: dir.to_path_buf(),
            shard,
            identity: db.meta("config_identity")?.unwrap_or_default(),
            manifest,
            assigned,
            total_items,
            stored,
            failed,
        })
    }

    fn name(&self) -> String {
        format!("shard {} ({})", self.shard, self.dir.display())
    }
}

/// Checks the shard directories against each other (see the module docs); every error
/// is a [`UsageError`] naming the shard, and the field or the item.
fn check(shards: &[ShardDir]) -> Result<()> {
    let fail = |m: String| Err(anyhow!(UsageError(m)));
    let Some(first) = shards.first() else {
        return fail("merge: no shard directories given".into());
    };
    for s in &shards[1..] {
        if s.identity != first.identity {
            let (field, this, theirs) = identity_difference(&s.identity, &first.identity);
            return fail(format!(
                "{}: {field} differs from {} ({this} vs {theirs})",
                s.name(),
                first.name()
            ));
        }
        if s.shard.count != first.shard.count {
            return fail(format!(
                "{}: shard count differs from {} ({} vs {})",
                s.name(),
                first.name(),
                s.shard.count,
                first.shard.count
            ));
        }
        if let Some((field, this, theirs)) = s.manifest.merge_mismatch(&first.manifest) {
            return fail(format!(
                "{}: {field} differs from {} ({this} vs {theirs})",
                s.name(),
                first.name(),
            ));
        }
    }
    let mut by_index: BTreeMap<u32, &ShardDir> = BTreeMap::new();
    for s in shards {
        if let Some(other) = by_index.insert(s.shard.index, s) {
            return fail(format!(
                "shard {} given twice: {} and {}",
                s.shard,
                other.dir.display(),
                s.dir.display()
            ));
        }
    }
    for i in 1..=first.shard.count {
        if !by_index.contains_key(&i) {
            return fail(format!(
                "shard {i}/{} missing (no directory given holds it)",
                first.shard.count
            ));
        }
    }
    let mut owner: BTreeMap<&str, &ShardDir> = BTreeMap::new();
    for s in shards {
        for key in &s.stored {
            if let Some(other) = owner.insert(key, s) {
                return fail(format!(
                    "item `{key}` doubled: stored in {} and in {}",
                    other.name(),
                    s.name()
                ));
            }
            if !s.assigned.contains(key) {
                return fail(format!(
                    "item `{key}` stored in {} but not assigned to it",
                    s.name()
                ));
            }
        }
    }
    for s in shards {
        // An item that failed for good for infrastructure reasons is listed, not missing.
        if let Some(key) = s
            .assigned
            .difference(&s.stored)
            .find(|k| !s.failed.contains(*k))
        {
            return fail(format!(
                "item `{key}` missing from {}: the shard did not finish ({} of {} items stored); run it again with --shard {} to resume",
                s.name(),
                s.stored.len(),
                s.assigned.len(),
                s.shard
            ));
        }
    }
    let assigned: usize = shards.iter().map(|s| s.assigned.len()).sum();
    if assigned != first.total_items {
        return fail(format!(
            "the shards hold {assigned} items but the run has {}",
            first.total_items
        ));
    }
    Ok(())
}

/// Which config field two stored resume identities (`meta.config_identity`, JSON
/// objects) first differ in, and its value in each: ("config field `layouts`", "3", "2").
/// Identities that are not both objects are named whole.
fn identity_difference(this: &str, theirs: &str) -> (String, String, String) {
    use serde_json::{Map, Value};
    let clipped = |text: String| match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    };
    let object = |text: &str| match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => Some(fields),
        _ => None,
    };
    let whole = || {
        (
            "config (config_identity)".to_string(),
            clipped(this.to_string()),
            clipped(theirs.to_string()),
        )
    };
    let (Some(a), Some(b)) = (object(this), object(theirs)) else {
        return whole();
    };
    let value = |fields: &Map<String, Value>, key: &str| {
        clipped(fields.get(key).map_or("absent".into(), Value::to_string))
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let first = keys.into_iter().find(|k| a.get(*k) != b.get(*k));
    first.map_or_else(whole, |k| {
        (format!("config field `{k}`"), value(&a, k), value(&b, k))
    })
}

/// The shard directories `dir` stands for: itself when it holds a results database;
/// else, when it is a shard's `--out`, the `shard-I-of-N` directories in it (said on
/// stderr). A directory with neither is returned as is, for [`ShardDir::read`] to name
/// the missing database.
fn shard_dirs_in(dir: &Path) -> Vec<PathBuf> {
    if dir.join("results.sqlite").exists() {
        return vec![dir.to_path_buf()];
    }
    let is_shard_dir = |path: &Path| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parsed = name
            .strip_prefix("shard-")
            .map(|rest| rest.replacen("-of-", "/", 1))
            .and_then(|text| text.parse::<Shard>().ok());
        path.is_dir() && parsed.is_some_and(|s| s.dir_name() == name)
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| is_shard_dir(p))
                .collect()
        })
        .unwrap_or_default();
    if found.is_empty() {
        return vec![dir.to_path_buf()];
    }
    found.sort();
    let names: Vec<String> = found
        .iter()
        .map(|p| format!("{}/", p.file_name().unwrap_or_default().to_string_lossy()))
        .collect();
    eprintln!(
        "merge: {} holds no results but {}; merging {}",
        dir.display(),
        names.join(", "),
        if found.len() == 1 { "it" } else { "them" }
    );
    found
}

/// Merges shard directories into the run directory `out` (see the module docs).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeSummary> {
    let mut shards = dirs
        .iter()
        .flat_map(|d| shard_dirs_in(d))
        .map(|d| ShardDir::read(&d))
        .collect::<Result<Vec<_>>>()?;
    check(&shards)?;
    shards.sort_by_key(|s| s.shard.index);
    let db_path = out.join("results.sqlite");
    if db_path.exists() {
        bail!(UsageError(format!(
            "{} already holds results; merge into a new directory",
            out.display()
        )));
    }
    std::fs::create_dir_all(out.join("shots"))
        .with_context(|| format!("creating {}", out.display()))?;
    let mut db = ResultsDb::open(&db_path)?;
    // Meta: the first shard's, without what is particular to a shard.
    let first = ResultsDb::open_read_only(&shards[0].dir.join("results.sqlite"))?;
    for (key, value) in first.meta_entries()? {
        match key.as_str() {
            "shard_items" | "shard_total_items" | "schema_version" => {}
            "manifest" => db.set_manifest(&shards[0].manifest.merged())?,
            _ => db.set_meta(&key, &value)?,
        }
    }
    drop(first);
    for s in &shards {
        db.copy_rows_from(&s.dir.join("results.sqlite"))
            .with_context(|| format!("merging {}", s.name()))?;
        copy_dir(&s.dir.join("shots"), &out.join("shots"))?;
    }
    if let Some(d) = shards
        .iter()
        .map(|s| s.dir.join("decisions.jsonl"))
        .find(|p| p.is_file())
    {
        std::fs::copy(&d, out.join("decisions.jsonl"))?;
    }
    let analysis = faultline_analysis::report::default_config(&db)?;
    let files = faultline_analysis::report::write_all(&db, out, out, &analysis)?;
    let view = faultline_viewer::generate(out, &out.join("view"))?;
    Ok(MergeSummary {
        shards: shards.len(),
        trials: db.count("trials")?,
        episodes: db.count("episodes")?,
        failed_items: shards
            .iter()
            .flat_map(|s| s.failed.iter().cloned())
            .collect(),
        report: files.report_md,
        view: view.index,
    })
}

/// Copies the files of `from` (one level: screenshots) into `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        if path.is_file() {
            let target = to.join(path.file_name().expect("a file name"));
            std::fs::copy(&path, &target)
                .with_context(|| format!("copying {} to {}", path.display(), target.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-shard run directory assigned `items`, storing none of them, with a final
    /// infrastructure failure listed for each of `failed`.
    fn shard_dir(dir: &Path, items: &[&str], failed: &[&str]) -> ShardDir {
        shard_dir_of(
            dir,
            Shard { index: 1, count: 1 },
            items,
            items.len(),
            failed,
        )
    }

    /// Shard `shard` of a run of `total` items, in `dir`, as [`shard_dir`] makes it.
    fn shard_dir_of(
        dir: &Path,
        shard: Shard,
        items: &[&str],
        total: usize,
        failed: &[&str],
    ) -> ShardDir {
        std::fs::create_dir_all(dir).unwrap();
        let db = ResultsDb::open(&dir.join("results.sqlite")).unwrap();
        let manifest = Manifest {
            chromium_version: "x".into(),
            config_as_passed: None,
            config_resolved: serde_json::Value::Null,
            decisions: "committed".into(),
            decisions_sha256: Some("d".into()),
            faultline_version: "v".into(),
            faults: Vec::new(),
            git_commit: "c".into(),
            layouts: 1,
            merged_shards: None,
            policies: Vec::new(),
            recovery: None,
            root_seed: 1,
            settle: None,
            shard: Some(shard),
            tasks: Vec::new(),
        };
        db.set_manifest(&manifest).unwrap();
        db.set_meta("shard_items", &serde_json::to_string(items).unwrap())
            .unwrap();
        db.set_meta("shard_total_items", &total.to_string())
            .unwrap();
        let mut db = db;
        let rows: Vec<_> = failed
            .iter()
            .map(|k| faultline_analysis::db::InfraErrorRow {
                item_key: k.to_string(),
                policy: faultline_analysis::infra::HARNESS.into(),
                kind: faultline_tasks::InfraKind::BrowserDied.into(),
                reason: "the browser process exited".into(),
                stderr_tail: String::new(),
                attempt: 3,
            })
            .collect();
        db.insert_infra_errors(&rows).unwrap();
        drop(db);
        ShardDir::read(dir).unwrap()
    }

    #[test]
    fn regression_merge_lists_an_item_that_failed_for_infrastructure_reasons_and_still_refuses_a_missing_one(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let key = "detection/grid/000/working";
        // Every attempt failed for infrastructure reasons: listed, not missing.
        let failed = shard_dir(dir.path(), &[key], &[key]);
        assert!(failed.failed.contains(key));
        check(std::slice::from_ref(&failed)).expect("a listed failure is not a missing item");
        // Nothing stored and nothing listed: missing, as before.
        let other = tempfile::tempdir().unwrap();
        let missing = shard_dir(other.path(), &[key], &[]);
        let e = check(&[missing]).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }

    /// Regression (`faultline merge D1 D2`, each `Di` a shard's `--out`, failed with "no
    /// such results database"): a directory holding no results but `shard-I-of-N`
    /// directories stands for them.
    #[test]
    fn regression_merge_takes_a_shards_out_directory_for_the_shard_directory_in_it() {
        let tmp = tempfile::tempdir().unwrap();
        let keys = ["detection/grid/000/working", "detection/grid/001/working"];
        let outs = [tmp.path().join("out1"), tmp.path().join("out2")];
        for (i, out) in outs.iter().enumerate() {
            let shard = Shard {
                index: i as u32 + 1,
                count: 2,
            };
            // Every item failed for infrastructure reasons: listed, so the set is whole.
            shard_dir_of(
                &out.join(shard.dir_name()),
                shard,
                &keys[i..=i],
                2,
                &keys[i..=i],
            );
        }
        let merged = merge(&outs, &tmp.path().join("merged")).unwrap();
        assert_eq!(merged.shards, 2);
        assert_eq!(merged.failed_items.len(), 2);
    }

    /// Regression (shards of different configs were refused with "config differs ...
    /// (config_identity)", leaving the user to diff two JSON blobs): the first differing
    /// config field is named, with both values.
    #[test]
    fn regression_merge_names_the_config_field_that_differs_between_shards() {
        let tmp = tempfile::tempdir().unwrap();
        let key = ["detection/grid/000/working"];
        let mut shards: Vec<ShardDir> = (1..=2)
            .map(|index| {
                let dir = tmp.path().join(format!("s{index}"));
                shard_dir_of(&dir, Shard { index, count: 2 }, &key, 2, &key)
            })
            .collect();
        shards[0].identity = r#"{"layouts":2,"seed":1,"tasks":["grid"]}"#.into();
        shards[1].identity = r#"{"layouts":3,"seed":1,"tasks":["grid"]}"#.into();
        let e = check(&shards).unwrap_err().to_string();
        assert!(
            e.contains("config field `layouts` differs from shard 1/2") && e.contains("(3 vs 2)"),
            "{e}"
        );
        assert_eq!(crate::error::exit_code(&check(&shards).unwrap_err()), 2);
    }

    #[test]
    fn shards_parse_and_come_from_the_schedulers_environment() {
        assert_eq!("2/8".parse(), Ok(Shard { index: 2, count: 8 }));
        for bad in ["0/3", "4/3", "3", "a/b"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let s = |i, n| Ok(Shard { index: i, count: n });
        assert_eq!(shard_from_env(env(&[("FAULTLINE_SHARD", "3/4")])), s(3, 4));
        assert_eq!(
            shard_from_env(env(&[
                ("JOB_COMPLETION_INDEX", "0"),
                ("FAULTLINE_SHARD_COUNT", "3")
            ])),
            s(1, 3)
        );
        assert!(shard_from_env(env(&[("JOB_COMPLETION_INDEX", "0")]))
            .unwrap_err()
            .contains("FAULTLINE_SHARD_COUNT"));
        assert_eq!(
            shard_from_env(env(&[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "7")
            ])),
            s(5, 7)
        );
        assert_eq!(
            shard_from_env(env(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "2")])),
            s(2, 2)
        );
        assert!(shard_from_env(env(&[])).is_err());
    }

    #[test]
    fn assignment_is_balanced_and_independent_of_order() {
        let mut items: Vec<(String, u64)> = (0..40)
            .map(|i| (format!("detection/grid/{i:03}/working"), 2))
            .chain((0..10).map(|i| (format!("recovery/chart/x/p/a/r0/{i:03}"), 12)))
            .collect();
        let a = assign(&items, 7);
        items.reverse();
        assert_eq!(assign(&items, 7), a);
        let mut load = [0u64; 7];
        for (k, c) in &items {
            load[a[k] as usize] += c;
        }
        let (lo, hi) = (load.iter().min().unwrap(), load.iter().max().unwrap());
        assert!(hi - lo <= 12, "{load:?}");
        assert!(assign(&items, 1).values().all(|s| *s == 0));
        assert_eq!(cost("recovery/chart/x", TaskKind::Chart, 3), 12);
        assert_eq!(cost("detection/grid/000/working", TaskKind::Grid, 3), 2);
    }
}
