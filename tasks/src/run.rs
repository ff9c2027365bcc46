//! What a run is made of: its phases, and the infrastructure failures that can interrupt
//! their items. Both are stored by name (`phase_costs.phase`, `infra_errors.kind`), so
//! they belong to the vocabulary the harness writes and the analysis reads.

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
}
