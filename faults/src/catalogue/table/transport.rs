//! The transport layer: bytes on the wire (delays, dropped connections, hangs).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const SLOW_RESPONSE: FaultSpec = FaultSpec {
    id: "transport.slow_response",
    layer: Layer::Transport,
    stage: Stage::Observe,
    mechanism: M::Network,
    tasks: tasks![Form],
    description: "the save request is answered 1.0-1.3 s late: the write is committed at once, the page only learns of it after the harness has observed",
    injection: "server middleware runs the save handler, then holds the response back",
    parameters: "the delay, 1000-1300 ms: after the observation that follows the click (120 ms settle), before the next one of an agent that waits 1.5 s, whatever the load",
    witness: "the route and the delay applied",
    implies: "the note is saved (one committed write): the outcome happened, the observation is stale",
    outcome_holds: true,
    not_fired_when: "the page sent no save request",
    source: Source::DesignedHere {
        reason: "A write that commits at once but answers late is the common case on a loaded server, and a harness that observes on a fixed settle wait judges the page before the page knows.",
    },
};

pub(super) const CONNECTION_DROPPED: FaultSpec = FaultSpec {
    id: "transport.connection_dropped",
    layer: Layer::Transport,
    stage: Stage::Observe,
    mechanism: M::Network,
    tasks: tasks![Search],
    description: "the search results response is cut off mid-body: headers and the page's top arrive, then the connection drops",
    injection: "server middleware runs the search, sends the body up to the results list, then aborts the connection",
    parameters: "none (the cut is just before the results)",
    witness: "the route and the number of body bytes sent before the drop",
    implies: "the query reached the server but the results never reached the browser (the ledger records the truncated response)",
    outcome_holds: false,
    not_fired_when: "no search was submitted",
    source: Source::Report {
        title: "aspnet/KestrelHttpServer#1858: chrome Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING",
        url: "https://github.com/aspnet/KestrelHttpServer/issues/1858",
    },
};

pub(super) const REQUEST_HANGS: FaultSpec = FaultSpec {
    id: "transport.request_hangs",
    layer: Layer::Transport,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Search],
    description:
        "the search request hangs: no byte comes back until the harness's navigation wait times out",
    injection: "server middleware holds the request open without running the handler",
    parameters: "none",
    witness: "the route and how long the request was held",
    implies: "the search never ran: nothing was submitted",
    outcome_holds: false,
    not_fired_when: "no search was submitted",
    source: Source::Report {
        title: "microsoft/vscode#280736: Fetch tool never times out",
        url: "https://github.com/microsoft/vscode/issues/280736",
    },
};
