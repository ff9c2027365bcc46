//! An item's DevTools proxy: the harness's own browser connection, routed through
//! faultline so that a fault on the protocol can reach it.
//!
//! A claim may name `devtools_upstream`, the DevTools endpoint of the harness's own
//! Chromium (`http://127.0.0.1:PORT`, started with `--remote-debugging-port`). The claim
//! then starts a [`faultline_devtools::Proxy`] in front of it, on loopback, for this
//! lease only, and hands its URL back as the item's `devtools`: the harness connects its
//! driver there (`connect_over_cdp`) instead of to its browser. The proxy relays every
//! message unchanged, except where the item's armed protocol fault says otherwise
//! ([`protocol_fault`]); what it changed is the item's witness ([`ItemProxy::witness`]),
//! so a fault whose situation never came (the harness never clicked) is stored as not
//! fired. The proxy lives as long as the lease: reported, expired, its worker gone or
//! the run over, dropping the lease stops it (the harness's browser is not faultline's
//! and is left running).
//!
//! Nothing of the run's (the API token, the ledger key) travels through the proxy: it
//! opens its own WebSocket upstream and forwards none of the client's headers.

use faultline_devtools::fault::{Armed, ProtocolFault};
use faultline_devtools::{Proxy, Tamper};
use faultline_faults::{Fault, Witness};
use std::net::SocketAddr;
use std::sync::Arc;

/// The protocol fault an item's catalogue fault arms on its proxy, with its parameters
/// drawn from the trial seed; `None` for a fault that is not on the protocol.
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
        Fault::DevtoolsProtocolError => ProtocolFault::ProtocolError,
        Fault::DevtoolsCrashAfterInput => ProtocolFault::CrashAfterInput,
        // Past a 10 s deadline for one call (faultline's own), as the hang fault is.
        Fault::DevtoolsHeldAnswer => ProtocolFault::HeldAnswer {
            hold: std::time::Duration::from_millis(12_000 + seed % 2_001),
        },
        _ => return None,
    })
}

/// A claim's `devtools_upstream` (`http://127.0.0.1:PORT`, `ws://...`, or `HOST:PORT`)
/// as a loopback address, or what is wrong with it.
pub fn upstream(text: &str) -> Result<SocketAddr, String> {
    let rest = ["http://", "ws://"]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .unwrap_or(text);
    let host_port = rest.split('/').next().unwrap_or_default();
    let host_port = match host_port.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => host_port.to_string(),
    };
    let addr = host_port
        .parse::<SocketAddr>()
        .ok()
        .filter(|a| a.ip().is_loopback())
        .ok_or_else(|| {
            format!(
                "`{text}` is not a DevTools endpoint on loopback (expected http://127.0.0.1:PORT)"
            )
        })?;
    Ok(addr)
}

/// A lease's running proxy and the fault armed on it, if any.
pub struct ItemProxy {
    proxy: Proxy,
    armed: Option<(Fault, Arc<Armed>)>,
}

impl std::fmt::Debug for ItemProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemProxy")
            .field("addr", &self.proxy.addr())
            .field("armed", &self.armed.as_ref().map(|(f, _)| f.id()))
            .finish()
    }
}

impl ItemProxy {
    /// Starts a proxy to `upstream`, armed with `fault`'s protocol fault when it has one.
    pub async fn start(
        fault: Option<Fault>,
        seed: u64,
        upstream: SocketAddr,
    ) -> std::io::Result<ItemProxy> {
        let armed = fault.and_then(|f| Some((f, Arc::new(Armed::new(protocol_fault(f, seed)?)))));
        let tamper = armed.as_ref().map(|(_, a)| a.clone() as Arc<dyn Tamper>);
        let proxy = Proxy::start(upstream, tamper).await?;
        Ok(ItemProxy { proxy, armed })
    }

    /// What the harness connects to: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.proxy.http_url()
    }

    /// The armed fault's witness, when it changed a message: the first change in the
    /// summary, every recorded change in the data.
    pub fn witness(&self) -> Option<Witness> {
        let (fault, armed) = self.armed.as_ref()?;
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
}

/// Why an item's protocol fault did not fire, when the reason is the harness's
/// connection rather than its actions: it did not go through the proxy.
pub fn not_connected(fault: Fault, proxy: Option<&ItemProxy>) -> Option<String> {
    (fault.on_the_protocol() && proxy.is_none()).then(|| {
        "the harness did not connect through the DevTools proxy (its claim named no devtools_upstream)"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_fault_of_the_catalogue_arms_the_proxy_and_no_other_does() {
        for &f in Fault::ALL {
            assert_eq!(protocol_fault(f, 1).is_some(), f.on_the_protocol(), "{f}");
        }
    }

    #[test]
    fn an_upstream_must_be_on_loopback() {
        assert_eq!(upstream("http://127.0.0.1:9222").unwrap().port(), 9222);
        assert_eq!(
            upstream("ws://127.0.0.1:9333/devtools/browser/x")
                .unwrap()
                .port(),
            9333
        );
        assert_eq!(upstream("127.0.0.1:1").unwrap().port(), 1);
        assert_eq!(upstream("http://localhost:9444").unwrap().port(), 9444);
        assert!(upstream("http://192.0.2.1:9222")
            .unwrap_err()
            .contains("loopback"));
        assert!(upstream("nonsense").is_err());
    }
}
