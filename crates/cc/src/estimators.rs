//! Shared estimators: measurements several controllers (or the transport) take the same way,
//! each kept once. They read the contract's events and units and know nothing of any
//! algorithm.

pub mod delivery_rate;
pub mod ledger;
pub mod minmax;
pub mod monitor;
pub mod owqd;
pub mod rtt;
