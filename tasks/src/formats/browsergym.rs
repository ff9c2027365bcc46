//! BrowserGym's coordinate action strings.
//!
//! The reply is text holding Python-style calls from BrowserGym's coordinate action set,
//! one per line; other lines (the model's reasoning, code fences) are skipped, as in
//! faultline's own grammar. `x` and `y` are in the pixels of the screenshot the model
//! was sent (image space).
//!
//! | call | faultline |
//! |---|---|
//! | `mouse_click(x, y, button="left"\|"right")` | `click`, `right_click` |
//! | `mouse_dblclick(x, y)` | `double_click` |
//! | `mouse_move(x, y)` | `hover` |
//! | `keyboard_type("...")`, `keyboard_insert_text("...")` | `type` |
//! | `keyboard_press("Enter")` (Playwright names: `Control+a`, `ControlOrMeta+a`) | `press` |
//! | `scroll(dx, dy)` | `scroll` |
//! | `noop(wait_ms=1000)` | `wait` |
//! | `send_msg_to_user("...")` | `answer` |
//! | `report_infeasible("...")` | `stop` |
//!
//! Drags, mouse and key down/up, and file uploads are errors.

use super::split_chord;
use super::{bounded_text, canonical_key, leading_call_name, parse_py_call, screen_coordinate};
use super::{FormatError, PyCall};
use crate::action::Action;

const SUPPORTED: &[&str] = &[
    "mouse_click",
    "mouse_dblclick",
    "mouse_move",
    "keyboard_type",
    "keyboard_insert_text",
    "keyboard_press",
    "scroll",
    "noop",
    "send_msg_to_user",
    "report_infeasible",
];

const UNSUPPORTED: &[&str] = &[
    "mouse_down",
    "mouse_up",
    "mouse_drag_and_drop",
    "mouse_upload_file",
    "keyboard_down",
    "keyboard_up",
];

/// Converts a BrowserGym coordinate-action reply.
pub fn parse(raw: &str) -> Result<Vec<Action>, FormatError> {
    let mut out = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        let line = line.trim();
        let Some(name) = leading_call_name(line) else {
            continue;
        };
        let n = i + 1;
        if UNSUPPORTED.contains(&name) {
            return Err(FormatError::new(
                format!("line {n}"),
                format!(
                    "one of {}, found `{name}` (not supported)",
                    SUPPORTED.join(", ")
                ),
            ));
        }
        if !SUPPORTED.contains(&name) {
            continue;
        }
        let call = parse_py_call(line).map_err(|e| FormatError::new(format!("line {n}"), e))?;
        out.push(
            action(&call).map_err(|e| {
                FormatError::new(format!("line {n}: {name}({})", e.field), e.expected)
            })?,
        );
    }
    Ok(out)
}

