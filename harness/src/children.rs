//! The harness's child processes (browsers and plugins): started so that they die with
//! the harness.
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

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::Sender;
use std::sync::OnceLock;

/// Starts `cmd` with the parent-death signal, from the lasting thread.
pub fn spawn(mut cmd: Command) -> io::Result<Child> {
    die_with_the_harness(&mut cmd);
    let (done, child) = std::sync::mpsc::sync_channel(1);
    on_the_spawner(Box::new(move || {
        let _ = done.send(cmd.spawn());
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
        let _ = done.send(cmd.spawn());
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
