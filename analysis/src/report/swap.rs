//! The report set is replaced as a whole: a kill while a report is written never leaves
//! old and new tables mixed.
//!
//! The files of a report (the CSV tables, `report.md`, `plots/`) sit beside the run's
//! database, decisions and screenshots, so the set cannot live in one directory that a
//! single `rename` swaps. Instead the swap is journaled:
//!
//! 1. every writer writes into a staging directory, `<out>/.report.new/`; a kill here
//!    leaves the previous set untouched (the staging directory is discarded next time);
//! 2. a marker, `.report.new/.complete`, lists the new set's entries: from here on the
//!    new set is the report;
//! 3. each entry is renamed into place (each rename is atomic; `plots/` moves as one
//!    directory), the previous set's entries that the new one lacks are removed, and the
//!    list of the set is kept in `<out>/.report-files` for the next swap.
//!
//! A kill during step 3 is finished (rolled forward) by the next report written into the
//! same directory, before it writes anything, and by [`recover`]: the set is then exactly
//! the new one. The window in which a reader can see a mixed set is the few renames of
//! step 3, not the seconds it takes to compute and draw a report.
//!
//! Readers of a run directory (`faultline view`, `gate`, `costs`) call [`settle`] first:
//! a staging directory left there is finished (or discarded, when never committed) before
//! they read, so a kill during step 3 is not read as it is until the next report. A
//! writer holds `<out>/.report.lock` (an exclusive `flock`) from staging to the end of its
//! swap, and [`settle`] takes it before touching anything, so a reader never finishes,
//! or discards, the swap of a report still being written: it waits for it. A directory
//! the reader cannot lock or write, with a swap pending, is refused with a message
//! naming the command that finishes it.

use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The staging directory, inside the output directory (a rename never crosses devices).
pub const STAGING: &str = ".report.new";
/// The marker that makes a staged set the report.
const COMPLETE: &str = ".complete";
/// The list of the current set's entries.
pub const MANIFEST: &str = ".report-files";
/// Where the previous `plots/` waits while the new one moves in.
const OLD_PLOTS: &str = ".report.old-plots";
/// The lock a writer holds from staging to the end of its swap.
pub const LOCK: &str = ".report.lock";

/// An exclusive `flock` on `<out>/.report.lock`, released when dropped (or when the
/// process ends, however it ends).
struct ReportLock {
    _file: std::fs::File,
}

impl ReportLock {
    /// Waits for the lock: a report being written in `out` finishes its swap first.
    fn acquire(out: &Path) -> Result<ReportLock> {
        use std::os::fd::AsRawFd;
        let path = out.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock only reads the descriptor, which `file` keeps open.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        Ok(ReportLock { _file: file })
    }
}

/// A report being written: its staging directory, and the lock that keeps readers from
/// finishing (or discarding) its swap while it is under way.
pub struct Staging {
    out: PathBuf,
    dir: PathBuf,
    _lock: ReportLock,
}

impl Staging {
    /// Finishes or discards an interrupted swap in `out`, then starts an empty staging
    /// directory.
    pub fn begin(out: &Path) -> Result<Staging> {
        let lock = ReportLock::acquire(out)?;
        recover(out)?;
        let dir = out.join(STAGING);
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Staging {
            out: out.to_path_buf(),
            dir,
            _lock: lock,
        })
    }

    /// Where the writers write.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the staged set the report (steps 2 and 3) and returns where a staged path
    /// now lives.
    pub fn commit(self) -> Result<Committed> {
        self.mark()?;
        recover(&self.out)?;
        Ok(Committed {
            staging: self.dir.clone(),
            out: self.out.clone(),
        })
    }

    /// Step 2: the marker listing the staged entries.
    fn mark(&self) -> Result<()> {
        let mut entries = Vec::new();
        for entry in read_dir(&self.dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != COMPLETE && !name.ends_with(".tmp") {
                entries.push(name);
            }
        }
        entries.sort();
        let list: String = entries.iter().map(|e| format!("{e}\n")).collect();
        write_new(&self.dir.join(COMPLETE), &list)
    }

    /// What a kill during step 3 leaves: the marker written, then only the first
    /// `renames` renames done, and the lock released as a dying process releases it. For
    /// tests of the readers, which must not read such a directory as it is.
    #[doc(hidden)]
    pub fn commit_killed_after(self, renames: usize) -> Result<()> {
        self.mark()?;
        roll_forward(&self.out, Some(renames))
    }
}

