//! The algorithms: one module per congestion controller, named after it, each with the
//! registry entry (`INFO`) that names its source and parameters; and, not public, the pieces
//! several of them share: `recovery` (QUIC recovery periods and byte-exact additive increase,
//! for every window-based controller) and `bbr_common` (constants, modes and pacing arithmetic
//! of BBR v1 and v2). The BBR v1 model itself is `bbr`'s, and `ccid5` runs it as its CCID5
//! variant. `aimd`, the Reno-family skeleton that `newreno`, `highspeed`, `scalable`
//! and `htcp` are rules for, is public, as those algorithms' types are built on it.

// One module per algorithm.
pub mod bbr;
pub mod bbr2;
pub mod ccid2;
pub mod ccid5;
pub mod cubic;
pub mod delay_fq;
pub mod fq_switch;
pub mod highspeed;
pub mod htcp;
pub mod newreno;
pub mod quic_dc;
pub mod scalable;
pub mod siad;
pub mod vivace;
pub mod westwood;

// Shared by several of them.
pub mod aimd;
pub(crate) mod bbr_common;
pub(crate) mod recovery;
