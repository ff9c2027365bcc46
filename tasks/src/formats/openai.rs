//! OpenAI computer-use `computer_call` actions.
//!
//! The reply is JSON, one of:
//!
//! - a `computer_call` item with one `action` or a batched `actions` list:
//!   `{"type": "computer_call", "call_id": "call_1", "action": {"type": "click", "button": "left", "x": 450, "y": 300}}`;
//! - a bare action object (`{"type": "click", ...}`);
//! - a list of output items, or a response with an `output` list: `reasoning` and
//!   `message` items are skipped, each `computer_call` converted in order.
//!
//! `x` and `y` are in the pixels of the screenshot the model was sent (image space).
//!
//! | action | faultline |
//! |---|---|
//! | `click {button: left\|right, x, y}` | `click`, `right_click` |
//! | `double_click {x, y}` | `double_click` |
//! | `move {x, y}` | `hover` |
//! | `scroll {x, y, scroll_x, scroll_y}` | `scroll(scroll_x, scroll_y)` |
//! | `keypress {keys}` (one chord: `["CTRL", "A"]`) | `press` |
//! | `type {text}` | `type` |
//! | `wait` (`ms`, default 1000) | `wait` |
//! | `screenshot` | `wait(0)` |
//!
//! `drag` and the `wheel`, `back` and `forward` buttons are errors.

use super::{
    bounded_text, canonical_key, json_value, kind, number, object, optional_number,
    screen_coordinate, string, FormatError,
};
use crate::action::Action;
use serde_json::{Map, Value};

/// Converts an OpenAI computer-use reply.
pub fn parse(raw: &str) -> Result<Vec<Action>, FormatError> {
    let value = json_value(
        raw,
        "a computer_call item, an action or a list of output items",
    )?;
    let mut out = Vec::new();
    let items = |list: &Vec<Value>, prefix: &str, out: &mut Vec<Action>| {
        for (i, it) in list.iter().enumerate() {
            item(it, out).map_err(|e| e.within(&format!("{prefix}[{i}]")))?;
        }
        Ok::<(), FormatError>(())
    };
    match &value {
        Value::Array(list) => items(list, "", &mut out)?,
        Value::Object(o) if !o.contains_key("type") && o.contains_key("output") => {
            match o.get("output") {
                Some(Value::Array(list)) => items(list, "output", &mut out)?,
                Some(v) => {
                    return Err(FormatError::new(
                        "output",
                        format!("a list of output items, found {}", kind(v)),
                    ))
                }
                None => unreachable!("checked above"),
            }
        }
        v => item(v, &mut out).map_err(FormatError::at_top)?,
    }
    Ok(out)
}

fn item(v: &Value, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let o = object(v, "")?;
    match o.get("type").and_then(Value::as_str) {
        Some("reasoning" | "message") => Ok(()),
        Some("computer_call") => match (o.get("action"), o.get("actions")) {
            (Some(a), None) => action(object(a, "action")?, out).map_err(|e| e.within("action")),
            (None, Some(Value::Array(list))) => {
                for (i, a) in list.iter().enumerate() {
                    let field = format!("actions[{i}]");
                    action(object(a, &field)?, out).map_err(|e| e.within(&field))?;
                }
                Ok(())
            }
            (None, Some(v)) => Err(FormatError::new(
                "actions",
                format!("a list of actions, found {}", kind(v)),
            )),
            (Some(_), Some(_)) => Err(FormatError::new(
                "action",
                "either `action` or `actions`, found both",
            )),
            (None, None) => Err(FormatError::new(
                "action",
                "an action object (or an `actions` list), found nothing",
            )),
        },
        _ => action(o, out),
    }
}

const ACTIONS: &str = "click, double_click, move, scroll, keypress, type, wait or screenshot";

fn point(o: &Map<String, Value>) -> Result<(f64, f64), FormatError> {
    Ok((
        screen_coordinate(number(o, "x")?, "x")?,
        screen_coordinate(number(o, "y")?, "y")?,
    ))
}

