//! The command line: raw flags (clap) -> validated requests -> actions. Exit codes are
//! decided in [`crate::error`].

// clap turns the doc comments below into `--help` text, where `<placeholder>` is the
// convention; rustdoc would read them as HTML tags.
#![allow(rustdoc::invalid_html_tags)]

use crate::config::{self, Overrides};
use crate::error::usage;
use crate::experiment::{self, Harness, RunRequest};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use faultline_tasks::{DecisionSet, TaskKind};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// faultline: fault injection and evaluation for browser-agent harnesses.
///
/// Replays recorded agent decisions on local fixture sites in a real headless Chromium,
/// breaks the action round trip on purpose (parse, execute, feedback, observe), and
/// measures whether verification policies detect the fault, scored against each site's
/// ground-truth ledger.
#[derive(Debug, Parser)]
#[command(name = "faultline", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// faultline's subcommands (each variant's doc comment is its `--help` text).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an experiment (the embedded default when given nothing) and write its report.
    ///
    /// Writes results.sqlite, detection.csv, false_alarms.csv, report.md and the
    /// screenshots of every trial into the output directory.
    Run(RunArgs),
    /// Serve the fixture sites on loopback for inspection and print their URLs.
    Serve(ServeArgs),
    /// Record decisions with an agent (the deterministic oracle) into JSONL files.
    Record(RecordArgs),
    /// Import another agent's trajectory (Anthropic, OpenAI, BrowserGym, UI-TARS or
    /// Qwen-VL replies) as decisions that replay like recorded ones.
    ///
    /// FILE holds one JSON object per line: {"layout_index": N, "image": [W, H],
    /// "space": "image"|"normalized_1000", "reply": <the format's payload>}; `image` may
    /// come from --image instead and `space` is optional.
    Import(ImportArgs),
    /// Rebuild the tables and report of a stored run from its database alone.
    Report(ReportArgs),
    /// Print what a stored run cost: each phase's wall time, items/s, CPU per item
    /// (faultline and Chromium), peak memory, and each item's time by stage.
    Costs(CostsArgs),
    /// List the fault catalogue (or the tasks, policies or agents).
    List(ListArgs),
    /// Write the trace viewer of a stored run: a static site opened from disk.
    ///
    /// Writes index.html (run page), trial and episode pages and their data files; open
    /// index.html in a browser, no server needed.
    View(ViewArgs),
    /// Merge the shard directories of one run into a run directory (one database, the
    /// tables and report of an unsharded run).
    Merge(MergeArgs),
    /// Compare a candidate run with a baseline and fail on regressions (for CI).
    ///
    /// Each argument is a run directory, a results.sqlite or a baseline file written by
    /// `faultline baseline export`. Prints a Markdown summary; exit code 0: no
    /// regression, 1: a regression, a baseline cell missing from the candidate (unless the
    /// rules' allow_missing names it) or a bound not met, 2: bad input (including rules
    /// that select no cell), 3: the runs are not comparable.
    Gate(GateArgs),
    /// Baseline files: a run reduced to what the gate needs, small enough to commit.
    #[command(subcommand)]
    Baseline(BaselineCommand),
}

/// `faultline merge`: the shard directories to merge and where.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard directories (each written by `faultline run --shard I/N`), or the
    /// `--out` directories they were written into.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged run directory (must not hold results yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `faultline gate`: the two runs, the rules and where to write the verdict.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The reference: a run directory, a results.sqlite or a baseline .json file.
    pub baseline: PathBuf,
    /// The run to judge: a run directory, a results.sqlite or a baseline .json file.
    pub candidate: PathBuf,
    /// Gate rules (TOML): margins, the paired test and its level, floors, allow_missing
    /// [default: every margin 5 points, McNemar at level 0.95, no floors, nothing may be
    /// missing].
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Also write the Markdown summary here (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write JUnit XML here (a test case per fault x task x policy).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the whole verdict as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Compare runs even when their seeds, layouts, tasks, faults or decisions differ
    /// (only the items both have are paired).
    #[arg(long)]
    pub allow_incomparable: bool,
}

