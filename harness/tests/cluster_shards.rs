//! Shards under cluster conditions, with real processes: a requeued array task whose
//! first attempt is still alive starts a second attempt on the same shard directory, and
//! a shard directory is copied off a node while its run is still writing (the SQLite
//! `-wal` file not yet checkpointed into the database, or left behind by the copy). The
//! second attempt must be refused clearly without touching the shard's database, and a
//! merge of a copied shard must either equal the merge of the real shard table for
//! table or be refused with its reason: never a merged run with items silently lost.

mod common;
use common::{copy_dir, faultline};

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// One task, two layouts, the reference faults, no recovery phase; one job at a time,
/// so a shard takes long enough to be caught mid-run.
const CONFIG: &str = r#"
tasks = ["grid", "frame"]
policies = ["unverified", "outcome"]
decisions = "auto"
faults = ["reference"]
layouts = 2
jobs = 1
[recovery]
enabled = false
"#;

/// Every CSV table a run directory holds, by name (this config has no recovery tables).
fn tables(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    found.sort();
    assert!(
        found.len() >= 3,
        "{}: too few tables: {found:?}",
        dir.display()
    );
    found
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn spawn_shard(cfg: &Path, out: &Path, shard: &str) -> Child {
    common::spawn_shard(cfg, out, shard, Stdio::piped())
}

/// (trials stored, items assigned) in a shard's database, as another process sees them
/// while the run writes; (0, 0) before the run stored its meta.
fn progress(db: &Path) -> (usize, usize) {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return (0, 0);
    };
    let stored = c
        .query_row("SELECT COUNT(*) FROM trials", [], |r| r.get::<_, i64>(0))
        .unwrap_or(0) as usize;
    let assigned = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'shard_items'",
            [],
            |r| r.get::<_, String>(0),
        )
        .ok()
        .and_then(|v| serde_json::from_str::<Vec<String>>(&v).ok())
        .map_or(0, |v| v.len());
    (stored, assigned)
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill only sends a signal to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A copy of a run directory as a file-by-file copy tool makes it while the run writes:
/// the database first, then (unless `with_wal`) its `-wal` and `-shm` files, then the rest.
fn copy_while_running(from: &Path, to: &Path, with_wal: bool) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["results.sqlite", "results.sqlite-wal", "results.sqlite-shm"] {
        if (with_wal || name == "results.sqlite") && from.join(name).is_file() {
            std::fs::copy(from.join(name), to.join(name)).unwrap();
        }
    }
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("results.sqlite") || to.join(&name).exists() {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            let _ = std::fs::copy(entry.path(), to.join(&name));
        }
    }
}

fn merge(dirs: &[&Path], out: &Path) -> (i32, String, String) {
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(|d| s(d)));
    args.extend(["--out", s(out)]);
    faultline(&args)
}

/// `PRAGMA integrity_check` is ok and no trial is stored twice.
fn assert_sound(db: &Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok", "{}", db.display());
    let (all, distinct): (i64, i64) = c
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT trial_key) FROM trials",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(all, distinct, "a trial stored twice in {}", db.display());
}

/// A merge of copied shards: equal to the real merge table for table, or refused (exit
/// 2) with a reason naming the copied shard's database or a missing item.
fn assert_same_or_refused(
    what: &str,
    result: (i32, String, String),
    merged: &Path,
    reference: &[(String, String)],
) -> bool {
    let (code, stdout, stderr) = result;
    if code == 0 {
        let got = tables(merged);
        assert_eq!(got.len(), reference.len(), "{what}: another set of tables");
        for ((name, want), (_, got)) in reference.iter().zip(got) {
            assert_eq!(
                &got, want,
                "{what}: merged, but {name} differs from the real shard's merge"
            );
        }
        return true;
    }
    assert_eq!(code, 2, "{what}: {stdout}{stderr}");
    assert!(
        stderr.contains("missing from shard 1/2") || stderr.contains("results.sqlite"),
        "{what}: refused without naming the item or the database: {stderr}"
    );
    false
}

#[test]
fn a_second_attempt_of_a_running_shard_is_refused_and_a_copy_taken_mid_run_merges_whole_or_not_at_all(
) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cfg = root.join("cluster.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let out = root.join("results");
    let shard1 = out.join("shard-1-of-2");
    let db = shard1.join("results.sqlite");

    // Two attempts of shard 1/2 at once: the first stores a trial, the second starts.
    let mut first = spawn_shard(&cfg, &out, "1/2");
    wait_for("the first attempt's first trial", || progress(&db).0 >= 1);
    // The first attempt is paused (SIGSTOP: alive, holding its lock, mid-run) while the
    // second attempt starts and the early copies are taken, so however fast this machine
    // is, they see a shard that is still being written.
    signal(&first, libc::SIGSTOP);
    let second = spawn_shard(&cfg, &out, "1/2").wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another faultline run is writing this directory"),
        "{stderr}"
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first attempt must still be running when the second is refused"
    );

    // Copies of the shard while it writes: early (one trial stored), with and without
    // the -wal file.
    let early_wal = root.join("early-wal/shard-1-of-2");
    let early_bare = root.join("early-bare/shard-1-of-2");
    copy_while_running(&shard1, &early_wal, true);
    copy_while_running(&shard1, &early_bare, false);
    signal(&first, libc::SIGCONT);
    // And once every assigned trial is stored, with the run still alive: then killed
    // (SIGKILL, a lost node), so the -wal file keeps what the database file lacks.
    wait_for("every trial of shard 1/2", || {
        let (stored, assigned) = progress(&db);
        assigned > 0 && stored == assigned
    });
    first.kill().unwrap();
    first.wait().unwrap();
    let late_wal = root.join("late-wal/shard-1-of-2");
    let late_bare = root.join("late-bare/shard-1-of-2");
    copy_while_running(&shard1, &late_wal, true);
    copy_while_running(&shard1, &late_bare, false);
    assert!(
        late_wal.join("results.sqlite-wal").is_file(),
        "the killed run left its -wal file"
    );

    // The real shard: run again, it resumes and finishes; the other shard runs whole.
    let rerun = spawn_shard(&cfg, &out, "1/2").wait_with_output().unwrap();
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    let other = spawn_shard(&cfg, &out, "2/2").wait_with_output().unwrap();
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert_sound(&db);
    let shard2 = out.join("shard-2-of-2");
    let (code, stdout, stderr) = merge(&[&shard1, &shard2], &root.join("merged"));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let reference = tables(&root.join("merged"));

    // An early copy is an unfinished shard: refused, naming an item it lacks.
    for (name, dir) in [("early-wal", &early_wal), ("early-bare", &early_bare)] {
        let merged = root.join(format!("merged-{name}"));
        let ok = assert_same_or_refused(name, merge(&[dir, &shard2], &merged), &merged, &reference);
        assert!(!ok, "{name}: an unfinished shard was merged");
    }
    // A late copy with its -wal file holds every item: merged, equal to the real merge.
    let merged = root.join("merged-late-wal");
    let ok = assert_same_or_refused(
        "late-wal",
        merge(&[&late_wal, &shard2], &merged),
        &merged,
        &reference,
    );
    assert!(
        ok,
        "late-wal: a complete copy (database and -wal) was refused"
    );
    // Without it, the database file lacks what the run had not checkpointed: refused.
    let merged = root.join("merged-late-bare");
    assert_same_or_refused(
        "late-bare",
        merge(&[&late_bare, &shard2], &merged),
        &merged,
        &reference,
    );
}
