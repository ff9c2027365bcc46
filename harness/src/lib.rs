//! faultline: fault injection and evaluation for browser-agent harnesses.
//!
//! This crate ties the others together. Its folders say why each part changes:
//!
//! - [`engine`]: driving a real Chromium — the browser and its page pool, the
//!   [`engine::session::Session`] a trial or an episode runs in, the four-stage round trip
//!   (parse, execute, feedback, observe), one detection trial, one recovery episode;
//! - [`agent`]: what acts after a recorded decision — the [`agent::Agent`] trait, the
//!   registry that rebuilds an agent by name, and the built-in agents;
//! - [`experiment`]: what a run is made of — the phases (detection, recovery), their
//!   work items, decisions and recorders, the manifest and the stored rows;
//! - [`plugin`]: other people's verifiers and agents, run as long-lived processes that
//!   speak a versioned JSON-lines protocol;
//! - [`children`]: how browsers and plugins are started so they die with the harness,
//!   and what they leave behind is killed at its end;
//! - [`cli`] and [`config`]: flags and config files turned into a validated experiment;
//!   [`error`]: the usage error and the exit codes, in one place; [`signals`]: what
//!   SIGINT, SIGTERM and SIGHUP mean.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod agent;
pub mod children;
pub mod cli;
pub mod config;
pub mod engine;
pub mod environment;
pub mod error;
pub mod experiment;
pub mod jsonl;
pub mod plugin;
pub mod signals;