/// `faultline baseline`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Write a run's baseline file: its identity and every item's outcome (JSON).
    Export(BaselineExportArgs),
}

/// `faultline baseline export`: the run and the baseline file to write.
#[derive(Debug, Args)]
pub struct BaselineExportArgs {
    /// The run directory (or its results.sqlite).
    pub run: PathBuf,
    /// Where to write the baseline.
    #[arg(long, value_name = "FILE", default_value = "baseline.json")]
    pub out: PathBuf,
}

/// `faultline view`: the run and where to write its trace viewer.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The run directory (or its results.sqlite).
    pub run: PathBuf,
    /// Where to write the site [default: RUN/view]; screenshots and plots are copied
    /// when it lies outside the run directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `faultline list`: what to list and how.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list: `faults`, `tasks`, `policies` or `agents`.
    #[arg(default_value = "faults")]
    pub what: String,
    /// Machine-readable JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `faultline run`: the experiment, the run directory and the overrides.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Experiment config: a TOML file, or the name of an embedded config (`default`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Output directory [default: results/run-<UTC timestamp>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Root seed; layouts, decisions and per-trial seeds all derive from it.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Layouts per task.
    #[arg(long, value_name = "N")]
    pub layouts: Option<u32>,
    /// Concurrent trials and episodes [default: 5 x cores for detection, 10 x cores for
    /// recovery, whose episodes wait longer]. An item whose page stops answering for 1.5 s
    /// makes room for another, up to twice N in flight. Results do not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// How trials are kept apart: `fresh_context` (a new browser context per trial) or
    /// `reused_context` (a page reset between trials) [default: the config's
    /// `browser.isolation`, else reused_context]. Results do not depend on it.
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<String>,
    /// Faults to run, replacing the config's `faults` (comma-separated selectors: ids,
    /// globs such as `overlay.*`, `layer:transport`, `stage:observe`, `reference`, `all`).
    #[arg(long, value_delimiter = ',', value_name = "SELECTORS")]
    pub faults: Vec<String>,
    /// Continue a run in --out: finished trials are skipped, none is stored twice.
    #[arg(long)]
    pub resume: bool,
    /// Run one shard of the work: `I/N` (1-based) or `auto` (from FAULTLINE_SHARD,
    /// JOB_COMPLETION_INDEX with FAULTLINE_SHARD_COUNT, SLURM_ARRAY_TASK_ID/COUNT, or
    /// CI_NODE_INDEX/TOTAL). Writes OUT/shard-I-of-N and resumes it when run again; join
    /// the shards with `faultline merge`.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// Stop after N newly finished trials (leaves a resumable partial run).
    #[arg(long, value_name = "N", hide = true)]
    pub max_trials: Option<usize>,
    /// Stop after N newly finished recovery episodes (leaves a resumable partial run).
    #[arg(long, value_name = "N", hide = true)]
    pub max_episodes: Option<usize>,
}

/// `faultline serve`: where to listen and which layouts to list.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind; loopback by default.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub bind: std::net::SocketAddr,
    /// Root seed of the layouts whose URLs are printed.
    #[arg(long, default_value_t = faultline_tasks::seed::DEFAULT_ROOT_SEED)]
    pub seed: u64,
    /// Layouts per task to list.
    #[arg(long, default_value_t = 3)]
    pub layouts: u32,
}

