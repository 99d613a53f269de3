//! The two BBR v1 implementations the model in [`super`] runs, as data: each field of
//! [`Variant`] is one step where Linux `tcp_bbr.c` (the `bbr` controller) and telekom/mp-dccp
//! CCID5 (`net/dccp/ccids/ccid5.c`, the `ccid5` controller) take different paths. The model
//! matches on the field where it takes that step; `docs/ccid5.md` lists the same differences
//! with the source lines.
//!
//! Line numbers `ccid5.c:N` are those of the CCID5 paper's commit (telekom/mp-dccp
//! d9b4b7471a69184105885abbc4d45c011b82543d); "mp-dccp HEAD" is branch `mpdccp_v03_k4.14`
//! (91d011d14), whose changes to CCID5's congestion control come from commit 74c4078ae
//! ("Fixes for CCID5 behaviour during PROBE_RTT phase").
//!
//! Values that only differ in number (pacing margin 1 % vs 0, Startup gain 2.885 vs 739/256)
//! are not here: they are the model's parameters ([`super::BbrParams`]), and each controller
//! sets its own.

/// One BBR v1 implementation: the steps where `tcp_bbr.c` and CCID5 differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// What cwnd and inflight count.
    pub counting: Counting,
    /// The allowance for send quanta added to every inflight target.
    pub send_quantum: SendQuantum,
    /// Which bandwidth the cwnd target is computed from.
    pub cwnd_target_bw: CwndTargetBw,
    /// What a loss report does beyond `cwnd -= losses`.
    pub loss_response: LossResponse,
    /// How cwnd returns to `prior_cwnd` after ProbeRTT or a loss state.
    pub cwnd_restore: CwndRestore,
    /// When the pacing and cwnd gains are set.
    pub gains: GainSetting,
    /// Drain's gains.
    pub drain_gains: DrainGains,
    /// The RTprop estimate before its first sample, and when it is updated.
    pub min_rtt: MinRttRule,
    /// When the initial pacing rate is computed.
    pub pacing_init: PacingInit,
    /// What a retransmission timeout (the contract's persistent congestion) does.
    pub rto: RtoResponse,
    /// What an ECN-CE mark does.
    pub ecn: EcnResponse,
    /// Whether a restart from idle is recognised.
    pub idle_restart: IdleRestart,
    /// mp-dccp HEAD's ProbeRTT exit (74c4078ae): cwnd is restored only after the Sequence
    /// Window, one ACK later (`restore_cwnd && !restore_seqwin`), and bandwidth samples taken
    /// while a restore is pending count only if they raise the max (`bbr_update_btl_bw`).
    /// `false` for `tcp_bbr.c` and for CCID5 at the paper's commit.
    pub restore_holds_samples: bool,
}

impl Variant {
    /// Linux `net/ipv4/tcp_bbr.c` (mainline), the `bbr` controller.
    pub const LINUX: Variant = Variant {
        counting: Counting::Bytes,
        send_quantum: SendQuantum::OnePacket,
        cwnd_target_bw: CwndTargetBw::ModelBw,
        loss_response: LossResponse::PacketConservation,
        cwnd_restore: CwndRestore::AtOnce,
        gains: GainSetting::EveryAck,
        drain_gains: DrainGains::InverseOfHighGain,
        min_rtt: MinRttRule::Linux,
        pacing_init: PacingInit::AgainAtFirstSrtt,
        rto: RtoResponse::LinuxLoss,
        ecn: EcnResponse::Ignored,
        idle_restart: IdleRestart::Recognised,
        restore_holds_samples: false,
    };

    /// telekom/mp-dccp CCID5 (`net/dccp/ccids/ccid5.c`), the `ccid5` controller: at the
    /// paper's commit, or with mp-dccp HEAD's later fixes when `head_fixes`.
    pub const fn ccid5(head_fixes: bool) -> Variant {
        Variant {
            counting: Counting::Packets,
            send_quantum: SendQuantum::TsoSegsGoal,
            cwnd_target_bw: CwndTargetBw::MaxBw,
            loss_response: LossResponse::SubtractOnly,
            cwnd_restore: CwndRestore::Flagged,
            gains: GainSetting::AtTransitions,
            drain_gains: DrainGains::FixedPoint {
                cwnd_gain_one: head_fixes,
            },
            min_rtt: MinRttRule::Ccid5,
            pacing_init: PacingInit::Once,
            rto: RtoResponse::Ccid5,
            ecn: EcnResponse::CountedLost,
            idle_restart: IdleRestart::Absent,
            restore_holds_samples: head_fixes,
        }
    }
}

