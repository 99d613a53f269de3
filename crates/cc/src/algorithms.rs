//! The algorithms: one module per congestion controller, named after it, each with the
//! registry entry (`INFO`) that names its source and parameters.

pub mod aimd;
pub mod bbr;
pub mod bbr2;
pub(crate) mod bbr_common;
pub mod cubic;
pub mod delay_fq;
pub mod fq_switch;
pub mod highspeed;
pub mod htcp;
pub mod newreno;
pub mod quic_dc;
pub(crate) mod recovery;
pub mod scalable;
pub mod siad;
pub mod vivace;
pub mod westwood;