/// `faultline record`: the agent, the layouts and where the decisions go.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Which agent records: `oracle` (reads the target through CDP; needs no model) or
    /// `openai` (a real model through the `[openai]` and `[cassette]` config sections;
    /// only replies that succeed on a clean page are kept).
    #[arg(long, default_value = "oracle")]
    pub agent: String,
    /// Config with the `[openai]` and `[cassette]` sections (for `--agent openai`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Root seed of the layouts to record.
    #[arg(long, default_value_t = faultline_tasks::seed::DEFAULT_ROOT_SEED)]
    pub seed: u64,
    /// Layouts per task.
    #[arg(long, default_value_t = 40)]
    pub layouts: u32,
    /// Tasks to record (comma-separated) [default: all].
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Directory for `<task>.jsonl` files [default: tasks/decisions for the oracle,
    /// results/decisions-<model> for a model, so model decisions never overwrite the
    /// committed ones].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `faultline import`: the trajectory file, its format and task, and where the decisions go.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The trajectory file (JSON lines).
    pub file: PathBuf,
    /// The replies' format: anthropic, openai, browsergym, uitars, qwen or faultline.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// The task the trajectory was recorded on.
    #[arg(long, value_name = "TASK")]
    pub task: String,
    /// The screenshot size the model was sent, for lines without their own `image`.
    #[arg(long, value_name = "WxH")]
    pub image: Option<String>,
    /// The coordinate space (image or normalized_1000) for lines without their own
    /// `space` [default: the format's: normalized_1000 for uitars, else image].
    #[arg(long, value_name = "SPACE")]
    pub space: Option<String>,
    /// Root seed the layouts derive from.
    #[arg(long, default_value_t = faultline_tasks::seed::DEFAULT_ROOT_SEED)]
    pub seed: u64,
    /// Where to write the decisions [default: results/import-<format>/<task>.jsonl].
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

/// `faultline costs`: the run whose costs to print.
#[derive(Debug, Args)]
pub struct CostsArgs {
    /// A run directory or its results.sqlite.
    pub run: PathBuf,
}

/// `faultline report`: the database, the output directory and the interval settings.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run's results.sqlite.
    pub database: PathBuf,
    /// Where to write the tables, plots and report [default: beside the database].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Confidence level of every interval, in (0, 1).
    #[arg(long, default_value_t = 0.95)]
    pub level: f64,
    /// Interval for single rates: `wilson` or `clopper-pearson`.
    #[arg(long, default_value = "wilson")]
    pub interval: String,
    /// Bootstrap resamples for paired differences.
    #[arg(long, default_value_t = 10_000)]
    pub resamples: usize,
    /// Bootstrap seed [default: derived from the run's root seed].
    #[arg(long)]
    pub seed: Option<u64>,
}

impl Command {
    /// What to tell the user when a termination signal stops this command, or `None`
    /// when the command handles the signal itself (`serve` stops cleanly on it).
    pub fn interrupted_hint(&self) -> Option<&'static str> {
        match self {
            Command::Run(_) => Some(
                "finished trials and episodes are stored; continue with `faultline run --resume --out DIR`",
            ),
            Command::Record(_) => Some("decisions recorded so far are kept"),
            Command::Serve(_) => None,
            _ => Some("nothing was left half written"),
        }
    }
}

/// Runs a parsed command line.
pub async fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run(args) => run(args).await,
        Command::Serve(args) => serve(args).await,
        Command::Record(args) => record(args).await,
        Command::Import(args) => import(args),
        Command::Report(args) => report(args),
        Command::Costs(args) => costs(args),
        Command::List(args) => list(args),
        Command::View(args) => view(args),
        Command::Gate(args) => gate(args),
        Command::Merge(args) => merge(args),
        Command::Baseline(BaselineCommand::Export(args)) => baseline_export(args),
    }
}

