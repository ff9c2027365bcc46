//! The stages an item's cost is stored under (`stage_costs.stage`): the stored vocabulary
//! of the cost tables, defined beside the rows that carry it so the schema's CHECK list
//! and the cost report read one definition.

use serde::{Deserialize, Serialize};

faultline_tasks::named_enum! {
    /// A stage of a trial or an episode, for cost accounting (`ALL` is the order of a
    /// trial; the names are stored in `stage_costs.stage`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum CostStage: "cost stage" {
        /// A fresh browser context and page, opened ahead of time by the page pool (outside
        /// the item's own wall time: it overlaps other items).
        SetupAhead = "setup_ahead",
        /// Waiting for the fresh page from the pool (nothing when the pool kept up).
        Setup = "setup",
        /// Loading the task page.
        Navigation = "navigation",
        /// The execute stage: browser input (and the fault's before-act change).
        Actions = "actions",
        /// The settle wait and any navigation the actions started.
        Settle = "settle",
        /// The screenshot (with the page-clock read before it).
        Capture = "capture",
        /// The DOM, text and controls snapshot of every frame.
        Dom = "dom",
        /// The capture-before-tooltip fault's witness: polling the page for the tooltip.
        Witness = "witness",
        /// Every policy's judgement.
        Policies = "policies",
        /// The agent's reply (recovery only).
        Agent = "agent",
        /// Ledger flush, the harness's notes, disarm, ledger read and truth.
        Scoring = "scoring",
        /// Screenshots written and rows inserted (after the item's attempt).
        Storage = "storage",
        /// Earlier attempts of the item that an infrastructure failure ended (before the
        /// attempt that was stored).
        Retried = "retried",
    }
}

impl CostStage {
    /// The stage whose stored name is `name`.
    pub fn from_name(name: &str) -> Option<CostStage> {
        name.parse().ok()
    }

    /// Whether the stage runs inside the attempt whose wall time is the item's stored
    /// duration (so these stages sum to at most it). Opening the page ahead of time,
    /// earlier failed attempts and storage do not.
    pub fn within_attempt(self) -> bool {
        !matches!(
            self,
            CostStage::SetupAhead | CostStage::Retried | CostStage::Storage
        )
    }
}