/// What cwnd and inflight count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// Bytes of packets as sent; BDP rounded up to a byte (the `bbr` controller's choice,
    /// docs/bbr.md).
    Bytes,
    /// Whole packets, every one `max_datagram_size` bytes: cwnd, pipe, delivered and lost are
    /// packet counts (ccid5.h `tx_cwnd`, `tx_pipe`, `delivered`, `lost`), the BDP is rounded
    /// up to a packet and the inflight target to an even number of packets
    /// (`bbr_target_cwnd`, ccid5.c:606-615). The model keeps bytes, always whole packets.
    Packets,
}

/// The allowance for send quanta in every inflight target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendQuantum {
    /// 3 quanta of one packet (the simulator sends no TSO bursts), plus 2 packets in ProbeBW's
    /// 1.25 phase (tcp_bbr.c `bbr_quantization_budget`; docs/bbr.md).
    OnePacket,
    /// `3 x tso_segs_goal` packets, the goal recomputed on every ACK after the pacing rate
    /// from `sk_pacing_rate`: `max(min(rate >> 10, 64 KB - 1 - MAX_DCCP_HEADER) / mss,
    /// 1 below 1.2 Mbit/s else 2)`, at most 127; 0 until the first ACK; no extra packets in
    /// the 1.25 phase (ccid5.c `bbr_set_tso_segs_goal`, `dccp_tso_autosize`, 565-586, and
    /// `bbr_target_cwnd`, 611).
    TsoSegsGoal,
}

/// Which bandwidth the cwnd target is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndTargetBw {
    /// `bbr_bw`: the policed rate while the long-term model is in use, else BtlBw
    /// (tcp_bbr.c `bbr_main`: `bbr_set_cwnd(sk, rs, rs->acked_sacked, bw, ...)`).
    ModelBw,
    /// BtlBw (`bbr_max_bw`) always; only the pacing rate uses the policed rate
    /// (ccid5.c:1357 `bbr_set_cwnd(sk, rs, rs->acked_sacked, bbr_max_bw(sk), ...)`).
    MaxBw,
}

/// What a loss report does beyond `cwnd = max(cwnd - losses, 1 packet)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossResponse {
    /// A loss opens a recovery episode: cwnd is saved, the first ACK in it cuts cwnd to
    /// `inflight + acked` and packet conservation holds for one round
    /// (tcp_bbr.c `bbr_set_cwnd_to_recover_or_restore`, `bbr_ssthresh`).
    PacketConservation,
    /// CCID5 never enters Recovery (`curr_ca_state` is only ever Open, ccid5.c:237, 1402), so
    /// packet conservation never engages and cwnd is not saved: an ACK reporting losses only
    /// subtracts them (ccid5.c:632-633), then cwnd grows by `acked` toward the target again.
    SubtractOnly,
}

/// How cwnd returns to `prior_cwnd` after ProbeRTT or a loss state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndRestore {
    /// At once: `cwnd = max(cwnd, prior_cwnd)` where the exit is found (mainline
    /// `bbr_check_probe_rtt_done`, `bbr_set_cwnd_to_recover_or_restore`).
    AtOnce,
    /// Linux 4.14's `restore_cwnd` flag: the exit sets it, and the next `bbr_set_cwnd` applies
    /// it after subtracting that ACK's losses (ccid5.c:643, 648-652, 1036).
    Flagged,
}

/// When the pacing and cwnd gains are set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GainSetting {
    /// Recomputed from the mode at the end of every model update; the policed rate pins the
    /// ProbeBW pacing gain to 1 while it is in use (tcp_bbr.c `bbr_update_gains`).
    EveryAck,
    /// Set where the mode or the cycle phase changes (ccid5.c `bbr_reset_startup_mode`,
    /// `bbr_check_drain`, `bbr_reset_probe_bw_mode`, `bbr_advance_cycle_phase`, the ProbeRTT
    /// entry at 1010-1012). Detecting a policer sets the pacing gain to 1 (ccid5.c:824), but the
    /// next phase advance overwrites it with the cycle's gain (752).
    AtTransitions,
}

