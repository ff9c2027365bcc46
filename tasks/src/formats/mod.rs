//! Action formats: other people's agent replies -> faultline's [`Action`]s, with the
//! coordinate space the model saw.
//!
//! A recorded trajectory is only worth replaying if its points land where the model
//! meant them. Every format below writes points in *some* space — the pixels of the
//! screenshot the model was sent, or a 0–1000 grid over it — and the viewport they must
//! land in is usually neither. So a conversion returns the actions *and* the space
//! ([`Converted`]); a [`crate::Decision`] stores both, and the execute stage scales from
//! that space to the viewport: [`CoordinateSpace::Image`] from the decision's `image`
//! size, [`CoordinateSpace::Normalized1000`] from 1000x1000. Skipping that scaling — using
//! the raw numbers as viewport pixels — is the `execute.unscaled_coordinates` fault, the
//! bug these formats exist to catch. There is no "probably pixels" fallback: a decision
//! whose space is not one its format allows does not load.
//!
//! | format | payload | default space | other space allowed |
//! |---|---|---|---|
//! | `faultline` | the reply grammar of [`crate::action`] | image | — |
//! | `anthropic` | computer-use `tool_use` input (or the block, or a list of blocks) | image | — |
//! | `openai` | a `computer_call` item (`action` or batched `actions[]`), or a list of items | image | — |
//! | `browsergym` | coordinate action strings, one call per line | image | — |
//! | `uitars` | `Thought: ... Action: click(start_box='(x,y)')` text | normalized_1000 | image (UI-TARS-1.5's absolute pixels) |
//! | `qwen` | `<tool_call>{"name": "computer_use", ...}</tool_call>` blocks or the JSON | image | normalized_1000 (Qwen3-VL) |
//!
//! Verbs map onto faultline's actions as follows; anything else (drags, middle clicks,
//! triple clicks, holding keys) is an error naming the field, never silently dropped.
//!
//! - clicks: left -> `click`, double -> `double_click`, right -> `right_click`; moving
//!   the mouse -> `hover`;
//! - text -> `type`; keys -> `press` with the key named the way the browser driver knows
//!   it ([`canonical_key`]: `Return` -> `Enter`, `ctrl+a` -> `Control+a`);
//! - scrolls -> `scroll(dx, dy)` in CSS pixels at the viewport centre (the formats'
//!   scroll position, when they give one, is checked and not used); a wheel notch
//!   (Anthropic's `scroll_amount`) is [`PIXELS_PER_NOTCH`] pixels, a UI-TARS scroll
//!   (which has no amount) is [`UITARS_SCROLL_PIXELS`];
//! - waits -> `wait(ms)`;
//! - a request for a screenshot -> `wait(0)`: faultline observes after every step
//!   anyway, so asking to look is a step that does nothing and then looks;
//! - the final answer (`send_msg_to_user`, `finished(content=...)`, Qwen's `answer`) ->
//!   `answer`; giving up or finishing without content -> `stop`.
//!
//! Every format keeps to the bounds of faultline's own grammar ([`crate::action`]): a
//! point's coordinates are at most [`crate::action::MAX_COORDINATE`] (100 000) in the
//! reply's space — image pixels or the 0–1000 grid alike — and a text to type or an
//! answer at most [`crate::action::MAX_TEXT_CHARS`] (10 000) characters; beyond them the
//! reply is an error naming the field.
//!
//! Chat special tokens are not a format's business: the parse stage strips them before
//! any format parses the text.

pub mod anthropic;
pub mod browsergym;
pub mod openai;
pub mod qwen;
pub mod trajectory;
pub mod uitars;

use crate::action::{check_coordinate, check_point, check_text, parse_reply, Action};
use crate::geometry::Size;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Pixels one wheel notch scrolls (Chromium's default on Linux is 100 per notch in CSS
/// pixels at scale 1).
pub const PIXELS_PER_NOTCH: f64 = 100.0;
/// Pixels a UI-TARS `scroll(direction=...)` moves (the action has no amount).
pub const UITARS_SCROLL_PIXELS: f64 = 500.0;

/// The language a reply is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionFormat {
    /// faultline's own reply grammar ([`crate::action`]).
    #[default]
    Faultline,
    /// Anthropic computer-use tool input.
    Anthropic,
    /// OpenAI computer-use `computer_call` items.
    OpenAi,
    /// BrowserGym's coordinate action strings.
    BrowserGym,
    /// UI-TARS `Action:` lines.
    UiTars,
    /// Qwen-VL `computer_use` tool calls.
    Qwen,
}

