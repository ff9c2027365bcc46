//! The parse stage: reply text -> typed actions.
//!
//! An honest parse stage strips the chat special tokens a model's reply may carry before
//! it parses the reply grammar ([`faultline_tasks::parse_reply`]); the armed fault is
//! offered the parsed actions afterwards (`parse.token_leak` puts a token back into the
//! text the action types).

use faultline_faults::{FaultPlan, Witness};
use faultline_tasks::{parse_reply, Action};

/// Chat special tokens an honest parse stage strips before parsing.
pub const SPECIAL_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<|endoftext|>",
    "</s>",
];

/// The parse stage's error (the reply is recorded; the step ends there).
#[derive(Debug, thiserror::Error)]
#[error("parse error: {0}")]
pub struct ReplyError(pub String);

/// Parses a reply into actions, then offers them to the fault's parse hook.
pub fn parse_stage(
    reply: &str,
    fault: Option<&FaultPlan>,
) -> Result<(Vec<Action>, Option<Witness>), ReplyError> {
    let mut cleaned = reply.to_string();
    for token in SPECIAL_TOKENS {
        cleaned = cleaned.replace(token, "");
    }
    let mut actions = parse_reply(&cleaned).map_err(|e| ReplyError(e.to_string()))?;
    let witness = fault.and_then(|f| f.on_parse(&mut actions));
    Ok((actions, witness))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honest_parse_strips_special_tokens_and_the_fault_does_not() {
        let (a, w) = parse_stage("type(\"Record-10\")<|im_end|>", None).unwrap();
        assert_eq!(
            a,
            vec![Action::Type {
                text: "Record-10".into()
            }]
        );
        assert!(w.is_none());
        let leak = FaultPlan::new(faultline_faults::Fault::TokenLeak, 1);
        let (a, w) = parse_stage("type(\"Record-10\")\npress(\"Enter\")", Some(&leak)).unwrap();
        assert_eq!(
            a[0],
            Action::Type {
                text: "Record-10<|im_end|>".into()
            }
        );
        assert!(w.is_some());
        assert!(parse_stage("click(1)", None).is_err());
    }
}
