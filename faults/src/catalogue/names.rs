//! A fault by name: its id as text, parsed back, in serde, and the close matches
//! offered for an id that is not in the catalogue.

use super::Fault;
use crate::suggest::close_matches;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The message for an id that is not in the catalogue.
pub(super) fn unknown_fault_message(id: &str) -> String {
    format!("unknown fault `{id}`{}", suggestions(id))
}

pub(crate) fn suggestions(s: &str) -> String {
    let ids: Vec<&str> = Fault::ALL.iter().map(|f| f.id()).collect();
    let close = close_matches(s, &ids, 5);
    if close.is_empty() {
        "; `faultline list faults` prints the catalogue".into()
    } else {
        format!(
            "; close matches: {}",
            close
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Fault::ALL
            .iter()
            .copied()
            .find(|f| f.id() == s)
            .ok_or_else(|| unknown_fault_message(s))
    }
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
