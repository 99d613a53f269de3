//! kleinrock-sim: a deterministic discrete-event packet-level network simulator.
//!
//! Time is integer nanoseconds; the event list is ordered by (time, insertion sequence); every
//! random element has its own seeded generator. Links ([`link`]) have a rate (constant or
//! stepped), propagation delay (changed at given times by route changes), order-keeping
//! jitter, random loss ([`loss`]) and a queue ([`queue`]: drop-tail FIFO or fair queuing).
//! Flows have a forward and a reverse path and run either the reliable QUIC-like transport
//! ([`connection`]: one or more subflows, each a [`sender`] and a [`receiver`], over one
//! [`stream`]) driven by any `kleinrock-cc` controller (whose parameters may
//! change during the run), unresponsive datagrams ([`datagram`]), or short transfers arriving
//! at random times, each a new reliable connection ([`arrivals`]); the DCCP-like transport
//! ([`dccp`]); and multipath tunnels ([`tunnel`]: the MP-DCCP framework, one DCCP subflow per
//! path, carrying other flows).
//!
//! Build a [`SimConfig`], then `Simulator::new(config).run()` gives a [`SimResult`].

pub mod app;
pub mod arrivals;
pub mod config;
pub mod connection;
pub mod datagram;
pub mod dccp;
pub mod delivery_trace;
pub mod events;
pub mod hist;
pub mod link;
pub mod loss;
pub mod network;
pub mod packet;
pub mod queue;
pub mod rangeset;
pub mod receiver;
pub mod sender;
pub mod stats;
pub mod stream;
pub mod streams;
mod tcp_recovery;
pub mod trace;
pub mod tunnel;

pub use config::{
    AppConfig, ArrivalConfig, ControllerFactory, DccpConfig, FlowConfig, FlowKind, Interarrival,
    LinkConfig, LossPoint, LossRecovery, ParamChange, PolicerConfig, RouteChange, RtoForm,
    SimConfig, TcpRecovery, TransportConfig, TunnelConfig, TunnelPathConfig,
};
pub use loss::LossConfig;
pub use network::Simulator;
pub use queue::{BufferLimit, QdiscConfig};
pub use stats::{EventSpan, FlowStats, LinkStats, SimResult, TransferStats, TunnelStats};
