//! The protocol faults: what each changes on the wire, and the record of each change.
//!
//! [`Armed`] is a [`Tamper`] carrying one [`ProtocolFault`] and its parameters (drawn
//! by the caller from the item's seed). Every message it changes is recorded as a
//! [`Change`]: which message (method, session, connection), what it was, what it
//! became, and when. An armed fault whose situation never came (the client never
//! clicked, never captured after an input) changes nothing and records nothing: it did
//! not fire, and [`Armed::changes`] says so.
//!
//! An *action* is an input that changes the page: a mouse button pressed, a key pressed,
//! text inserted. Moves and releases are part of the action they belong to.

use crate::{Route, Step, Tamper};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most changes recorded per armed fault (later ones are counted, not kept).
pub const MAX_CHANGES: usize = 32;

/// A fault on the DevTools protocol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProtocolFault {
    /// Every `Input.dispatchMouseEvent` point multiplied by `factor` (0.75: a
    /// screenshot-to-viewport scale applied twice; 2.0: device pixels sent as CSS pixels).
    ScaledPointer {
        /// The factor applied to `x` and `y`.
        factor: f64,
    },
    /// Every `Input.dispatchMouseEvent` point shifted by a window-chrome offset.
    OffsetPointer {
        /// Added to `x`.
        dx: f64,
        /// Added to `y`.
        dy: f64,
    },
    /// A click's `mouseReleased` is not delivered; the client is told it was.
    DroppedRelease,
    /// `Input.dispatchKeyEvent`'s `modifiers` set to 0 (Ctrl, Shift, Alt, Meta lost).
    ModifierLost,
    /// `Page.captureScreenshot` after an action answered with the frame the proxy
    /// captured just before that action.
    StaleScreenshot,
    /// `Page.captureScreenshot` after an action answered with the frame the proxy
    /// captured the moment the action's last input was answered, before the page settled.
    UnsettledScreenshot,
    /// A DOM read after an action answered with the answer the same read got before it:
    /// the page as it was, not as it is.
    StaleDom,
    /// The first action answered with a protocol error instead of being delivered.
    ProtocolError,
    /// The answer to the first action held back for `hold` (past the client's timeout).
    HeldAnswer {
        /// How long the answer is held.
        hold: Duration,
    },
    /// `Page.crash` sent on the action's session right after the first action's answer.
    CrashAfterInput,
}

impl ProtocolFault {
    /// A short name for the records.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolFault::ScaledPointer { .. } => "scaled_pointer",
            ProtocolFault::OffsetPointer { .. } => "offset_pointer",
            ProtocolFault::DroppedRelease => "dropped_release",
            ProtocolFault::ModifierLost => "modifier_lost",
            ProtocolFault::StaleScreenshot => "stale_screenshot",
            ProtocolFault::UnsettledScreenshot => "unsettled_screenshot",
            ProtocolFault::StaleDom => "stale_dom",
            ProtocolFault::ProtocolError => "protocol_error",
            ProtocolFault::HeldAnswer { .. } => "held_answer",
            ProtocolFault::CrashAfterInput => "crash_after_input",
        }
    }
}

/// One message the armed fault changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The fault's name ([`ProtocolFault::name`]).
    pub fault: &'static str,
    /// Wall-clock milliseconds since the Unix epoch when it was changed.
    pub at_unix_ms: u64,
    /// The client connection it travelled on.
    pub connection: u64,
    /// Its flattened session, if any.
    pub session: Option<String>,
    /// The command's method (for an answer, the method of the command it answers).
    pub method: String,
    /// One line: what the proxy did.
    pub what: String,
    /// What the message carried (the fields changed, not the whole message).
    pub original: Value,
    /// What it carried once changed (or what was sent instead).
    pub changed: Value,
}

/// A command the fault is watching for its answer.
#[derive(Debug, Clone)]
struct Watched {
    method: String,
    /// The action's answer is to be held.
    hold: bool,
    /// A crash follows the action's answer.
    crash: bool,
    /// A screenshot the stale frame replaces.
    screenshot: bool,
    /// A capture of the proxy's own follows the answer (the unsettled frame).
    capture_after: bool,
    /// A DOM read (its key: method and params), and whether it was sent before the
    /// session's first action.
    dom_read: Option<(String, bool)>,
}