impl ActionFormat {
    /// Every format, in declaration order.
    pub const ALL: [ActionFormat; 6] = [
        ActionFormat::Faultline,
        ActionFormat::Anthropic,
        ActionFormat::OpenAi,
        ActionFormat::BrowserGym,
        ActionFormat::UiTars,
        ActionFormat::Qwen,
    ];

    /// The format's stable name (stored, printed and parsed).
    pub fn name(self) -> &'static str {
        match self {
            ActionFormat::Faultline => "faultline",
            ActionFormat::Anthropic => "anthropic",
            ActionFormat::OpenAi => "openai",
            ActionFormat::BrowserGym => "browsergym",
            ActionFormat::UiTars => "uitars",
            ActionFormat::Qwen => "qwen",
        }
    }

    /// The space a reply in this format is in unless its decision says otherwise.
    pub fn default_space(self) -> CoordinateSpace {
        match self {
            ActionFormat::UiTars => CoordinateSpace::Normalized1000,
            _ => CoordinateSpace::Image,
        }
    }

    /// Whether a decision in this format may declare `space` (UI-TARS and Qwen come in
    /// both conventions; the others have one).
    pub fn allows(self, space: CoordinateSpace) -> bool {
        space == self.default_space() || matches!(self, ActionFormat::UiTars | ActionFormat::Qwen)
    }

    /// Whether the reply is a JSON value (object or array) rather than text.
    pub fn is_json(self) -> bool {
        matches!(self, ActionFormat::Anthropic | ActionFormat::OpenAi)
    }
}

impl fmt::Display for ActionFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ActionFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ActionFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown action format `{s}` (expected one of: faultline, anthropic, openai, browsergym, uitars, qwen)")
            })
    }
}

/// The space the numbers of a reply's points are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinateSpace {
    /// Pixels of the screenshot the model was sent (the decision's `image`).
    #[default]
    Image,
    /// 0–1000 on both axes over that screenshot, whatever its size.
    #[serde(rename = "normalized_1000")]
    Normalized1000,
}

impl CoordinateSpace {
    /// The size the numbers are measured against, for a screenshot of `image`: the
    /// image itself, or a 1000x1000 grid over it.
    pub fn extent(self, image: Size) -> Size {
        match self {
            CoordinateSpace::Image => image,
            CoordinateSpace::Normalized1000 => Size::new(1000, 1000),
        }
    }

    /// The space's stable name (stored, printed and parsed).
    pub fn name(self) -> &'static str {
        match self {
            CoordinateSpace::Image => "image",
            CoordinateSpace::Normalized1000 => "normalized_1000",
        }
    }
}

impl fmt::Display for CoordinateSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CoordinateSpace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "image" => Ok(CoordinateSpace::Image),
            "normalized_1000" => Ok(CoordinateSpace::Normalized1000),
            _ => Err(format!(
                "unknown coordinate space `{s}` (expected image or normalized_1000)"
            )),
        }
    }
}

/// A reply converted into faultline's actions, and the space their points are in.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The converted actions, in reply order.
    pub actions: Vec<Action>,
    /// The space the actions' points are in.
    pub space: CoordinateSpace,
}

/// Why a reply could not be converted: the field at fault and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: expected {expected}")]
pub struct FormatError {
    /// Where in the reply, e.g. `action`, `[1].input.coordinate`, `line 2`.
    pub field: String,
    /// What was expected, and usually what was found.
    pub expected: String,
}

impl FormatError {
    /// An error at `field`, saying what was `expected`.
    pub fn new(field: impl Into<String>, expected: impl Into<String>) -> FormatError {
        FormatError {
            field: field.into(),
            expected: expected.into(),
        }
    }

    /// An error about the whole reply names it `reply`.
    pub(crate) fn at_top(mut self) -> FormatError {
        if self.field.is_empty() {
            self.field = "reply".into();
        }
        self
    }

