//! The self-report layer: the agent's own claims about what it did and saw.

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const FALSE_COMPLETION: FaultSpec = FaultSpec {
    id: "self_report.false_completion",
    layer: Layer::SelfReport,
    stage: Stage::Parse,
    mechanism: M::Agent,
    tasks: tasks![Search, Form],
    description: "the agent stops before its submitting action and claims the task is done",
    injection: "the recorded reply loses its last browser action and gains a claim of completion and stop()",
    parameters: "none",
    witness: "the action dropped and the claim made",
    implies: "nothing was submitted or saved",
    outcome_holds: false,
    not_fired_when: "the reply had a single browser action",
    source: Source::Report {
        title: "amd/gaia#3983: fix(agent): a run can report success for work it never did",
        url: "https://github.com/amd/gaia/issues/3983",
    },
};

pub(super) const DOUBLE_SUBMIT: FaultSpec = FaultSpec {
    id: "self_report.double_submit",
    layer: Layer::SelfReport,
    stage: Stage::Parse,
    mechanism: M::Agent,
    tasks: tasks![Form],
    description: "the agent retries its submit and the page mints a fresh idempotency key for it: the note is written twice",
    injection: "the recorded reply repeats its Save click; a page script gives every click a new idempotency key",
    parameters: "none",
    witness: "the repeated click and the keys sent",
    implies: "two committed writes with two keys (the ledger records both)",
    outcome_holds: false,
    not_fired_when: "the reply had no click to repeat",
    source: Source::Report {
        title: "yubing744/trading-gpt#94: Order retry can double-submit on ambiguous failure (no ClientOrderID / idempotency)",
        url: "https://github.com/yubing744/trading-gpt/issues/94",
    },
};

pub(super) const UNOBSERVED_VALUE: FaultSpec = FaultSpec {
    id: "self_report.unobserved_value",
    layer: Layer::SelfReport,
    stage: Stage::Parse,
    mechanism: M::Agent,
    tasks: tasks![Chart],
    description: "the agent reports the value without hovering: a value it never observed",
    injection: "the recorded reply loses its hover and keeps its answer",
    parameters: "none",
    witness: "the hover dropped",
    implies: "no observation the agent received showed the value: not a success, even if the number is right",
    outcome_holds: false,
    not_fired_when: "the reply had no hover",
    source: Source::Report {
        title: "NorthlandPositronics/Cogtrix#350: agent fabricates detailed research answer when all search_web calls return empty",
        url: "https://github.com/NorthlandPositronics/Cogtrix/issues/350",
    },
};
