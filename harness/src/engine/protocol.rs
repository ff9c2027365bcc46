//! Faults on the DevTools protocol, armed on one page's session.
//!
//! The catalogue's protocol faults (`Mechanism::Devtools`) act between a driver and its
//! browser: a click's coordinates rescaled on the wire, a release dropped, a screenshot
//! answered with an earlier frame, an answer held, a renderer crashed after an input.
//! They reach an external harness through the proxy its claim offers
//! ([`crate::environment::devtools`]), and faultline's own engine through the same proxy
//! when a run sets `[browser] devtools_proxy = true`: the engine's one browser connection
//! then goes through a [`faultline_devtools::Proxy`] whose tamper is a
//! [`SessionFaults`], and each item arms its fault on its own page's session
//! ([`ArmedPage`]). Items run side by side on that connection; a fault changes only its
//! own page's messages.
//!
//! Either way the fault is the same [`Armed`] with the same parameters from the item's
//! seed ([`protocol_fault`]), and whether it fired is read from what the proxy changed,
//! so the built-in policies and an external harness's verifier are measured on the same
//! faults, side by side.

use faultline_devtools::fault::{Armed, ProtocolFault};
use faultline_devtools::sessions::SessionFaults;
use faultline_devtools::Tamper;
use faultline_faults::{Fault, FaultPlan, Witness};
use std::sync::Arc;

/// The protocol fault an item's catalogue fault arms, with its parameters drawn from the
/// item's seed; `None` for a fault that is not on the protocol.
pub fn protocol_fault(fault: Fault, seed: u64) -> Option<ProtocolFault> {
    Some(match fault {
        Fault::DevtoolsScaledPointer => ProtocolFault::ScaledPointer { factor: 0.75 },
        Fault::DevtoolsDevicePixels => ProtocolFault::ScaledPointer { factor: 2.0 },
        // A window's title bar, tab strip and toolbar: 72 to 112 CSS pixels.
        Fault::DevtoolsChromeOffset => ProtocolFault::OffsetPointer {
            dx: 0.0,
            dy: 72.0 + (seed % 41) as f64,
        },
        Fault::DevtoolsDroppedRelease => ProtocolFault::DroppedRelease,
        Fault::DevtoolsStaleScreenshot => ProtocolFault::StaleScreenshot,
        Fault::DevtoolsUnsettledScreenshot => ProtocolFault::UnsettledScreenshot,
        Fault::DevtoolsStaleDom => ProtocolFault::StaleDom,
        Fault::DevtoolsProtocolError => ProtocolFault::ProtocolError,
        Fault::DevtoolsCrashAfterInput => ProtocolFault::CrashAfterInput,
        // Past a 10 s deadline for one call (faultline's own), as the hang fault is.
        Fault::DevtoolsHeldAnswer => ProtocolFault::HeldAnswer {
            hold: std::time::Duration::from_millis(12_000 + seed % 2_001),
        },
        _ => return None,
    })
}

/// The witness of an armed protocol fault, when it changed a message: the first change
/// in the summary, every recorded change in the data.
pub fn witness(fault: Fault, armed: &Armed) -> Option<Witness> {
    let first = armed.changes().into_iter().next()?;
    Some(Witness::new(
        fault.id(),
        format!(
            "the DevTools proxy changed {}: {}",
            first.method, first.what
        ),
        armed.witness(),
    ))
}

/// An item's protocol fault armed on its page's session, disarmed when dropped.
pub struct ArmedPage {
    fault: Fault,
    armed: Arc<Armed>,
    session: String,
    faults: Arc<SessionFaults>,
}

impl ArmedPage {
    /// Arms `plan`'s protocol fault on `session` of the connection `faults` tampers
    /// with; `None` when the fault is not on the protocol.
    pub fn arm(plan: &FaultPlan, session: &str, faults: &Arc<SessionFaults>) -> Option<Self> {
        let armed = Arc::new(Armed::new(protocol_fault(plan.fault, plan.seed)?));
        faults.arm(session, armed.clone() as Arc<dyn Tamper>);
        Some(ArmedPage {
            fault: plan.fault,
            armed,
            session: session.to_string(),
            faults: faults.clone(),
        })
    }

    /// Whether the fault changed a message so far.
    pub fn fired(&self) -> bool {
        self.armed.fired()
    }

    /// The fault armed.
    pub fn fault(&self) -> ProtocolFault {
        self.armed.fault()
    }

    /// Its witness, when it fired.
    pub fn witness(&self) -> Option<Witness> {
        witness(self.fault, &self.armed)
    }
}

impl Drop for ArmedPage {
    fn drop(&mut self) {
        self.faults.disarm(&self.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_fault_of_the_catalogue_has_a_protocol_fault_and_no_other_does() {
        for &f in Fault::ALL {
            assert_eq!(protocol_fault(f, 1).is_some(), f.on_the_protocol(), "{f}");
        }
    }

    #[test]
    fn an_armed_page_is_disarmed_when_dropped() {
        let faults = Arc::new(SessionFaults::default());
        let plan = FaultPlan {
            fault: Fault::DevtoolsDroppedRelease,
            seed: 3,
        };
        let page = ArmedPage::arm(&plan, "S1", &faults).expect("a protocol fault");
        assert_eq!(faults.armed(), 1);
        assert!(!page.fired());
        assert!(page.witness().is_none());
        drop(page);
        assert_eq!(faults.armed(), 0);
        let not_on_the_protocol = FaultPlan {
            fault: Fault::TokenLeak,
            seed: 3,
        };
        assert!(ArmedPage::arm(&not_on_the_protocol, "S1", &faults).is_none());
        assert_eq!(faults.armed(), 0);
    }
}
