//! Anthropic computer-use tool input.
//!
//! The reply is JSON, one of:
//!
//! - the tool input itself: `{"action": "left_click", "coordinate": [450, 300]}`;
//! - a `tool_use` block: `{"type": "tool_use", "name": "computer", "input": {...}}`;
//! - a list of content blocks (an assistant turn's `content`), or a message with a
//!   `content` list: `text` and `thinking` blocks are skipped, each `tool_use` block is
//!   converted in order.
//!
//! `coordinate` is in the pixels of the screenshot the model was sent (image space).
//!
//! | action | faultline |
//! |---|---|
//! | `left_click`, `double_click`, `right_click` `{coordinate}` | `click`, `double_click`, `right_click` |
//! | `mouse_move {coordinate}` | `hover` |
//! | `type {text}` | `type` |
//! | `key {text}` (xdotool names, `Return`, `ctrl+a`; several separated by spaces) | `press` per key |
//! | `scroll {scroll_direction, scroll_amount}` | `scroll`, [`super::PIXELS_PER_NOTCH`] per notch |
//! | `wait {duration}` (seconds, default 1) | `wait` |
//! | `screenshot` | `wait(0)` |
//!
//! Clicks without a `coordinate` (at wherever the mouse is), clicks holding keys
//! (`text` on a click), drags, middle and triple clicks and holding keys are errors.

use super::{
    bounded_text, canonical_key, coordinate, json_value, kind, number, object, optional_number,
    seconds_to_ms, split_chord, string, FormatError,
};
use crate::action::Action;
use serde_json::{Map, Value};

/// Converts an Anthropic computer-use reply.
pub fn parse(raw: &str) -> Result<Vec<Action>, FormatError> {
    let value = json_value(
        raw,
        "a computer-use tool input, a tool_use block or a list of blocks",
    )?;
    let mut out = Vec::new();
    match &value {
        Value::Array(blocks) => {
            for (i, b) in blocks.iter().enumerate() {
                block(b, &mut out).map_err(|e| e.within(&format!("[{i}]")))?;
            }
        }
        Value::Object(o) if o.contains_key("content") && !o.contains_key("action") => {
            let Some(Value::Array(blocks)) = o.get("content") else {
                return Err(FormatError::new(
                    "content",
                    format!("a list of content blocks, found {}", kind(&o["content"])),
                ));
            };
            for (i, b) in blocks.iter().enumerate() {
                block(b, &mut out).map_err(|e| e.within(&format!("content[{i}]")))?;
            }
        }
        v => block(v, &mut out).map_err(FormatError::at_top)?,
    }
    Ok(out)
}

fn block(v: &Value, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let o = object(v, "")?;
    match o.get("type").and_then(Value::as_str) {
        Some("text" | "thinking" | "redacted_thinking") => Ok(()),
        Some("tool_use") => {
            let input = o
                .get("input")
                .ok_or_else(|| FormatError::new("input", "the tool input object, found nothing"))?;
            input_actions(object(input, "input")?, out).map_err(|e| e.within("input"))
        }
        Some(other) if !o.contains_key("action") => Err(FormatError::new(
            "type",
            format!("a tool_use, text or thinking block, found `{other}`"),
        )),
        _ => input_actions(o, out),
    }
}

const ACTIONS: &str =
    "left_click, double_click, right_click, mouse_move, type, key, scroll, wait or screenshot";

