//! The reply grammar: a model's reply text -> typed actions.
//!
//! A reply holds one action per line, written as a call:
//!
//! ```text
//! click(450, 300)      hover(120, 88)      scroll(0, 400)
//! type("Record-10")    press("Enter")      wait(500)
//! answer("42")         stop()
//! double_click(450, 300)   right_click(450, 300)   press("Control+a")
//! ```
//!
//! `press` takes one key name (`Enter`, `Tab`, `Escape`, `Backspace`, `Delete`, arrows,
//! `Home`, `End`, `PageUp`, `PageDown`, `Space`, or a single character), optionally
//! after modifiers joined with `+` (`Control`, `Alt`, `Shift`, `Meta`): `Control+a`.
//!
//! Coordinates are in **image** pixels (the screenshot the model saw). Lines that do not
//! start with a known verb are commentary and are skipped, since real models explain
//! themselves; a line that starts with a verb but is malformed is an error, because
//! silently skipping a broken action is exactly the kind of fault this project measures.
//!
//! Bounds. A point's coordinates are finite, not negative and at most
//! [`MAX_COORDINATE`] (100 000) in the reply's space. The bound is absolute, not relative
//! to the image, because the parser does not know the image: it is far above any real
//! screenshot (or the 0–1000 grid) and far below the values that matter — Chromium stops
//! answering an input event whose coordinates overflow its single-precision floats
//! (`click(1e300, 5)`), which would pass for the harness's failure. The quoted text of
//! `type`, `press` and `answer` is at most [`MAX_TEXT_CHARS`] (10 000) characters.
//! Beyond either bound the reply is the agent's parse error, like any malformed call.

use crate::geometry::Point;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One typed action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// A left click at (`x`, `y`).
    Click {
        /// Horizontal coordinate, in pixels from the left edge (image pixels as parsed).
        x: f64,
        /// Vertical coordinate, in pixels from the top edge (image pixels as parsed).
        y: f64,
    },
    /// Two left clicks in quick succession (the second with click count 2).
    DoubleClick {
        /// Horizontal coordinate, in pixels from the left edge (image pixels as parsed).
        x: f64,
        /// Vertical coordinate, in pixels from the top edge (image pixels as parsed).
        y: f64,
    },
    /// A right-button click.
    RightClick {
        /// Horizontal coordinate, in pixels from the left edge (image pixels as parsed).
        x: f64,
        /// Vertical coordinate, in pixels from the top edge (image pixels as parsed).
        y: f64,
    },
    /// The pointer moves to (`x`, `y`) without clicking.
    Hover {
        /// Horizontal coordinate, in pixels from the left edge (image pixels as parsed).
        x: f64,
        /// Vertical coordinate, in pixels from the top edge (image pixels as parsed).
        y: f64,
    },
    /// Text typed into the focused element.
    Type {
        /// The text, typed as is.
        text: String,
    },
    /// One key press, optionally with modifiers (see the module docs).
    Press {
        /// The key name, after any `+`-joined modifiers, e.g. `Control+a`.
        key: String,
    },
    /// A scroll by (`dx`, `dy`).
    Scroll {
        /// Horizontal scroll distance, in pixels (positive: right).
        dx: f64,
        /// Vertical scroll distance, in pixels (positive: down).
        dy: f64,
    },
    /// A pause before the next action.
    Wait {
        /// How long to wait, in milliseconds.
        ms: u64,
    },
    /// The agent's answer to the task's question.
    Answer {
        /// The answer text.
        value: String,
    },
    /// The agent declares the task finished.
    Stop,
}

/// The largest coordinate a pointer action may name, in the reply's space (image pixels
/// or 0–1000 grid units): well above any real screenshot, far below the values that make
/// Chromium stop answering an input event.
pub const MAX_COORDINATE: f64 = 100_000.0;

/// The most characters the quoted text of `type`, `press` or `answer` may hold.
pub const MAX_TEXT_CHARS: usize = 10_000;

