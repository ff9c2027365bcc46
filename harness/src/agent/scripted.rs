//! The scripted baseline agent.
