//! faultline: fault injection and evaluation for browser-agent harnesses.
//!
//! This crate ties the others together: it drives a real Chromium ([`browser`]) through
//! the four-stage action round trip ([`roundtrip`]), runs trials ([`trial`]) and the
//! detection experiment ([`runner`]), records oracle decisions ([`record`]), and maps the
//! command line onto all of it ([`cli`]).

pub mod agent;
pub mod browser;
pub mod cli;
pub mod config;
pub mod episode;
pub mod record;
pub mod roundtrip;
pub mod runner;
pub mod trial;
