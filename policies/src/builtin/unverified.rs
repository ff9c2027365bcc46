//! `unverified`: the tool's own message taken as true.

use crate::evidence::Evidence;
use crate::{Judgement, PolicyOutcome, Verdict, VerificationPolicy};

/// Takes the tool's own message as true: a message that reports an error anywhere (a
/// step of several actions joins their messages) is a failure, a "no change" message is
/// no change, anything else is success.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnverifiedPolicy;

impl VerificationPolicy for UnverifiedPolicy {
    fn name(&self) -> &str {
        "unverified"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl UnverifiedPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        let m = ev.tool_message;
        let lower = m.to_ascii_lowercase();
        let verdict =
            if lower.starts_with("error") || lower.contains("error:") || lower.contains("failed") {
                Verdict::Fail
            } else if lower.contains("no change") {
                Verdict::NoChange
            } else {
                Verdict::Success
            };
        Judgement::new(verdict, m)
    }
}
