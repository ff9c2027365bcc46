//! The environment: faultline serving a run's items to someone else's harness.
//!
//! A built-in run puts only faultline's own harness under test: its parser, executor,
//! coordinate scaling, observation timing and browser driver run every trial. The four
//! reference faults, though, are defects that live *inside* a harness. Under `[harness]`
//! the run's detection trials are served over HTTP instead, and an external harness runs
//! each one with its own browser, parser, executor and verifier:
//!
//! 1. a worker **claims** an item ([`api`]): the task's start URL (under a fresh ledger
//!    scope, the item's site-side fault already armed exactly as for a built-in trial),
//!    the instruction, the recorded reply to replay with its format, coordinate space
//!    and image size, and a lease deadline. Nothing in the claim names the fault;
//! 2. the harness opens the URL in its own browser, parses and executes the reply,
//!    observes, judges with its own verifier and **reports** its verdict (and, if it
//!    likes, what it executed, its captures' page-clock intervals, its answer and its
//!    screenshots);
//! 3. faultline scores the item from the ledger ([`report`]) — what really happened on
//!    the page; the site never trusts the harness — and stores it in the same schema as
//!    a built-in trial, with the harness's name as the policy. The report, tables, viewer
//!    and gate then work exactly as for a built-in run.
//!
//! With `[recovery]` enabled the run's recovery episodes are served after its trials
//! ([`episode`]): the same claim plus the episode's budget, each step posted and
//! checkpointed against the ledger as a built-in episode's is, the episode stored with the
//! harness's name as its policy and its agent.
//!
//! # The reference faults become conformance probes
//!
//! A stage fault cannot be injected into a foreign harness's round trip; instead the
//! item hands it the situation the defect shows in, and the ledger says whether it did
//! ([`offer`]): a reply whose typed text carries a leaked `<|im_end|>` (a correct parser
//! strips it; the ledger shows whether the page received it), a reply in a downscaled
//! image's coordinates (a correct executor scales them; the ledger's click point shows
//! whether it did), a click into an iframe (a correct verifier notices the change), a
//! hover whose tooltip appears late (a correct observation waits for it; the harness's
//! reported capture interval against the page's tooltip event shows whether it did).
//! Every other item is handed in viewport coordinates, so a defect shows in its probe's
//! rows and nowhere else. A probe whose defect did not show is stored as *not fired*:
//! the harness does not have that defect. Where it fired, the harness's verdict against
//! the ledger says whether its verifier caught its own defect.
//!
//! # Faults on the harness's own browser connection
//!
//! A harness that drives its browser over the DevTools protocol may name that browser in
//! its claim; the item then comes with a DevTools proxy in front of it ([`devtools`]),
//! relaying every message unchanged except where the item's protocol fault (mechanism
//! `devtools`: a click scaled or offset, a release dropped, a stale or unsettled
//! screenshot, a protocol error, a crash after input) changes one. What the proxy
//! changed is the item's witness.
//!
//! # Failure is not a verdict
//!
//! A lease that runs out, a worker that exits holding an item, a report that cannot be
//! stored: each is an infrastructure error of its own kind ([`board`]), the item is
//! offered again up to the run's retry bound, and nothing is counted as caught or missed.
//! Items are stored one transaction each under their stable keys, so a run killed at any
//! point resumes (`--resume`) without losing or duplicating one.

pub mod api;
pub mod board;
pub mod devtools;
pub mod episode;
pub mod offer;
pub mod progress;
pub mod report;
pub mod workers;

use crate::engine::Scorer;
use crate::error::UsageError;
use crate::experiment::phase::PhaseSummary;
use crate::experiment::{detection, RunRequest, RunSummary};
use anyhow::{anyhow, bail, Context, Result};
use board::Board;
use faultline_analysis::db::{
    EpisodeRow, EpisodeStepRow, InfraErrorRow, ResultsDb, TrialRow, VerdictRow,
};
use faultline_sites::FixtureServer;
use faultline_tasks::DecisionSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// The environment API's version: the `/v1/` of every route.
pub const API_VERSION: u32 = 1;

