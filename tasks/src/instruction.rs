//! Instructions: what the agent is asked, in public words.
//!
//! The text of an instruction is written by its task ([`crate::task::Task::instruction`])
//! and always quotes the task's target; the [`Expectation`] is read back from that text,
//! so a verification policy that holds only the instruction knows exactly what an agent
//! harness would know.

use crate::task::TaskKind;
use serde::{Deserialize, Serialize};

pub use crate::expectation::{value_shown, Expectation};

/// The public task statement given to the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instruction {
    /// The task the instruction is for.
    pub task: TaskKind,
    /// The instruction text, as the agent reads it.
    pub text: String,
}

impl Instruction {
    /// The expectation this instruction states, read from its text.
    pub fn expectation(&self) -> Result<Expectation, String> {
        Expectation::from_instruction(self)
    }
}

impl Expectation {
    /// Reads the expectation from an instruction's text: its first quoted name, in the
    /// meaning its task gives it.
    pub fn from_instruction(instruction: &Instruction) -> Result<Expectation, String> {
        let quoted = first_quoted(&instruction.text)
            .ok_or_else(|| format!("instruction has no quoted target: {:?}", instruction.text))?;
        Ok(instruction.task.expectation(quoted))
    }
}

fn first_quoted(text: &str) -> Option<String> {
    let start = text.find('"')? + 1;
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instruction_without_a_quoted_name_states_nothing() {
        let bad = Instruction {
            task: TaskKind::Grid,
            text: "Click something".into(),
        };
        assert!(bad.expectation().is_err());
        let good = Instruction {
            task: TaskKind::Grid,
            text: "Click the button \"Item 4\".".into(),
        };
        assert_eq!(
            good.expectation().unwrap(),
            Expectation::SelectedItem {
                label: "Item 4".into()
            }
        );
    }
}