    /// The same error one level further out (`prefix.field`).
    pub(crate) fn within(mut self, prefix: &str) -> FormatError {
        self.field = if self.field.is_empty() || self.field == prefix {
            prefix.to_string()
        } else if self.field.starts_with("line ") {
            format!("{prefix} {}", self.field)
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// Converts one raw reply in `format` into faultline's actions, in the format's default
/// space ([`ActionFormat::default_space`]).
pub fn parse(format: ActionFormat, raw: &str) -> Result<Converted, FormatError> {
    let actions = match format {
        ActionFormat::Faultline => {
            parse_reply(raw).map_err(|e| FormatError::new("reply", e.to_string()))?
        }
        ActionFormat::Anthropic => anthropic::parse(raw)?,
        ActionFormat::OpenAi => openai::parse(raw)?,
        ActionFormat::BrowserGym => browsergym::parse(raw)?,
        ActionFormat::UiTars => uitars::parse(raw)?,
        ActionFormat::Qwen => qwen::parse(raw)?,
    };
    if actions.is_empty() {
        return Err(FormatError::new(
            "reply",
            format!("at least one {format} action, found none"),
        ));
    }
    Ok(Converted {
        actions,
        space: format.default_space(),
    })
}

/// Canonical names of the keys the browser driver presses, and the names other
/// conventions use for them (xdotool's keysyms, OpenAI's upper-case names, Playwright's
/// and UI-TARS's lower-case ones). Compared case-insensitively.
const KEY_NAMES: &[(&str, &[&str])] = &[
    ("Enter", &["enter", "return", "kp_enter"]),
    ("Tab", &["tab"]),
    ("Escape", &["escape", "esc"]),
    ("Backspace", &["backspace"]),
    ("Delete", &["delete", "del"]),
    ("Space", &["space", " "]),
    ("ArrowUp", &["arrowup", "up"]),
    ("ArrowDown", &["arrowdown", "down"]),
    ("ArrowLeft", &["arrowleft", "left"]),
    ("ArrowRight", &["arrowright", "right"]),
    ("Home", &["home"]),
    ("End", &["end"]),
    ("PageUp", &["pageup", "page_up", "prior"]),
    ("PageDown", &["pagedown", "page_down", "next"]),
];

/// Modifier names, canonical first.
const MODIFIERS: &[(&str, &[&str])] = &[
    ("Control", &["control", "ctrl", "control_l", "control_r"]),
    ("Alt", &["alt", "option", "alt_l", "alt_r"]),
    ("Shift", &["shift", "shift_l", "shift_r"]),
    (
        "Meta",
        &[
            "meta", "cmd", "command", "super", "super_l", "win", "windows",
        ],
    ),
];

/// Turns a key or chord in any of the formats' conventions (`Return`, `ctrl+a`,
/// `["CTRL", "A"]` joined with `+`, `ctrl c`) into the name the browser driver presses:
/// modifiers in the order `Control`, `Alt`, `Shift`, `Meta`, then one key, joined with
/// `+` — `Enter`, `Control+a`. A single character stays as it is, lower-cased when a
/// modifier is held (a chord names the key, not the character). `parts` are the chord's
/// pieces.
pub fn canonical_key<'a>(parts: impl IntoIterator<Item = &'a str>) -> Result<String, String> {
    let mut mods: Vec<&'static str> = Vec::new();
    let mut key: Option<String> = None;
    for part in parts {
        let lower = part.to_ascii_lowercase();
        if let Some((name, _)) = MODIFIERS.iter().find(|(_, a)| a.contains(&lower.as_str())) {
            if !mods.contains(name) {
                mods.push(name);
            }
            continue;
        }
        if key.is_some() {
            return Err(format!(
                "one key with optional modifiers, found a second key `{part}`"
            ));
        }
        key = Some(
            if let Some((name, _)) = KEY_NAMES.iter().find(|(_, a)| a.contains(&lower.as_str())) {
                name.to_string()
            } else if part.chars().count() == 1 {
                part.to_string()
            } else {
                return Err(format!(
                    "a key name such as Return, Tab, Escape, BackSpace, Delete, Up, Home, Page_Down or a single character, found `{part}`"
                ));
            },
        );
    }
    // A chord of modifiers alone presses the last modifier.
    let key = match key {
        Some(k) => k,
        None => match mods.pop() {
            Some(m) => m.to_string(),
            None => return Err("a key name, found nothing".into()),
        },
    };
    let key = if !mods.is_empty() && key.chars().count() == 1 {
        key.to_ascii_lowercase()
    } else {
        key
    };
    mods.sort_by_key(|m| MODIFIERS.iter().position(|(n, _)| n == m));
    let mut out: Vec<String> = mods.iter().map(|m| m.to_string()).collect();
    out.push(key);
    Ok(out.join("+"))
}

/// Splits a `+`-joined chord (`ctrl+a`, `ctrl++`) into its parts.
pub(crate) fn split_chord(s: &str) -> Vec<&str> {
    if s.len() > 1 && s.ends_with("++") {
        let head = &s[..s.len() - 2];
        let mut parts: Vec<&str> = if head.is_empty() {
            Vec::new()
        } else {
            head.split('+').collect()
        };
        parts.push("+");
        return parts;
    }
    if s == "+" {
        return vec!["+"];
    }
    s.split('+').collect()
}

// ---------------------------------------------------------------------------------------
// JSON helpers shared by the JSON formats.

use serde_json::{Map, Value};

/// Parses a JSON reply, naming the field `reply` when it is not JSON.
pub(crate) fn json_value(raw: &str, what: &str) -> Result<Value, FormatError> {
    serde_json::from_str(raw.trim()).map_err(|e| {
        FormatError::new(
            "reply",
            format!("{what} as JSON, found text that is not JSON ({e})"),
        )
    })
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, FormatError> {
    v.as_object()
        .ok_or_else(|| FormatError::new(field, format!("an object, found {}", kind(v))))
}

pub(crate) fn string<'a>(o: &'a Map<String, Value>, field: &str) -> Result<&'a str, FormatError> {
    match o.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(FormatError::new(
            field,
            format!("a string, found {}", kind(v)),
        )),
        None => Err(FormatError::new(field, "a string, found nothing")),
    }
}