/// Drain's gains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainGains {
    /// Pacing `1 / high_gain`, cwnd `high_gain` (BBR paper "Drain"; docs/bbr.md).
    InverseOfHighGain,
    /// Pacing 88/256 (`bbr_drain_gain = BBR_UNIT * 1000 / 2885`, ccid5.c:37, as tcp_bbr.c);
    /// cwnd `high_gain` at the paper's commit (ccid5.c:969), 1 at mp-dccp HEAD
    /// (`cwnd_gain = BBR_UNIT; /* don't increase cwnd */`, 74c4078ae).
    FixedPoint {
        /// mp-dccp HEAD's Drain cwnd gain of 1.
        cwnd_gain_one: bool,
    },
}

/// The RTprop estimate before its first sample, and when it is updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinRttRule {
    /// Unset until the first sample: the BDP is then the initial window and no ProbeBW phase
    /// lasts "one min RTT". Every ACK's RTT sample is offered to the filter (tcp_bbr.c
    /// `bbr_bdp`, `bbr_update_min_rtt`).
    Linux,
    /// `min_rtt_us = 0` at init (ccid5.c:1395), so until the first sample the BDP is 0 (the
    /// `~0U` guard of `bbr_target_cwnd`, 600, never fires) and every phase has lasted a min
    /// RTT. The first sample sets it (995-998), a sample of 0 is ignored (1001), and the whole
    /// RTprop and ProbeRTT update runs only on ACKs with a valid rate sample (982-983).
    Ccid5,
}

/// When the initial pacing rate is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacingInit {
    /// At init from a nominal 1 ms RTT, and once more at the first ACK with a smoothed RTT
    /// (tcp_bbr.c `bbr_set_pacing_rate`: `!bbr->has_seen_rtt && tp->srtt_us`).
    AgainAtFirstSrtt,
    /// Once, before the first packet, from the smoothed RTT then (always none: 1 ms), and
    /// never again (ccid5.c `bbr_init_pacingrate` from `ccid5_hc_tx_send_packet`, 1112-1114;
    /// `bbr_set_pacingrate`, 557-563, has no re-initialisation).
    Once,
}

/// What a retransmission timeout (the contract's persistent congestion) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoResponse {
    /// `tcp_enter_loss` and `bbr_set_state(TCP_CA_Loss)`: save cwnd, `cwnd = inflight + 1`,
    /// state Loss until an ACK of a packet sent after it, `full_bw = 0`, a round start and a
    /// fake lossy sample for the long-term model (docs/bbr.md).
    LinuxLoss,
    /// `ccid5_hc_tx_rto_expire` (ccid5.c:1081-1088) and `bbr_set_state(DCCP_CA_Loss)`
    /// (1044-1054): `lost += pipe`, `cwnd = 1` packet, `prev_ca_state = Loss`, `full_bw = 0`,
    /// a round start, no long-term sample (1052 is commented out) and cwnd is not saved.
    /// `curr_ca_state` stays Open, so the next ACK finds a Loss-to-Open transition and
    /// restores `prior_cwnd`, last saved at a ProbeRTT entry (0 before the first): the
    /// stale-prior_cwnd restore ([`CwndRestore::Flagged`]).
    Ccid5,
}

/// What an ECN-CE mark does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnResponse {
    /// Nothing (tcp_bbr.c has no ECN logic).
    Ignored,
    /// A marked packet counts as delivered and as lost (ccid5.c:1257-1258 `lost++`, then
    /// 1261 `delivered++`): the ACK's losses include it, so cwnd drops by it and the long-term
    /// model counts it.
    CountedLost,
}

/// Whether a restart from idle is recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleRestart {
    /// The first packet after idle while app-limited sets `idle_restart` (tcp_bbr.c
    /// `bbr_cwnd_event(CA_EVENT_TX_START)`).
    Recognised,
    /// CCID5 has no such event: `idle_restart` is never set (ccid5.c:1417, 1041).
    Absent,
}