fn gate(args: GateArgs) -> Result<()> {
    use crate::error::{NotComparable, Regressed};
    use faultline_analysis::gate::{self, render, Rules};
    let rules = match &args.rules {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(anyhow!("{}: cannot read: {e}", path.display())))?;
            Rules::parse(&path.display().to_string(), &text).map_err(usage)?
        }
        None => Rules::default(),
    };
    settle_report(&args.baseline)?;
    settle_report(&args.candidate)?;
    let baseline = gate::load_input(&args.baseline).map_err(usage)?;
    let candidate = gate::load_input(&args.candidate).map_err(usage)?;
    let names = (
        args.baseline.display().to_string(),
        args.candidate.display().to_string(),
    );
    // Rules that select no cell of either run are a bad rules file (exit 2).
    let report = gate::gate(
        &baseline,
        &candidate,
        (&names.0, &names.1),
        &rules,
        args.allow_incomparable,
    )
    .map_err(usage)?;
    let markdown = render::markdown(&report);
    for (path, text) in [
        (&args.markdown, &markdown),
        (&args.junit, &render::junit(&report)),
        (&args.json, &render::json(&report)),
    ] {
        if let Some(path) = path {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    print!("{markdown}");
    std::io::stdout().flush()?;
    for w in &report.comparability.warnings {
        eprintln!("faultline: warning: {w}");
    }
    match &report.comparability.refused {
        Some(why) if !args.allow_incomparable => {
            return Err(anyhow!(NotComparable(format!(
                "not comparable: {why} (--allow-incomparable compares anyway)"
            ))))
        }
        _ => {}
    }
    if report.failed() {
        // Missing cells come in whole policies: one entry per policy and reason.
        let mut missing: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for c in report.missing() {
            let reason = c.missing.as_ref().map_or("unpaired", |m| m.reason.name());
            *missing.entry((c.policy.as_str(), reason)).or_default() += 1;
        }
        let names: Vec<String> = report
            .regressions()
            .map(|c| format!("{} {}", c.metric, c.name()))
            .chain(missing.iter().map(|((policy, reason), n)| {
                format!(
                    "{n} cell{} of `{policy}` missing from the candidate ({reason})",
                    if *n == 1 { "" } else { "s" }
                )
            }))
            .chain(report.failed_floors().map(|f| f.name()))
            .collect();
        return Err(anyhow!(Regressed(format!(
            "gate failed: {}",
            names.join("; ")
        ))));
    }
    Ok(())
}

fn merge(args: MergeArgs) -> Result<()> {
    let summary = experiment::shard::merge(&args.shards, &args.out)?;
    println!(
        "merged {} shards: {} trials, {} episodes into {}",
        summary.shards,
        summary.trials,
        summary.episodes,
        args.out.join("results.sqlite").display()
    );
    if !summary.failed_items.is_empty() {
        println!(
            "infra:     {} item(s) failed for infrastructure reasons in their shard and are listed, not merged as results: {}",
            summary.failed_items.len(),
            summary.failed_items.join(", ")
        );
    }
    println!("report:    {}", summary.report.display());
    println!("view:      {}", summary.view.display());
    Ok(())
}

fn baseline_export(args: BaselineExportArgs) -> Result<()> {
    let snapshot = faultline_analysis::gate::load_input(&args.run).map_err(usage)?;
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&args.out, snapshot.to_json())
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "baseline: {} ({} trials, {} episodes, {} policies)",
        args.out.display(),
        snapshot.trials.len(),
        snapshot.episodes.len(),
        snapshot.policies.len()
    );
    Ok(())
}