impl Watched {
    fn answer_of(method: String) -> Watched {
        Watched {
            method,
            hold: false,
            crash: false,
            screenshot: false,
            capture_after: false,
            dom_read: None,
        }
    }
}

#[derive(Default)]
struct State {
    changes: Vec<Change>,
    /// Changes beyond [`MAX_CHANGES`].
    unrecorded: usize,
    /// Whether the one-shot faults (error, hold, crash) have acted.
    acted: bool,
    /// Commands whose answers matter, by (connection, session, id).
    watched: HashMap<(u64, Option<String>, i64), Watched>,
    /// Per (connection, session): the frame the client's next capture is answered with
    /// (captured just before the first action since its last capture, or just after the
    /// last input), and when.
    frame: HashMap<(u64, Option<String>), (String, u64)>,
    /// Per (connection, session): the client's last `Page.captureScreenshot` params.
    capture_params: HashMap<(u64, Option<String>), Value>,
    /// Per (connection, session): the answer each DOM read got before the first action.
    reads: HashMap<(u64, Option<String>, String), Value>,
    /// The (connection, session)s that have sent an action.
    acted_on: std::collections::HashSet<(u64, Option<String>)>,
}

/// A [`Tamper`] with one protocol fault armed. See the module documentation.
pub struct Armed {
    fault: ProtocolFault,
    state: Mutex<State>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn key(route: Route<'_>) -> (u64, Option<String>) {
    (route.connection, route.session.map(str::to_string))
}

/// Whether a command is an action: a button pressed, a key pressed, text inserted.
fn is_action(method: &str, params: &Value) -> bool {
    let kind = params.get("type").and_then(Value::as_str).unwrap_or("");
    match method {
        "Input.dispatchMouseEvent" => kind == "mousePressed",
        "Input.dispatchKeyEvent" => matches!(kind, "keyDown" | "rawKeyDown"),
        "Input.insertText" | "Input.imeSetComposition" => true,
        "Input.dispatchTouchEvent" => kind == "touchStart",
        _ => false,
    }
}

/// Whether a command reads the page's DOM: a `DOM.*`, `DOMSnapshot.*` or
/// `Accessibility.*` read, or a script evaluated in the page that reads `document`.
fn is_dom_read(method: &str, params: &Value) -> bool {
    let reads = |key: &str| {
        params[key]
            .as_str()
            .is_some_and(|script| script.contains("document"))
    };
    match method {
        "Runtime.evaluate" => reads("expression"),
        // A driver's evaluation wraps the expression: it travels as the function or as
        // one of its arguments.
        "Runtime.callFunctionOn" => {
            reads("functionDeclaration")
                || params["arguments"].as_array().is_some_and(|args| {
                    args.iter()
                        .any(|a| a["value"].as_str().is_some_and(|v| v.contains("document")))
                })
        }
        "DOM.getDocument" | "DOM.getOuterHTML" | "DOM.getFlattenedDocument" => true,
        m => m.starts_with("DOMSnapshot.") || m.starts_with("Accessibility.get"),
    }
}

/// Whether a command ends an action (its answer is the moment "right after the input").
fn ends_action(method: &str, params: &Value) -> bool {
    let kind = params.get("type").and_then(Value::as_str).unwrap_or("");
    match method {
        "Input.dispatchMouseEvent" => kind == "mouseReleased",
        "Input.dispatchKeyEvent" => kind == "keyUp",
        "Input.insertText" => true,
        "Input.dispatchTouchEvent" => kind == "touchEnd",
        _ => false,
    }
}

/// An answer to command `id` on `route`'s session.
fn answer(route: Route<'_>, id: &Value, body: (&str, Value)) -> Value {
    let mut a = json!({ "id": id });
    a[body.0] = body.1;
    if let Some(s) = route.session {
        a["sessionId"] = json!(s);
    }
    a
}

impl Armed {
    /// A tamper with `fault` armed.
    pub fn new(fault: ProtocolFault) -> Armed {
        Armed {
            fault,
            state: Mutex::new(State::default()),
        }
    }

    /// The armed fault.
    pub fn fault(&self) -> ProtocolFault {
        self.fault
    }

    /// Every change recorded so far (at most [`MAX_CHANGES`]), in order.
    pub fn changes(&self) -> Vec<Change> {
        self.state.lock().expect("not poisoned").changes.clone()
    }

    /// Whether the fault changed anything: it fired.
    pub fn fired(&self) -> bool {
        !self.state.lock().expect("not poisoned").changes.is_empty()
    }