/// Makes a run directory safe to read: waits for a report being written there to finish
/// its swap, then finishes a swap a kill interrupted (or discards a staging directory that
/// was never committed), so a reader sees one whole report set. Nothing to do (and nothing
/// written) when no staging directory is there. A pending swap that cannot be finished
/// (a read-only directory, a damaged list) is refused: the error names the command that
/// finishes it.
pub fn settle(out: &Path) -> Result<()> {
    if !out.join(STAGING).exists() {
        return Ok(());
    }
    let finished = ReportLock::acquire(out).and_then(|_lock| recover(out));
    finished.map_err(|e| {
        anyhow!(
            "{}: its report set is half swapped in (a `faultline report` or `run` was interrupted while replacing it), and it cannot be finished here: {e:#}; run `faultline report {}` to finish it",
            out.display(),
            out.join("results.sqlite").display()
        )
    })
}

/// A committed report: maps the paths writers returned (under the staging directory) to
/// where the files now are.
pub struct Committed {
    staging: PathBuf,
    out: PathBuf,
}

impl Committed {
    /// `path` (written under the staging directory) in the output directory.
    pub fn place(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.staging)
            .map(|rest| self.out.join(rest))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Finishes a swap interrupted after its marker was written, or discards a staging
/// directory that never got one. Idempotent; a directory with no staging is left as is.
/// The caller holds the lock (or knows no report is being written there).
pub fn recover(out: &Path) -> Result<()> {
    roll_forward(out, None)
}

/// [`recover`], stopping (as a kill would) before rename number `renames` when given.
fn roll_forward(out: &Path, renames: Option<usize>) -> Result<()> {
    let mut budget = renames;
    let mut may_rename = || match &mut budget {
        None => true,
        Some(0) => false,
        Some(n) => {
            *n -= 1;
            true
        }
    };
    let staging = out.join(STAGING);
    if !staging.exists() {
        return Ok(());
    }
    let marker = staging.join(COMPLETE);
    let Ok(list) = std::fs::read_to_string(&marker) else {
        // Never committed: the previous set is still the report.
        return std::fs::remove_dir_all(&staging)
            .with_context(|| format!("discarding {}", staging.display()));
    };
    let new: BTreeSet<String> = list
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    for name in &new {
        check_name(name, &marker)?;
        let from = staging.join(name);
        if !from.exists() {
            continue; // moved before the interruption
        }
        let to = out.join(name);
        if from.is_dir() {
            let old = out.join(OLD_PLOTS);
            if old.exists() {
                std::fs::remove_dir_all(&old)
                    .with_context(|| format!("removing {}", old.display()))?;
            }
            if to.exists() {
                if !may_rename() {
                    return Ok(());
                }
                std::fs::rename(&to, &old)
                    .with_context(|| format!("moving {} aside", to.display()))?;
            }
        }
        if !may_rename() {
            return Ok(());
        }
        rename(&from, &to)?;
    }
    // The previous set's entries the new one lacks.
    let manifest = out.join(MANIFEST);
    if let Ok(previous) = std::fs::read_to_string(&manifest) {
        for name in previous
            .lines()
            .filter(|n| !n.is_empty() && !new.contains(*n))
        {
            check_name(name, &manifest)?;
            remove(&out.join(name))?;
        }
    }
    let old = out.join(OLD_PLOTS);
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    write_new(&manifest, &list)?;
    std::fs::remove_dir_all(&staging).with_context(|| format!("removing {}", staging.display()))?;
    Ok(())
}

/// An entry of a report set is one plain name in the output directory; anything else in
/// a list was not written by a report and is refused rather than followed.
fn check_name(name: &str, list: &Path) -> Result<()> {
    if name.is_empty() || name.contains('/') || name == ".." || name == "." {
        bail!(
            "{}: `{name}` is not the name of a report file; remove the file and write the report again",
            list.display()
        );
    }
    Ok(())
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("reading {}", dir.display()))
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).with_context(|| format!("moving the new {} into place", to.display()))
}

