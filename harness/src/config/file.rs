//! The file types: the TOML config file as written, one serde struct per table, every
//! field optional and unknown fields refused.

use crate::agent::openai::OpenAiConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The file format. Every field is optional; unknown fields are errors.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The root seed every layout, trial and episode seed derives from (default 1).
    pub seed: Option<u64>,
    /// Layouts per task (1 to 10000; default 40).
    pub layouts: Option<u32>,
    /// Concurrent trials and episodes (at most 64; 0 or absent: the per-phase default, 10
    /// per core for detection and for recovery, see [`crate::experiment::jobs`]).
    pub jobs: Option<usize>,
    /// Task names (default: the four reference tasks).
    pub tasks: Option<Vec<String>>,
    /// Policy names, built-in or `[[policy]]` (default: the built-in policies).
    pub policies: Option<Vec<String>>,
    /// `"auto"` (committed decisions when they cover the run, else record with the
    /// oracle) or a path to a decision JSONL file.
    pub decisions: Option<String>,
    /// Fault selectors (ids, globs, `layer:NAME`, `stage:NAME`, `reference`, `all`).
    pub faults: Option<Vec<String>>,
    /// The `[timing]` section: the round trip's waits.
    pub timing: Option<TimingFile>,
    /// The harness's own deadlines, retries and browser restarts (`[liveness]`).
    pub liveness: Option<LivenessFile>,
    /// The `[browser]` section: which Chromium to run.
    pub browser: Option<BrowserFile>,
    /// The `[recovery]` section: the recovery experiment.
    pub recovery: Option<RecoveryFile>,
    /// The OpenAI-compatible endpoint, for `recovery.agent = "openai"` and
    /// `faultline record --agent openai`. The key is never here: it comes from
    /// `FAULTLINE_API_KEY` or `OPENAI_API_KEY`.
    pub openai: Option<OpenAiConfig>,
    /// The `[cassette]` section: where model calls are recorded and replayed.
    pub cassette: Option<CassetteFile>,
    /// External verification policies (`[[policy]]`), usable wherever a built-in
    /// policy's name is.
    pub policy: Option<Vec<PluginFile>>,
    /// The `exec` agent's process (`[exec]`).
    pub exec: Option<ExecFile>,
    /// An external harness under test (`[harness]`): the run's items are served to it
    /// through the environment API instead of run by faultline's own round trip.
    pub harness: Option<HarnessFile>,
}

/// The `[harness]` section: an external harness that claims the run's items over the
/// environment API, drives its own browser and reports its verifier's verdicts.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessFile {
    /// The harness's name: its verdicts are stored as this policy's (default `harness`).
    pub name: Option<String>,
    /// The worker program and its arguments (no shell), started by `faultline run` with
    /// the API's URL and token in its environment. Absent: `faultline env` serves the
    /// items and the harness is started by hand.
    pub command: Option<Vec<String>>,
    /// How many worker processes `faultline run` starts (default 1, at most 64).
    pub workers: Option<usize>,
    /// How long a worker may hold an item before it is taken back, in milliseconds
    /// (default 60000).
    pub lease_ms: Option<u64>,
}

/// One `[[policy]]` table: an external verifier run as a process.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PluginFile {
    /// The policy's name, as the config's `policies` lists use it.
    pub name: String,
    /// The program and its arguments (no shell); relative paths are relative to the
    /// working directory.
    pub command: Vec<String>,
    /// Per-request timeout (default 10000 ms).
    pub timeout_ms: Option<u64>,
}

/// The `[exec]` section: the `exec` agent's process.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExecFile {
    /// The program and its arguments (no shell); relative paths are relative to the
    /// working directory.
    pub command: Vec<String>,
    /// Per-request timeout (default 10000 ms).
    pub timeout_ms: Option<u64>,
}

/// The `[cassette]` section: where model calls are recorded and replayed.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteFile {
    /// Default: `cassette.jsonl` in the run directory. Relative paths are relative to
    /// the working directory.
    pub path: Option<PathBuf>,
    /// `record`, `replay` (no network call, ever) or `auto`.
    pub mode: Option<String>,
}

/// The `[recovery]` section.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryFile {
    /// Whether the recovery experiment runs (default: true when the section is present).
    pub enabled: Option<bool>,
    /// The first N layouts of each task.
    pub layouts: Option<u32>,
    /// Policies the agent is told by (default: `unverified`, `generic`, `outcome`).
    pub policies: Option<Vec<String>>,
    /// Repetitions of every (task, fault, policy, layout).
    pub runs: Option<u32>,
    /// One agent by registry name (`faultline list agents`); or use `agents`.
    pub agent: Option<String>,
    /// Several agents, each running every episode (default: `trusting` and `observant`).
    pub agents: Option<Vec<String>>,
    /// Browser actions the agent may take after the recorded decision.
    pub budget: Option<u32>,
    /// Steps in all, the recorded decision included.
    pub max_steps: Option<u32>,
    /// Fault selectors for the episodes (default: `reference`).
    pub faults: Option<Vec<String>>,
    /// Wall-clock limit of one episode in milliseconds (stop reason `time_limit`).
    pub time_limit_ms: Option<u64>,
    /// The longest `wait(ms)` a reply may ask for; longer waits are cut to it.
    pub max_wait_ms: Option<u64>,
}

/// The `[liveness]` section: when the harness gives up on a hung browser and how often
/// it tries again. None of it changes what a working trial measures.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LivenessFile {
    /// Deadline of one CDP call the harness waits on, in milliseconds (default 10000).
    pub call_timeout_ms: Option<u64>,
    /// Deadline of the wait for a fresh page from the pool, in milliseconds (default 20000).
    pub page_timeout_ms: Option<u64>,
    /// How many times an item that failed for infrastructure reasons is tried again
    /// (default 2).
    pub retries: Option<u32>,
    /// How many new browsers a run may start after its browser died (default 5).
    pub browser_restarts: Option<u32>,
}

/// The `[timing]` section: the round trip's waits, in milliseconds (see [`Timing`](crate::engine::timing::Timing)).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimingFile {
    /// Wait after a click, key, typing or scroll before observing (default 120).
    pub settle_ms: Option<u64>,
    /// Wait after a hover before observing (default 1400).
    pub hover_settle_ms: Option<u64>,
    /// How long to wait for a navigation an action started (500 to 60000; default 4000).
    pub navigation_timeout_ms: Option<u64>,
    /// `fixed` (the default: wait `settle_ms` / `hover_settle_ms`) or `stable` (wait
    /// until the DOM has not changed for `stable_windows` windows of `stable_window_ms`,
    /// at most `stable_cap_ms`).
    pub settle: Option<String>,
    /// `stable` mode: the length of one sampling window, in milliseconds.
    pub stable_window_ms: Option<u64>,
    /// `stable` mode: how many consecutive windows without a DOM change end the wait.
    pub stable_windows: Option<u32>,
    /// `stable` mode: the longest wait, in milliseconds, however busy the page stays.
    pub stable_cap_ms: Option<u64>,
}

/// The `[browser]` section.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserFile {
    /// The Chromium executable (default: `$FAULTLINE_CHROMIUM`, else found on the PATH).
    pub executable: Option<PathBuf>,
    /// How trials are kept apart: `fresh_context` or `reused_context` (see [`Isolation`](crate::engine::browser::Isolation)).
    pub isolation: Option<String>,
    /// Whether faultline's own browser connection goes through its DevTools proxy
    /// (default false): what lets a built-in run select the faults on the protocol.
    pub devtools_proxy: Option<bool>,
}
