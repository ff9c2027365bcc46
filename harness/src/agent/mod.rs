//! Agents: what acts after the recorded decision in a recovery episode.
//!
//! An [`Agent`] is handed an [`AgentView`] — the public instruction, the current
//! observation (the screenshot at image size and the visible text of every frame,
//! captured at the same instant), what the active verification policy said about the
//! last step, the episode's history and the remaining browser-action budget — and
//! returns a raw reply, in faultline's reply grammar or in any other
//! [`ActionFormat`] it names. The reply goes through the same parse stage as a recorded
//! decision, so parse faults apply to it too.
//!
//! The view is all an agent gets: no agent can reach the ledger, the layout or the page
//! beyond the observation (the types here hold none of them). Nor does it learn where
//! the run serves its pages: every view goes to its agent through [`portable::ask`],
//! which writes the session's URLs as paths from the task's start, so the same step is
//! the same prompt in any run.
//!
//! Built-in agents, rebuilt by name from a stored config through the [`registry`]:
//!
//! | name | what it does |
//! |---|---|
//! | `replay` | the recorded decision, nothing more: it stops at once ([`replay`]) |
//! | `trusting` | a transparent rule-based baseline that believes the policy ([`trusting::TrustingAgent`]; `scripted` is its old name) |
//! | `observant` | the same baseline, but it checks its own observation before it stops ([`observant::ObservantAgent`]) |
//! | `exec` | an external process speaking the agent protocol ([`crate::plugin::agent`]) |
//! | `openai` | any OpenAI-compatible chat-completions endpoint, through a [`cassette`] |
//!
//! To add an agent: one file here implementing [`Agent`], one line in
//! [`registry::Registry::default`].

pub mod cassette;
pub mod observant;
pub mod openai;
pub mod portable;
pub mod registry;
pub mod replay;
pub mod trusting;

pub use registry::{AgentContext, Registry};
pub use replay::ReplayAgent;

use crate::engine::liveness::InfraKind;
use faultline_policies::{Observation, Verdict};
use faultline_tasks::{Action, ActionFormat, Instruction, Size};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What the verification policy told the agent about the last step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyFeedback {
    /// The policy's name (e.g. `outcome`).
    pub policy: String,
    /// What the policy said about the step.
    pub verdict: Verdict,
    /// The message the agent is told.
    pub message: String,
}

/// One earlier step of the episode, as the agent saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The reply as written (the recorded decision's on step 0).
    pub reply: String,
    /// The actions the parse stage made of it.
    pub actions: Vec<Action>,
    /// What the tool reported.
    pub tool_message: String,
    /// What the policy said afterwards (`None` when the step was not judged).
    pub feedback: Option<PolicyFeedback>,
}

/// Everything an agent is given before it replies.
#[derive(Debug, Clone, Copy)]
pub struct AgentView<'a> {
    /// The task's instruction.
    pub instruction: &'a Instruction,
    /// The latest observation (PNG at `image` size plus the visible text).
    pub observation: &'a Observation,
    /// The active policy's judgement of the last step (`None` for a first decision on a
    /// clean page, as when recording decisions).
    pub feedback: Option<&'a PolicyFeedback>,
    /// Earlier steps, oldest first; the last entry is the step `feedback` judged.
    pub history: &'a [HistoryEntry],
    /// Browser actions the agent may still take (`click`, `hover`, `type`, `press`,
    /// `scroll`; `wait`, `answer` and `stop` are free).
    pub budget_left: u32,
    /// The step this reply will be (0 for a first decision, 1 for the first reply after
    /// the recorded decision in an episode).
    pub step: u32,
    /// The screenshot size; pointer coordinates in the reply are in this space.
    pub image: Size,
    /// The episode's seed (derived from the root seed and the episode key).
    pub seed: u64,
}

/// Token counts reported by a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens in the prompt, as the model reported them.
    pub prompt_tokens: u64,
    /// Tokens in the completion, as the model reported them.
    pub completion_tokens: u64,
}

/// A raw reply and what producing it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentReply {
    /// The reply as the agent wrote it.
    pub text: String,
    /// The language `text` is written in (faultline's own grammar unless the agent says
    /// otherwise); the parse stage converts it, with the format's coordinate space.
    #[serde(default, skip_serializing_if = "is_faultline")]
    pub format: ActionFormat,
    /// Token usage, when a model wrote it.
    pub usage: Option<TokenUsage>,
    /// Network calls made for this reply (0 when it came from a cassette).
    pub model_calls: u32,
}

fn is_faultline(f: &ActionFormat) -> bool {
    *f == ActionFormat::Faultline
}

impl AgentReply {
    /// A reply written without a model.
    pub fn text(text: impl Into<String>) -> AgentReply {
        AgentReply {
            text: text.into(),
            format: ActionFormat::Faultline,
            usage: None,
            model_calls: 0,
        }
    }
}

/// Why an agent could not reply. The episode ends as `agent_error` with this message
/// stored; nothing already stored is affected. When the agent itself never got to answer
/// (its model endpoint could not be reached, its plugin process crashed, hung or could
/// not start) it is different: the episode measured nothing about recovery, so it is an
/// infrastructure failure of that kind, not stored as an episode, retried like any other
/// and listed apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AgentError {
    /// What went wrong.
    pub message: String,
    /// `Some` when the failure is the infrastructure's, not the agent's answer:
    /// [`InfraKind::AgentEndpoint`] (a transport error, or a retryable HTTP status after
    /// every retry) or [`InfraKind::AgentProcess`].
    pub infra: Option<InfraKind>,
}

impl AgentError {
    /// The agent failed (its reply could not be had or used).
    pub fn new(message: impl Into<String>) -> AgentError {
        AgentError {
            message: message.into(),
            infra: None,
        }
    }

    /// The agent's endpoint could not be reached.
    pub fn unreachable(message: impl Into<String>) -> AgentError {
        AgentError {
            message: message.into(),
            infra: Some(InfraKind::AgentEndpoint),
        }
    }

    /// The agent's process crashed, hung or could not be started.
    pub fn process_failed(message: impl Into<String>) -> AgentError {
        AgentError {
            message: message.into(),
            infra: Some(InfraKind::AgentProcess),
        }
    }
}

/// Something that replies to an [`AgentView`].
pub trait Agent: Send + Sync {
    /// The registry name, stored with every episode.
    fn name(&self) -> &str;

    /// Whether the agent's replies cannot differ between runs of the same item: the same
    /// view always gets the same reply. A deterministic agent's episode is run once where
    /// nothing else can differ between its runs (`[recovery] runs` repeats the others);
    /// the default, `false`, repeats every run, the safe answer for an agent that cannot
    /// vouch for itself. May block (an `exec` agent asks its process).
    fn deterministic(&self) -> bool {
        false
    }

    /// The next reply. Must not depend on anything but the view (and, for a model,
    /// the model): episodes are replayed from stored configs.
    fn reply<'a>(&'a self, view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>>;
}
