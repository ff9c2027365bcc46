//! What a trial or an episode came to, in the words stored with it: the trial's
//! [`Condition`], a policy's [`Verdict`] and an episode's [`StopReason`].
//!
//! They live in the vocabulary crate because the harness writes them and the analysis
//! reads them back: both sides name them through these types, never through string copies.

use serde::{Deserialize, Serialize};

crate::named_enum! {
    /// The three-valued verdict of a verification policy.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Verdict: "verdict" {
        /// The action achieved what was asked.
        Success = "success",
        /// Nothing observable changed.
        NoChange = "no_change",
        /// Something changed, but not what was asked (or the tool reported an error).
        Fail = "fail",
    }
}

crate::named_enum! {
    /// Whether a detection trial runs with its fault.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Condition: "condition" {
        /// The trial runs with its fault armed.
        Faulty = "faulty",
        /// The trial runs without it: the control condition.
        Working = "working",
    }
}

crate::named_enum! {
    /// Why a recovery episode ended, in the order the report's tables show them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum StopReason: "stop reason" {
        /// The agent replied `stop()` (or a reply with nothing to do).
        Stopped = "stopped",
        /// The agent answered.
        Answered = "answered",
        /// A reply could not be parsed.
        ParseError = "parse_error",
        /// A reply would have spent more browser actions than were left.
        OverBudget = "over_budget",
        /// The step cap was reached.
        StepCap = "step_cap",
        /// The agent could not reply (e.g. the model endpoint failed).
        AgentError = "agent_error",
        /// The episode's wall-clock limit was reached.
        TimeLimit = "time_limit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_serde_and_parsing_agree() {
        for v in Verdict::ALL {
            assert_eq!(v.name().parse::<Verdict>(), Ok(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        for c in Condition::ALL {
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{c}\""));
        }
        for r in StopReason::ALL {
            assert_eq!(r.name().parse::<StopReason>(), Ok(r));
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{r}\""));
        }
        assert_eq!(
            "maybe".parse::<Verdict>().unwrap_err(),
            "unknown verdict `maybe` (expected one of: success, no_change, fail)"
        );
    }
}
