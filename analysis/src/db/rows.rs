//! The typed rows the harness stores and analysis reads.

use super::CostStage;
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::{Condition, InfraErrorKind, Phase, StopReason, TaskKind, Verdict};
use serde::{Deserialize, Serialize};

/// What one stage of one trial or episode cost (see schema version 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCostRow {
    /// The trial or episode key.
    pub item_key: String,
    /// The stage (stored by name: `setup`, `navigation`, `actions`, `settle`, `capture`,
    /// `dom`, `witness`, `policies`, `agent`, `scoring`, `storage`, ...).
    pub stage: CostStage,
    /// Wall milliseconds spent in the stage.
    pub wall_ms: f64,
    /// CPU milliseconds of faultline and Chromium during the stage (attributable to the
    /// item only when one item ran at a time).
    pub cpu_ms: f64,
}

/// What one phase of one invocation cost (see schema version 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseCostRow {
    /// The phase (stored by name: `detection` or `recovery`).
    pub phase: Phase,
    /// When the phase started, in Unix seconds (`1764777600.123`); a resumed run adds a
    /// row.
    pub started_at: String,
    /// Items run (not those already stored).
    pub items: u64,
    /// Items run at once.
    pub jobs: u64,
    /// How items were isolated from each other (e.g. `fresh_context`).
    pub isolation: String,
    /// Wall milliseconds of the phase.
    pub wall_ms: f64,
    /// CPU of faultline itself.
    pub cpu_ours_ms: f64,
    /// CPU of Chromium (every process it started).
    pub cpu_browser_ms: f64,
    /// faultline's peak resident set, in KiB.
    pub peak_rss_ours_kib: u64,
    /// The largest sampled sum of Chromium's processes' resident sets, in KiB.
    pub peak_rss_browser_kib: u64,
}

/// One stored trial (the columns analysis needs are typed; the rest are JSON text).
///
/// The vocabulary columns are the vocabulary's types; they are stored as their names, and
/// [`ResultsDb`](super::ResultsDb) converts at the boundary (a stored name it does not know is an error that
/// names the table, the key and the column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    /// Stable key, `detection/<task>/<layout>/<fault id|working>` (`trial_key`, primary key).
    pub trial_key: String,
    /// The experiment the trial belongs to ([`Phase::Detection`]; stored by name).
    pub experiment: Phase,
    /// The task the recorded decision was made for.
    pub task: TaskKind,
    /// The layout's index within the task (the layout cluster of the statistics).
    pub layout_index: u32,
    /// The layout's own seed; with `task` and `layout_index` it regenerates the page.
    pub layout_seed: u64,
    /// The trial's seed, derived from the root seed and the trial key; the fault draws its
    /// parameters from it.
    pub trial_seed: u64,
    /// Faulty (a fault injected) or working (the clean replay).
    pub condition: Condition,
    /// `None` on working trials.
    pub fault: Option<Fault>,
    /// The fault's round-trip stage (`None` on working trials).
    pub stage: Option<Stage>,
    /// `None` on working trials.
    pub fired: Option<bool>,
    /// The fault's witness (JSON) when it fired; `None` when it did not, or on working trials.
    pub witness: Option<String>,
    /// Who made the replayed decision: `oracle`, `model:<name>` or `import:<format>`.
    pub decision_source: String,
    /// The recorded reply text, as the model wrote it.
    pub reply: String,
    /// The actions the (possibly faulted) parser produced (JSON).
    pub actions: String,
    /// Executed actions with their viewport points and honest messages (JSON).
    pub executed: String,
    /// What the tool reported (after any feedback fault).
    pub tool_message: String,
    /// The "after" observation's text (after any observe fault).
    pub observation_text: String,
    /// The "before" screenshot, relative to the run directory (`shots/...`).
    pub before_png: Option<String>,
    /// The "after" screenshot, relative to the run directory (`shots/...`).
    pub after_png: Option<String>,
    /// The page states before and after the step and the text before it, as the policies
    /// judged them (JSON).
    pub evidence: String,
    /// The ledger's verdict: whether the task's outcome was really achieved.
    pub truth_achieved: bool,
    /// The truth check's explanation of `truth_achieved`.
    pub truth_detail: String,
    /// The trial's whole ledger (JSON).
    pub ledger: String,
    /// Wall-clock time of the trial, in milliseconds.
    pub duration_ms: f64,
    /// The fault's catalogue layer as stored (`None` on working trials and in version-1
    /// databases; [`TrialRow::fault_layer`] falls back to the fault's own).
    pub layer: Option<Layer>,
    /// Why a faulty trial's fault did not fire (`None` when it fired, or on working trials).
    pub not_fired_reason: Option<String>,
}

