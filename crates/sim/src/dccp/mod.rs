//! The DCCP-like transport (RFC 4340): congestion-controlled datagrams that are never
//! retransmitted, driven by a CCID (or any other controller). The Ack Vector ([`ackvec`]),
//! the sender with its send queue, loss detection and RTO ([`sender`]), and the receiver with
//! its Ack Ratio and per-packet latency ([`receiver`]). `docs/dccp.md` describes the model.

pub mod ackvec;
pub mod receiver;
pub mod sender;

use crate::config::{AppConfig, DccpConfig};
use crate::connection::Measured;
use crate::stats::FlowCounters;
use kleinrock_cc::Controller;
use receiver::DccpReceiver;
use sender::DccpSender;

/// Both ends of one DCCP flow.
pub struct DccpEndpoints {
    /// Sending end.
    pub sender: DccpSender,
    /// Receiving end.
    pub receiver: DccpReceiver,
}

impl DccpEndpoints {
    /// The ends of flow `flow` under `cc`, its application `app`.
    pub fn new(flow: u32, cc: Box<dyn Controller>, cfg: DccpConfig, app: AppConfig) -> Self {
        DccpEndpoints {
            sender: DccpSender::new(flow, cc, cfg, app),
            receiver: DccpReceiver::new(flow, cfg),
        }
    }

    /// Statistics from `now` on are measured.
    pub fn start_measuring(&mut self, now: u64) {
        self.sender.start_measuring();
        self.receiver.start_measuring(now);
    }

    /// Counters of both ends since the start.
    pub fn counters(&self) -> FlowCounters {
        let r = &self.receiver.stats;
        FlowCounters {
            packets_received: r.packets_received,
            bytes_delivered: r.bytes_received,
            acks_sent: r.acks_sent,
            ..self.sender.stats.counters
        }
    }

    /// The counters over the measurement window, given those at its start. Lost: sent in the
    /// window and not received, wherever it went missing (the sender's own count of losses, by
    /// NUMDUPACK, is in the trace).
    pub fn window_counters(&self, at_warmup: &FlowCounters) -> FlowCounters {
        let r = &self.receiver.stats;
        let mut c = self.counters().since(at_warmup);
        c.packets_received = r.window_packets;
        c.bytes_delivered = r.window_bytes;
        c.packets_lost = c.packets_sent.saturating_sub(r.window_packets);
        c
    }

    /// What was measured over the window.
    pub fn measured(&self) -> Measured {
        let s = &self.sender.stats;
        Measured {
            rtt: s.rtt.clone(),
            loss_events: s.loss_events,
            max_rtt_ns: s.max_rtt_ns,
            latency: self.receiver.stats.latency.clone(),
            ..Measured::default()
        }
    }
}
