//! The `exec` agent: an agent running as a plugin process (see the [module docs](super)).
//!
//! Each turn the process gets the agent's view — the instruction, the observation (a path
//! to the screenshot at image size, and the visible text), the active policy's verdict
//! and message, the history, the remaining budget, the step and the episode's seed — and
//! answers `{"reply": "...", "format": "faultline"}`. The reply goes through the same
//! parse stage as any other, in its format: any of [`formats()`] (faultline's grammar,
//! Anthropic or OpenAI computer use, BrowserGym, UI-TARS, Qwen-VL; see
//! [`faultline_tasks::formats`]). `format` may be left out (faultline's grammar); an
//! unknown one is refused as a protocol error.
//!
//! A crash, a hang past the timeout or a process that cannot start gave no answer: an
//! [`AgentError`] of the infrastructure kind `agent_process` (with the reason and the
//! process's stderr tail), so the episode is retried and listed apart, never scored as a
//! failed recovery; the next attempt starts a fresh process. A malformed answer or a
//! protocol mismatch is the agent's own failure: the episode ends `agent_error`.

use super::{PluginSpec, Pool};
use crate::agent::{Agent, AgentError, AgentReply, AgentView};
use faultline_policies::InfraError;
use faultline_tasks::{ActionFormat, PluginFailure};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;

/// The protocol name of an agent.
pub const PROTOCOL: &str = "faultline.agent";

/// The action formats this build reads, by name.
pub fn formats() -> Vec<&'static str> {
    ActionFormat::ALL.iter().map(|f| f.name()).collect()
}

/// An agent running as a plugin process.
pub struct ExecAgent {
    pool: Arc<Pool>,
}

impl ExecAgent {
    /// An agent whose replies come from `spec`'s process, started on demand.
    pub fn new(spec: PluginSpec) -> ExecAgent {
        let hello = json!({ "name": spec.name, "formats": formats() });
        ExecAgent {
            pool: Arc::new(Pool::new(spec, PROTOCOL, hello)),
        }
    }

    /// The pool of the agent's processes.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

/// The agent's view as the process receives it; `screenshot` is the observation's path.
pub fn view_json(view: &AgentView<'_>, screenshot: &str) -> Value {
    json!({
        "instruction": view.instruction,
        "observation": {
            "screenshot": screenshot,
            "size": view.observation.size,
            "text": view.observation.text,
        },
        "feedback": view.feedback,
        "history": view.history,
        "budget_left": view.budget_left,
        "step": view.step,
        "image": view.image,
        "seed": view.seed,
    })
}

/// Reads an agent's answer: the raw reply and its action format.
pub fn reply_from(answer: &Value) -> Result<(String, ActionFormat), (PluginFailure, String)> {
    let format = match answer.get("format") {
        None | Some(Value::Null) => ActionFormat::Faultline,
        Some(Value::String(f)) if f.parse::<ActionFormat>().is_ok() => f.parse().expect("checked"),
        Some(other) => {
            return Err((
                PluginFailure::Protocol,
                format!(
                    "unsupported action format {} (this build reads: {})",
                    super::clip(&other.to_string()),
                    formats().join(", ")
                ),
            ))
        }
    };
    match answer.get("reply") {
        Some(Value::String(s)) => Ok((s.clone(), format)),
        Some(other) => Err((
            PluginFailure::Malformed,
            format!("reply is not a string: {}", super::clip(&other.to_string())),
        )),
        None => Err((
            PluginFailure::Malformed,
            format!("no `reply` in {}", super::clip(&answer.to_string())),
        )),
    }
}

/// A process that crashed, hung or never started gave no answer: an infrastructure
/// failure. An answer the harness cannot use (malformed, an unknown action format) is the
/// agent's own failure, like a model's unusable reply.
fn agent_error(e: InfraError) -> AgentError {
    let tail = e.stderr_tail.trim_end();
    let message = if tail.is_empty() {
        format!("exec agent {}: {}", e.kind, e.reason)
    } else {
        format!("exec agent {}: {}; stderr: {tail}", e.kind, e.reason)
    };
    match e.kind {
        PluginFailure::Crash | PluginFailure::Timeout | PluginFailure::Spawn => {
            AgentError::process_failed(message)
        }
        PluginFailure::Malformed | PluginFailure::UnknownVerdict | PluginFailure::Protocol => {
            AgentError::new(message)
        }
    }
}

impl Agent for ExecAgent {
    fn name(&self) -> &str {
        "exec"
    }

    /// What the process's handshake declared. Asked before the run's episodes are
    /// planned, so it starts a process (kept for the first episode); one that cannot be
    /// started counts as not deterministic, and its episodes meet the failure as usual.
    fn deterministic(&self) -> bool {
        self.pool
            .with_process(|p| Ok(p.deterministic()))
            .unwrap_or(false)
    }

    fn reply<'a>(&'a self, view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        Box::pin(async move {
            let shot = self
                .pool
                .write_png("observation", &view.observation.png)
                .map_err(agent_error)?;
            let request = json!({
                "type": "act",
                "view": view_json(&view, &shot.path().display().to_string()),
            });
            let pool = self.pool.clone();
            let (text, format) = tokio::task::spawn_blocking(move || {
                let answer = pool.with_process(|p| {
                    let answer = p.request(request)?;
                    reply_from(&answer).map_err(|(kind, reason)| p.fail(kind, reason))
                });
                drop(shot);
                answer
            })
            .await
            .map_err(|e| AgentError::new(format!("exec agent: {e}")))?
            .map_err(agent_error)?;
            Ok(AgentReply {
                format,
                ..AgentReply::text(text)
            })
        })
    }
}