    /// The record of what the proxy did, as JSON: the protocol fault's name, its changes
    /// and how many more there were.
    pub fn witness(&self) -> Value {
        let s = self.state.lock().expect("not poisoned");
        json!({
            "protocol_fault": self.fault.name(),
            "changes": s.changes,
            "unrecorded": s.unrecorded,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        s: &mut State,
        route: Route<'_>,
        method: &str,
        what: String,
        original: Value,
        changed: Value,
    ) {
        if s.changes.len() >= MAX_CHANGES {
            s.unrecorded += 1;
            return;
        }
        s.changes.push(Change {
            fault: self.fault.name(),
            at_unix_ms: now_ms(),
            connection: route.connection,
            session: route.session.map(str::to_string),
            method: method.to_string(),
            what,
            original,
            changed,
        });
    }
}

impl Tamper for Armed {
    fn command(&self, route: Route<'_>, message: &mut Value) -> Step {
        let Some(method) = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return Step::Relay;
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
        let mut s = self.state.lock().expect("not poisoned");
        let watch_key = |id: &Value| {
            (
                route.connection,
                route.session.map(str::to_string),
                id.as_i64().unwrap_or(-1),
            )
        };
        match self.fault {
            ProtocolFault::ScaledPointer { .. } | ProtocolFault::OffsetPointer { .. }
                if method == "Input.dispatchMouseEvent" =>
            {
                let (Some(x), Some(y)) = (params["x"].as_f64(), params["y"].as_f64()) else {
                    return Step::Relay;
                };
                let (nx, ny) = match self.fault {
                    ProtocolFault::ScaledPointer { factor } => (x * factor, y * factor),
                    ProtocolFault::OffsetPointer { dx, dy } => (x + dx, y + dy),
                    _ => unreachable!("matched above"),
                };
                message["params"]["x"] = json!(nx);
                message["params"]["y"] = json!(ny);
                let kind = params["type"].as_str().unwrap_or("?").to_string();
                self.record(
                    &mut s,
                    route,
                    &method,
                    format!("{kind} at ({x}, {y}) moved to ({nx}, {ny})"),
                    json!({ "type": kind, "x": x, "y": y }),
                    json!({ "type": kind, "x": nx, "y": ny }),
                );
                Step::Rewritten
            }
            ProtocolFault::DroppedRelease
                if method == "Input.dispatchMouseEvent" && params["type"] == "mouseReleased" =>
            {
                let fake = answer(route, &id, ("result", json!({})));
                self.record(
                    &mut s,
                    route,
                    &method,
                    format!(
                        "mouseReleased at ({}, {}) not delivered; the client was told it was",
                        params["x"], params["y"]
                    ),
                    params.clone(),
                    json!({ "delivered": false, "answered": fake }),
                );
                Step::Answer(fake)
            }
            ProtocolFault::ModifierLost if method == "Input.dispatchKeyEvent" => {
                let modifiers = params["modifiers"].as_i64().unwrap_or(0);
                if modifiers == 0 {
                    return Step::Relay;
                }
                message["params"]["modifiers"] = json!(0);
                self.record(
                    &mut s,
                    route,
                    &method,
                    format!(
                        "{} {} sent without its modifiers ({modifiers} -> 0)",
                        params["type"].as_str().unwrap_or("?"),
                        params["key"].as_str().unwrap_or("?")
                    ),
                    json!({ "type": params["type"], "key": params["key"], "modifiers": modifiers }),
                    json!({ "type": params["type"], "key": params["key"], "modifiers": 0 }),
                );
                Step::Rewritten
            }
            ProtocolFault::StaleScreenshot => {
                if method == "Page.captureScreenshot" {
                    s.capture_params.insert(key(route), params.clone());
                    s.watched.insert(
                        watch_key(&id),
                        Watched {
                            method,
                            hold: false,
                            crash: false,
                            screenshot: true,
                            capture_after: false,
                            dom_read: None,
                        },
                    );
                    return Step::Relay;
                }
                if is_action(&method, &params) && !s.frame.contains_key(&key(route)) {
                    let mut capture = s
                        .capture_params
                        .get(&key(route))
                        .cloned()
                        .unwrap_or_else(|| json!({ "format": "png" }));
                    if !capture.is_object() {
                        capture = json!({ "format": "png" });
                    }
                    return Step::After(
                        json!({ "method": "Page.captureScreenshot", "params": capture }),
                    );
                }
                Step::Relay
            }
            ProtocolFault::UnsettledScreenshot => {
                let screenshot = method == "Page.captureScreenshot";
                if screenshot {
                    s.capture_params.insert(key(route), params.clone());
                }
                if screenshot || ends_action(&method, &params) {
                    s.watched.insert(
                        watch_key(&id),
                        Watched {
                            method,
                            hold: false,
                            crash: false,
                            screenshot,
                            capture_after: !screenshot,
                            dom_read: None,
                        },
                    );
                }
                Step::Relay
            }
            ProtocolFault::StaleDom => {
                if is_action(&method, &params) {
                    s.acted_on.insert(key(route));
                } else if is_dom_read(&method, &params) {
                    let before = !s.acted_on.contains(&key(route));
                    let read = format!("{method} {params}");
                    s.watched.insert(
                        watch_key(&id),
                        Watched {
                            dom_read: Some((read, before)),
                            ..Watched::answer_of(method)
                        },
                    );
                }
                Step::Relay
            }
            ProtocolFault::ProtocolError if !s.acted && is_action(&method, &params) => {
                s.acted = true;
                let error = json!({ "code": -32000, "message": format!("{method} failed: the input was not dispatched") });
                let a = answer(route, &id, ("error", error.clone()));
                self.record(
                    &mut s,
                    route,
                    &method,
                    format!(
                        "{method} ({}) not delivered; answered with a protocol error",
                        params["type"].as_str().unwrap_or("text")
                    ),
                    params.clone(),
                    json!({ "delivered": false, "error": error }),
                );
                Step::Answer(a)
            }
            ProtocolFault::HeldAnswer { .. } if !s.acted && is_action(&method, &params) => {
                s.acted = true;
                s.watched.insert(
                    watch_key(&id),
                    Watched {
                        hold: true,
                        ..Watched::answer_of(method)
                    },
                );
                Step::Relay
            }
            ProtocolFault::CrashAfterInput if !s.acted && ends_action(&method, &params) => {
                s.acted = true;
                s.watched.insert(
                    watch_key(&id),
                    Watched {
                        crash: true,
                        ..Watched::answer_of(method)
                    },
                );
                Step::Relay
            }
            _ => Step::Relay,
        }
    }

    fn message(&self, route: Route<'_>, message: &mut Value) -> Step {
        let Some(id) = message.get("id").and_then(Value::as_i64) else {
            return Step::Relay;
        };
        let mut s = self.state.lock().expect("not poisoned");
        let Some(w) = s
            .watched
            .remove(&(route.connection, route.session.map(str::to_string), id))
        else {
            return Step::Relay;
        };
        if w.hold {
            let ProtocolFault::HeldAnswer { hold } = self.fault else {
                return Step::Relay;
            };
            self.record(
                &mut s,
                route,
                &w.method,
                format!(
                    "the answer to {} held for {} ms",
                    w.method,
                    hold.as_millis()
                ),
                json!({ "id": id, "answered_after_ms": 0 }),
                json!({ "id": id, "answered_after_ms": hold.as_millis() as u64 }),
            );
            return Step::Hold(hold);
        }
        if w.crash {
            let crash = json!({ "method": "Page.crash", "params": {} });
            self.record(
                &mut s,
                route,
                &w.method,
                format!(
                    "Page.crash sent on the page's session right after {} was answered",
                    w.method
                ),
                json!({ "id": id }),
                crash.clone(),
            );
            return Step::Then(crash);
        }
        if w.capture_after {
            let capture = s
                .capture_params
                .get(&key(route))
                .filter(|p| p.is_object())
                .cloned()
                .unwrap_or_else(|| json!({ "format": "png" }));
            return Step::Then(json!({ "method": "Page.captureScreenshot", "params": capture }));
        }
        if let Some((read, before)) = w.dom_read {
            let Some(result) = message.get("result").cloned() else {
                return Step::Relay;
            };
            let (connection, session) = key(route);
            let at = (connection, session, read);
            if before {
                // The newest answer before the first action is the page "before".
                s.reads.insert(at, result);
                return Step::Relay;
            }
            let Some(stale) = s.reads.get(&at).cloned() else {
                return Step::Relay;
            };
            if stale == result {
                // The page reads as it did: nothing to change.
                return Step::Relay;
            }
            message["result"] = stale;
            let fresh_bytes = result.to_string().len();
            let stale_bytes = message["result"].to_string().len();
            self.record(
                &mut s,
                route,
                &w.method,
                format!(
                    "the DOM read answered with its answer from before the first action ({stale_bytes} bytes in place of {fresh_bytes})"
                ),
                json!({ "result_bytes": fresh_bytes }),
                json!({ "result_bytes": stale_bytes, "from": "before the first action" }),
            );
            return Step::Rewritten;
        }
        if w.screenshot {
            let Some((frame, captured_at)) = s.frame.remove(&key(route)) else {
                return Step::Relay;
            };
            let Some(data) = message.pointer("/result/data").and_then(Value::as_str) else {
                return Step::Relay;
            };
            let fresh = data.len();
            let stale = frame.len();
            message["result"]["data"] = Value::String(frame);
            self.record(
                &mut s,
                route,
                &w.method,
                match self.fault {
                    ProtocolFault::UnsettledScreenshot => format!("the screenshot answered with the frame captured right after the last input, before the page settled (at {captured_at}, unix ms)"),
                    _ => format!("the screenshot answered with the frame captured before the last action (at {captured_at}, unix ms)"),
                },
                json!({ "data_base64_bytes": fresh }),
                json!({ "data_base64_bytes": stale, "captured_at_unix_ms": captured_at }),
            );
            return Step::Rewritten;
        }
        Step::Relay
    }

    fn injected_answer(&self, route: Route<'_>, request: &Value, answer: &Value) {
        if request["method"] != "Page.captureScreenshot" {
            return;
        }
        if let Some(data) = answer.pointer("/result/data").and_then(Value::as_str) {
            self.state
                .lock()
                .expect("not poisoned")
                .frame
                .insert(key(route), (data.to_string(), now_ms()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(session: Option<&str>) -> Route<'_> {
        Route {
            connection: 1,
            session,
        }
    }

    #[test]
    fn a_scaled_pointer_rewrites_every_mouse_event_and_records_it() {
        let armed = Armed::new(ProtocolFault::ScaledPointer { factor: 0.75 });
        let mut m = json!({"id": 3, "method": "Input.dispatchMouseEvent", "sessionId": "S",
            "params": {"type": "mousePressed", "x": 400.0, "y": 200.0, "button": "left"}});
        assert_eq!(armed.command(route(Some("S")), &mut m), Step::Rewritten);
        assert_eq!(m["params"]["x"], json!(300.0));
        assert_eq!(m["params"]["y"], json!(150.0));
        assert_eq!(m["params"]["button"], "left", "other fields untouched");
        let c = armed.changes();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].original["x"], json!(400.0));
        assert_eq!(c[0].session.as_deref(), Some("S"));
    }

    #[test]
    fn an_armed_fault_whose_situation_never_came_did_not_fire() {
        let armed = Armed::new(ProtocolFault::DroppedRelease);
        let mut m = json!({"id": 1, "method": "Runtime.evaluate", "params": {"expression": "1"}});
        assert_eq!(armed.command(route(None), &mut m), Step::Relay);
        assert!(!armed.fired());
    }

    #[test]
    fn a_dropped_release_is_answered_on_its_own_session() {
        let armed = Armed::new(ProtocolFault::DroppedRelease);
        let mut m = json!({"id": 9, "method": "Input.dispatchMouseEvent", "sessionId": "S",
            "params": {"type": "mouseReleased", "x": 1.0, "y": 2.0}});
        let Step::Answer(a) = armed.command(route(Some("S")), &mut m) else {
            panic!("expected an answer")
        };
        assert_eq!(a, json!({"id": 9, "result": {}, "sessionId": "S"}));
        assert!(armed.fired());
    }

    #[test]
    fn a_held_answer_is_the_first_actions_and_only_its() {
        let hold = Duration::from_secs(31);
        let armed = Armed::new(ProtocolFault::HeldAnswer { hold });
        let mut pressed = json!({"id": 5, "method": "Input.dispatchMouseEvent", "sessionId": "S",
            "params": {"type": "mousePressed", "x": 1, "y": 1}});
        assert_eq!(armed.command(route(Some("S")), &mut pressed), Step::Relay);
        let mut other = json!({"id": 4, "result": {}, "sessionId": "S"});
        assert_eq!(armed.message(route(Some("S")), &mut other), Step::Relay);
        let mut answer = json!({"id": 5, "result": {}, "sessionId": "S"});
        assert_eq!(
            armed.message(route(Some("S")), &mut answer),
            Step::Hold(hold)
        );
        assert_eq!(armed.changes()[0].changed["answered_after_ms"], 31_000);
        let mut again = json!({"id": 6, "method": "Input.dispatchMouseEvent", "sessionId": "S",
            "params": {"type": "mousePressed", "x": 1, "y": 1}});
        armed.command(route(Some("S")), &mut again);
        let mut answer = json!({"id": 6, "result": {}, "sessionId": "S"});
        assert_eq!(armed.message(route(Some("S")), &mut answer), Step::Relay);
    }

    #[test]
    fn a_lost_modifier_is_recorded_and_a_plain_key_left_alone() {
        let armed = Armed::new(ProtocolFault::ModifierLost);
        let mut plain = json!({"id": 1, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": "a"}});
        assert_eq!(armed.command(route(None), &mut plain), Step::Relay);
        let mut ctrl = json!({"id": 2, "method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", "key": "a", "modifiers": 2}});
        assert_eq!(armed.command(route(None), &mut ctrl), Step::Rewritten);
        assert_eq!(ctrl["params"]["modifiers"], 0);
        assert_eq!(armed.changes()[0].original["modifiers"], 2);
    }

    #[test]
    fn a_stale_dom_read_is_the_same_reads_answer_from_before_the_action() {
        let armed = Armed::new(ProtocolFault::StaleDom);
        let s = Some("S");
        let read = |id: i64| {
            json!({"id": id, "sessionId": "S", "method": "Runtime.evaluate",
            "params": {"expression": "document.body.innerText"}})
        };
        let answer = |id: i64, text: &str| {
            json!({"id": id, "sessionId": "S",
            "result": {"result": {"type": "string", "value": text}}})
        };
        // Before the action: relayed, and kept.
        assert_eq!(armed.command(route(s), &mut read(1)), Step::Relay);
        assert_eq!(
            armed.message(route(s), &mut answer(1, "before")),
            Step::Relay
        );
        // A script that reads no DOM is never touched.
        let mut clock = json!({"id": 2, "sessionId": "S", "method": "Runtime.evaluate",
            "params": {"expression": "performance.now()"}});
        assert_eq!(armed.command(route(s), &mut clock), Step::Relay);
        let mut pressed = json!({"id": 3, "sessionId": "S", "method": "Input.dispatchMouseEvent",
            "params": {"type": "mousePressed", "x": 1, "y": 1}});
        assert_eq!(armed.command(route(s), &mut pressed), Step::Relay);
        assert!(!armed.fired());
        // After it: the same read gets the old answer, on its own id.
        assert_eq!(armed.command(route(s), &mut read(4)), Step::Relay);
        let mut after = answer(4, "after");
        assert_eq!(armed.message(route(s), &mut after), Step::Rewritten);
        assert_eq!(after["result"]["result"]["value"], "before");
        assert_eq!(after["id"], 4);
        assert!(armed.fired());
        // Another session's reads are its own.
        assert_eq!(
            armed.command(
                route(Some("T")),
                &mut json!({"id": 5, "sessionId": "T",
            "method": "Runtime.evaluate", "params": {"expression": "document.title"}})
            ),
            Step::Relay
        );
        let mut other = json!({"id": 5, "sessionId": "T", "result": {"result": {"value": "t"}}});
        assert_eq!(armed.message(route(Some("T")), &mut other), Step::Relay);
    }

    #[test]
    fn the_protocol_error_answers_the_first_action_only() {
        let armed = Armed::new(ProtocolFault::ProtocolError);
        let mut moved = json!({"id": 1, "method": "Input.dispatchMouseEvent", "params": {"type": "mouseMoved", "x": 1, "y": 1}});
        assert_eq!(armed.command(route(None), &mut moved), Step::Relay);
        let mut pressed = json!({"id": 2, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 1, "y": 1}});
        assert!(
            matches!(armed.command(route(None), &mut pressed), Step::Answer(a) if a["error"]["code"] == -32000)
        );
        let mut again = json!({"id": 4, "method": "Input.dispatchMouseEvent", "params": {"type": "mousePressed", "x": 1, "y": 1}});
        assert_eq!(armed.command(route(None), &mut again), Step::Relay);
        assert_eq!(armed.changes().len(), 1);
    }
}
