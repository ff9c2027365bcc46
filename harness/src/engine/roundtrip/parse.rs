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
