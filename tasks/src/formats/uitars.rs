//! UI-TARS `Action:` lines.
//!
//! The reply is the model's text: `Thought: ...` then `Action: ...`, with one call per
//! line after the last `Action:` (the whole text when there is no `Action:`). Points are
//! `start_box='(x,y)'` (a box `(x1,y1,x2,y2)` means its centre; `<|box_start|>` and
//! `<|box_end|>` around it are allowed) or `point='<point>x y</point>'`.
//!
//! UI-TARS writes points on a 0–1000 grid over the screenshot, so its default space is
//! `normalized_1000`; UI-TARS-1.5's absolute pixels are the same text in `image` space
//! (the decision says which).
//!
//! | call | faultline |
//! |---|---|
//! | `click(start_box=...)`, `left_single`, `left_double`, `right_single` | `click`, `double_click`, `right_click` |
//! | `hover(start_box=...)` | `hover` |
//! | `type(content='...')` (a trailing `\n` submits) | `type` (then `press("Enter")`) |
//! | `hotkey(key='ctrl c')` | `press("Control+c")` |
//! | `scroll(start_box=..., direction='down')` | `scroll`, [`super::UITARS_SCROLL_PIXELS`] |
//! | `wait()` | `wait(5000)` (UI-TARS's prompt: sleep 5 s, then look) |
//! | `finished(content='...')`, `finished()`, `call_user()` | `answer`, `stop`, `stop` |
//!
//! `drag` and anything else is an error.

use super::split_chord;
use super::{
    bounded_text, canonical_key, leading_call_name, parse_py_call, screen_coordinate, screen_point,
};
use super::{FormatError, PyArg, PyCall};
use crate::action::Action;

const SUPPORTED: &str = "click, left_single, left_double, right_single, hover, type, hotkey, scroll, wait, finished or call_user";

/// Converts a UI-TARS reply.
pub fn parse(raw: &str) -> Result<Vec<Action>, FormatError> {
    let (offset, body) = match raw.rfind("Action:") {
        Some(at) => (
            raw[..at].matches('\n').count(),
            &raw[at + "Action:".len()..],
        ),
        None => (0, raw),
    };
    let mut out = Vec::new();
    for (i, line) in body.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let n = offset + i + 1;
        let Some(name) = leading_call_name(line) else {
            if out.is_empty() && i == 0 {
                return Err(FormatError::new(
                    format!("line {n}"),
                    format!("a call ({SUPPORTED}) after `Action:`, found `{line}`"),
                ));
            }
            continue;
        };
        let call = parse_py_call(line).map_err(|e| FormatError::new(format!("line {n}"), e))?;
        action(&call, &mut out)
            .map_err(|e| FormatError::new(format!("line {n}: {name}({})", e.field), e.expected))?;
    }
    Ok(out)
}

