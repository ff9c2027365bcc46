//! A run: what `faultline run` does, from a validated config to the report.
//!
//! - [`run`] (here): check everything that can be rejected, open the results database,
//!   start the [`Harness`] (fixture server, Chromium, policies), write the manifest, run
//!   the phases, write the report;
//! - [`decisions`]: the recorded decisions a run replays (a file, the committed ones, or
//!   recorded by the oracle into the run directory);
//! - [`items`]: the run's plan, fixed by the config before anything runs: the detection
//!   phase's trials (every decision with each of its faults and once clean), the
//!   recovery phase's episodes (decision x fault x policy x run, one run where nothing
//!   can differ between runs), a shard's part;
//! - [`detection`], [`recovery`]: running each phase's pending items;
//! - [`store`]: storing results as rows (the manifest, then every finished trial or
//!   episode with its screenshots, verdicts, steps, infrastructure errors and costs);
//! - [`phase`]: what both phases share: the items not yet stored, the scheduler,
//!   progress and counts;
//! - [`jobs`]: how many items each phase runs at once;
//! - [`record`]: the recorders (the oracle, and an agent such as a real model).
//!
//! Every item has a stable key and is stored atomically, so an interrupted run resumes
//! by skipping the keys it already has.

pub mod decisions;
pub mod detection;
pub mod items;
pub mod jobs;
pub mod phase;
pub mod record;
pub mod recovery;
pub mod retry;
pub mod shard;
pub mod store;

pub(crate) use items::keep_shard;
pub use phase::PhaseSummary;
pub use store::decisions_sha256;
pub(crate) use store::store_manifest;

