//! One connection, many items: a fault armed per target session.
//!
//! A harness that keeps one browser connection for all its pages (faultline's own engine
//! does; so does any driver that attaches to targets with `flatten: true`) runs several
//! items at once on it, each on a page of its own and so on a `sessionId` of its own.
//! [`SessionFaults`] is the [`Tamper`] for such a connection: each page's session may
//! have a fault armed ([`SessionFaults::arm`]), and a message is offered to the fault of
//! the session it travels on — and to no other. Messages of the browser's own session
//! (no `sessionId`: target discovery, contexts) and of sessions with nothing armed are
//! relayed untouched, so an item with no protocol fault sees the browser as it is, however
//! many faulty items run beside it.

use crate::{Route, Step, Tamper};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A fault per target session. See the module documentation.
#[derive(Default)]
pub struct SessionFaults {
    armed: Mutex<HashMap<String, Arc<dyn Tamper>>>,
}

impl SessionFaults {
    /// Arms `fault` on `session`'s messages (replacing one armed there before).
    pub fn arm(&self, session: &str, fault: Arc<dyn Tamper>) {
        self.armed
            .lock()
            .expect("not poisoned")
            .insert(session.to_string(), fault);
    }

    /// Disarms `session`: its messages are relayed untouched from now on.
    pub fn disarm(&self, session: &str) {
        self.armed.lock().expect("not poisoned").remove(session);
    }

    /// How many sessions have a fault armed.
    pub fn armed(&self) -> usize {
        self.armed.lock().expect("not poisoned").len()
    }

    fn of(&self, route: Route<'_>) -> Option<Arc<dyn Tamper>> {
        let session = route.session?;
        self.armed
            .lock()
            .expect("not poisoned")
            .get(session)
            .cloned()
    }
}

impl Tamper for SessionFaults {
    fn command(&self, route: Route<'_>, message: &mut Value) -> Step {
        self.of(route)
            .map_or(Step::Relay, |f| f.command(route, message))
    }

    fn message(&self, route: Route<'_>, message: &mut Value) -> Step {
        self.of(route)
            .map_or(Step::Relay, |f| f.message(route, message))
    }

    fn injected_answer(&self, route: Route<'_>, request: &Value, answer: &Value) {
        if let Some(f) = self.of(route) {
            f.injected_answer(route, request, answer);
        }
    }

    fn idle(&self) -> bool {
        self.armed.lock().expect("not poisoned").is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Armed, ProtocolFault};
    use serde_json::json;

    fn route(session: Option<&str>) -> Route<'_> {
        Route {
            connection: 1,
            session,
        }
    }

    fn click(session: &str) -> Value {
        json!({"id": 7, "sessionId": session, "method": "Input.dispatchMouseEvent",
               "params": {"type": "mousePressed", "x": 100.0, "y": 40.0}})
    }

    #[test]
    fn a_fault_acts_on_its_own_session_only() {
        let faults = SessionFaults::default();
        assert!(faults.idle());
        let armed = Arc::new(Armed::new(ProtocolFault::ScaledPointer { factor: 0.5 }));
        faults.arm("A", armed.clone());
        assert!(!faults.idle());

        let mut other = click("B");
        assert_eq!(faults.command(route(Some("B")), &mut other), Step::Relay);
        assert_eq!(other["params"]["x"], 100.0);
        let mut browser_level = json!({"id": 8, "method": "Target.getTargets"});
        assert_eq!(faults.command(route(None), &mut browser_level), Step::Relay);
        assert!(!armed.fired());

        let mut mine = click("A");
        assert_eq!(faults.command(route(Some("A")), &mut mine), Step::Rewritten);
        assert_eq!(mine["params"]["x"], 50.0);
        assert!(armed.fired());

        faults.disarm("A");
        let mut after = click("A");
        assert_eq!(faults.command(route(Some("A")), &mut after), Step::Relay);
        assert_eq!(after["params"]["x"], 100.0);
        assert_eq!(faults.armed(), 0);
    }
}