/// How a run under `[harness]` serves its items.
#[derive(Debug, Clone)]
pub struct EnvOptions {
    /// Where the API listens (default `127.0.0.1:0`, an ephemeral loopback port).
    pub bind: SocketAddr,
    /// Whether faultline starts the `[harness] command` workers itself (`faultline run`)
    /// or waits for a harness started by hand (`faultline env`).
    pub start_workers: bool,
    /// Print the API's URL and token on stdout once it listens (`faultline env`).
    pub announce: bool,
}

impl Default for EnvOptions {
    fn default() -> EnvOptions {
        EnvOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            start_workers: true,
            announce: false,
        }
    }
}

/// A finished item on its way to the database, and where to say it was stored.
pub(crate) enum ToStore {
    /// A scored trial: its row, the harness's verdict and its screenshots.
    Trial {
        row: Box<TrialRow>,
        verdict: VerdictRow,
        shots: Vec<(PathBuf, Vec<u8>)>,
        done: oneshot::Sender<Result<()>>,
    },
    /// A scored episode: its row and its steps.
    Episode {
        row: Box<EpisodeRow>,
        steps: Vec<EpisodeStepRow>,
        done: oneshot::Sender<Result<()>>,
    },
    /// Infrastructure errors (the item is offered again or given up on by the board).
    Infra(Vec<InfraErrorRow>),
}

/// What the API's handlers and the run loop share.
pub(crate) struct Shared {
    pub board: Mutex<Board>,
    pub server: Arc<FixtureServer>,
    pub scorer: Arc<Scorer>,
    /// The API's bearer token (not the ledger key, which never leaves the scorer).
    pub token: String,
    pub harness: String,
    pub viewport: faultline_tasks::Size,
    /// An episode's budget and step cap (the built-in episode's).
    pub limits: crate::engine::episode::EpisodeLimits,
    pub store: mpsc::UnboundedSender<ToStore>,
    pub out: PathBuf,
    /// The proxies of workers that claim with `"devtools_scope": "worker"`.
    pub worker_proxies: devtools::WorkerProxies,
}

/// Serves a run under `[harness]` to its external harness: the run directory opened as
/// for any run ([`crate::experiment::open`]), then [`run`].
pub async fn run_request(req: RunRequest, options: EnvOptions) -> Result<RunSummary> {
    let mut opened = crate::experiment::open(&req)?;
    run(&req, &mut opened.db, opened.preloaded, &options).await
}

/// Runs the detection phase (and the recovery phase, when enabled) of a run under
/// `[harness]` through the environment API, then writes the report and the viewer as for
/// a built-in run.
pub async fn run(
    req: &RunRequest,
    db: &mut ResultsDb,
    preloaded: Option<(DecisionSet, String)>,
    options: &EnvOptions,
) -> Result<RunSummary> {
    let config = &req.config;
    let harness = config
        .harness
        .as_ref()
        .expect("an environment run has a [harness]");
    let decisions = preloaded.ok_or_else(|| {
        anyhow!(UsageError(format!(
            "{}: a run under [harness] replays recorded decisions, and the committed ones do not cover this seed and layout count; record them first (`faultline record`) and name the file in `decisions`",
            config.source
        )))
    })?;
    if harness.command.is_none() && options.start_workers {
        bail!(UsageError(format!(
            "{}: [harness] has no `command` to start; give it one, or serve the items with `faultline env` and start the harness by hand",
            config.source
        )));
    }
    let mut specs = detection::specs(config, &decisions.0);
    let mut episodes = episode::episodes(config, &decisions.0, &harness.name);
    let shard_items = crate::experiment::keep_shard(req, &mut specs, &mut episodes)?;
    crate::experiment::store_manifest(
        req,
        db,
        &decisions,
        format!("external harness `{}`", harness.name),
        shard_items,
        &episode::design(config),
    )?;
    std::fs::create_dir_all(req.out.join("shots"))?;
    let (summary, recovery) = serve(req, db, specs, episodes, options).await?;
    let analysis = faultline_analysis::report::default_config(db)?;
    let files = faultline_analysis::report::write_all(db, &req.out, &req.out, &analysis)?;
    let view = faultline_viewer::generate(&req.out, &req.out.join("view"))?;
    let (run, failed) = (
        summary.run + recovery.as_ref().map_or(0, |r| r.run),
        summary.failed + recovery.as_ref().map_or(0, |r| r.failed),
    );
    if run > 0 && failed == run {
        bail!(
            "the harness measured nothing: all {run} of its items failed (listed in {}); fix the cause and run again with --resume",
            files.report_md.display()
        );
    }
    Ok(RunSummary {
        out: req.out.clone(),
        trials_total: summary.total,
        trials_run: summary.run,
        trials_skipped: summary.skipped,
        detection_wall: summary.wall,
        detection_jobs: summary.jobs,
        infra_failures: summary.infra_failures + recovery.as_ref().map_or(0, |r| r.infra_failures),
        failed_items: failed,
        recovery,
        policy_errors: 0,
        browser_restarts: 0,
        report: files.report_md,
        view: view.index,
    })
}

