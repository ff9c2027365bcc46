//! The parse stage: reply text -> typed actions.
//!
//! An honest parse stage strips the chat special tokens a model's reply may carry before
//! it parses the reply in its [`ActionFormat`] (faultline's own grammar,
//! [`faultline_tasks::parse_reply`], or another agent's format through
//! [`faultline_tasks::formats::parse`]); the armed fault is offered the parsed actions
//! afterwards (`parse.token_leak` puts a token back into the text the action types).

use faultline_faults::{FaultPlan, Witness};
use faultline_tasks::formats;
use faultline_tasks::{parse_reply, ActionFormat, Converted};

/// Chat special tokens an honest parse stage strips before parsing.
pub const SPECIAL_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<|endoftext|>",
    "</s>",
];

/// The longest reply the parse stage reads: 64 KiB, from any agent (a model's message,
/// an exec agent's `reply`). A longer one is the agent's own parse error, never parsed
/// and stored cut to this size (see [`crate::plugin::truncate`]).
pub const MAX_REPLY_BYTES: usize = 64 << 10;

// A plugin's reply cut at read time must still be over this limit, so it is refused as
// the agent's own parse error rather than parsed from its first 64 KiB.
const _: () = assert!(crate::plugin::MAX_STRING_BYTES >= MAX_REPLY_BYTES);

/// The parse stage's error (the reply is recorded; the step ends there).
#[derive(Debug, thiserror::Error)]
#[error("parse error: {0}")]
pub struct ReplyError(pub String);

/// Parses a reply in `format` into actions (in the format's default coordinate space),
/// then offers them to the fault's parse hook.
pub fn parse_stage(
    reply: &str,
    format: ActionFormat,
    fault: Option<&FaultPlan>,
) -> Result<(Converted, Option<Witness>), ReplyError> {
    if reply.len() > MAX_REPLY_BYTES {
        return Err(ReplyError(format!(
            "the reply is {} bytes, over the {MAX_REPLY_BYTES}-byte limit",
            crate::plugin::original_len(reply)
        )));
    }
    let mut cleaned = reply.to_string();
    for token in SPECIAL_TOKENS {
        cleaned = cleaned.replace(token, "");
    }
    let mut converted = match format {
        ActionFormat::Faultline => Converted {
            actions: parse_reply(&cleaned).map_err(|e| ReplyError(e.to_string()))?,
            space: format.default_space(),
        },
        _ => formats::parse(format, &cleaned)
            .map_err(|e| ReplyError(format!("{format} reply: {e}")))?,
    };
    let witness = fault.and_then(|f| f.on_parse(&mut converted.actions));
    Ok((converted, witness))
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_tasks::Action;

    #[test]
    fn honest_parse_strips_special_tokens_and_the_fault_does_not() {
        let (c, w) = parse_stage(
            "type(\"Record-10\")<|im_end|>",
            ActionFormat::Faultline,
            None,
        )
        .unwrap();
        assert_eq!(
            c.actions,
            vec![Action::Type {
                text: "Record-10".into()
            }]
        );
        assert!(w.is_none());
        let leak = FaultPlan::new(faultline_faults::Fault::TokenLeak, 1);
        let (c, w) = parse_stage(
            "type(\"Record-10\")\npress(\"Enter\")",
            ActionFormat::Faultline,
            Some(&leak),
        )
        .unwrap();
        assert_eq!(
            c.actions[0],
            Action::Type {
                text: "Record-10<|im_end|>".into()
            }
        );
        assert!(w.is_some());
        assert!(parse_stage("click(1)", ActionFormat::Faultline, None).is_err());
    }

    /// Regression (an agent's 1 MB `type` reply was parsed, executed and stored whole):
    /// a reply over the limit, from any agent in any format, is a parse error that says
    /// how long it was, counting what a read-time cut removed.
    #[test]
    fn regression_an_over_long_reply_is_a_parse_error() {
        // At the limit and well formed: many short actions (typed text has its own,
        // smaller bound in the grammar).
        let limit = "wait(1)\n".repeat(MAX_REPLY_BYTES / 8);
        assert_eq!(limit.len(), MAX_REPLY_BYTES);
        assert!(parse_stage(&limit, ActionFormat::Faultline, None).is_ok());
        let over = format!("type(\"{}\")", "A".repeat(MAX_REPLY_BYTES));
        for format in [ActionFormat::Faultline, ActionFormat::OpenAi] {
            let e = parse_stage(&over, format, None).unwrap_err();
            assert_eq!(
                e.0,
                format!(
                    "the reply is {} bytes, over the {MAX_REPLY_BYTES}-byte limit",
                    MAX_REPLY_BYTES + 8
                )
            );
        }
        let cut = crate::plugin::truncate(&over, MAX_REPLY_BYTES);
        let e = parse_stage(&cut, ActionFormat::Faultline, None).unwrap_err();
        assert!(e
            .0
            .starts_with(&format!("the reply is {} bytes", MAX_REPLY_BYTES + 8)));
    }

    #[test]
    fn other_formats_parse_with_their_space_and_the_fault_still_acts() {
        let (c, _) = parse_stage(
            "Action: click(start_box='(500,250)')<|im_end|>",
            ActionFormat::UiTars,
            None,
        )
        .unwrap();
        assert_eq!(c.actions, vec![Action::Click { x: 500.0, y: 250.0 }]);
        assert_eq!(c.space, faultline_tasks::CoordinateSpace::Normalized1000);
        let leak = FaultPlan::new(faultline_faults::Fault::TokenLeak, 1);
        let (c, w) = parse_stage(
            r#"{"action": "type", "text": "Record-10"}"#,
            ActionFormat::Anthropic,
            Some(&leak),
        )
        .unwrap();
        assert_eq!(
            c.actions,
            vec![Action::Type {
                text: "Record-10<|im_end|>".into()
            }]
        );
        assert!(w.is_some());
        let e = parse_stage("{}", ActionFormat::OpenAi, None).unwrap_err();
        assert_eq!(e.0, "openai reply: type: expected a string, found nothing");
    }
}
