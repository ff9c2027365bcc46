//! Qwen-VL `computer_use` tool calls.
//!
//! The reply is the model's text with one or more
//! `<tool_call>{"name": "computer_use", "arguments": {...}}</tool_call>` blocks (text
//! around them is skipped), or the JSON itself: a call object, its `arguments` alone, or
//! a list of calls. `arguments` may be a JSON string holding the object, as chat APIs
//! return function arguments.
//!
//! Qwen2.5-VL writes `coordinate` in absolute pixels of the resized image it was sent
//! (`image` space, the default); Qwen3-VL writes it on a 0–1000 grid (the same text in
//! `normalized_1000` space; the decision says which).
//!
//! | action | faultline |
//! |---|---|
//! | `left_click`, `double_click`, `right_click` `{coordinate}` | `click`, `double_click`, `right_click` |
//! | `mouse_move {coordinate}` | `hover` |
//! | `type {text}` | `type` |
//! | `key {keys: ["ctrl", "a"]}` | `press("Control+a")` |
//! | `scroll {pixels}` (positive scrolls up), `hscroll {pixels}` (positive scrolls right) | `scroll` |
//! | `wait {time}` (seconds) | `wait` |
//! | `answer {text}` | `answer` |
//! | `terminate {status}` | `stop` |
//!
//! Drags, middle and triple clicks are errors.

use super::{
    bounded_text, canonical_key, coordinate, json_value, kind, number, object, seconds_to_ms,
    string, FormatError,
};
use crate::action::Action;
use serde_json::{Map, Value};

/// Converts a Qwen-VL `computer_use` reply.
pub fn parse(raw: &str) -> Result<Vec<Action>, FormatError> {
    let trimmed = raw.trim();
    let mut out = Vec::new();
    if !trimmed.contains("<tool_call>") {
        if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
            return Err(FormatError::new(
                "reply",
                "<tool_call>{\"name\": \"computer_use\", \"arguments\": {...}}</tool_call> blocks or their JSON, found neither",
            ));
        }
        let value = json_value(trimmed, "a computer_use tool call")?;
        match &value {
            Value::Array(calls) => {
                for (i, c) in calls.iter().enumerate() {
                    call(c, &mut out).map_err(|e| e.within(&format!("[{i}]")))?;
                }
            }
            v => call(v, &mut out).map_err(FormatError::at_top)?,
        }
        return Ok(out);
    }
    let mut rest = trimmed;
    let mut i = 0;
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let field = format!("tool_call[{i}]");
        let end = after.find("</tool_call>").ok_or_else(|| {
            FormatError::new(
                field.as_str(),
                "a closing </tool_call>, found the end of the reply",
            )
        })?;
        let body = after[..end].trim();
        let value: Value = serde_json::from_str(body).map_err(|e| {
            FormatError::new(
                field.as_str(),
                format!("a JSON tool call, found text that is not JSON ({e})"),
            )
        })?;
        call(&value, &mut out).map_err(|e| e.within(&field))?;
        rest = &after[end + "</tool_call>".len()..];
        i += 1;
    }
    Ok(out)
}

fn call(v: &Value, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let o = object(v, "")?;
    if o.contains_key("action") {
        return arguments(o, out);
    }
    let name = string(o, "name")?;
    if name != "computer_use" {
        return Err(FormatError::new(
            "name",
            format!("\"computer_use\", found {name:?}"),
        ));
    }
    match o.get("arguments") {
        Some(Value::Object(a)) => arguments(a, out).map_err(|e| e.within("arguments")),
        Some(Value::String(s)) => {
            let parsed: Value = serde_json::from_str(s).map_err(|e| {
                FormatError::new(
                    "arguments",
                    format!("a JSON object, found a string that is not JSON ({e})"),
                )
            })?;
            arguments(object(&parsed, "arguments")?, out).map_err(|e| e.within("arguments"))
        }
        Some(v) => Err(FormatError::new(
            "arguments",
            format!("an object, found {}", kind(v)),
        )),
        None => Err(FormatError::new("arguments", "an object, found nothing")),
    }
}

const ACTIONS: &str = "left_click, double_click, right_click, mouse_move, type, key, scroll, hscroll, wait, answer or terminate";