/// One recovery episode: the recorded decision replayed with its fault, then the agent
/// acting on what the policy told it, scored by the ledger at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRow {
    /// `recovery/<task>/<fault>/<policy>/<agent>/r<run>/<layout>`.
    pub episode_key: String,
    /// The task the episode ran.
    pub task: TaskKind,
    /// The fault armed for the whole episode.
    pub fault: Fault,
    /// The fault's round-trip stage.
    pub stage: Stage,
    /// The fault's catalogue layer.
    pub layer: Layer,
    /// The verification policy whose messages the agent was given.
    pub policy: String,
    /// The agent's registry name.
    pub agent: String,
    /// Repetition number, from 0.
    pub run: u32,
    /// The layout's index within the task (the layout cluster of the statistics).
    pub layout_index: u32,
    /// The layout's own seed; with `task` and `layout_index` it regenerates the page.
    pub layout_seed: u64,
    /// Derived from the root seed and the episode key.
    pub episode_seed: u64,
    /// Whether the fault left a witness at any step.
    pub fired: bool,
    /// The ledger's verdict at the end of the episode.
    pub success: bool,
    /// The truth check's explanation of `success`.
    pub truth_detail: String,
    /// Browser actions the agent took after the replayed decision (what the budget counts).
    pub browser_actions: u32,
    /// Steps in all, the replayed decision included.
    pub steps: u32,
    /// Why the episode ended.
    pub stop_reason: StopReason,
    /// The policy's verdict on the replayed decision agreed with the ledger (the detection
    /// experiment's "caught", on this episode's first step).
    pub detected_at_first_step: bool,
    /// The policy's verdict on the replayed decision (`None`, stored as `none`, when its
    /// reply did not parse, so nothing was judged).
    pub first_verdict: Option<Verdict>,
    /// The parse or agent error that ended the episode, if any.
    pub error: Option<String>,
    /// Model calls the agent made (0 for agents that call no model).
    pub model_calls: u32,
    /// Prompt tokens over the episode, when the agent's model reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens over the episode, when the agent's model reported them.
    pub completion_tokens: Option<u64>,
    /// The episode's whole ledger (JSON).
    pub ledger: String,
    /// Wall-clock time of the episode, in milliseconds.
    pub duration_ms: f64,
}

/// One step of an episode's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeStepRow {
    /// The episode the step belongs to ([`EpisodeRow::episode_key`]).
    pub episode_key: String,
    /// From 0 (the replayed decision).
    pub step: u32,
    /// `decision` for step 0, `agent` after.
    pub source: String,
    /// The reply text (the recorded decision at step 0, the agent's reply after).
    pub reply: String,
    /// Why the reply did not parse (`None` when it did).
    pub parse_error: Option<String>,
    /// Parsed actions (JSON).
    pub actions: String,
    /// Executed actions with their viewport points and honest messages (JSON).
    pub executed: String,
    /// Browser actions this step performed.
    pub browser_actions: u32,
    /// What the tool reported (after any feedback fault).
    pub tool_message: String,
    /// The policy's verdict on this step (`None` when the step was not judged: a parse
    /// error, or a reply that only answered or stopped).
    pub verdict: Option<Verdict>,
    /// The active policy's message to the agent on this step (`None` when not judged).
    pub policy_message: Option<String>,
    /// The observation's text after this step (`None` when there was no observation).
    pub observation_text: Option<String>,
    /// The observation's screenshot, relative to the run directory.
    pub screenshot: Option<String>,
    /// The fault's witness, when it fired on this step (JSON).
    pub witness: Option<String>,
    /// The ledger's verdict right after this step.
    pub truth_achieved: bool,
    /// The truth check's explanation of `truth_achieved`.
    pub truth_detail: String,
    /// Ledger events recorded during this step (JSON list).
    pub ledger_events: String,
    /// Model token usage for this reply (JSON), when a model wrote it.
    pub usage: Option<String>,
}

/// One policy's verdict on one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRow {
    /// The trial this verdict is on ([`TrialRow::trial_key`]).
    pub trial_key: String,
    /// The policy's name.
    pub policy: String,
    /// What the policy said happened.
    pub verdict: Verdict,
    /// The policy's message, as an agent would have read it.
    pub message: String,
}

impl TrialRow {
    /// The fault's catalogue layer: the stored one or, in a version-1 database (which
    /// stores none), the fault's own, which for the four reference faults of that release
    /// is their stage's (`parse`, `feedback`, `observe` are the harness's tool, `execute`
    /// is execution). `None` on working trials.
    pub fn fault_layer(&self) -> Option<Layer> {
        self.layer.or_else(|| self.fault.map(Fault::layer))
    }
}

/// A (trial or episode, policy) the policy could not judge: an infrastructure error, not
/// a verdict (schema version 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraErrorRow {
    /// The trial key (detection) or the episode key (recovery).
    pub item_key: String,
    /// The name of the policy that could not judge.
    pub policy: String,
    /// What failed: the harness's own machinery (`browser_died`, `unresponsive`, ...) or
    /// an external process (`spawn`, `crash`, `timeout`, ...); stored by name.
    pub kind: InfraErrorKind,
    /// What went wrong, in words.
    pub reason: String,
    /// The last bytes the process wrote to stderr.
    pub stderr_tail: String,
    /// Which incarnation of the process failed (1 for the first).
    pub attempt: u32,
}