fn list(args: ListArgs) -> Result<()> {
    use faultline_faults::Fault;
    let mut out = std::io::stdout().lock();
    match args.what.as_str() {
        "faults" => {
            let mut faults: Vec<Fault> = Fault::ALL.to_vec();
            faults.sort_by_key(|f| (f.layer().rank(), Fault::ALL.iter().position(|g| g == f)));
            if args.json {
                let specs: Vec<&faultline_faults::FaultSpec> =
                    faults.iter().map(|f| f.spec()).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&specs)?)?;
                return Ok(());
            }
            let rows: Vec<[String; 6]> = faults
                .iter()
                .map(|f| {
                    let s = f.spec();
                    [
                        s.id.to_string(),
                        s.layer.to_string(),
                        s.stage.to_string(),
                        s.mechanism.to_string(),
                        s.tasks
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(","),
                        s.description.to_string(),
                    ]
                })
                .collect();
            let header = ["id", "layer", "stage", "mechanism", "tasks", "description"];
            let width = |i: usize| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            };
            let widths: Vec<usize> = (0..5).map(width).collect();
            let line = |cells: [&str; 6]| {
                let mut l = String::new();
                for (i, c) in cells.iter().enumerate().take(5) {
                    l.push_str(&format!("{c:<w$}  ", w = widths[i]));
                }
                l.push_str(cells[5]);
                l
            };
            writeln!(out, "{}", line(header))?;
            for r in &rows {
                writeln!(out, "{}", line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]))?;
            }
            writeln!(
                out,
                "\n{} faults in {} layers; select them with ids, globs (overlay.*), layer:NAME, stage:NAME, reference or all.",
                faults.len(),
                faultline_faults::Layer::ALL.len()
            )?;
        }
        "tasks" => {
            for t in TaskKind::ALL {
                let l = faultline_tasks::Layout::for_root(
                    faultline_tasks::seed::DEFAULT_ROOT_SEED,
                    t,
                    0,
                );
                writeln!(out, "{:<8} {}", t.name(), l.instruction().text)?;
            }
        }
        "policies" => {
            for p in faultline_policies::Registry::default().names() {
                writeln!(out, "{p}")?;
            }
        }
        "agents" => {
            for a in crate::agent::Registry::default().names() {
                writeln!(out, "{a}")?;
            }
        }
        other => {
            return Err(usage(anyhow!(
                "list: unknown list `{other}` (expected faults, tasks, policies or agents)"
            )))
        }
    }
    Ok(())
}

async fn run(args: RunArgs) -> Result<()> {
    let text = config::load_text(args.config.as_deref()).map_err(usage)?;
    let overrides = Overrides {
        seed: args.seed,
        layouts: args.layouts,
        jobs: args.jobs,
        faults: (!args.faults.is_empty()).then(|| args.faults.clone()),
        isolation: args.isolation.clone(),
    };
    let config = config::resolve(&text, &overrides).map_err(usage)?;
    let shard = match args.shard.as_deref() {
        None => None,
        Some("auto") => Some(
            experiment::shard::shard_from_env(|k| std::env::var(k).ok())
                .map_err(|e| usage(anyhow!(e)))?,
        ),
        Some(s) => Some(
            s.parse::<experiment::shard::Shard>()
                .map_err(|e| usage(anyhow!("--shard: {e}")))?,
        ),
    };
    let out = match (args.out, shard) {
        (Some(o), Some(s)) => o.join(s.dir_name()),
        (None, Some(_)) => {
            return Err(usage(anyhow!(
                "--shard needs --out DIR (shard I of N writes DIR/shard-I-of-N)"
            )))
        }
        (Some(o), None) => o,
        (None, None) if args.resume => {
            return Err(usage(anyhow!(
                "--resume needs --out DIR (the run to continue)"
            )))
        }
        (None, None) => PathBuf::from("results").join(format!("run-{}", utc_stamp())),
    };
    if let Some(s) = shard {
        eprintln!("shard {s}: writing {}", out.display());
    }
    let summary = experiment::run(RunRequest {
        out,
        // A shard run again (a replaced pod, a requeued array task) resumes its own
        // directory: the items it already stored are never run twice.
        resume: args.resume || shard.is_some(),
        shard,
        config,
        config_text: text,
        overrides,
        max_trials: args.max_trials,
        max_episodes: args.max_episodes,
        progress: true,
    })
    .await?;
    let secs = summary.detection_wall.as_secs_f64();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "detection: {} trials run, {} already stored, {} in all; wall time {:.1} s ({:.2} trials/s, jobs {})",
        summary.trials_run,
        summary.trials_skipped,
        summary.trials_total,
        secs,
        if secs > 0.0 { summary.trials_run as f64 / secs } else { 0.0 },
        summary.detection_jobs
    )?;
    if let Some(r) = &summary.recovery {
        let secs = r.wall.as_secs_f64();
        writeln!(
            stdout,
            "recovery:  {} episodes run, {} already stored, {} in all; wall time {:.1} s ({:.2} episodes/s, jobs {})",
            r.run,
            r.skipped,
            r.total,
            secs,
            if secs > 0.0 { r.run as f64 / secs } else { 0.0 },
            r.jobs
        )?;
    }
    if summary.infra_failures > 0 || summary.policy_errors > 0 {
        writeln!(
            stdout,
            "infra:     {} failed attempt(s) retried or given up on, {} item(s) failed for good, {} browser restart(s), {} judgement(s) a policy could not make; listed in the report (--resume retries failed items)",
            summary.infra_failures, summary.failed_items, summary.browser_restarts, summary.policy_errors
        )?;
    }
    let misses = summary.recovery.as_ref().map_or(0, |r| r.cassette_misses);
    if misses > 0 {
        writeln!(
            stdout,
            "cassette:  missed {misses} request(s) in replay mode; their episodes were not run"
        )?;
    }
    writeln!(
        stdout,
        "results:   {}",
        summary.out.join("results.sqlite").display()
    )?;
    writeln!(stdout, "report:    {}", summary.report.display())?;
    writeln!(stdout, "view:      {}", summary.view.display())?;
    // A replay that missed its cassette did not measure what was recorded: not a
    // finished run, whatever else went well.
    if misses > 0 {
        bail!(
            "the agent's cassette missed {misses} request(s) in replay mode: those episodes were not run \
             (agent_endpoint, listed in the report); record them with cassette mode record or auto, \
             then run again with --resume"
        );
    }
    Ok(())
}

