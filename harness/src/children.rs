//! The harness's child processes (browsers and plugins): started so that they die with
//! the harness, and whatever they leave behind killed when it ends.
//!
//! # The parent-death signal, from a lasting thread
//!
//! Every child is started with `PR_SET_PDEATHSIG = SIGKILL`, so that the kernel kills it
//! when the harness dies, even by SIGKILL. That signal fires when the *thread* that
//! forked the child exits, not the process. Tokio's blocking-pool threads exit after 10 s
//! idle, and a worker that calls `block_in_place` (a plugin round trip does) hands its
//! work to a new thread and may then idle out of the pool the same way: a plugin started
//! on such a thread was SIGKILLed during its agent's long wait, and a browser started or
//! restarted on one died under the run. So [`spawn`] and [`spawn_async`] fork every child
//! from one thread that lives as long as the harness.
//!
//! # Orphans: the harness is their subreaper
//!
//! A process that leaves its process group with `setsid` escapes the group kill, and the
//! parent-death signal was its parent's, not its own: a plugin's detached child outlived
//! the run. The `faultline` binary makes itself a child subreaper ([`adopt_orphans`]), so
//! every descendant orphaned on the way is reparented to the harness rather than to
//! init, however it got orphaned. That is why a subreaper, not a walk of the live process
//! tree at shutdown: a daemon that forked twice and whose middle process exited is in no
//! tree by then, but it is the harness's child. At the end [`sweep`] kills and reaps every
//! child the harness still has, round after round (a killed process's own children come
//! to the harness next). During the run a thread reaps adopted children once they exit (a
//! killed browser's helpers arrive this way), never a child the harness started itself:
//! that one belongs to its handle's `wait`. So every child the binary starts goes through
//! [`spawn`] or [`spawn_async`], which record it: one started otherwise could be reaped by
//! that thread before its own `wait`, which would then fail.
//!
//! Nothing survives a harness that is SIGKILLed except what escaped its process group:
//! no code runs then, and orphans go to init.

use std::collections::HashSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Starts `cmd` with the parent-death signal, from the lasting thread.
pub fn spawn(mut cmd: Command) -> io::Result<Child> {
    die_with_the_harness(&mut cmd);
    let (done, child) = std::sync::mpsc::sync_channel(1);
    on_the_spawner(Box::new(move || {
        let _ = done.send(registered(|| cmd.spawn(), |c| Some(c.id())));
    }))?;
    child.recv().map_err(|_| spawner_gone())?
}

/// Starts `cmd` with the parent-death signal, from the lasting thread; the child is
/// driven by the caller's tokio runtime.
pub async fn spawn_async(mut cmd: tokio::process::Command) -> io::Result<tokio::process::Child> {
    die_with_the_harness(cmd.as_std_mut());
    let runtime = tokio::runtime::Handle::current();
    let (done, child) = tokio::sync::oneshot::channel();
    on_the_spawner(Box::new(move || {
        // Tokio registers the child with the runtime it is spawned in.
        let _entered = runtime.enter();
        let _ = done.send(registered(|| cmd.spawn(), tokio::process::Child::id));
    }))?;
    child.await.map_err(|_| spawner_gone())?
}

fn die_with_the_harness(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe and touches only the child's own state.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the thread that forks every child. It never exits: a job that panics is
/// caught (its caller sees the spawner's answer dropped).
fn on_the_spawner(job: Job) -> io::Result<()> {
    static SPAWNER: OnceLock<Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("child-spawner".into())
            .spawn(move || {
                for job in rx {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .expect("starting the child spawner thread");
        tx
    });
    spawner.send(job).map_err(|_| spawner_gone())
}

fn spawner_gone() -> io::Error {
    io::Error::other("the child spawner thread is gone")
}

/// The children the harness started itself (not adopted), by pid.
static STARTED: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

fn started() -> MutexGuard<'static, Option<HashSet<u32>>> {
    STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns and records the child under one lock, so the reaper never takes a child that
/// exited at once for an adopted one.
fn registered<C>(
    spawn: impl FnOnce() -> io::Result<C>,
    pid: impl Fn(&C) -> Option<u32>,
) -> io::Result<C> {
    let mut ours = started();
    let child = spawn()?;
    if let Some(pid) = pid(&child) {
        ours.get_or_insert_with(HashSet::new).insert(pid);
    }
    Ok(child)
}

static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper (orphaned descendants are reparented to it) and
/// starts the thread that reaps them once they exit. For the `faultline` binary, which
/// calls [`sweep`] at its end.
pub fn adopt_orphans() -> io::Result<()> {
    // SAFETY: prctl with these arguments only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if !ADOPTING.swap(true, Ordering::SeqCst) {
        std::thread::Builder::new()
            .name("orphan-reaper".into())
            .spawn(|| loop {
                std::thread::sleep(Duration::from_millis(200));
                reap_adopted();
            })?;
    }
    Ok(())
}

/// Reaps adopted children that have exited (no-op unless [`adopt_orphans`] was called).
/// A zombie still counts as a member of its process group, so a browser's shutdown,
/// which waits for its group to empty, calls this rather than wait for the reaper.
pub fn reap_adopted() {
    if !ADOPTING.load(Ordering::SeqCst) {
        return;
    }
    let mut ours = started();
    let children = children_of_this_process();
    // Those gone from the list were reaped by their handles.
    if let Some(ours) = ours.as_mut() {
        ours.retain(|pid| children.contains(pid));
    }
    for pid in children {
        if !ours.as_ref().is_some_and(|o| o.contains(&pid)) {
            // SAFETY: waitpid on a child of ours; WNOHANG leaves a living one alone.
            unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

/// Kills and reaps every child this process still has, and those that become its
/// children as their parents die (five seconds at most). Returns how many were still
/// running when found. Call it last, once the browsers and plugins were closed.
pub fn sweep() -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut running = HashSet::new();
    loop {
        let children = children_of_this_process();
        if children.is_empty() || Instant::now() > deadline {
            return running.len();
        }
        for pid in children {
            if !is_zombie(pid) {
                running.insert(pid);
            }
            // SAFETY: kill and waitpid on a child of this process.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
                libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The pids of this process's children, every thread's (a child is listed under the
/// thread that forked it, or that it was reparented to), zombies included.
fn children_of_this_process() -> HashSet<u32> {
    let mut out = HashSet::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    out
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_listed_zombies_included_until_reaped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 0"]);
        let mut child = spawn(cmd).unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_zombie(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(children_of_this_process().contains(&pid));
        assert!(started().as_ref().unwrap().contains(&pid));
        child.wait().unwrap();
        assert!(!children_of_this_process().contains(&pid));
    }
}