/// A finite number, or an error naming `field`.
pub(crate) fn number_value(v: &Value, field: &str) -> Result<f64, FormatError> {
    match v.as_f64() {
        Some(n) if n.is_finite() => Ok(n),
        _ => Err(FormatError::new(
            field,
            format!("a number, found {}", kind(v)),
        )),
    }
}

pub(crate) fn number(o: &Map<String, Value>, field: &str) -> Result<f64, FormatError> {
    match o.get(field) {
        Some(v) => number_value(v, field),
        None => Err(FormatError::new(field, "a number, found nothing")),
    }
}

pub(crate) fn optional_number(
    o: &Map<String, Value>,
    field: &str,
) -> Result<Option<f64>, FormatError> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => number_value(v, field).map(Some),
    }
}

/// A screen position: not negative and at most [`crate::action::MAX_COORDINATE`] in the
/// reply's space, as in faultline's own grammar.
pub(crate) fn screen_point(x: f64, y: f64, field: &str) -> Result<(f64, f64), FormatError> {
    check_point(x, y).map_err(|e| FormatError::new(field, e))?;
    Ok((x, y))
}

/// One coordinate of a screen position given as its own field (see [`screen_point`]).
pub(crate) fn screen_coordinate(v: f64, field: &str) -> Result<f64, FormatError> {
    check_coordinate(v).map_err(|e| FormatError::new(field, e))?;
    Ok(v)
}

/// Text to type or an answer: at most [`crate::action::MAX_TEXT_CHARS`] characters.
pub(crate) fn bounded_text(text: &str, field: &str) -> Result<String, FormatError> {
    check_text(text).map_err(|e| FormatError::new(field, e))?;
    Ok(text.to_string())
}

/// `[x, y]` under `field`.
pub(crate) fn coordinate(o: &Map<String, Value>, field: &str) -> Result<(f64, f64), FormatError> {
    let expected = "[x, y], two numbers";
    match o.get(field) {
        Some(Value::Array(a)) if a.len() == 2 => {
            let x = number_value(&a[0], &format!("{field}[0]"))?;
            let y = number_value(&a[1], &format!("{field}[1]"))?;
            screen_point(x, y, field)
        }
        Some(Value::Array(a)) => Err(FormatError::new(
            field,
            format!("{expected}, found an array of {}", a.len()),
        )),
        Some(v) => Err(FormatError::new(
            field,
            format!("{expected}, found {}", kind(v)),
        )),
        None => Err(FormatError::new(
            field,
            format!("{expected}, found nothing"),
        )),
    }
}

