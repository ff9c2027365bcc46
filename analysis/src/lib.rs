//! faultline's analysis: the results database, statistics, tables, plots and the report.
//!
//! Everything here reads stored results and needs no browser, so a report can always be
//! rebuilt from `results.sqlite` alone (`faultline report`). The vocabulary (tasks,
//! faults, layers, stages, verdicts, conditions, stop reasons, seed derivation) comes from
//! `faultline-tasks` and `faultline-faults`; nothing here keeps a string copy of it.
//!
//! - [`db`]: the schema and the typed rows the harness writes and the analysis reads.
//! - [`config`]: how intervals are computed; [`format`](mod@format): how numbers and cells print.
//! - [`tables`], [`compare`], [`recovery`]: the tables and comparisons, computed from rows.
//! - [`stats`]: the estimators; [`plots`]: the plot functions.
//! - [`report`]: compute the analysis once, then write it (CSV, Markdown, plots).

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod compare;
pub mod config;
pub mod costs;
pub mod db;
pub mod format;
pub mod gate;
pub mod infra;
pub mod plots;
pub mod recovery;
pub mod report;
pub mod stats;
pub mod tables;
