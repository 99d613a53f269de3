//! kleinrock-cc: sans-IO congestion control.
//!
//! One library of controllers that runs unchanged in the simulator (`kleinrock-sim`) and in a
//! real QUIC stack. A controller implements [`Controller`]: time is passed in, nothing reads a
//! clock, and nothing here knows about sockets or simulator types.
//!
//! Shared parts live once: the windowed min/max filter ([`minmax`]), the RTT estimator
//! ([`rtt`]), the delivery-rate sampler ([`delivery_rate`]), the one-way queuing-delay
//! estimator ([`owqd`]), the monitor intervals of the rate-based PCC family ([`monitor`]) and
//! the [`registry`] that builds any controller from a name.

pub mod aimd;
pub mod bbr;
pub mod bbr2;
pub mod controller;
pub mod cubic;
pub mod delay_fq;
pub mod delivery_rate;
pub mod fq_probe;
pub mod fq_switch;
pub mod highspeed;
pub mod htcp;
pub mod ledger;
pub mod minmax;
pub mod monitor;
pub mod newreno;
pub mod owqd;
pub mod params;
pub mod quic_dc;
pub mod registry;
pub mod rtt;
pub mod scalable;
pub mod siad;
pub mod units;
pub mod vivace;
pub mod westwood;

pub use controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerState,
    DeliverySnapshot, OneWayDelaySample, RateSample, SentPacket,
};
pub use params::{ParamKind, ParamSpec, ParamValue, Params};
pub use registry::{build, controllers, BuildError};
pub use units::{Instant, Rate};
