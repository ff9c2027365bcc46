//! What `/proc` says about processes, for tests that check nothing was left running:
//! one parser of a stat file instead of one per test.

use std::path::Path;

/// The fields of a `/proc/<pid>/stat` (or a thread's) that tests read.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// `R`, `S`, `D`, `Z` (exited, not yet reaped), `X` (dead)...
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
}

/// The stat file at `path`, or `None` once the process or thread is gone. The fields
/// follow the parenthesised command name, which may hold spaces or parentheses, hence
/// the last `)`.
pub fn stat_at(path: &Path) -> Option<Stat> {
    let stat = std::fs::read_to_string(path).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Process `pid`'s stat, or `None` once it is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    stat_at(Path::new(&format!("/proc/{pid}/stat")))
}

/// Whether `pid` is running: it exists and is not a zombie (a zombie only waits for its
/// parent to reap it).
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z')
}

/// Whether every thread of `pid` has exited (gone, or a zombie awaiting reaping). Every
/// thread, not only the leader: a leader that exited first shows as a zombie while the
/// other threads still run and hold the process's files.
pub fn ended(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks
        .flatten()
        .all(|task| stat_at(&task.path().join("stat")).is_none_or(|s| matches!(s.state, 'Z' | 'X')))
}

/// Every running (not zombie) process with its stat.
pub fn running() -> Vec<(u32, Stat)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .filter(|(_, s)| s.state != 'Z')
        .collect()
}

/// `pid`'s command line, arguments joined by NUL as the kernel gives them (empty once
/// it is gone).
pub fn cmdline(pid: u32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmd).into_owned()
}
