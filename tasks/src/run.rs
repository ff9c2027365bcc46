//! What a run is made of: its phases, and the infrastructure failures that can interrupt
//! their items: the harness's own ([`InfraKind`]) and an external process's
//! ([`PluginFailure`]), stored as one [`InfraErrorKind`]. They are stored by name
//! (`phase_costs.phase`, `infra_errors.kind`), so they belong to the vocabulary the
//! harness writes and the analysis reads.

use serde::{Deserialize, Serialize};

crate::named_enum! {
    /// A run's phases: the detection trials, then the recovery episodes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Phase: "phase" {
        /// The detection trials.
        Detection = "detection",
        /// The recovery episodes.
        Recovery = "recovery",
    }
}

crate::named_enum! {
    /// What kind of infrastructure failure interrupted a trial or an episode (the harness's
    /// own failures; an external policy that could not judge has kinds of its own).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum InfraKind: "infrastructure failure kind" {
        /// The browser process exited or its DevTools connection closed.
        BrowserDied = "browser_died",
        /// The trial page's renderer crashed (or its target went away) when no fault of
        /// the catalogue crashed it.
        RendererCrashed = "renderer_crashed",
        /// A CDP call (a JS evaluation, a screenshot, an input event) or the wait for a
        /// fresh page got no answer within its deadline: the page is hung.
        Unresponsive = "unresponsive",
        /// The fixture page could not be loaded.
        NavigationFailed = "navigation_failed",
        /// The agent's model endpoint could not be reached (after its own retries).
        AgentEndpoint = "agent_endpoint",
        /// The agent's plugin process crashed, hung past its timeout or could not start.
        AgentProcess = "agent_process",
        /// Any other failure of the harness's machinery.
        #[serde(rename = "harness_error")]
        Harness = "harness_error",
        /// An external harness held an item past its lease without reporting it.
        LeaseExpired = "lease_expired",
        /// An external harness's worker process exited while it held an item.
        WorkerExited = "worker_exited",
        /// An external harness reported an item with a report that could not be stored
        /// (malformed, out of bounds, or for an item already reported).
        BadReport = "bad_report",
    }
}

crate::named_enum! {
    /// How an external process (a verifier's or an exec agent's plugin) failed to give a
    /// usable answer: the kinds an external policy that could not judge is stored with.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum PluginFailure: "plugin failure kind" {
        /// The process could not be started (or a file for its request written).
        Spawn = "spawn",
        /// The process exited, or its pipes broke, before it answered.
        Crash = "crash",
        /// The process did not answer within its timeout.
        Timeout = "timeout",
        /// The answer was not what the protocol asks for (not JSON, a field missing or of
        /// the wrong type).
        Malformed = "malformed",
        /// A verifier answered with a verdict faultline does not know.
        UnknownVerdict = "unknown_verdict",
        /// The process speaks another protocol or version, answered another request, or
        /// wrote a line over the limit.
        Protocol = "protocol",
    }
}

/// The kind an infrastructure error is stored with (`infra_errors.kind`): the harness's
/// own failure ([`InfraKind`]) or an external process's ([`PluginFailure`]). The two
/// name sets are disjoint, so the stored name alone says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InfraErrorKind {
    /// The harness's own machinery failed (a browser, a page, an agent endpoint, an
    /// external harness).
    Harness(InfraKind),
    /// An external verifier or agent process gave no usable answer.
    Plugin(PluginFailure),
}

impl InfraErrorKind {
    /// Every kind: the harness's in [`InfraKind::ALL`] order, then the plugins' in
    /// [`PluginFailure::ALL`] order.
    pub const ALL: [InfraErrorKind; InfraKind::ALL.len() + PluginFailure::ALL.len()] = {
        let mut all = [InfraErrorKind::Harness(InfraKind::ALL[0]);
            InfraKind::ALL.len() + PluginFailure::ALL.len()];
        let mut i = 0;
        while i < InfraKind::ALL.len() {
            all[i] = InfraErrorKind::Harness(InfraKind::ALL[i]);
            i += 1;
        }
        let mut j = 0;
        while j < PluginFailure::ALL.len() {
            all[i + j] = InfraErrorKind::Plugin(PluginFailure::ALL[j]);
            j += 1;
        }
        all
    };

    /// The stable name (stored, printed and parsed).
    pub fn name(self) -> &'static str {
        match self {
            InfraErrorKind::Harness(k) => k.name(),
            InfraErrorKind::Plugin(k) => k.name(),
        }
    }
}

impl From<InfraKind> for InfraErrorKind {
    fn from(k: InfraKind) -> Self {
        InfraErrorKind::Harness(k)
    }
}

impl From<PluginFailure> for InfraErrorKind {
    fn from(k: PluginFailure) -> Self {
        InfraErrorKind::Plugin(k)
    }
}

impl std::fmt::Display for InfraErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for InfraErrorKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InfraErrorKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = InfraErrorKind::ALL.map(InfraErrorKind::name).to_vec();
                format!(
                    "unknown infrastructure error kind `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl Serialize for InfraErrorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for InfraErrorKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_are_unchanged_and_read_back() {
        assert_eq!(Phase::ALL.map(Phase::name), ["detection", "recovery"]);
        assert_eq!(
            InfraKind::ALL.map(InfraKind::name),
            [
                "browser_died",
                "renderer_crashed",
                "unresponsive",
                "navigation_failed",
                "agent_endpoint",
                "agent_process",
                "harness_error",
                "lease_expired",
                "worker_exited",
                "bad_report",
            ]
        );
        for k in InfraKind::ALL {
            assert_eq!(k.name().parse::<InfraKind>(), Ok(k));
            // serde writes the stored name too.
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        for p in Phase::ALL {
            assert_eq!(p.to_string().parse::<Phase>(), Ok(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
    }

    #[test]
    fn every_stored_infrastructure_error_kind_is_pinned_and_reads_back() {
        assert_eq!(
            PluginFailure::ALL.map(PluginFailure::name),
            [
                "spawn",
                "crash",
                "timeout",
                "malformed",
                "unknown_verdict",
                "protocol"
            ]
        );
        assert_eq!(
            InfraErrorKind::ALL.map(InfraErrorKind::name),
            [
                "browser_died",
                "renderer_crashed",
                "unresponsive",
                "navigation_failed",
                "agent_endpoint",
                "agent_process",
                "harness_error",
                "lease_expired",
                "worker_exited",
                "bad_report",
                "spawn",
                "crash",
                "timeout",
                "malformed",
                "unknown_verdict",
                "protocol",
            ]
        );
        for k in InfraErrorKind::ALL {
            // One name, one kind: the harness's and the plugins' names never meet.
            assert_eq!(k.name().parse::<InfraErrorKind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
            assert_eq!(
                serde_json::from_value::<InfraErrorKind>(k.name().into()).unwrap(),
                k
            );
        }
        for k in InfraKind::ALL {
            assert_eq!(InfraErrorKind::from(k).name(), k.name());
        }
        for k in PluginFailure::ALL {
            assert_eq!(InfraErrorKind::from(k).name(), k.name());
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert!("segfault".parse::<InfraErrorKind>().is_err());
    }
}
