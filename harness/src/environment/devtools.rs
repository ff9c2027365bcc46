//! An item's DevTools proxy: the harness's own browser connection, routed through
//! faultline so that a fault on the protocol can reach it.
//!
//! A claim may name `devtools_upstream`, the DevTools endpoint of the harness's own
//! Chromium (`http://127.0.0.1:PORT`, started with `--remote-debugging-port`). The claim
//! then starts a [`faultline_devtools::Proxy`] in front of it, on loopback, for this
//! lease only, and hands its URL back as the item's `devtools`: the harness connects its
//! driver there (`connect_over_cdp`) instead of to its browser. The proxy relays every
//! message unchanged, except where the item's armed protocol fault says otherwise
//! ([`protocol_fault`], the same as faultline's own engine arms); what it changed is the item's witness ([`ItemProxy::witness`]),
//! so a fault whose situation never came (the harness never clicked) is stored as not
//! fired. The proxy lives as long as the lease: reported, expired, its worker gone or
//! the run over, dropping the lease stops it (the harness's browser is not faultline's
//! and is left running).
//!
//! Nothing of the run's (the API token, the ledger key) travels through the proxy: it
//! opens its own WebSocket upstream and forwards none of the client's headers.

use faultline_devtools::fault::Armed;
use faultline_devtools::{Proxy, Route, Step, Tamper};
use faultline_faults::{Fault, Witness};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use crate::engine::protocol::protocol_fault;

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

/// A lease's proxy and the fault armed on it, if any.
///
/// The proxy is the lease's own (a claim's default: it stops when the lease ends), or
/// the worker's ([`WorkerProxy`], a claim with `"devtools_scope": "worker"`): one
/// endpoint for all the worker's items, so a harness that keeps one browser connection
/// for its life keeps it. The worker's proxy is re-armed with each item's fault at its
/// claim and disarmed when the lease ends, so a fault acts on its own item only.
pub struct ItemProxy {
    endpoint: Endpoint,
    armed: Option<(Fault, Arc<Armed>)>,
}

enum Endpoint {
    Own(Proxy),
    Worker { url: String, slot: Arc<Slot> },
}

impl std::fmt::Debug for ItemProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemProxy")
            .field("url", &self.url())
            .field("armed", &self.armed.as_ref().map(|(f, _)| f.id()))
            .finish()
    }
}

/// `fault`'s protocol fault armed afresh (parameters from `seed`), when it has one.
fn arm(fault: Option<Fault>, seed: u64) -> Option<(Fault, Arc<Armed>)> {
    fault.and_then(|f| Some((f, Arc::new(Armed::new(protocol_fault(f, seed)?)))))
}

impl ItemProxy {
    /// Starts a proxy of the lease's own to `upstream`, armed with `fault`'s protocol
    /// fault when it has one.
    pub async fn start(
        fault: Option<Fault>,
        seed: u64,
        upstream: SocketAddr,
    ) -> std::io::Result<ItemProxy> {
        let armed = arm(fault, seed);
        let tamper = armed.as_ref().map(|(_, a)| a.clone() as Arc<dyn Tamper>);
        let proxy = Proxy::start(upstream, tamper).await?;
        Ok(ItemProxy {
            endpoint: Endpoint::Own(proxy),
            armed,
        })
    }

    /// What the harness connects to: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        match &self.endpoint {
            Endpoint::Own(proxy) => proxy.http_url(),
            Endpoint::Worker { url, .. } => url.clone(),
        }
    }

    /// The armed fault's witness, when it changed a message: the first change in the
    /// summary, every recorded change in the data.
    pub fn witness(&self) -> Option<Witness> {
        let (fault, armed) = self.armed.as_ref()?;
        crate::engine::protocol::witness(*fault, armed)
    }
}

impl Drop for ItemProxy {
    /// A worker's proxy outlives the lease; the lease's fault does not.
    fn drop(&mut self) {
        if let Endpoint::Worker { slot, .. } = &self.endpoint {
            let mine = self.armed.as_ref().map(|(_, a)| a);
            slot.disarm_if(mine);
        }
    }
}

/// The fault a worker's proxy applies now: the current item's, or none between items.
#[derive(Default)]
pub struct Slot(Mutex<Option<Arc<Armed>>>);

impl Slot {
    fn current(&self) -> Option<Arc<Armed>> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn set(&self, armed: Option<Arc<Armed>>) {
        *self.0.lock().expect("not poisoned") = armed;
    }