/// Serves the trials and episodes not stored yet until each is stored or given up on;
/// returns the detection phase's summary and, when there are episodes, the recovery's.
async fn serve(
    req: &RunRequest,
    db: &mut ResultsDb,
    specs: Vec<detection::TrialSpec>,
    episodes: Vec<crate::experiment::items::EpisodeTask>,
    options: &EnvOptions,
) -> Result<(PhaseSummary, Option<PhaseSummary>)> {
    let config = &req.config;
    let harness = config.harness.as_ref().expect("a [harness]");
    let started = Instant::now();
    let started_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let finished = db.finished_keys()?;
    let (total, skipped, todo) =
        crate::experiment::phase::pending(specs, |s| s.key_string(), &finished, req.max_trials);
    let trials_todo = todo.len();
    let recovery_on = !episodes.is_empty() || config.recovery.enabled;
    let finished_episodes = db.finished_episode_keys()?;
    let (episodes_total, episodes_skipped, episodes_todo) = crate::experiment::phase::pending(
        episodes,
        |e| e.key_string(),
        &finished_episodes,
        req.max_episodes,
    );
    let mut todo: Vec<board::Item> = todo.into_iter().map(board::Item::Trial).collect();
    todo.extend(episodes_todo.iter().map(episode::item));
    let todo_len = todo.len();
    let (server, key) = FixtureServer::start_loopback()
        .await
        .context("starting the fixture server")?;
    let (store_tx, mut store_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        board: Mutex::new(Board::new(
            todo,
            config.liveness.retries,
            Duration::from_millis(harness.lease_ms),
            episode::lease(
                &config.recovery.limits,
                Duration::from_millis(harness.lease_ms),
            ),
        )),
        server: Arc::new(server),
        scorer: Arc::new(Scorer::new(key)),
        token: api::new_token(),
        harness: harness.name.clone(),
        viewport: config.viewport,
        limits: config.recovery.limits,
        store: store_tx,
        out: req.out.clone(),
        worker_proxies: devtools::WorkerProxies::default(),
    });
    let api = api::Api::start(shared.clone(), options.bind)
        .await
        .with_context(|| format!("starting the environment API on {}", options.bind))?;
    if !options.bind.ip().is_loopback() {
        tracing::warn!(
            "the environment API listens on {}, beyond this machine: anyone who can reach it and holds the token can claim items",
            options.bind
        );
    }
    if options.announce {
        println!("FAULTLINE_ENV_URL={}", api.url());
        println!("FAULTLINE_ENV_TOKEN={}", shared.token);
        eprintln!("serving {todo_len} item(s); waiting for the harness to claim them");
    }
    let mut workers = match (options.start_workers, &harness.command) {
        (true, Some(command)) if todo_len > 0 => Some(
            workers::Workers::start(
                command,
                harness.workers.min(todo_len),
                &api.url(),
                &shared.token,
                config.chromium.as_deref(),
                &req.out,
            )
            .await?,
        ),
        _ => None,
    };

    let (mut stored, mut stored_episodes, mut infra_failures) = (0usize, 0usize, 0usize);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let outcome: Result<()> = loop {
        if shared.board.lock().expect("not poisoned").settled() {
            break Ok(());
        }
        tokio::select! {
            msg = store_rx.recv() => match msg {
                Some(ToStore::Trial { row, verdict, shots, done }) => {
                    let r = store_trial(db, &row, &verdict, &shots);
                    if r.is_ok() {
                        stored += 1;
                    }
                    let failed = r.as_ref().err().map(|e| format!("{e:#}"));
                    let _ = done.send(r);
                    if let Some(e) = failed {
                        break Err(anyhow!(e));
                    }
                }
                Some(ToStore::Episode { row, steps, done }) => {
                    let r = store_episode(db, &row, &steps);
                    if r.is_ok() {
                        stored_episodes += 1;
                    }
                    let failed = r.as_ref().err().map(|e| format!("{e:#}"));
                    let _ = done.send(r);
                    if let Some(e) = failed {
                        break Err(anyhow!(e));
                    }
                }
                Some(ToStore::Infra(rows)) => {
                    infra_failures += rows.len();
                    if let Err(e) = db.insert_infra_errors(&rows) {
                        break Err(e.context(format!("writing {}", db.path().display())));
                    }
                }
                None => break Ok(()),
            },
            _ = tick.tick() => {
                let rows = board::expire_leases(&shared);
                if !rows.is_empty() {
                    infra_failures += rows.len();
                    db.insert_infra_errors(&rows)?;
                }
                if let Some(w) = workers.as_mut() {
                    let settled = shared.board.lock().expect("not poisoned").settled();
                    if let Err(e) = w.watch(&shared, settled).await {
                        break Err(e);
                    }
                }
            }
        }
    };
    // Whatever is still queued for storage is stored before the run ends.
    while let Ok(msg) = store_rx.try_recv() {
        match msg {
            ToStore::Trial {
                row,
                verdict,
                shots,
                done,
            } => {
                let r = store_trial(db, &row, &verdict, &shots);
                stored += usize::from(r.is_ok());
                let _ = done.send(r);
            }
            ToStore::Episode { row, steps, done } => {
                let r = store_episode(db, &row, &steps);
                stored_episodes += usize::from(r.is_ok());
                let _ = done.send(r);
            }
            ToStore::Infra(rows) => {
                infra_failures += rows.len();
                db.insert_infra_errors(&rows)?;
            }
        }
    }
    if let Some(w) = workers.take() {
        w.stop().await;
    }
    api.stop().await;
    board::release_all(&shared);
    if let Ok(shared) = Arc::try_unwrap(shared) {
        if let Ok(server) = Arc::try_unwrap(shared.server) {
            server.shutdown().await;
        }
    }
    outcome?;
    // The infrastructure failures are the run's: they are counted once, with detection.
    let detection = PhaseSummary {
        total,
        run: trials_todo,
        skipped,
        wall: started.elapsed(),
        infra_failures,
        failed: trials_todo.saturating_sub(stored),
        cassette_misses: 0,
        policy_errors: 0,
        started_at,
        cost: Default::default(),
        jobs: harness.workers,
    };
    let recovery = recovery_on.then(|| PhaseSummary {
        total: episodes_total,
        run: episodes_todo.len(),
        skipped: episodes_skipped,
        infra_failures: 0,
        failed: episodes_todo.len().saturating_sub(stored_episodes),
        ..detection.clone()
    });
    Ok((detection, recovery))
}

/// Stores one scored episode (its row and steps in one transaction).
fn store_episode(db: &mut ResultsDb, row: &EpisodeRow, steps: &[EpisodeStepRow]) -> Result<()> {
    let path = db.path().display().to_string();
    db.insert_episode(row, steps)
        .with_context(|| format!("writing {path}"))
}

/// Stores one scored trial (its screenshots first, then its rows in one transaction).
fn store_trial(
    db: &mut ResultsDb,
    row: &TrialRow,
    verdict: &VerdictRow,
    shots: &[(PathBuf, Vec<u8>)],
) -> Result<()> {
    for (path, png) in shots {
        detection::write_shot(path, png)?;
    }
    let path = db.path().display().to_string();
    db.insert_trial_with_infra(row, std::slice::from_ref(verdict), &[])
        .with_context(|| format!("writing {path}"))
}