fn action(c: &PyCall) -> Result<Action, FormatError> {
    let point = |c: &PyCall| -> Result<(f64, f64), FormatError> {
        Ok((
            screen_coordinate(c.num(0, "x")?, "x")?,
            screen_coordinate(c.num(1, "y")?, "y")?,
        ))
    };
    Ok(match c.name.as_str() {
        "mouse_click" => {
            c.at_most(3)?;
            let (x, y) = point(c)?;
            match c.arg(2, "button") {
                None => Action::Click { x, y },
                Some(_) => match c.str(2, "button")? {
                    "left" => Action::Click { x, y },
                    "right" => Action::RightClick { x, y },
                    other => {
                        return Err(FormatError::new(
                            "button",
                            format!("\"left\" or \"right\", found {other:?}"),
                        ))
                    }
                },
            }
        }
        "mouse_dblclick" => {
            c.at_most(3)?;
            let (x, y) = point(c)?;
            if c.arg(2, "button").is_some() && c.str(2, "button")? != "left" {
                return Err(FormatError::new("button", "\"left\" for a double click"));
            }
            Action::DoubleClick { x, y }
        }
        "mouse_move" => {
            c.at_most(2)?;
            let (x, y) = point(c)?;
            Action::Hover { x, y }
        }
        "keyboard_type" | "keyboard_insert_text" => {
            c.at_most(1)?;
            Action::Type {
                text: bounded_text(c.str(0, "text")?, "text")?,
            }
        }
        "keyboard_press" => {
            c.at_most(1)?;
            let key = c.str(0, "key")?;
            let parts: Vec<&str> = split_chord(key)
                .into_iter()
                .map(|p| if p == "ControlOrMeta" { "Control" } else { p })
                .collect();
            Action::Press {
                key: canonical_key(parts).map_err(|e| FormatError::new("key", e))?,
            }
        }
        "scroll" => {
            c.at_most(2)?;
            Action::Scroll {
                dx: c.num(0, "delta_x")?,
                dy: c.num(1, "delta_y")?,
            }
        }
        "noop" => {
            c.at_most(1)?;
            let ms = match c.arg(0, "wait_ms") {
                None => 1000.0,
                Some(_) => c.num(0, "wait_ms")?,
            };
            if !(0.0..=3_600_000.0).contains(&ms) || ms.fract() != 0.0 {
                return Err(FormatError::new(
                    "wait_ms",
                    format!("a whole number of milliseconds up to an hour, found {ms}"),
                ));
            }
            Action::Wait { ms: ms as u64 }
        }
        "send_msg_to_user" => {
            c.at_most(1)?;
            Action::Answer {
                value: bounded_text(c.str(0, "text")?, "text")?,
            }
        }
        "report_infeasible" => {
            c.at_most(1)?;
            Action::Stop
        }
        _ => unreachable!("only supported names reach here"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_action_strings() {
        let reply = "The button \"Item 5\" is at the left.\n```python\nmouse_click(96.5, 397)\n```\nmouse_dblclick(1, 2)\nmouse_click(3, 4, button=\"right\")\nmouse_move(5, 6)\nkeyboard_type(\"Record-10\")\nkeyboard_press(\"ControlOrMeta+a\")\nkeyboard_press('Enter')\nscroll(0, 200)\nnoop(wait_ms=500)\nnoop()\nsend_msg_to_user(\"The value is 42\")\nreport_infeasible(\"no such item\")";
        assert_eq!(
            parse(reply).unwrap(),
            vec![
                Action::Click { x: 96.5, y: 397.0 },
                Action::DoubleClick { x: 1.0, y: 2.0 },
                Action::RightClick { x: 3.0, y: 4.0 },
                Action::Hover { x: 5.0, y: 6.0 },
                Action::Type {
                    text: "Record-10".into()
                },
                Action::Press {
                    key: "Control+a".into()
                },
                Action::Press {
                    key: "Enter".into()
                },
                Action::Scroll { dx: 0.0, dy: 200.0 },
                Action::Wait { ms: 500 },
                Action::Wait { ms: 1000 },
                Action::Answer {
                    value: "The value is 42".into()
                },
                Action::Stop,
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_argument() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("ok\nmouse_click(1, \"2\")"),
            "line 2: mouse_click(y): expected a number, found the string \"2\""
        );
        assert!(
            e("mouse_click(1, 2, button=\"middle\")").starts_with("line 1: mouse_click(button):")
        );
        assert!(e("mouse_drag_and_drop(1, 2, 3, 4)").contains("not supported"));
        assert!(e("keyboard_press(\"Hyper\")").starts_with("line 1: keyboard_press(key):"));
        assert!(e("mouse_click(1, 2").starts_with("line 1: expected"));
        assert!(parse("nothing here").unwrap().is_empty());
    }

    #[test]
    fn regression_an_absurd_coordinate_or_text_names_its_line_and_argument() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("ok\nmouse_click(1e300, 5)"),
            "line 2: mouse_click(x): expected a coordinate from 0 to 100000, found 1e300"
        );
        assert!(
            e("mouse_move(5, 100001)").starts_with("line 1: mouse_move(y): expected a coordinate")
        );
        let long = "A".repeat(10_001);
        assert_eq!(
            e(&format!("keyboard_type(\"{long}\")")),
            "line 1: keyboard_type(text): expected a text of at most 10000 characters, found 10001"
        );
        assert!(e(&format!("send_msg_to_user('{long}')"))
            .starts_with("line 1: send_msg_to_user(text): expected a text of at most"));
    }

    proptest! {
        #[test]
        fn arbitrary_calls_never_panic(s in "(mouse_click|mouse_move|keyboard_press|scroll|noop|send_msg_to_user)\\(\\PC{0,30}") {
            let _ = parse(&s);
        }

        #[test]
        fn clicks_round_trip(x in 0u32..5000, y in 0u32..5000) {
            let s = format!("mouse_click({x}, {y})");
            prop_assert_eq!(parse(&s).unwrap(), vec![Action::Click { x: f64::from(x), y: f64::from(y) }]);
        }

        #[test]
        fn typed_text_round_trips(text in "[ -~]{0,30}") {
            let quoted = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(parse(&format!("keyboard_type({quoted})")).unwrap(), vec![Action::Type { text }]);
        }
    }
}