/// The point a `start_box` or `point` argument names.
fn point(c: &PyCall) -> Result<(f64, f64), FormatError> {
    let (key, text) = match (
        c.arg(0, "start_box"),
        c.kwargs.iter().find(|(k, _)| k == "point"),
    ) {
        (_, Some((_, PyArg::Str(s)))) => ("point", s.as_str()),
        (Some(PyArg::Str(s)), _) => ("start_box", s.as_str()),
        (Some(PyArg::Num(v)), _) => {
            return Err(FormatError::new(
                "start_box",
                format!("a quoted box such as '(x,y)', found the number {v}"),
            ))
        }
        _ => {
            return Err(FormatError::new(
                "start_box",
                "a box such as '(x,y)', found nothing",
            ))
        }
    };
    let cleaned: String = text
        .replace("<|box_start|>", "")
        .replace("<|box_end|>", "")
        .replace("<point>", "")
        .replace("</point>", "")
        .chars()
        .map(|c| {
            if matches!(c, '(' | ')' | '[' | ']' | ',') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let nums: Result<Vec<f64>, _> = cleaned.split_whitespace().map(str::parse::<f64>).collect();
    let expected = "'(x,y)' or a box '(x1,y1,x2,y2)'";
    let nums = nums.map_err(|_| FormatError::new(key, format!("{expected}, found {text:?}")))?;
    if nums.iter().any(|v| !v.is_finite()) {
        return Err(FormatError::new(key, format!("{expected}, found {text:?}")));
    }
    // Every corner of a box is a point the model named, not only its centre.
    for v in &nums {
        screen_coordinate(*v, key)?;
    }
    let (x, y) = match nums.as_slice() {
        [x, y] => (*x, *y),
        [x1, y1, x2, y2] => ((x1 + x2) / 2.0, (y1 + y2) / 2.0),
        _ => return Err(FormatError::new(key, format!("{expected}, found {text:?}"))),
    };
    screen_point(x, y, key)
}

fn action(c: &PyCall, out: &mut Vec<Action>) -> Result<(), FormatError> {
    match c.name.as_str() {
        "click" | "left_single" | "left_double" | "right_single" | "hover" => {
            c.at_most(1)?;
            let (x, y) = point(c)?;
            out.push(match c.name.as_str() {
                "left_double" => Action::DoubleClick { x, y },
                "right_single" => Action::RightClick { x, y },
                "hover" => Action::Hover { x, y },
                _ => Action::Click { x, y },
            });
        }
        "type" => {
            c.at_most(1)?;
            let content = c.str(0, "content")?;
            match content.strip_suffix('\n') {
                Some(text) => {
                    out.push(Action::Type {
                        text: bounded_text(text, "content")?,
                    });
                    out.push(Action::Press {
                        key: "Enter".into(),
                    });
                }
                None => out.push(Action::Type {
                    text: bounded_text(content, "content")?,
                }),
            }
        }
        "hotkey" => {
            c.at_most(1)?;
            let key = c.str(0, "key")?;
            let parts: Vec<&str> = match key.split_whitespace().collect::<Vec<_>>() {
                one if one.len() == 1 => split_chord(one[0]),
                many => many,
            };
            out.push(Action::Press {
                key: canonical_key(parts).map_err(|e| FormatError::new("key", e))?,
            });
        }
        "scroll" => {
            c.at_most(2)?;
            if c.arg(0, "start_box").is_some() || c.kwargs.iter().any(|(k, _)| k == "point") {
                point(c)?;
            }
            let d = super::UITARS_SCROLL_PIXELS;
            let direction = c.str(1, "direction")?;
            let (dx, dy) = match direction {
                "down" => (0.0, d),
                "up" => (0.0, -d),
                "right" => (d, 0.0),
                "left" => (-d, 0.0),
                other => {
                    return Err(FormatError::new(
                        "direction",
                        format!("'down', 'up', 'right' or 'left', found {other:?}"),
                    ))
                }
            };
            out.push(Action::Scroll { dx, dy });
        }
        "wait" => {
            c.at_most(0)?;
            out.push(Action::Wait { ms: 5000 });
        }
        "finished" => {
            c.at_most(1)?;
            match c.arg(0, "content") {
                None => out.push(Action::Stop),
                Some(_) => out.push(Action::Answer {
                    value: bounded_text(c.str(0, "content")?, "content")?,
                }),
            }
        }
        "call_user" => {
            c.at_most(0)?;
            out.push(Action::Stop);
        }
        other => {
            return Err(FormatError::new(
                "action",
                format!("one of {SUPPORTED}, found `{other}`"),
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
    fn golden_action_lines() {
        let reply = "Thought: The button \"Item 5\" is on the left of the grid; I'll click it.\nAction: click(start_box='<|box_start|>(80,496)<|box_end|>')";
        assert_eq!(
            parse(reply).unwrap(),
            vec![Action::Click { x: 80.0, y: 496.0 }]
        );
        let reply = "Thought: type the record and submit.\nAction: left_double(start_box='(10,20,30,40)')\nright_single(start_box='(1,2)')\nhover(point='<point>5 6</point>')\ntype(content='Record-10\\n')\nhotkey(key='ctrl a')\nscroll(start_box='(500,500)', direction='down')\nwait()\nfinished(content='42')";
        assert_eq!(
            parse(reply).unwrap(),
            vec![
                Action::DoubleClick { x: 20.0, y: 30.0 },
                Action::RightClick { x: 1.0, y: 2.0 },
                Action::Hover { x: 5.0, y: 6.0 },
                Action::Type {
                    text: "Record-10".into()
                },
                Action::Press {
                    key: "Enter".into()
                },
                Action::Press {
                    key: "Control+a".into()
                },
                Action::Scroll { dx: 0.0, dy: 500.0 },
                Action::Wait { ms: 5000 },
                Action::Answer { value: "42".into() },
            ]
        );
        assert_eq!(parse("Action: finished()").unwrap(), vec![Action::Stop]);
    }

    #[test]
    fn errors_name_the_line_and_argument() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("Thought: drag it\nAction: drag(start_box='(1,2)', end_box='(3,4)')"),
            format!("line 2: drag(action): expected one of {SUPPORTED}, found `drag`")
        );
        assert!(
            e("Action: click(start_box='(1)')").starts_with("line 1: click(start_box): expected")
        );
        assert!(e("Action: scroll(direction='sideways')").starts_with("line 1: scroll(direction):"));
        assert!(e("Action: I will click").starts_with("line 1: expected a call"));
    }

    #[test]
    fn regression_an_absurd_coordinate_or_text_names_its_line_and_argument() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("Thought: there.\nAction: click(start_box='(1e300,5)')"),
            "line 2: click(start_box): expected a coordinate from 0 to 100000, found 1e300"
        );
        // A box corner far out is refused even when the centre would be in bounds.
        assert!(e("Action: click(start_box='(0,0,150000,10)')")
            .starts_with("line 1: click(start_box): expected a coordinate"));
        assert!(e("Action: hover(point='<point>5 100001</point>')")
            .starts_with("line 1: hover(point): expected a coordinate"));
        let long = "A".repeat(10_001);
        assert_eq!(
            e(&format!("Action: type(content='{long}\\n')")),
            "line 1: type(content): expected a text of at most 10000 characters, found 10001"
        );
        assert!(e(&format!("Action: finished(content='{long}')"))
            .starts_with("line 1: finished(content): expected a text of at most"));
    }

    proptest! {
        #[test]
        fn arbitrary_actions_never_panic(s in "(Thought: [ -~]{0,10}\n)?Action: (click|type|hotkey|scroll|finished|wait)\\(\\PC{0,30}") {
            let _ = parse(&s);
        }

        #[test]
        fn clicks_round_trip(x in 0u32..=1000, y in 0u32..=1000) {
            let s = format!("Thought: here.\nAction: click(start_box='({x},{y})')");
            prop_assert_eq!(parse(&s).unwrap(), vec![Action::Click { x: f64::from(x), y: f64::from(y) }]);
        }
    }
}