fn view(args: ViewArgs) -> Result<()> {
    let run_dir = if args.run.is_file() {
        args.run
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        args.run.clone()
    };
    if !run_dir.join("results.sqlite").is_file() {
        return Err(usage(anyhow!(
            "{}: not a run directory (no results.sqlite)",
            args.run.display()
        )));
    }
    let out = args.out.unwrap_or_else(|| run_dir.join("view"));
    let summary = faultline_viewer::generate(&run_dir, &out)?;
    println!(
        "view: {} ({} trials, {} episodes)",
        summary.index.display(),
        summary.trials,
        summary.episodes
    );
    Ok(())
}

async fn serve(args: ServeArgs) -> Result<()> {
    // A person loads pages under scopes they choose (`inspect`, or any other): each
    // opens on its first event, within the same ledger limits as a run.
    let options = faultline_sites::ServerOptions {
        open_scopes_on_demand: true,
        ..faultline_sites::ServerOptions::default()
    };
    let (server, key) = faultline_sites::FixtureServer::start_with(args.bind, options)
        .await
        .with_context(|| format!("binding {}", args.bind))?;
    let base = server.base_url();
    println!("faultline fixture sites at {base}/");
    for task in TaskKind::ALL {
        for i in 0..args.layouts {
            let l = faultline_tasks::Layout::for_root(args.seed, task, i);
            println!(
                "  {base}/s/inspect/{task}?layout={i}&seed={}   {}",
                l.seed,
                l.instruction().text
            );
        }
    }
    println!(
        "ledgers: {base}/api/ledger/<scope> with header `Authorization: Bearer {}`",
        key.bearer_token()
    );
    println!("press Ctrl-C to stop");
    crate::signals::terminated().await;
    server.shutdown().await;
    Ok(())
}

