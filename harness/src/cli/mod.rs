//! The command line: raw flags (clap) -> validated requests -> actions. Exit codes are
//! decided in [`crate::error`].
//!
//! This file holds the clap definitions and the dispatch; each subcommand's action lives
//! in its own file:
//!
//! - `run`: `cli/run.rs` (also the default run directory name)
//! - `serve`: `cli/serve.rs`
//! - `record`: `cli/record.rs`
//! - `import`: `cli/import.rs` (also the `--image WxH` parsing)
//! - `report`: `cli/report.rs`
//! - `costs`: `cli/costs.rs`
//! - `list`: `cli/list.rs`
//! - `view`: `cli/view.rs`
//! - `gate`: `cli/gate.rs`
//! - `merge`: `cli/merge.rs`
//! - `baseline export`: `cli/baseline.rs`
//!
//! `cli/settle.rs` finishes or refuses a half-swapped report before a run directory is read.

// clap turns the doc comments below into `--help` text, where `<placeholder>` is the
// convention; rustdoc would read them as HTML tags.
#![allow(rustdoc::invalid_html_tags)]

mod baseline;
mod costs;
mod gate;
mod import;
mod list;
mod merge;
mod record;
mod report;
mod run;
mod serve;
mod settle;
mod view;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
    /// Serve a run under `[harness]` to an external harness started by hand: prints the
    /// environment API's URL and token, stores each item as the harness reports it, and
    /// writes the report when every item is stored.
    Env(EnvArgs),
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

/// `faultline env`: the run (as for `faultline run`) and where the API listens.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The run: its config must have a `[harness]` section.
    #[command(flatten)]
    pub run: RunArgs,
    /// Address the environment API binds; loopback by default (another address warns).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub bind: std::net::SocketAddr,
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
            Command::Run(_) | Command::Env(_) => Some(
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
        Command::Run(args) => run::run(args).await,
        Command::Env(args) => run::run_env(args).await,
        Command::Serve(args) => serve::serve(args).await,
        Command::Record(args) => record::record(args).await,
        Command::Import(args) => import::import(args),
        Command::Report(args) => report::report(args),
        Command::Costs(args) => costs::costs(args),
        Command::List(args) => list::list(args),
        Command::View(args) => view::view(args),
        Command::Gate(args) => gate::gate(args),
        Command::Merge(args) => merge::merge(args),
        Command::Baseline(BaselineCommand::Export(args)) => baseline::baseline_export(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
