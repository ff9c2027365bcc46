//! The `replay` agent: the recorded decision is all it has, so after it, it stops.

use super::{Agent, AgentError, AgentReply, AgentView};
use futures::future::BoxFuture;

/// The `replay` agent. See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayAgent;

impl Agent for ReplayAgent {
    fn name(&self) -> &str {
        "replay"
    }

    /// It always stops.
    fn deterministic(&self) -> bool {
        true
    }

    fn reply<'a>(&'a self, _view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        Box::pin(async { Ok(AgentReply::text("stop()")) })
    }
}