async fn record(args: RecordArgs) -> Result<()> {
    if !matches!(args.agent.as_str(), "oracle" | "openai") {
        return Err(usage(anyhow!(
            "--agent: unknown agent `{}` (available: oracle, openai)",
            args.agent
        )));
    }
    let tasks: Vec<TaskKind> = if args.tasks.is_empty() {
        TaskKind::ALL.to_vec()
    } else {
        args.tasks
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e: String| usage(anyhow!("--tasks: {e}")))
            })
            .collect::<Result<_>>()?
    };
    let overrides = Overrides {
        seed: Some(args.seed),
        layouts: Some(args.layouts),
        jobs: None,
        faults: None,
        isolation: None,
    };
    let config = config::resolve(
        &config::load_text(args.config.as_deref()).map_err(usage)?,
        &overrides,
    )
    .map_err(usage)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| match args.agent.as_str() {
            "openai" => PathBuf::from("results").join(format!(
                "decisions-{}",
                config
                    .openai
                    .model
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                        c
                    } else {
                        '_'
                    })
                    .collect::<String>()
            )),
            _ => PathBuf::from("tasks/decisions"),
        });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let agent = match args.agent.as_str() {
        "openai" => Some(crate::experiment::build_agent("openai", &config, &out)?),
        _ => None,
    };
    let source = format!("model:{}", config.openai.model);
    let harness = Harness::start(&config).await?;
    let result = async {
        for task in tasks {
            let mut set = DecisionSet::default();
            let mut rejected = Vec::new();
            for index in 0..args.layouts {
                match &agent {
                    None => set.decisions.push(
                        crate::experiment::record::record_oracle(
                            &harness.env,
                            args.seed,
                            task,
                            index,
                        )
                        .await?,
                    ),
                    Some(agent) => match crate::experiment::record::record_with_agent(
                        &harness.env,
                        agent.as_ref(),
                        &source,
                        args.seed,
                        task,
                        index,
                    )
                    .await?
                    {
                        crate::experiment::record::Recorded::Kept(d) => set.decisions.push(d),
                        crate::experiment::record::Recorded::Rejected(why) => {
                            rejected.push((index, why))
                        }
                    },
                }
            }
            let path = out.join(format!("{task}.jsonl"));
            std::fs::write(&path, set.to_jsonl())
                .with_context(|| format!("writing {}", path.display()))?;
            println!(
                "{}: {} decisions kept, all verified on a clean page; {} rejected",
                path.display(),
                set.decisions.len(),
                rejected.len()
            );
            for (index, why) in rejected {
                println!("  layout {index}: {why}");
            }
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    harness.shutdown().await;
    result
}

/// Parses a screenshot size `WxH` (for example `960x640`), each side from 1 to
/// [`faultline_tasks::layout::MAX_IMAGE_SIDE`].
fn parse_size(s: &str) -> Option<faultline_tasks::Size> {
    use faultline_tasks::layout::MAX_IMAGE_SIDE;
    let (w, h) = s.split_once(['x', 'X'])?;
    let (w, h) = (w.trim().parse().ok()?, h.trim().parse().ok()?);
    let side = 1..=MAX_IMAGE_SIDE;
    (side.contains(&w) && side.contains(&h)).then_some(faultline_tasks::Size::new(w, h))
}

fn import(args: ImportArgs) -> Result<()> {
    use faultline_tasks::formats::trajectory::{self, ImportOptions};
    use faultline_tasks::{ActionFormat, CoordinateSpace};
    let format: ActionFormat = args
        .format
        .parse()
        .map_err(|e: String| usage(anyhow!("--format: {e}")))?;
    let task: TaskKind = args
        .task
        .parse()
        .map_err(|e: String| usage(anyhow!("--task: {e}")))?;
    let image = match &args.image {
        Some(s) => Some(parse_size(s).ok_or_else(|| {
            usage(anyhow!(
                "--image: expected WxH with both from 1 to {} (e.g. 960x640), found `{s}`",
                faultline_tasks::layout::MAX_IMAGE_SIDE
            ))
        })?),
        None => None,
    };
    let space = match &args.space {
        Some(s) => {
            let space: CoordinateSpace = s
                .parse()
                .map_err(|e: String| usage(anyhow!("--space: {e}")))?;
            if !format.allows(space) {
                return Err(usage(anyhow!(
                    "--space: expected {} for the {format} format, found {space}",
                    format.default_space()
                )));
            }
            Some(space)
        }
        None => None,
    };
    let name = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| usage(anyhow!("{name}: cannot read: {e}")))?;
    let set = trajectory::import(
        &name,
        &text,
        &ImportOptions {
            format,
            task,
            root_seed: args.seed,
            image,
            space,
        },
    )
    .map_err(|e| usage(anyhow!(e)))?;
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from("results")
            .join(format!("import-{format}"))
            .join(format!("{task}.jsonl"))
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file =
        std::fs::File::create(&out).with_context(|| format!("writing {}", out.display()))?;
    for d in &set.decisions {
        let mut line = serde_json::to_string(d)?;
        line.push('\n');
        file.write_all(line.as_bytes())
            .with_context(|| format!("writing {}", out.display()))?;
    }
    println!(
        "{}: {} {task} decisions imported from {name} ({format}); replay them with `decisions = \"{}\"` in a config",
        out.display(),
        set.decisions.len(),
        out.display()
    );
    Ok(())
}

