//! kleinrock-cc: sans-IO congestion control.
//!
//! One library of controllers that runs unchanged in the simulator (`kleinrock-sim`) and in a
//! real QUIC stack. A controller implements [`Controller`]: time is passed in, nothing reads a
//! clock, and nothing here knows about sockets or simulator types.
//!
//! The tree is the architecture, and dependencies run one way, down this list: algorithms
//! depend on the contract and the estimators, the registry on the algorithms, and nothing in
//! the crate on the registry.
//!
//! - [`registry`] (`registry.rs`): every algorithm by name, and the builder that turns a name
//!   and a parameter table into a running controller or a clear error.
//! - [`algorithms`] (`algorithms/`): one module per algorithm, named after it (`newreno`,
//!   `cubic`, `westwood`, `quic_dc`, `highspeed`, `scalable`, `htcp`, `siad`, `bbr`, `bbr2`,
//!   `delay_fq`, `vivace`, `fq_switch` with its probe in `fq_switch/`, and the DCCP CCID
//!   `ccid2`), each publishing its [`ControllerInfo`]; and the pieces several algorithms
//!   share: `aimd` (the Reno-family skeleton), `recovery` (QUIC recovery periods, byte-exact
//!   additive increase) and `bbr_common` (what BBR v1 and v2 share).
//! - [`estimators`] (`estimators/`): measurements several controllers or transports take the
//!   same way, each once: the windowed min/max filter (`minmax`), the RTT estimator (`rtt`), the
//!   delivery-rate sampler (`delivery_rate`), the one-way queuing-delay estimator (`owqd`), the
//!   per-packet ledger (`ledger`) and the monitor intervals of the PCC family (`monitor`).
//! - [`controller`] (`controller.rs`, `controller/`): the contract. The [`Controller`] trait,
//!   the events a transport gives it, its configuration and traced state; how an algorithm
//!   presents itself ([`ControllerInfo`], `controller/info.rs`); the parameters a scenario gives
//!   it and their checked reading (`controller/params.rs`); the units of every quantity
//!   (`controller/units.rs`).
//!
//! Sources are cited by short keys (the QUIC-DC paper, FQ-detect, the BBR paper, the SIAD paper,
//! RFC numbers, draft names, Linux file names) with the section, equation or function beside
//! them; `docs/references.md` gives each in full.

pub mod algorithms;
pub mod controller;
pub mod estimators;
pub mod multipath;
pub mod registry;
#[cfg(test)]
mod testing;

pub use controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, DeliverySnapshot, Instant, OneWayDelaySample, ParamKind, ParamSpec,
    ParamValue, Params, Rate, RateSample, SentPacket,
};
pub use registry::{build, controllers, BuildError};