fn remove(path: &Path) -> Result<()> {
    let result = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing the stale {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Writes `text` to `path` through a temporary file and a rename.
fn write_new(path: &Path, text: &str) -> Result<()> {
    super::write_file(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(out: &Path, files: &[(&str, &str)], plot: &str) -> Staging {
        let s = Staging::begin(out).unwrap();
        for (name, text) in files {
            std::fs::write(s.dir().join(name), text).unwrap();
        }
        std::fs::create_dir(s.dir().join("plots")).unwrap();
        std::fs::write(s.dir().join("plots/p.svg"), plot).unwrap();
        s
    }

    fn tree(out: &Path) -> Vec<(String, String)> {
        let mut v = Vec::new();
        for dir in [out.to_path_buf(), out.join("plots")] {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if e.path().is_file() {
                    let rel = e.path().strip_prefix(out).unwrap().display().to_string();
                    v.push((rel, std::fs::read_to_string(e.path()).unwrap()));
                }
            }
        }
        v.sort();
        v
    }

    #[test]
    fn a_commit_replaces_the_whole_set_and_removes_what_the_new_one_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        std::fs::write(out.join("results.sqlite"), "db").unwrap();
        set(out, &[("a.csv", "old a"), ("b.csv", "old b")], "old plot")
            .commit()
            .unwrap();
        set(out, &[("a.csv", "new a")], "new plot")
            .commit()
            .unwrap();
        assert_eq!(
            tree(out),
            vec![
                (MANIFEST.into(), "a.csv\nplots\n".into()),
                (LOCK.into(), String::new()),
                ("a.csv".into(), "new a".into()),
                ("plots/p.svg".into(), "new plot".into()),
                ("results.sqlite".into(), "db".into()),
            ]
        );
        assert!(!out.join(STAGING).exists() && !out.join(OLD_PLOTS).exists());
    }

    /// A kill before the marker: the previous set is the report, untouched, and the next
    /// report discards the staged half.
    #[test]
    fn a_kill_before_the_commit_leaves_the_previous_set_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        set(out, &[("a.csv", "old a"), ("b.csv", "old b")], "old plot")
            .commit()
            .unwrap();
        let before = tree(out);
        let half = set(out, &[("a.csv", "new a")], "new plot");
        drop(half); // killed while writing
        assert_eq!(tree(out), before, "the report is still the previous set");
        recover(out).unwrap();
        assert_eq!(tree(out), before);
        assert!(!out.join(STAGING).exists());
    }

    /// A kill in the middle of the renames: the next report (or `recover`) finishes the
    /// swap, so the set is exactly the new one.
    #[test]
    fn a_kill_during_the_renames_is_rolled_forward() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        set(
            out,
            &[("a.csv", "old a"), ("b.csv", "old b"), ("c.csv", "old c")],
            "old plot",
        )
        .commit()
        .unwrap();
        let clean = tempfile::tempdir().unwrap();
        set(
            clean.path(),
            &[("a.csv", "new a"), ("c.csv", "new c")],
            "new plot",
        )
        .commit()
        .unwrap();
        // Stage the new set and write the marker by hand, then do the first rename only
        // and move the old plots aside: what a kill between two renames leaves.
        let s = set(out, &[("a.csv", "new a"), ("c.csv", "new c")], "new plot");
        std::fs::write(s.dir().join(COMPLETE), "a.csv\nc.csv\nplots\n").unwrap();
        std::fs::rename(s.dir().join("a.csv"), out.join("a.csv")).unwrap();
        std::fs::rename(out.join("plots"), out.join(OLD_PLOTS)).unwrap();
        recover(out).unwrap();
        assert_eq!(tree(out), tree(clean.path()));
    }

    /// A reader waits for a report still being written (its staging has no marker yet)
    /// instead of discarding it, then reads the whole new set.
    #[test]
    fn a_reader_waits_for_a_report_being_written_and_never_discards_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_path_buf();
        set(&out, &[("a.csv", "old a")], "old plot")
            .commit()
            .unwrap();
        let writing = set(&out, &[("a.csv", "new a")], "new plot");
        let reader = {
            let out = out.clone();
            std::thread::spawn(move || settle(&out).map(|()| tree(&out)))
        };
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!reader.is_finished(), "the reader waits for the writer");
        assert!(writing.dir().join("a.csv").exists(), "nothing discarded");
        writing.commit().unwrap();
        let seen = reader.join().unwrap().unwrap();
        assert!(seen.contains(&("a.csv".into(), "new a".into())), "{seen:?}");
    }

    /// A swap killed half way is finished by [`settle`]; one it cannot finish is refused
    /// with the command that finishes it.
    #[test]
    fn settle_finishes_a_killed_swap_or_refuses_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        set(out, &[("a.csv", "old a"), ("b.csv", "old b")], "old plot")
            .commit()
            .unwrap();
        set(out, &[("a.csv", "new a"), ("b.csv", "new b")], "new plot")
            .commit_killed_after(3)
            .unwrap();
        assert!(
            !out.join("plots").exists(),
            "killed with the old plots aside"
        );
        settle(out).unwrap();
        assert_eq!(
            tree(out),
            vec![
                (MANIFEST.into(), "a.csv\nb.csv\nplots\n".into()),
                (LOCK.into(), String::new()),
                ("a.csv".into(), "new a".into()),
                ("b.csv".into(), "new b".into()),
                ("plots/p.svg".into(), "new plot".into()),
            ]
        );
        let damaged = set(out, &[("a.csv", "a")], "p");
        std::fs::write(damaged.dir().join(COMPLETE), "../elsewhere\n").unwrap();
        drop(damaged);
        let e = format!("{:#}", settle(out).unwrap_err());
        assert!(
            e.contains("half swapped in") && e.contains("faultline report"),
            "{e}"
        );
    }

    #[test]
    fn a_list_naming_a_path_outside_the_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        std::fs::write(out.join(MANIFEST), "../elsewhere\n").unwrap();
        let s = set(out, &[("a.csv", "a")], "p");
        let e = s.commit().err().unwrap().to_string();
        assert!(
            e.contains(".report-files") && e.contains("../elsewhere"),
            "{e}"
        );
    }
}