fn action(o: &Map<String, Value>, out: &mut Vec<Action>) -> Result<(), FormatError> {
    let kind_ = string(o, "type")?;
    match kind_ {
        "click" => {
            let (x, y) = point(o)?;
            let button = match o.get("button") {
                None | Some(Value::Null) => "left",
                Some(Value::String(b)) => b.as_str(),
                Some(v) => {
                    return Err(FormatError::new(
                        "button",
                        format!("left or right, found {}", kind(v)),
                    ))
                }
            };
            out.push(match button {
                "left" => Action::Click { x, y },
                "right" => Action::RightClick { x, y },
                other => {
                    return Err(FormatError::new(
                        "button",
                        format!("left or right, found `{other}`"),
                    ))
                }
            });
        }
        "double_click" => {
            let (x, y) = point(o)?;
            out.push(Action::DoubleClick { x, y });
        }
        "move" => {
            let (x, y) = point(o)?;
            out.push(Action::Hover { x, y });
        }
        "scroll" => {
            point(o)?;
            out.push(Action::Scroll {
                dx: number(o, "scroll_x")?,
                dy: number(o, "scroll_y")?,
            });
        }
        "keypress" => {
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
            let key = canonical_key(names).map_err(|e| FormatError::new("keys", e))?;
            out.push(Action::Press { key });
        }
        "type" => out.push(Action::Type {
            text: bounded_text(string(o, "text")?, "text")?,
        }),
        "wait" => {
            let ms = optional_number(o, "ms")?.unwrap_or(1000.0);
            if !(0.0..=3_600_000.0).contains(&ms) || ms.fract() != 0.0 {
                return Err(FormatError::new(
                    "ms",
                    format!("a whole number of milliseconds up to an hour, found {ms}"),
                ));
            }
            out.push(Action::Wait { ms: ms as u64 });
        }
        "screenshot" => out.push(Action::Wait { ms: 0 }),
        other => {
            return Err(FormatError::new(
                "type",
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
    fn golden_computer_calls() {
        let call = r#"{
          "type": "computer_call",
          "id": "cu_67cc",
          "call_id": "call_zw3",
          "action": {"type": "click", "button": "left", "x": 156, "y": 50},
          "pending_safety_checks": [],
          "status": "completed"
        }"#;
        assert_eq!(
            parse(call).unwrap(),
            vec![Action::Click { x: 156.0, y: 50.0 }]
        );
        let batch = r#"{"type": "computer_call", "call_id": "call_2", "actions": [
          {"type": "double_click", "x": 10, "y": 20},
          {"type": "click", "button": "right", "x": 1, "y": 2},
          {"type": "move", "x": 3, "y": 4},
          {"type": "scroll", "x": 600, "y": 400, "scroll_x": 0, "scroll_y": 250},
          {"type": "keypress", "keys": ["CTRL", "A"]},
          {"type": "type", "text": "Record-10"},
          {"type": "keypress", "keys": ["ENTER"]},
          {"type": "wait"},
          {"type": "screenshot"}
        ]}"#;
        assert_eq!(
            parse(batch).unwrap(),
            vec![
                Action::DoubleClick { x: 10.0, y: 20.0 },
                Action::RightClick { x: 1.0, y: 2.0 },
                Action::Hover { x: 3.0, y: 4.0 },
                Action::Scroll { dx: 0.0, dy: 250.0 },
                Action::Press {
                    key: "Control+a".into()
                },
                Action::Type {
                    text: "Record-10".into()
                },
                Action::Press {
                    key: "Enter".into()
                },
                Action::Wait { ms: 1000 },
                Action::Wait { ms: 0 },
            ]
        );
        let output = r#"{"output": [
          {"type": "reasoning", "id": "rs_1", "summary": []},
          {"type": "computer_call", "call_id": "c", "action": {"type": "click", "button": "left", "x": 5, "y": 6}}
        ]}"#;
        assert_eq!(
            parse(output).unwrap(),
            vec![Action::Click { x: 5.0, y: 6.0 }]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e(
                r#"{"type": "computer_call", "action": {"type": "click", "button": "wheel", "x": 1, "y": 2}}"#
            ),
            "action.button: expected left or right, found `wheel`"
        );
        assert_eq!(
            e(r#"[{"type": "computer_call", "actions": [{"type": "move", "x": 1}]}]"#),
            "[0].actions[0].y: expected a number, found nothing"
        );
        assert!(e(r#"{"type": "drag", "path": []}"#).starts_with("type: expected one of click"));
        assert!(e(r#"{"type": "keypress", "keys": ["CTRL", 3]}"#).starts_with("keys[1]:"));
        assert!(e("[1]").starts_with("[0]: expected an object"));
        assert!(e("7").starts_with("reply: expected an object"));
    }

    #[test]
    fn regression_an_absurd_coordinate_or_text_names_its_field() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e(
                r#"{"type": "computer_call", "action": {"type": "click", "button": "left", "x": 1e300, "y": 5}}"#
            ),
            "action.x: expected a coordinate from 0 to 100000, found 1e300"
        );
        assert_eq!(
            e(r#"{"type": "move", "x": 5, "y": 100000.5}"#),
            "y: expected a coordinate from 0 to 100000, found 100000.5"
        );
        let long = "A".repeat(10_001);
        assert_eq!(
            e(&format!(r#"{{"type": "type", "text": "{long}"}}"#)),
            "text: expected a text of at most 10000 characters, found 10001"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_json_never_panics(s in "\\{\"type\": ?\"[a-z_]{0,12}\"(, ?\"[a-z_]{1,8}\": ?(\\[[-0-9., \"A-Z]{0,12}\\]|\"[ -~]{0,8}\"|[-0-9.e]{1,6}|null|\\{\\}))*\\}") {
            let _ = parse(&s);
        }

        #[test]
        fn clicks_round_trip(x in 0u32..5000, y in 0u32..5000) {
            let s = format!(r#"{{"type": "computer_call", "action": {{"type": "click", "button": "left", "x": {x}, "y": {y}}}}}"#);
            prop_assert_eq!(parse(&s).unwrap(), vec![Action::Click { x: f64::from(x), y: f64::from(y) }]);
        }
    }
}