fn input_actions(o: &Map<String, Value>, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let action = string(o, "action")?;
    match action {
        "left_click" | "double_click" | "right_click" | "mouse_move" => {
            if action != "mouse_move" && o.get("text").is_some_and(|t| !t.is_null()) {
                return Err(FormatError::new(
                    "text",
                    "no keys held during a click (faultline clicks without modifiers)",
                ));
            }
            let (x, y) = coordinate(o, "coordinate")?;
            out.push(match action {
                "left_click" => Action::Click { x, y },
                "double_click" => Action::DoubleClick { x, y },
                "right_click" => Action::RightClick { x, y },
                _ => Action::Hover { x, y },
            });
        }
        "type" => out.push(Action::Type {
            text: bounded_text(string(o, "text")?, "text")?,
        }),
        "key" => {
            // Each chord is a key press: a bounded text bounds how many.
            let text = &bounded_text(string(o, "text")?, "text")?;
            let mut any = false;
            for chord in text.split_whitespace() {
                let key =
                    canonical_key(split_chord(chord)).map_err(|e| FormatError::new("text", e))?;
                out.push(Action::Press { key });
                any = true;
            }
            if !any {
                return Err(FormatError::new(
                    "text",
                    "xdotool key names such as Return or ctrl+a, found an empty string",
                ));
            }
        }
        "scroll" => {
            if o.contains_key("coordinate") {
                coordinate(o, "coordinate")?;
            }
            if o.get("text").is_some_and(|t| !t.is_null()) {
                return Err(FormatError::new(
                    "text",
                    "no keys held during a scroll (faultline scrolls without modifiers)",
                ));
            }
            let direction = string(o, "scroll_direction")?;
            let amount = number(o, "scroll_amount")?;
            if amount < 0.0 || amount.fract() != 0.0 || amount > 1000.0 {
                return Err(FormatError::new(
                    "scroll_amount",
                    format!("a whole number of wheel notches from 0 to 1000, found {amount}"),
                ));
            }
            let px = amount * super::PIXELS_PER_NOTCH;
            let (dx, dy) = match direction {
                "up" => (0.0, -px),
                "down" => (0.0, px),
                "left" => (-px, 0.0),
                "right" => (px, 0.0),
                other => {
                    return Err(FormatError::new(
                        "scroll_direction",
                        format!("up, down, left or right, found `{other}`"),
                    ))
                }
            };
            out.push(Action::Scroll { dx, dy });
        }
        "wait" => {
            let secs = optional_number(o, "duration")?.unwrap_or(1.0);
            out.push(Action::Wait {
                ms: seconds_to_ms(secs, "duration")?,
            });
        }
        "screenshot" => out.push(Action::Wait { ms: 0 }),
        other => {
            return Err(FormatError::new(
                "action",
                format!("one of {ACTIONS}, found `{other}`"),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_tool_inputs() {
        let p = |s: &str| parse(s).unwrap();
        assert_eq!(
            p(r#"{"action": "left_click", "coordinate": [512, 384]}"#),
            vec![Action::Click { x: 512.0, y: 384.0 }]
        );
        assert_eq!(
            p(r#"{"action": "double_click", "coordinate": [10, 20]}"#),
            vec![Action::DoubleClick { x: 10.0, y: 20.0 }]
        );
        assert_eq!(
            p(r#"{"action": "right_click", "coordinate": [10, 20]}"#),
            vec![Action::RightClick { x: 10.0, y: 20.0 }]
        );
        assert_eq!(
            p(r#"{"action": "mouse_move", "coordinate": [7, 8]}"#),
            vec![Action::Hover { x: 7.0, y: 8.0 }]
        );
        assert_eq!(
            p(r#"{"action": "type", "text": "Record-10"}"#),
            vec![Action::Type {
                text: "Record-10".into()
            }]
        );
        assert_eq!(
            p(r#"{"action": "key", "text": "ctrl+a BackSpace Return"}"#),
            vec![
                Action::Press {
                    key: "Control+a".into()
                },
                Action::Press {
                    key: "Backspace".into()
                },
                Action::Press {
                    key: "Enter".into()
                }
            ]
        );
        assert_eq!(
            p(
                r#"{"action": "scroll", "coordinate": [600, 400], "scroll_direction": "down", "scroll_amount": 3}"#
            ),
            vec![Action::Scroll { dx: 0.0, dy: 300.0 }]
        );
        assert_eq!(
            p(r#"{"action": "wait", "duration": 0.5}"#),
            vec![Action::Wait { ms: 500 }]
        );
        assert_eq!(
            p(r#"{"action": "screenshot"}"#),
            vec![Action::Wait { ms: 0 }]
        );
    }

    #[test]
    fn a_whole_assistant_turn() {
        let turn = r#"[
          {"type": "text", "text": "I'll click the button labelled Item 5."},
          {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "computer",
           "input": {"action": "left_click", "coordinate": [96, 397]}},
          {"type": "tool_use", "id": "toolu_01B", "name": "computer",
           "input": {"action": "key", "text": "Return"}}
        ]"#;
        assert_eq!(
            parse(turn).unwrap(),
            vec![
                Action::Click { x: 96.0, y: 397.0 },
                Action::Press {
                    key: "Enter".into()
                }
            ]
        );
        let message = format!(r#"{{"role": "assistant", "content": {turn}}}"#);
        assert_eq!(parse(&message).unwrap().len(), 2);
    }

    #[test]
    fn errors_name_the_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e(r#"{"action": "left_click"}"#),
            "coordinate: expected [x, y], two numbers, found nothing"
        );
        assert_eq!(
            e(
                r#"[{"type": "tool_use", "input": {"action": "left_click", "coordinate": [1, "2"]}}]"#
            ),
            "[0].input.coordinate[1]: expected a number, found a string"
        );
        assert!(e(r#"{"action": "triple_click", "coordinate": [1, 2]}"#)
            .starts_with("action: expected one of left_click"));
        assert!(
            e(r#"{"action": "key", "text": "Hyper_L"}"#).starts_with("text: expected a key name")
        );
        assert!(
            e(r#"{"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1}"#)
                .starts_with("scroll_direction:")
        );
        assert!(e("click(1, 2)").starts_with("reply: expected"));
        assert!(e(r#"{"action": "left_click", "coordinate": [-1, 2]}"#).starts_with("coordinate:"));
    }

    #[test]
    fn regression_an_absurd_coordinate_or_text_names_its_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e(r#"{"action": "left_click", "coordinate": [1e300, 5]}"#),
            "coordinate: expected a point with coordinates from 0 to 100000, found (1e300, 5)"
        );
        assert!(
            e(r#"{"action": "scroll", "coordinate": [5, 100001], "scroll_direction": "up", "scroll_amount": 1}"#)
                .starts_with("coordinate: expected a point with coordinates from 0 to 100000")
        );
        let long = "A".repeat(10_001);
        assert_eq!(
            e(&format!(r#"{{"action": "type", "text": "{long}"}}"#)),
            "text: expected a text of at most 10000 characters, found 10001"
        );
        assert!(e(&format!(
            r#"{{"action": "key", "text": "{}"}}"#,
            "a ".repeat(5_001)
        ))
        .starts_with("text: expected a text of at most 10000 characters"));
    }

    proptest! {
        #[test]
        fn arbitrary_json_never_panics(s in "\\{\"action\": ?\"[a-z_]{0,12}\"(, ?\"[a-z_]{1,16}\": ?(\\[[-0-9., ]{0,12}\\]|\"[ -~]{0,8}\"|[-0-9.e]{1,6}|null))*\\}") {
            let _ = parse(&s);
        }

        #[test]
        fn clicks_round_trip(x in 0u32..5000, y in 0u32..5000) {
            let s = format!(r#"{{"action": "left_click", "coordinate": [{x}, {y}]}}"#);
            prop_assert_eq!(parse(&s).unwrap(), vec![Action::Click { x: f64::from(x), y: f64::from(y) }]);
        }
    }
}