    /// Disarms the slot if `armed` is still the fault in it (a later item's is kept).
    fn disarm_if(&self, armed: Option<&Arc<Armed>>) {
        let mut slot = self.0.lock().expect("not poisoned");
        let same = match (slot.as_ref(), armed) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, _) => true,
            (Some(_), None) => false,
        };
        if same {
            *slot = None;
        }
    }
}

impl Tamper for Slot {
    fn idle(&self) -> bool {
        self.current().is_none()
    }

    fn command(&self, route: Route<'_>, message: &mut serde_json::Value) -> Step {
        self.current()
            .map_or(Step::Relay, |a| a.command(route, message))
    }

    fn message(&self, route: Route<'_>, message: &mut serde_json::Value) -> Step {
        self.current()
            .map_or(Step::Relay, |a| a.message(route, message))
    }

    fn injected_answer(
        &self,
        route: Route<'_>,
        request: &serde_json::Value,
        answer: &serde_json::Value,
    ) {
        if let Some(a) = self.current() {
            a.injected_answer(route, request, answer);
        }
    }
}

/// A worker's proxy (`"devtools_scope": "worker"`): started at the worker's first
/// claim, kept until the run ends, the worker names another browser or its process
/// exits.
pub struct WorkerProxy {
    proxy: Proxy,
    upstream: SocketAddr,
    slot: Arc<Slot>,
    /// The lease whose fault is armed on it now.
    lease: Option<String>,
}

/// Every worker's proxy, by worker name.
#[derive(Default)]
pub struct WorkerProxies(tokio::sync::Mutex<HashMap<String, WorkerProxy>>);

impl WorkerProxies {
    /// The lease whose fault `worker`'s proxy carries now, if it has one.
    pub async fn holding(&self, worker: &str) -> Option<String> {
        self.0
            .lock()
            .await
            .get(worker)
            .and_then(|w| w.lease.clone())
    }

    /// Stops `worker`'s proxy, if it has one: its process exited, and whatever starts in
    /// its place opens a connection of its own (and gets a new proxy at its first
    /// claim). Every connection the proxy relayed ends with it; the browser stays.
    pub async fn release(&self, worker: &str) -> bool {
        self.0.lock().await.remove(worker).is_some()
    }

    /// The item's proxy on `worker`'s own: started (or restarted for a new `upstream`)
    /// when needed, then armed with the item's fault (its parameters from `seed`), which
    /// replaces any earlier item's.
    pub async fn claim(
        &self,
        worker: &str,
        upstream: SocketAddr,
        lease: &str,
        fault: Option<Fault>,
        seed: u64,
    ) -> std::io::Result<ItemProxy> {
        let mut all = self.0.lock().await;
        if all.get(worker).is_some_and(|w| w.upstream != upstream) {
            all.remove(worker);
        }
        let entry = match all.entry(worker.to_string()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let slot = Arc::new(Slot::default());
                let proxy = Proxy::start(upstream, Some(slot.clone() as Arc<dyn Tamper>)).await?;
                v.insert(WorkerProxy {
                    proxy,
                    upstream,
                    slot,
                    lease: None,
                })
            }
        };
        let armed = arm(fault, seed);
        entry.slot.set(armed.as_ref().map(|(_, a)| a.clone()));
        entry.lease = Some(lease.to_string());
        Ok(ItemProxy {
            endpoint: Endpoint::Worker {
                url: entry.proxy.http_url(),
                slot: entry.slot.clone(),
            },
            armed,
        })
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

    /// Regression (a worker's proxy outlived the worker's process until the run ended):
    /// a released worker's proxy stops listening, and the next claim starts a new one.
    #[tokio::test]
    async fn a_released_worker_proxy_stops_listening_and_the_next_claim_starts_anew() {
        // Nothing is relayed here, so the upstream is never dialled.
        let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let proxies = WorkerProxies::default();
        let first = proxies.claim("w1", upstream, "l1", None, 1).await.unwrap();
        let url = first.url();
        drop(first);
        let addr = url.trim_start_matches("http://").to_string();
        assert!(tokio::net::TcpStream::connect(&addr).await.is_ok(), "{url}");
        assert!(proxies.release("w1").await);
        assert!(!proxies.release("w1").await, "released once");
        assert_eq!(proxies.holding("w1").await, None);
        // The listener is gone once its task has been aborted.
        let mut refused = false;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(&addr).await.is_err() {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(refused, "{url} still accepts connections after release");
        let again = proxies.claim("w1", upstream, "l2", None, 1).await.unwrap();
        let addr = again.url().trim_start_matches("http://").to_string();
        assert!(
            tokio::net::TcpStream::connect(&addr).await.is_ok(),
            "a new proxy listens"
        );
        assert_eq!(proxies.holding("w1").await.as_deref(), Some("l2"));
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