/// Milliseconds from a number of seconds.
pub(crate) fn seconds_to_ms(s: f64, field: &str) -> Result<u64, FormatError> {
    if !(0.0..=3600.0).contains(&s) {
        return Err(FormatError::new(
            field,
            format!("a number of seconds between 0 and 3600, found {s}"),
        ));
    }
    Ok((s * 1000.0).round() as u64)
}

// ---------------------------------------------------------------------------------------
// Python-style calls shared by the text formats (BrowserGym, UI-TARS).

/// One argument of a Python-style call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PyArg {
    Num(f64),
    Str(String),
}

/// A Python-style call: `name(positional, ..., keyword=value, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyCall {
    pub name: String,
    pub args: Vec<PyArg>,
    pub kwargs: Vec<(String, PyArg)>,
}

impl PyCall {
    /// The argument at `pos` or named `key`.
    pub(crate) fn arg(&self, pos: usize, key: &str) -> Option<&PyArg> {
        self.kwargs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .or_else(|| self.args.get(pos))
    }

    pub(crate) fn num(&self, pos: usize, key: &str) -> Result<f64, FormatError> {
        match self.arg(pos, key) {
            Some(PyArg::Num(v)) => Ok(*v),
            Some(PyArg::Str(s)) => Err(FormatError::new(
                key,
                format!("a number, found the string {s:?}"),
            )),
            None => Err(FormatError::new(key, "a number, found nothing")),
        }
    }

    pub(crate) fn str(&self, pos: usize, key: &str) -> Result<&str, FormatError> {
        match self.arg(pos, key) {
            Some(PyArg::Str(s)) => Ok(s),
            Some(PyArg::Num(v)) => Err(FormatError::new(
                key,
                format!("a quoted string, found the number {v}"),
            )),
            None => Err(FormatError::new(key, "a quoted string, found nothing")),
        }
    }

    /// Errors unless the call has at most `n` arguments in all.
    pub(crate) fn at_most(&self, n: usize) -> Result<(), FormatError> {
        let count = self.args.len() + self.kwargs.len();
        if count > n {
            return Err(FormatError::new(
                "arguments",
                format!("at most {n} argument(s) to {}, found {count}", self.name),
            ));
        }
        Ok(())
    }
}

/// The identifier a line starts with, if it is followed by `(`.
pub(crate) fn leading_call_name(line: &str) -> Option<&str> {
    let end = line
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    let name = &line[..end];
    let starts_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    (starts_ok && line[end..].trim_start().starts_with('(')).then_some(name)
}