use crate::agent::{Agent, AgentContext};
use crate::config::{ConfigText, ExperimentConfig, Overrides};
use crate::engine::browser::{find_chromium, PoolSize, SiteOrigins};
use crate::engine::{Browsers, Engine, Scorer};
use crate::error::UsageError;
use anyhow::{anyhow, bail, Context, Result};
use faultline_analysis::db::ResultsDb;
use faultline_sites::FixtureServer;
use faultline_tasks::DecisionSet;
use jobs::Phase;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The faultline version (the package version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit faultline was built from (set by the build script).
pub const GIT_COMMIT: &str = env!("FAULTLINE_GIT_COMMIT");

/// What `faultline run` was asked to do.
pub struct RunRequest {
    /// The run directory: `results.sqlite`, screenshots, the report and the viewer.
    pub out: PathBuf,
    /// Whether to continue a run already stored in `out` (`--resume`).
    pub resume: bool,
    /// The validated experiment.
    pub config: ExperimentConfig,
    /// The config as passed: its name and text (stored with the run).
    pub config_text: ConfigText,
    /// The command-line overrides as passed (stored with the run).
    pub overrides: Overrides,
    /// Stop after this many newly finished trials (for tests of resume).
    pub max_trials: Option<usize>,
    /// Stop after this many newly finished episodes (for tests of resume).
    pub max_episodes: Option<usize>,
    /// Show progress: a bar on a terminal, plain lines in a log (see [`phase`]).
    pub progress: bool,
    /// Run only this shard's part of the items (see [`shard`]); `out` is the shard's own
    /// directory.
    pub shard: Option<shard::Shard>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The run directory.
    pub out: PathBuf,
    /// Detection trials in the run, stored before or now.
    pub trials_total: usize,
    /// Detection trials run by this invocation.
    pub trials_run: usize,
    /// Detection trials already stored (skipped on resume).
    pub trials_skipped: usize,
    /// Wall-clock time of the detection phase.
    pub detection_wall: Duration,
    /// At most how many detection trials ran at once.
    pub detection_jobs: usize,
    /// The recovery phase, when the config enables it.
    pub recovery: Option<PhaseSummary>,
    /// Attempts that failed for infrastructure reasons (retried or given up on), in
    /// both phases.
    pub infra_failures: usize,
    /// Items that failed every attempt: listed in the report, not stored.
    pub failed_items: usize,
    /// Judgements a policy could not make (an external verifier failed), in both phases.
    pub policy_errors: usize,
    /// New browsers started after the browser died.
    pub browser_restarts: u32,
    /// The `report.md` written at the end.
    pub report: PathBuf,
    /// The trace viewer's `index.html`, beside the report.
    pub view: PathBuf,
}

/// The shared pieces of a run: fixture server, browser, scorer, policies.
pub struct Harness {
    /// What every session of the run shares: browser, page pool, fixture server, scorer, policies.
    pub env: Arc<Engine>,
}

impl Harness {
    /// Finds and launches Chromium, starts the fixture server and builds the configured policies.
    pub async fn start(config: &ExperimentConfig) -> Result<Harness> {
        let chromium = find_chromium(config.chromium.as_deref())?;
        let (server, key) = FixtureServer::start_loopback()
            .await
            .context("starting the fixture server")?;
        let registry = crate::plugin::policy::registry(&config.external_policies, config.viewport);
        let policies = config
            .policies
            .iter()
            .map(|p| registry.build(p).map_err(|e| anyhow!(e)))
            .collect::<Result<Vec<_>>>()?;
        let browsers = Browsers::launch(
            chromium,
            config.liveness,
            config.viewport,
            PoolSize {
                ahead: config.jobs.of(Phase::Detection),
                working: config.jobs.most(),
                most: jobs::in_flight(config.jobs.most()),
            },
            SiteOrigins::of(&server),
            config.isolation,
            config
                .devtools_proxy
                .then(|| Arc::new(faultline_devtools::sessions::SessionFaults::default())),
        )
        .await?;
        Ok(Harness {
            env: Arc::new(Engine {
                browsers,
                server: Arc::new(server),
                scorer: Arc::new(Scorer::new(key)),
                policies: Arc::new(policies),
                policy_registry: registry,
                timing: config.timing,
                liveness: config.liveness,
                viewport: config.viewport,
            }),
        })
    }

    /// Stops the browser and the server.
    pub async fn shutdown(self) {
        if let Ok(env) = Arc::try_unwrap(self.env) {
            env.browsers.shutdown().await;
            if let Ok(server) = Arc::try_unwrap(env.server) {
                server.shutdown().await;
            }
        }
    }
}

/// Runs the experiment's phases with faultline's own engine and writes the report. A run
/// under `[harness]` is served to the external harness instead
/// (`crate::environment::run_request`), which opens its run directory the same way
/// ([`open`]).
pub async fn run(req: RunRequest) -> Result<RunSummary> {
    if req.config.harness.is_some() {
        bail!("a run under [harness] is served to the external harness: run it with `faultline run` or `faultline env`");
    }
    let mut opened = open(&req)?;
    let harness = Harness::start(&req.config).await?;
    let result = run_with(
        &req,
        &harness,
        &mut opened.db,
        opened.preloaded,
        &opened.agents,
    )
    .await;
    harness.shutdown().await;
    result
}

/// A run directory opened for writing: its database (resume identity checked and
/// stored), the decisions known before the run, its agents, and the lock that keeps
/// another run out of it for as long as this value lives.
pub struct OpenedRun {
    /// The results database.
    pub db: ResultsDb,
    /// Decisions loaded from the config's files (`None`: the oracle records them).
    pub preloaded: Option<(DecisionSet, String)>,
    /// The recovery phase's agents (none when recovery is off or a harness acts).
    pub agents: Vec<Arc<dyn Agent>>,
    _lock: RunLock,
}

/// Checks everything that can be rejected before anything is written, then opens (or,
/// with `--resume`, reopens) the run directory. Shared by faultline's own engine and by
/// the environment API, so both refuse and resume a run the same way.
pub fn open(req: &RunRequest) -> Result<OpenedRun> {
    // Everything that can be rejected is checked before anything is written.
    let preloaded = decisions::preload(&req.config)?;
    let db_path = req.out.join("results.sqlite");
    if db_path.exists() && !req.resume {
        bail!(UsageError(format!(
            "{} already holds results; pass --resume to continue that run, or choose another --out",
            req.out.display()
        )));
    }
    // A run already writing this directory (a requeued array task whose first attempt
    // is still alive) is found out before its database is read: without the lock first,
    // a database the other run has only just created reads as an empty file.
    let lock = match db_path.exists() {
        true => Some(RunLock::acquire(&req.out)?),
        false => None,
    };
    if db_path.exists() {
        // Resuming: the file must be a faultline run, never adopted or restarted silently.
        let len = std::fs::metadata(&db_path)
            .with_context(|| format!("reading {}", db_path.display()))?
            .len();
        if len == 0 {
            bail!(UsageError(format!(
                "{}: empty file (0 bytes), not a faultline results database; remove it or choose another --out",
                db_path.display()
            )));
        }
        ResultsDb::open_read_only(&db_path)
            .and_then(|db| db.meta("config_identity"))
            .and_then(|identity| identity.ok_or_else(|| anyhow!("no run is stored in it")))
            .map_err(|e| {
                anyhow!(UsageError(format!(
                    "{}: not a faultline run to resume ({e:#}); remove it or choose another --out",
                    db_path.display()
                )))
            })?;
    }
    // A missing browser is found out before the run directory holds anything (an
    // external harness brings its own).
    if req.config.harness.is_none() {
        find_chromium(req.config.chromium.as_deref())?;
    }
    std::fs::create_dir_all(&req.out).with_context(|| format!("creating {}", req.out.display()))?;
    let _lock = match lock {
        Some(lock) => lock,
        None => RunLock::acquire(&req.out)?,
    };
    let identity = serde_json::to_string(&req.config.identity())?;
    // The agents are built before the browser starts, so a bad endpoint config or a
    // missing replay cassette stops the run before any trial.
    // An external harness's agent acts in the harness: there is nothing to build.
    let agents = match req.config.recovery.enabled && req.config.harness.is_none() {
        true => req
            .config
            .recovery
            .agents
            .iter()
            .map(|name| build_agent(name, &req.config, &req.out))
            .collect::<Result<Vec<_>>>()?,
        false => Vec::new(),
    };
    let db = ResultsDb::open(&db_path)?;
    match db.meta("config_identity")? {
        Some(stored) if stored != identity => {
            bail!(UsageError(format!(
                "{}: the stored run used a different experiment config; resume needs the same seed, layouts, tasks, policies, decisions and timing (stored: {stored})",
                db_path.display()
            )));
        }
        _ => {}
    }
    let shard_text = req.shard.map(|s| s.to_string());
    match db.meta("shard")? {
        stored if stored == shard_text || stored.is_none() && db.meta("manifest")?.is_none() => {}
        stored => bail!(UsageError(format!(
            "{}: the stored run is shard {}, not {}",
            db_path.display(),
            stored.as_deref().unwrap_or("none (unsharded)"),
            shard_text.as_deref().unwrap_or("unsharded")
        ))),
    }
    // The resume identity depends on the config alone, so it is stored before the
    // browser starts or the oracle records a decision: a run killed from here on is one
    // that `--resume` recognises and continues (the manifest follows once the decisions
    // are known).
    if db.meta("config_identity")?.is_none() {
        db.set_meta("config_identity", &identity)?;
    }
    Ok(OpenedRun {
        db,
        preloaded,
        agents,
        _lock,
    })
}

async fn run_with(
    req: &RunRequest,
    harness: &Harness,
    db: &mut ResultsDb,
    preloaded: Option<(DecisionSet, String)>,
    agents: &[Arc<dyn Agent>],
) -> Result<RunSummary> {
    let env = harness.env.clone();
    let config = &req.config;
    let decisions = match preloaded {
        Some(d) => d,
        None => decisions::record_missing(config, &req.out, &env).await?,
    };
    let chromium_version = env.browsers.current().handle.version().to_string();

    // Every item of the run, fixed by the config; a shard keeps its part.
    let mut specs = items::specs(config, &decisions.0);
    let design = items::recovery_design(config, agents, db.manifest()?.as_ref()).await?;
    let mut episodes = items::episodes(config, &decisions.0, agents, &design);
    let shard_items = keep_shard(req, &mut specs, &mut episodes)?;
    store_manifest(req, db, &decisions, chromium_version, shard_items, &design)?;

    let shots = req.out.join("shots");
    std::fs::create_dir_all(&shots)?;
    let detection = detection::run(req, &env, db, specs, &shots).await?;
    let recovery = match agents.is_empty() {
        false => Some(recovery::run(req, &env, db, episodes, &shots).await?),
        true => None,
    };

    let analysis = faultline_analysis::report::default_config(db)?;
    let files = faultline_analysis::report::write_all(db, &req.out, &req.out, &analysis)?;
    let view = faultline_viewer::generate(&req.out, &req.out.join("view"))?;
    // A phase where every item failed for infrastructure reasons (no browser, no
    // working model endpoint) measured nothing: that is a failed run, report or not.
    for (name, phase) in [
        ("detection", Some(&detection)),
        ("recovery", recovery.as_ref()),
    ] {
        if let Some(p) = phase.filter(|p| p.run > 0 && p.failed == p.run) {
            bail!(
                "the {name} phase measured nothing: all {} of its items failed for infrastructure reasons (listed in {}); fix the cause and run again with --resume",
                p.run,
                files.report_md.display()
            );
        }
    }
    Ok(RunSummary {
        infra_failures: detection.infra_failures
            + recovery.as_ref().map_or(0, |r| r.infra_failures),
        failed_items: detection.failed + recovery.as_ref().map_or(0, |r| r.failed),
        policy_errors: detection.policy_errors + recovery.as_ref().map_or(0, |r| r.policy_errors),
        browser_restarts: env.browsers.restarts(),
        out: req.out.clone(),
        trials_total: detection.total,
        trials_run: detection.run,
        trials_skipped: detection.skipped,
        detection_wall: detection.wall,
        detection_jobs: detection.jobs,
        recovery,
        report: files.report_md,
        view: view.index,
    })
}

/// Builds the agent a config names (from the agent registry); the `openai` agent's
/// cassette lives in `out` unless the config says where.
pub fn build_agent(name: &str, config: &ExperimentConfig, out: &Path) -> Result<Arc<dyn Agent>> {
    crate::agent::Registry::default()
        .build(name, AgentContext { config, out })
        .map_err(|e| anyhow!(UsageError(e)))
}

/// An exclusive lock on a run directory, held while a run writes it: a second run on the
/// same `--out` stops at once instead of racing the first over the database and the
/// screenshots. The kernel releases it when the process ends, however it ends.
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    /// Locks `dir` (its `.faultline.lock` file), or says which run holds it.
    pub fn acquire(dir: &Path) -> Result<RunLock> {
        use std::os::fd::AsRawFd;
        let path = dir.join(".faultline.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock only reads the descriptor, which `file` keeps open.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked {
            bail!(UsageError(format!(
                "{}: another faultline run is writing this directory; wait for it or choose another --out",
                dir.display()
            )));
        }
        Ok(RunLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_a_second_run_on_the_same_directory_is_refused_while_the_first_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        let e = RunLock::acquire(dir.path())
            .err()
            .expect("the second lock is refused");
        assert!(e.to_string().contains("another faultline run"), "{e}");
        assert_eq!(crate::error::exit_code(&e), 2);
        drop(first);
        RunLock::acquire(dir.path()).expect("free again once the first run ends");
    }
}
