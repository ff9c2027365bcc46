//! The harness's worker processes, when `faultline run` starts them (`[harness]
//! command`, `workers = N`).
//!
//! Each worker gets the API in its environment — `FAULTLINE_ENV_URL`,
//! `FAULTLINE_ENV_TOKEN`, its own name in `FAULTLINE_WORKER` and, when faultline knows a
//! Chromium, `FAULTLINE_CHROMIUM` — and nothing else of the run (never the ledger key).
//! Its stderr goes to `harness-<name>.log` in the run directory. A worker that exits
//! while it holds items has those items taken back as infrastructure errors
//! (`worker_exited`) and is started again while items remain, up to
//! [`MAX_RESTARTS`] times; a run whose workers all gave up stops, its stored items kept.
//! Each worker leads its own process group, so its browser goes with it.

use super::board::fail_lease;
use super::{Shared, ToStore};
use anyhow::{bail, Context, Result};
use faultline_tasks::InfraKind;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// How often one worker slot is started again after its process exited.
pub const MAX_RESTARTS: u32 = 3;

struct Worker {
    name: String,
    child: Option<tokio::process::Child>,
    /// The process group the worker leads (its pid).
    group: Option<i32>,
    restarts: u32,
}

/// The running workers.
pub struct Workers {
    command: Vec<String>,
    env: Vec<(String, String)>,
    logs: PathBuf,
    workers: Vec<Worker>,
}

impl Workers {
    /// Starts `count` workers running `command`.
    pub async fn start(
        command: &[String],
        count: usize,
        url: &str,
        token: &str,
        chromium: Option<&Path>,
        out: &Path,
    ) -> Result<Workers> {
        let mut env = vec![
            ("FAULTLINE_ENV_URL".to_string(), url.to_string()),
            ("FAULTLINE_ENV_TOKEN".to_string(), token.to_string()),
        ];
        if let Ok(c) = crate::engine::browser::find_chromium(chromium) {
            env.push(("FAULTLINE_CHROMIUM".into(), c.display().to_string()));
        }
        let mut workers = Workers {
            command: command.to_vec(),
            env,
            logs: out.to_path_buf(),
            workers: (1..=count)
                .map(|i| Worker {
                    name: format!("w{i}"),
                    child: None,
                    group: None,
                    restarts: 0,
                })
                .collect(),
        };
        for i in 0..count {
            workers.spawn(i).await?;
        }
        Ok(workers)
    }

    async fn spawn(&mut self, i: usize) -> Result<()> {
        let name = self.workers[i].name.clone();
        let log_path = self.logs.join(format!("harness-{name}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        let mut cmd = tokio::process::Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("FAULTLINE_WORKER", &name)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true);
        let child = crate::children::spawn_async(cmd).await.with_context(|| {
            format!(
                "starting the harness worker `{}` ([harness] command)",
                self.command.join(" ")
            )
        })?;
        self.workers[i].group = child.id().map(|p| p as i32);
        self.workers[i].child = Some(child);
        Ok(())
    }

    /// Notices workers that exited: takes back what they held, and starts them again
    /// unless the run is `settled`. Fails when every worker has given up.
    pub(crate) async fn watch(&mut self, shared: &Shared, settled: bool) -> Result<()> {
        for i in 0..self.workers.len() {
            let Some(child) = self.workers[i].child.as_mut() else {
                continue;
            };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            self.workers[i].child = None;
            kill_group(self.workers[i].group.take());
            let name = self.workers[i].name.clone();
            // Its DevTools proxy goes with it (the worker started again gets a new one).
            shared.worker_proxies.release(&name).await;
            let held = shared
                .board
                .lock()
                .expect("not poisoned")
                .take_held_by(&name);
            let log = self.logs.join(format!("harness-{name}.log"));
            let rows: Vec<_> = held
                .into_iter()
                .map(|(id, lease)| {
                    let mut row = fail_lease(
                        shared,
                        &id,
                        lease,
                        InfraKind::WorkerExited,
                        &format!("harness worker {name} exited ({status}) while it held the item"),
                    );
                    row.stderr_tail = tail(&log);
                    row
                })
                .collect();
            if !rows.is_empty() {
                let _ = shared.store.send(ToStore::Infra(rows));
            }
            if settled {
                continue;
            }
            if self.workers[i].restarts < MAX_RESTARTS {
                self.workers[i].restarts += 1;
                eprintln!(
                    "faultline: harness worker {name} exited ({status}); starting it again ({} of at most {MAX_RESTARTS})",
                    self.workers[i].restarts
                );
                self.spawn(i).await?;
            } else {
                eprintln!("faultline: harness worker {name} exited ({status}) and was restarted {MAX_RESTARTS} times; giving up on it (its log: {})", log.display());
            }
        }
        let settled_now = shared.board.lock().expect("not poisoned").settled();
        if !settled_now && self.workers.iter().all(|w| w.child.is_none()) {
            bail!(
                "every harness worker exited before the items were done (their logs: {}); the items stored so far are kept, --resume continues",
                self.logs.join("harness-w*.log").display()
            );
        }
        Ok(())
    }

    /// Stops the workers: a worker told `done` exits by itself; one that does not within
    /// two seconds is killed with its process group.
    pub async fn stop(mut self) {
        for w in &mut self.workers {
            let Some(mut child) = w.child.take() else {
                continue;
            };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await;
            // Whatever the worker left in its group (a browser it did not close) goes too.
            kill_group(w.group.take());
            let _ = child.wait().await;
        }
    }
}

/// Kills a worker's process group (what is left of it).
fn kill_group(group: Option<i32>) {
    if let Some(pgid) = group {
        // SAFETY: killpg only sends a signal to the group the worker led.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

/// The last 2 KiB of a worker's log.
fn tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(2048);
    String::from_utf8_lossy(&text[start..]).into_owned()
}