fn arguments(o: &Map<String, Value>, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let action = string(o, "action")?;
    match action {
        "left_click" | "double_click" | "right_click" | "mouse_move" => {
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
            let keys = match o.get("keys") {
                Some(Value::Array(k)) => k,
                Some(v) => {
                    return Err(FormatError::new(
                        "keys",
                        format!("a list of key names, found {}", kind(v)),
                    ))
                }
                None => {
                    return Err(FormatError::new(
                        "keys",
                        "a list of key names, found nothing",
                    ))
                }
            };
            let mut names = Vec::with_capacity(keys.len());
            for (i, k) in keys.iter().enumerate() {
                names.push(k.as_str().ok_or_else(|| {
                    FormatError::new(
                        format!("keys[{i}]"),
                        format!("a key name, found {}", kind(k)),
                    )
                })?);
            }
            out.push(Action::Press {
                key: canonical_key(names).map_err(|e| FormatError::new("keys", e))?,
            });
        }
        "scroll" | "hscroll" => {
            if o.contains_key("coordinate") {
                coordinate(o, "coordinate")?;
            }
            let px = number(o, "pixels")?;
            out.push(if action == "scroll" {
                Action::Scroll { dx: 0.0, dy: -px }
            } else {
                Action::Scroll { dx: px, dy: 0.0 }
            });
        }
        "wait" => out.push(Action::Wait {
            ms: seconds_to_ms(number(o, "time")?, "time")?,
        }),
        "answer" => out.push(Action::Answer {
            value: bounded_text(string(o, "text")?, "text")?,
        }),
        "terminate" => {
            let status = string(o, "status")?;
            if !matches!(status, "success" | "failure") {
                return Err(FormatError::new(
                    "status",
                    format!("\"success\" or \"failure\", found {status:?}"),
                ));
            }
            out.push(Action::Stop);
        }
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
    fn golden_tool_calls() {
        let reply = "I need to click the button labelled Item 5.\n<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {\"action\": \"left_click\", \"coordinate\": [77, 318]}}\n</tool_call>";
        assert_eq!(
            parse(reply).unwrap(),
            vec![Action::Click { x: 77.0, y: 318.0 }]
        );
        let reply = r#"<tool_call>
{"name": "computer_use", "arguments": {"action": "double_click", "coordinate": [1, 2]}}
</tool_call>
<tool_call>
{"name": "computer_use", "arguments": "{\"action\": \"key\", \"keys\": [\"ctrl\", \"a\"]}"}
</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "type", "text": "Record-10"}}</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": ["Return"]}}</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -300}}</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 2}}</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "answer", "text": "42"}}</tool_call>
<tool_call>{"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}</tool_call>"#;
        assert_eq!(
            parse(reply).unwrap(),
            vec![
                Action::DoubleClick { x: 1.0, y: 2.0 },
                Action::Press {
                    key: "Control+a".into()
                },
                Action::Type {
                    text: "Record-10".into()
                },
                Action::Press {
                    key: "Enter".into()
                },
                Action::Scroll { dx: 0.0, dy: 300.0 },
                Action::Wait { ms: 2000 },
                Action::Answer { value: "42".into() },
                Action::Stop,
            ]
        );
        assert_eq!(
            parse(r#"{"action": "right_click", "coordinate": [3, 4]}"#).unwrap(),
            vec![Action::RightClick { x: 3.0, y: 4.0 }]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("<tool_call>{\"name\": \"computer_use\", \"arguments\": {\"action\": \"left_click\"}}</tool_call>"),
            "tool_call[0].arguments.coordinate: expected [x, y], two numbers, found nothing"
        );
        assert!(
            e("<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>")
                .starts_with("tool_call[0].name:")
        );
        assert!(e("<tool_call>{\"name\": ").starts_with("tool_call[0]: expected a closing"));
        assert!(e("click(1, 2)").starts_with("reply: expected <tool_call>"));
        assert!(e(r#"{"action": "left_click_drag", "coordinate": [1, 2]}"#)
            .starts_with("action: expected one of"));
    }

    #[test]
    fn regression_an_absurd_coordinate_or_text_names_its_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e(r#"<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1e300, 5]}}</tool_call>"#),
            "tool_call[0].arguments.coordinate: expected a point with coordinates from 0 to 100000, found (1e300, 5)"
        );
        let long = "A".repeat(10_001);
        assert_eq!(
            e(&format!(r#"{{"action": "type", "text": "{long}"}}"#)),
            "text: expected a text of at most 10000 characters, found 10001"
        );
        assert!(e(&format!(r#"{{"action": "answer", "text": "{long}"}}"#))
            .starts_with("text: expected a text of at most"));
    }

    proptest! {
        #[test]
        fn arbitrary_calls_never_panic(s in "(<tool_call>)?\\{\"name\": \"computer_use\", \"arguments\": \\{\"action\": \"[a-z_]{0,12}\"\\PC{0,30}(</tool_call>)?") {
            let _ = parse(&s);
        }

        #[test]
        fn clicks_round_trip(x in 0u32..5000, y in 0u32..5000) {
            let s = format!("<tool_call>\n{{\"name\": \"computer_use\", \"arguments\": {{\"action\": \"left_click\", \"coordinate\": [{x}, {y}]}}}}\n</tool_call>");
            prop_assert_eq!(parse(&s).unwrap(), vec![Action::Click { x: f64::from(x), y: f64::from(y) }]);
        }
    }
}
