//! kleinrock-lab: scenarios (TOML) with sweeps, the runner, metrics and reports.
//!
//! [`scenario::load`] turns a file into validated [`scenario::Scenario`]s (one per sweep
//! point and seed), [`runner::run`] and [`runner::run_all`] run them in the simulator,
//! [`metrics`] defines every reported figure, [`aggregate`] summarises a point's replicates
//! as means with [`stats`]' confidence intervals, [`report`] renders tables, and
//! [`reproduce`] runs a paper's experiments and sets our figures beside the paper's.

pub mod aggregate;
pub mod dumbbell;
pub mod html;
pub mod limits;
pub mod metrics;
pub mod presets;
pub mod report;
pub mod reproduce;
pub mod runner;
pub mod scenario;
pub mod source;
pub mod stats;
pub mod sweep;
pub mod tunnel;

/// The built-in demo: 10 Mbps, 50 ms RTT, 2 BDP drop-tail buffer, 60 s; NewReno and Cubic,
/// each alone.
pub const DEMO_SCENARIO: &str = include_str!("../../../scenarios/demo.toml");