/// Parses one Python-style call that makes up the whole of `line` (a trailing `;` is
/// allowed). Strings take single or double quotes with Python's common escapes.
pub(crate) fn parse_py_call(line: &str) -> Result<PyCall, String> {
    let line = line.trim();
    let name = leading_call_name(line).ok_or("a call such as `name(...)`")?;
    let mut rest = line[name.len()..].trim_start().chars().peekable();
    rest.next(); // the `(`
    let mut args = Vec::new();
    let mut kwargs: Vec<(String, PyArg)> = Vec::new();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
    };
    loop {
        skip_ws(&mut rest);
        if rest.peek() == Some(&')') && args.is_empty() && kwargs.is_empty() {
            rest.next();
            break;
        }
        // An optional `keyword=`.
        let mut keyword = None;
        if rest
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
        {
            let mut ident = String::new();
            while rest
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                ident.push(rest.next().expect("peeked"));
            }
            skip_ws(&mut rest);
            if rest.next() != Some('=') {
                return Err(format!("`=` after the keyword `{ident}`"));
            }
            skip_ws(&mut rest);
            keyword = Some(ident);
        }
        let value = match rest.peek().copied() {
            Some(q @ ('"' | '\'')) => {
                rest.next();
                let mut out = String::new();
                loop {
                    match rest.next() {
                        None => return Err("a closing quote".into()),
                        Some(c) if c == q => break,
                        Some('\\') => match rest.next() {
                            Some('n') => out.push('\n'),
                            Some('t') => out.push('\t'),
                            Some('r') => out.push('\r'),
                            Some(c @ ('\\' | '\'' | '"')) => out.push(c),
                            Some(c) => {
                                out.push('\\');
                                out.push(c);
                            }
                            None => return Err("a closing quote".into()),
                        },
                        Some(c) => out.push(c),
                    }
                }
                PyArg::Str(out)
            }
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => {
                let mut text = String::new();
                while rest
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
                {
                    text.push(rest.next().expect("peeked"));
                }
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => PyArg::Num(v),
                    _ => return Err(format!("a number, found `{text}`")),
                }
            }
            Some(c) => return Err(format!("a number or a quoted string, found `{c}`")),
            None => return Err("`)`".into()),
        };
        match keyword {
            Some(k) => {
                if kwargs.iter().any(|(j, _)| *j == k) {
                    return Err(format!("each keyword once, found `{k}` twice"));
                }
                kwargs.push((k, value));
            }
            None if !kwargs.is_empty() => {
                return Err("positional arguments before keyword arguments".into())
            }
            None => args.push(value),
        }
        skip_ws(&mut rest);
        match rest.next() {
            Some(',') => {
                skip_ws(&mut rest);
                // A trailing comma before `)`.
                if rest.peek() == Some(&')') {
                    rest.next();
                    break;
                }
            }
            Some(')') => break,
            Some(c) => return Err(format!("`,` or `)`, found `{c}`")),
            None => return Err("`)`".into()),
        }
    }
    let tail: String = rest.collect();
    let tail = tail.trim();
    if !(tail.is_empty() || tail == ";") {
        return Err(format!("nothing after the call, found `{tail}`"));
    }
    Ok(PyCall {
        name: name.to_string(),
        args,
        kwargs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        for f in ActionFormat::ALL {
            assert_eq!(f.name().parse::<ActionFormat>().unwrap(), f);
            assert_eq!(
                serde_json::to_string(&f).unwrap(),
                format!("\"{}\"", f.name())
            );
        }
        assert!("open-ai".parse::<ActionFormat>().is_err());
        for s in [CoordinateSpace::Image, CoordinateSpace::Normalized1000] {
            assert_eq!(s.name().parse::<CoordinateSpace>().unwrap(), s);
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.name())
            );
        }
    }

    #[test]
    fn spaces_each_format_allows() {
        use ActionFormat::*;
        use CoordinateSpace::*;
        assert!(Anthropic.allows(Image) && !Anthropic.allows(Normalized1000));
        assert!(UiTars.allows(Image) && UiTars.allows(Normalized1000));
        assert_eq!(UiTars.default_space(), Normalized1000);
        assert!(Qwen.allows(Normalized1000));
        assert!(!Faultline.allows(Normalized1000));
    }

    #[test]
    fn key_names_from_every_convention() {
        let k = |s: &str| canonical_key(split_chord(s)).unwrap();
        assert_eq!(k("Return"), "Enter");
        assert_eq!(k("ctrl+a"), "Control+a");
        assert_eq!(k("ctrl+shift+T"), "Control+Shift+t");
        assert_eq!(k("super+Page_Down"), "Meta+PageDown");
        assert_eq!(k("Escape"), "Escape");
        assert_eq!(k("ctrl++"), "Control++");
        assert_eq!(k("A"), "A");
        assert_eq!(canonical_key(["CTRL", "A"]).unwrap(), "Control+a");
        assert_eq!(
            canonical_key(["shift", "ctrl", "END"]).unwrap(),
            "Control+Shift+End"
        );
        assert!(canonical_key(["ctrl", "a", "b"]).is_err());
        assert!(canonical_key(["Hyper_L"]).is_err());
        assert!(canonical_key([]).is_err());
    }

    #[test]
    fn python_calls() {
        let c = parse_py_call(r#"mouse_click(12.5, 30, button="right")"#).unwrap();
        assert_eq!(c.name, "mouse_click");
        assert_eq!(c.args, vec![PyArg::Num(12.5), PyArg::Num(30.0)]);
        assert_eq!(c.str(2, "button").unwrap(), "right");
        let c = parse_py_call(r"type(content='it\'s\n')").unwrap();
        assert_eq!(c.str(0, "content").unwrap(), "it's\n");
        assert!(parse_py_call("noop()").unwrap().args.is_empty());
        assert!(parse_py_call("f(a=1, 2)").is_err());
        assert!(parse_py_call("f(1) trailing").is_err());
        assert!(parse_py_call("f('open").is_err());
    }

    /// A click at (`x`, `y`) in every format, including both spaces' formats.
    fn point_replies(x: &str, y: &str) -> Vec<(ActionFormat, String)> {
        vec![
            (ActionFormat::Faultline, format!("click({x}, {y})")),
            (
                ActionFormat::Anthropic,
                format!(r#"{{"action": "left_click", "coordinate": [{x}, {y}]}}"#),
            ),
            (
                ActionFormat::OpenAi,
                format!(r#"{{"type": "click", "button": "left", "x": {x}, "y": {y}}}"#),
            ),
            (ActionFormat::BrowserGym, format!("mouse_click({x}, {y})")),
            (
                ActionFormat::UiTars,
                format!("Action: click(start_box='({x},{y})')"),
            ),
            (
                ActionFormat::UiTars,
                format!("Action: click(start_box='(0,0,{x},{y})')"),
            ),
            (
                ActionFormat::Qwen,
                format!(
                    r#"<tool_call>{{"name": "computer_use", "arguments": {{"action": "left_click", "coordinate": [{x}, {y}]}}}}</tool_call>"#
                ),
            ),
        ]
    }

    /// A text typed, or given as the answer, in every format.
    fn text_replies(text: &str) -> Vec<(ActionFormat, String)> {
        let json = serde_json::to_string(text).unwrap();
        vec![
            (ActionFormat::Faultline, format!("type({json})")),
            (ActionFormat::Faultline, format!("answer({json})")),
            (
                ActionFormat::Anthropic,
                format!(r#"{{"action": "type", "text": {json}}}"#),
            ),
            (
                ActionFormat::OpenAi,
                format!(r#"{{"type": "type", "text": {json}}}"#),
            ),
            (ActionFormat::BrowserGym, format!("keyboard_type({json})")),
            (
                ActionFormat::BrowserGym,
                format!("send_msg_to_user({json})"),
            ),
            (
                ActionFormat::UiTars,
                format!("Action: type(content={json})"),
            ),
            (
                ActionFormat::UiTars,
                format!("Action: finished(content={json})"),
            ),
            (
                ActionFormat::Qwen,
                format!(r#"{{"action": "type", "text": {json}}}"#),
            ),
            (
                ActionFormat::Qwen,
                format!(r#"{{"action": "answer", "text": {json}}}"#),
            ),
        ]
    }

    #[test]
    fn every_format_accepts_a_point_and_a_text_at_the_bound() {
        for (format, reply) in point_replies("100000", "100000") {
            assert!(parse(format, &reply).is_ok(), "{format} refused {reply}");
        }
        for (format, reply) in text_replies(&"A".repeat(crate::action::MAX_TEXT_CHARS)) {
            assert!(parse(format, &reply).is_ok(), "{format} refused the bound");
        }
    }

    proptest! {
        #[test]
        fn no_format_panics_on_arbitrary_text(s in "\\PC{0,200}") {
            for f in ActionFormat::ALL {
                let _ = parse(f, &s);
            }
        }

        #[test]
        fn regression_no_format_accepts_a_point_beyond_the_bound(
            beyond in prop_oneof![(crate::action::MAX_COORDINATE + 1e-6)..1e6, 1e6..1e40, 1e40..f64::MAX],
            within in 0u32..1000,
            beyond_is_x in any::<bool>(),
        ) {
            let (x, y) = if beyond_is_x {
                (format!("{beyond:e}"), within.to_string())
            } else {
                (within.to_string(), format!("{beyond:e}"))
            };
            for (format, reply) in point_replies(&x, &y) {
                prop_assert!(parse(format, &reply).is_err(), "{} accepted {}", format, reply);
            }
        }

        #[test]
        fn regression_no_format_accepts_an_over_long_text(
            unit in "[a-zA-Z0-9 é]",
            extra in 1usize..2000,
        ) {
            let text = unit.repeat(crate::action::MAX_TEXT_CHARS + extra);
            for (format, reply) in text_replies(&text) {
                prop_assert!(parse(format, &reply).is_err(), "{} accepted a text of {} characters", format, text.chars().count());
            }
        }

        #[test]
        fn python_calls_never_panic(s in "[a-z_]{1,6}\\(\\PC{0,40}") {
            let _ = parse_py_call(&s);
        }

        #[test]
        fn canonical_keys_are_fixed_points(parts in proptest::collection::vec("[a-zA-Z_]{1,8}|[ -~]", 1..4)) {
            if let Ok(k) = canonical_key(parts.iter().map(String::as_str)) {
                prop_assert_eq!(canonical_key(split_chord(&k)).unwrap(), k);
            }
        }
    }
}
