//! The HTTP layer: status codes (server errors, rate limits, expired sessions).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const SERVER_ERROR: FaultSpec = FaultSpec {
    id: "http.server_error",
    layer: Layer::Http,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Search],
    description: "the search request is answered 500 Internal Server Error",
    injection: "server middleware answers 500 with an error page instead of running the search",
    parameters: "none",
    witness: "the route and the status served",
    implies: "the search never ran: nothing was submitted",
    outcome_holds: false,
    not_fired_when: "no search was submitted",
    source: Source::Standard {
        name: "RFC 9110 (HTTP Semantics)",
        section: "15.6.1 500 Internal Server Error",
    },
};

pub(super) const SERVICE_UNAVAILABLE: FaultSpec = FaultSpec {
    id: "http.service_unavailable",
    layer: Layer::Http,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Search],
    description: "the first search request is answered 503 Service Unavailable with Retry-After: 1",
    injection: "server middleware answers the first matching request 503 with a Retry-After header; later ones pass",
    parameters: "none",
    witness: "the route, the status and the Retry-After served",
    implies: "the first search never ran; a retry after a second would",
    outcome_holds: false,
    not_fired_when: "no search was submitted",
    source: Source::Standard {
        name: "RFC 9110 (HTTP Semantics)",
        section: "15.6.4 503 Service Unavailable and 10.2.3 Retry-After",
    },
};

pub(super) const RATE_LIMITED: FaultSpec = FaultSpec {
    id: "http.rate_limited",
    layer: Layer::Http,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Form],
    description: "the first save request is answered 429 Too Many Requests with Retry-After: 1",
    injection: "server middleware answers the first save 429 with Retry-After; the page shows its rate-limit message",
    parameters: "none",
    witness: "the route, the status and the Retry-After served",
    implies: "no write was committed",
    outcome_holds: false,
    not_fired_when: "the page sent no save request",
    source: Source::Report {
        title: "earendil-works/pi#9595: Bug: agent-level retry ignores Retry-After on 429",
        url: "https://github.com/earendil-works/pi/issues/9595",
    },
};

pub(super) const SESSION_EXPIRED: FaultSpec = FaultSpec {
    id: "http.session_expired",
    layer: Layer::Http,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Form],
    description: "the save request is answered 401: the session expired and the page redirects to the login page",
    injection: "server middleware answers 401 with the session-expired marker; the page's own code redirects to /login",
    parameters: "none",
    witness: "the route and the status served",
    implies: "no write was committed; the browser is on the login page",
    outcome_holds: false,
    not_fired_when: "the page sent no save request",
    source: Source::Standard {
        name: "RFC 9110 (HTTP Semantics)",
        section: "15.5.2 401 Unauthorized",
    },
};
