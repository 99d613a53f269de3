//! kleinrock-cc: sans-IO congestion control.
//!
//! One library of controllers that runs unchanged in the simulator (`kleinrock-sim`) and in a
//! real QUIC stack. A controller implements [`Controller`]: time is passed in, nothing reads a
//! clock, and nothing here knows about sockets or simulator types.
//!
//! The tree is the architecture:
//!
//! - [`controller`] (`controller.rs`, `controller/`): the contract. The [`Controller`] trait,
//!   the events a transport gives it, its configuration and traced state, the parameters a
//!   scenario gives it ([`controller::params`]) and the units of every quantity
//!   ([`controller::units`]).
//! - [`estimators`]: measurements several controllers or transports take the same way, each
//!   once: the windowed min/max filter, the RTT estimator, the delivery-rate sampler, the
//!   one-way queuing-delay estimator, the packet ledger and the monitor intervals of the
//!   rate-based PCC family.
//! - [`algorithms`]: one module per algorithm, named after it.
//! - [`registry`]: every algorithm by name, and the builder that turns a name and a parameter
//!   table into a running controller or a clear error.

pub mod algorithms;
pub mod controller;
pub mod estimators;
pub mod registry;
#[cfg(test)]
mod testing;

pub use controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, DeliverySnapshot, Instant, OneWayDelaySample, ParamKind, ParamSpec,
    ParamValue, Params, Rate, RateSample, SentPacket,
};
pub use registry::{build, controllers, BuildError};
