//! faultline's analysis: the results database, statistics, tables, plots and the report.
//!
//! Everything here reads stored results and needs no browser, so a report can always be
//! rebuilt from `results.sqlite` alone (`faultline report`).

pub mod compare;
pub mod db;
pub mod infra;
pub mod plots;
pub mod recovery;
pub mod report;
pub mod stats;
pub mod tables;
