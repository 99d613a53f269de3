//! Multipath: the MP-DCCP framework's per-packet subflow schedulers ([`scheduler`]) and its
//! receive-side reordering ([`reorder`]), sans-IO like the controllers (time is passed in), so
//! the simulator's tunnel and a real datapath run the same code.

pub mod reorder;
pub mod scheduler;