/// Checks one coordinate against the bounds every reply format shares: from 0 to
/// [`MAX_COORDINATE`]; the error says what was expected.
pub fn check_coordinate(v: f64) -> Result<(), String> {
    if !(0.0..=MAX_COORDINATE).contains(&v) {
        return Err(format!(
            "a coordinate from 0 to {MAX_COORDINATE}, found {}",
            shown(v)
        ));
    }
    Ok(())
}

/// Checks both coordinates of a point (see [`check_coordinate`]).
pub fn check_point(x: f64, y: f64) -> Result<(), String> {
    if check_coordinate(x).is_err() || check_coordinate(y).is_err() {
        return Err(format!(
            "a point with coordinates from 0 to {MAX_COORDINATE}, found ({}, {})",
            shown(x),
            shown(y)
        ));
    }
    Ok(())
}

/// Checks that a typed text or an answer is at most [`MAX_TEXT_CHARS`] characters long.
pub fn check_text(text: &str) -> Result<(), String> {
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(format!(
            "a text of at most {MAX_TEXT_CHARS} characters, found {chars}"
        ));
    }
    Ok(())
}

/// A number for an error message: huge ones in exponent form, not 300 digits.
fn shown(v: f64) -> String {
    if v.abs() < 1e15 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

const VERBS: &[&str] = &[
    "click",
    "double_click",
    "right_click",
    "hover",
    "type",
    "press",
    "scroll",
    "wait",
    "answer",
    "stop",
];

impl Action {
    /// True for actions that send input events to the browser (they count against an
    /// episode's action budget).
    pub fn is_browser_action(&self) -> bool {
        matches!(
            self,
            Action::Click { .. }
                | Action::DoubleClick { .. }
                | Action::RightClick { .. }
                | Action::Hover { .. }
                | Action::Type { .. }
                | Action::Press { .. }
                | Action::Scroll { .. }
        )
    }

    /// The image-space point of a pointer action.
    pub fn point(&self) -> Option<Point> {
        match self {
            Action::Click { x, y }
            | Action::DoubleClick { x, y }
            | Action::RightClick { x, y }
            | Action::Hover { x, y } => Some(Point::new(*x, *y)),
            _ => None,
        }
    }

    /// The action's name in the reply grammar (`click`, `double_click`, ...).
    pub fn verb(&self) -> &'static str {
        match self {
            Action::Click { .. } => "click",
            Action::DoubleClick { .. } => "double_click",
            Action::RightClick { .. } => "right_click",
            Action::Hover { .. } => "hover",
            Action::Type { .. } => "type",
            Action::Press { .. } => "press",
            Action::Scroll { .. } => "scroll",
            Action::Wait { .. } => "wait",
            Action::Answer { .. } => "answer",
            Action::Stop => "stop",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Click { x, y } => write!(f, "click({}, {})", num(*x), num(*y)),
            Action::DoubleClick { x, y } => {
                write!(f, "double_click({}, {})", num(*x), num(*y))
            }
            Action::RightClick { x, y } => write!(f, "right_click({}, {})", num(*x), num(*y)),
            Action::Hover { x, y } => write!(f, "hover({}, {})", num(*x), num(*y)),
            Action::Type { text } => write!(f, "type({})", quote(text)),
            Action::Press { key } => write!(f, "press({})", quote(key)),
            Action::Scroll { dx, dy } => write!(f, "scroll({}, {})", num(*dx), num(*dy)),
            Action::Wait { ms } => write!(f, "wait({ms})"),
            Action::Answer { value } => write!(f, "answer({})", quote(value)),
            Action::Stop => write!(f, "stop()"),
        }
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Why a reply could not be parsed. `line` is 1-based within the reply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("the reply contains no action (expected one of: click, double_click, right_click, hover, type, press, scroll, wait, answer, stop)")]
    /// The reply has no line starting with a known verb.
    NoAction,
    #[error("reply line {line}: {reason}")]
    /// A line starts with a verb but does not parse.
    Malformed {
        /// The offending line, 1-based within the reply.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Parses a whole reply into its actions, in order.
pub fn parse_reply(text: &str) -> Result<Vec<Action>, ParseError> {
    let mut actions = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        let Some(verb) = leading_verb(line) else {
            continue;
        };
        let action =
            parse_call(verb, &line[verb.len()..]).map_err(|reason| ParseError::Malformed {
                line: i + 1,
                reason: format!("{reason} in `{}`", excerpt(line)),
            })?;
        actions.push(action);
    }
    if actions.is_empty() {
        return Err(ParseError::NoAction);
    }
    Ok(actions)
}

/// The start of a line quoted in an error: an over-long line is not echoed whole into
/// every stored error and tool message.
fn excerpt(line: &str) -> String {
    const SHOWN: usize = 80;
    match line.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// The verb a line starts with, if it starts with `verb(` (spaces allowed before `(`).
fn leading_verb(line: &str) -> Option<&'static str> {
    VERBS.iter().copied().find(|verb| {
        line.strip_prefix(verb)
            .is_some_and(|rest| rest.trim_start().starts_with('('))
    })
}

#[derive(Debug, PartialEq)]
enum Arg {
    Num(f64),
    Str(String),
}

fn parse_call(verb: &str, rest: &str) -> Result<Action, String> {
    let rest = rest.trim_start();
    let args = parse_args(rest)?;
    let nums = |n: usize| -> Result<Vec<f64>, String> {
        if args.len() != n {
            return Err(format!("{verb} takes {n} number(s), got {}", args.len()));
        }
        args.iter()
            .map(|a| match a {
                Arg::Num(v) => Ok(*v),
                Arg::Str(s) => Err(format!("{verb} expects numbers, got the string {s:?}")),
            })
            .collect()
    };
    let one_str = || -> Result<String, String> {
        match args.as_slice() {
            [Arg::Str(s)] => Ok(s.clone()),
            [Arg::Num(v)] => Err(format!(
                "{verb} expects a quoted string, got the number {v}"
            )),
            _ => Err(format!(
                "{verb} takes one quoted string, got {} arguments",
                args.len()
            )),
        }
    };
    Ok(match verb {
        "click" | "double_click" | "right_click" | "hover" => {
            let v = nums(2)?;
            let (x, y) = (v[0], v[1]);
            check_point(x, y).map_err(|e| format!("{verb} expects {e}"))?;
            match verb {
                "click" => Action::Click { x, y },
                "double_click" => Action::DoubleClick { x, y },
                "right_click" => Action::RightClick { x, y },
                _ => Action::Hover { x, y },
            }
        }
        "scroll" => {
            let v = nums(2)?;
            Action::Scroll { dx: v[0], dy: v[1] }
        }
        "wait" => {
            let v = nums(1)?;
            if v[0] < 0.0 || v[0].fract() != 0.0 {
                return Err("wait takes a whole, non-negative number of milliseconds".into());
            }
            Action::Wait { ms: v[0] as u64 }
        }
        "type" | "press" | "answer" => {
            let text = one_str()?;
            check_text(&text).map_err(|e| format!("{verb} expects {e}"))?;
            match verb {
                "type" => Action::Type { text },
                "press" => Action::Press { key: text },
                _ => Action::Answer { value: text },
            }
        }
        "stop" => {
            if !args.is_empty() {
                return Err("stop takes no arguments".into());
            }
            Action::Stop
        }
        _ => unreachable!("verb list and match agree"),
    })
}

/// Parses `( arg, arg, ... )` followed by nothing but whitespace or a trailing `;`.
fn parse_args(s: &str) -> Result<Vec<Arg>, String> {
    let mut chars = s.char_indices().peekable();
    match chars.next() {
        Some((_, '(')) => {}
        _ => return Err("expected `(`".into()),
    }
    let mut args = Vec::new();
    loop {
        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek().copied() {
            None => return Err("missing `)`".into()),
            Some((_, ')')) if args.is_empty() => {
                chars.next();
                break;
            }
            Some((_, '"')) => {
                chars.next();
                let mut out = String::new();
                loop {
                    match chars.next() {
                        None => return Err("unterminated string".into()),
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, '"')) => out.push('"'),
                            Some((_, '\\')) => out.push('\\'),
                            Some((_, 'n')) => out.push('\n'),
                            Some((_, 't')) => out.push('\t'),
                            Some((_, c)) => return Err(format!("unknown escape `\\{c}`")),
                            None => return Err("unterminated string".into()),
                        },
                        Some((_, c)) => out.push(c),
                    }
                }
                args.push(Arg::Str(out));
            }
            Some((start, c)) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => {
                let mut end = start;
                while let Some((i, c)) = chars.peek().copied() {
                    if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E') {
                        end = i + c.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let text = &s[start..end];
                let v: f64 = text
                    .parse()
                    .map_err(|_| format!("`{text}` is not a number"))?;
                if !v.is_finite() {
                    return Err(format!("`{text}` is not a finite number"));
                }
                args.push(Arg::Num(v));
            }
            Some((_, c)) => return Err(format!("unexpected `{c}` in arguments")),
        }
        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            Some((_, ',')) => continue,
            Some((_, ')')) => break,
            Some((_, c)) => return Err(format!("expected `,` or `)`, found `{c}`")),
            None => return Err("missing `)`".into()),
        }
    }
    let tail: String = chars.map(|(_, c)| c).collect();
    let tail = tail.trim();
    if !(tail.is_empty() || tail == ";") {
        return Err(format!("unexpected text after the call: `{tail}`"));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_verb() {
        let reply = "I will search.\nclick(450, 300)\nhover(1.5, 2)\ntype(\"Record-10\")\npress(\"Enter\")\nscroll(0, -400)\nwait(250)\nanswer(\"42\")\nstop()\ndouble_click(3, 4)\nright_click(5, 6)\npress(\"Control+a\")";
        let actions = parse_reply(reply).unwrap();
        assert_eq!(
            actions,
            vec![
                Action::Click { x: 450.0, y: 300.0 },
                Action::Hover { x: 1.5, y: 2.0 },
                Action::Type {
                    text: "Record-10".into()
                },
                Action::Press {
                    key: "Enter".into()
                },
                Action::Scroll {
                    dx: 0.0,
                    dy: -400.0
                },
                Action::Wait { ms: 250 },
                Action::Answer { value: "42".into() },
                Action::Stop,
                Action::DoubleClick { x: 3.0, y: 4.0 },
                Action::RightClick { x: 5.0, y: 6.0 },
                Action::Press {
                    key: "Control+a".into()
                },
            ]
        );
    }

    #[test]
    fn commentary_is_skipped_but_broken_calls_are_errors() {
        assert_eq!(parse_reply("nothing to do here"), Err(ParseError::NoAction));
        let err = parse_reply("ok\nclick(450)").unwrap_err();
        match err {
            ParseError::Malformed { line, reason } => {
                assert_eq!(line, 2);
                assert!(reason.contains("click takes 2"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(parse_reply("type(\"abc)").is_err());
        assert!(parse_reply("click(1, 2) please").is_err());
        assert!(parse_reply("click(-1, 2)").is_err());
        assert!(parse_reply("wait(1.5)").is_err());
        // A word that merely starts with a verb is commentary, not a call.
        assert_eq!(parse_reply("clicking around"), Err(ParseError::NoAction));
    }

    #[test]
    fn special_tokens_inside_strings_survive_verbatim() {
        // The parser does not know about chat tokens; stripping them is the parse
        // stage's job, and skipping that step is the token-leak fault.
        let a = parse_reply("type(\"Record-10<|im_end|>\")").unwrap();
        assert_eq!(
            a,
            vec![Action::Type {
                text: "Record-10<|im_end|>".into()
            }]
        );
    }

    #[test]
    fn regression_a_finite_but_absurd_point_is_a_parse_error() {
        for reply in [
            "click(1e300, 5)",
            "double_click(5, 1e300)",
            "right_click(100000.5, 5)",
            "hover(5, 100001)",
            "click(1e39, 1e39)",
        ] {
            match parse_reply(reply) {
                Err(ParseError::Malformed { line: 1, reason }) => {
                    assert!(reason.contains("from 0 to 100000"), "{reason}")
                }
                other => panic!("{reply}: {other:?}"),
            }
        }
        let e = parse_reply("click(1e300, 5)").unwrap_err().to_string();
        assert!(e.contains("found (1e300, 5)"), "{e}");
        assert_eq!(
            parse_reply("click(100000, 100000)").unwrap(),
            vec![Action::Click {
                x: MAX_COORDINATE,
                y: MAX_COORDINATE
            }]
        );
    }

    #[test]
    fn regression_an_over_long_text_is_a_parse_error() {
        let at_bound = "A".repeat(MAX_TEXT_CHARS);
        let over = "A".repeat(MAX_TEXT_CHARS + 1);
        for verb in ["type", "press", "answer"] {
            assert!(parse_reply(&format!("{verb}(\"{at_bound}\")")).is_ok());
            let e = parse_reply(&format!("{verb}(\"{over}\")"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("at most 10000 characters, found 10001"), "{e}");
        }
        // The error quotes the start of the line, not all of it.
        let e = parse_reply(&format!("type(\"{over}\")")).unwrap_err();
        assert!(e.to_string().len() < 300, "{e}");
        // Characters, not bytes: 10 000 two-byte characters are within the bound.
        assert!(parse_reply(&format!("type(\"{}\")", "é".repeat(MAX_TEXT_CHARS))).is_ok());
    }

    fn arb_action() -> impl Strategy<Value = Action> {
        let coord = (0u32..5000).prop_map(f64::from);
        let text = "[ -~\n\t\"\\\\]{0,20}";
        prop_oneof![
            (coord.clone(), coord.clone()).prop_map(|(x, y)| Action::Click { x, y }),
            (coord.clone(), coord.clone()).prop_map(|(x, y)| Action::Hover { x, y }),
            (coord.clone(), coord.clone()).prop_map(|(x, y)| Action::DoubleClick { x, y }),
            (coord.clone(), coord.clone()).prop_map(|(x, y)| Action::RightClick { x, y }),
            text.prop_map(|text| Action::Type { text }),
            text.prop_map(|key| Action::Press { key }),
            (-3000i32..3000, -3000i32..3000).prop_map(|(dx, dy)| Action::Scroll {
                dx: f64::from(dx),
                dy: f64::from(dy)
            }),
            (0u64..100_000).prop_map(|ms| Action::Wait { ms }),
            text.prop_map(|value| Action::Answer { value }),
            Just(Action::Stop),
        ]
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(actions in proptest::collection::vec(arb_action(), 1..6)) {
            let text: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
            let parsed = parse_reply(&text.join("\n")).unwrap();
            prop_assert_eq!(parsed, actions);
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse_reply(&s);
        }

        #[test]
        fn regression_any_point_beyond_the_bound_is_a_parse_error(
            verb in prop::sample::select(vec!["click", "double_click", "right_click", "hover"]),
            beyond in prop_oneof![(MAX_COORDINATE + 1e-6)..1e6, 1e6..1e40, 1e40..f64::MAX],
            within in 0.0..=MAX_COORDINATE,
            beyond_is_x in any::<bool>(),
            exponent_form in any::<bool>(),
        ) {
            let big = if exponent_form { format!("{beyond:e}") } else { format!("{beyond}") };
            let (x, y) = if beyond_is_x { (big, within.to_string()) } else { (within.to_string(), big) };
            let reply = format!("I will click.\n{verb}({x}, {y})");
            prop_assert!(
                matches!(parse_reply(&reply), Err(ParseError::Malformed { line: 2, .. })),
                "accepted: {}", reply
            );
        }

        #[test]
        fn regression_any_over_long_text_is_a_parse_error(
            verb in prop::sample::select(vec!["type", "press", "answer"]),
            unit in "[a-zA-Z0-9 é€]",
            extra in 1usize..2000,
        ) {
            let text = unit.repeat(MAX_TEXT_CHARS + extra);
            let reply = format!("{verb}(\"{text}\")");
            prop_assert!(
                matches!(parse_reply(&reply), Err(ParseError::Malformed { line: 1, .. })),
                "accepted a text of {} characters", text.chars().count()
            );
        }
    }
}