/// Before a run directory (or a file in one) is read: finishes a report swap a kill
/// interrupted there, or refuses to read it half swapped (see `report::swap::settle`).
/// Anything that is not in a run directory (a baseline file) is left alone.
fn settle_report(path: &Path) -> Result<()> {
    let dir = if path.is_dir() {
        path
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    };
    if !dir.join("results.sqlite").is_file() {
        return Ok(());
    }
    faultline_analysis::report::swap::settle(dir).map_err(usage)
}

fn costs(args: CostsArgs) -> Result<()> {
    settle_report(&args.run)?;
    let path = if args.run.is_dir() {
        args.run.join("results.sqlite")
    } else {
        args.run
    };
    let db = faultline_analysis::db::ResultsDb::open_read_only(&path).map_err(usage)?;
    print!("{}", faultline_analysis::costs::summary(&db)?);
    Ok(())
}

fn report(args: ReportArgs) -> Result<()> {
    use faultline_analysis::config::ProportionMethod;
    let db = faultline_analysis::db::ResultsDb::open_read_only(&args.database).map_err(usage)?;
    let run_dir = args
        .database
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let out = args.out.unwrap_or_else(|| run_dir.clone());
    let mut cfg = faultline_analysis::report::default_config(&db)?;
    cfg.level = faultline_analysis::stats::Level::new(args.level)
        .map_err(|e| usage(anyhow!("--level: {e}")))?;
    cfg.proportion = match args.interval.as_str() {
        "wilson" => ProportionMethod::Wilson,
        "clopper-pearson" => ProportionMethod::ClopperPearson,
        other => {
            return Err(usage(anyhow!(
                "--interval: unknown method `{other}` (expected wilson or clopper-pearson)"
            )))
        }
    };
    if args.resamples < 100 {
        return Err(usage(anyhow!(
            "--resamples: expected at least 100, found {}",
            args.resamples
        )));
    }
    cfg.resamples = args.resamples;
    if let Some(seed) = args.seed {
        cfg.seed = seed;
    }
    let files = faultline_analysis::report::write_all(&db, &out, &run_dir, &cfg)?;
    println!("report: {}", files.report_md.display());
    Ok(())
}

/// `YYYYmmdd-HHMMSS` in UTC, without a date-time dependency.
fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_parse_as_w_x_h() {
        assert_eq!(
            parse_size("960x640"),
            Some(faultline_tasks::Size::new(960, 640))
        );
        assert_eq!(parse_size("0x640"), None);
        assert_eq!(parse_size("960"), None);
    }

    #[test]
    fn regression_an_absurd_image_size_flag_is_refused() {
        assert_eq!(
            parse_size("16384x16384"),
            Some(faultline_tasks::Size::new(16384, 16384))
        );
        assert_eq!(parse_size("16385x640"), None);
        assert_eq!(parse_size("960x4294967295"), None);
    }

    #[test]
    fn utc_stamp_has_the_expected_shape() {
        let s = utc_stamp();
        assert_eq!(s.len(), 15);
        assert_eq!(&s[8..9], "-");
        assert!(s.starts_with("20"));
    }
}
