//! MP-DCCP per-packet schedulers: which subflow(s) carry the next tunnel packet.
//!
//! Sources: telekom/mp-dccp `net/dccp/mpdccp_scheduler.c` (the "fully congested" test
//! `mpdccp_packet_fits_in_cwnd` and the single-subflow bypass `mpdccp_return_single_flow`),
//! `net/dccp/scheduler/sched_rr.c`, `net/dccp/scheduler/sched_srtt.c`,
//! `net/dccp/scheduler/sched_redundant.c`, `net/dccp/non_gpl_scheduler/sched_cpf.c` and
//! `net/dccp/non_gpl_scheduler/sched_handover.c`; the paper: N. Romo Moreno, M. Amend,
//! A. Brunstrom, A. Kassler, V. Rakocevic, "CCID5: An implementation of the BBR Congestion
//! Control algorithm for DCCP and its impact over multi-path scenarios", ANRW 2021 (CPF:
//! "predefined path priority", fully congested paths skipped).
//!
//! What Linux does and this module follows:
//! - Every scheduler first bypasses selection when the tunnel has exactly one subflow, but that
//!   subflow still has to pass the congestion test (`mpdccp_return_single_flow`); the bypass
//!   ignores priorities (a single priority-0 subflow is used). The paper-era bypass has no
//!   exception for a pending ACK (a later commit lets a congested single subflow send when an
//!   ACK is pending; ACKs are not tunnel packets here).
//! - The srtt a scheduler compares is the CCID's `tx_srtt` (`tcpi_rtt` from `get_info`), which
//!   CCID2 and CCID5 keep at 0 until their first RTT sample (the CCID block is zeroed when it is
//!   allocated), so a subflow without a sample wins every srtt comparison: `srtt_ns: None`
//!   counts as 0 here. All comparisons are strict, so ties go to the first in list order.
//! - Priorities are the link's `mpdccp_prio` (default 3): higher is preferred (CPF and
//!   handover at HEAD; the 2022 files preferred the lowest value).

/// Scheduler names, in the order of [`SchedulerKind`]'s variants.
pub const NAMES: &[&str] = &["cpf", "rr", "srtt", "redundant", "handover"];

/// Consecutive packets per subflow of the round-robin scheduler by default (sched_rr.c
/// module parameter `num_segments`).
pub const RR_NUM_SEGMENTS: u32 = 1;

/// What a scheduler sees of one subflow when it schedules a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubflowView {
    /// Handshake done (DCCP state OPEN or PARTOPEN).
    pub established: bool,
    /// Packets in flight (CCID pipe, `tcpi_segs_out`).
    pub pipe: u64,
    /// Congestion window in packets (`tcpi_snd_cwnd`).
    pub cwnd: u64,
    /// Packets waiting in the subflow's own send queue.
    pub queued: u64,
    /// Smoothed RTT; `None` before the first sample.
    pub srtt_ns: Option<u64>,
    /// Link priority (`mpdccp_prio`).
    pub priority: u8,
}

impl SubflowView {
    /// Whether the subflow may take a packet: established and not "fully congested".
    pub fn usable(&self) -> bool {
        // mpdccp_scheduler.c mpdccp_sk_can_send: state OPEN or PARTOPEN
        // mpdccp_scheduler.c mpdccp_packet_fits_in_cwnd: pipe >= cwnd is congested, and so is
        // a send queue that already claims the free window (qlen >= cwnd - pipe)
        self.established && self.pipe < self.cwnd && self.queued < self.cwnd - self.pipe
    }

    /// The srtt compared by the schedulers.
    fn srtt_key(&self) -> u64 {
        // ccid2.c / ccid5.c get_info: tcpi_rtt = tx_srtt, 0 before the first sample
        self.srtt_ns.unwrap_or(0)
    }
}

/// The scheduling policies of telekom/mp-dccp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Cheapest Pipe First: highest priority, ties by lowest srtt (`sched_cpf.c`).
    Cpf,
    /// Round robin, `num_segments` consecutive packets per subflow (`sched_rr.c`).
    RoundRobin {
        /// Consecutive packets per subflow.
        num_segments: u32,
    },
    /// Lowest srtt (`sched_srtt.c`).
    Srtt,
    /// A copy on every usable subflow (`sched_redundant.c`).
    Redundant,
    /// Active paths (priority > 1) only; backup paths (priority 1) when no active path is
    /// established (`sched_handover.c`).
    Handover,
}

impl SchedulerKind {
    /// The scheduler's name as listed in [`NAMES`].
    pub fn name(&self) -> &'static str {
        match self {
            SchedulerKind::Cpf => NAMES[0],
            SchedulerKind::RoundRobin { .. } => NAMES[1],
            SchedulerKind::Srtt => NAMES[2],
            SchedulerKind::Redundant => NAMES[3],
            SchedulerKind::Handover => NAMES[4],
        }
    }
}

/// A per-packet scheduler with its state (the round-robin quotas).
#[derive(Clone, Debug)]
pub struct Scheduler {
    kind: SchedulerKind,
    /// Packets sent in the current round, per subflow index (sched_rr.c `rrsched_priv.quota`).
    quota: Vec<u32>,
}

impl Scheduler {
    /// A scheduler of the given kind, every round-robin quota at 0.
    pub fn new(kind: SchedulerKind) -> Self {
        Scheduler {
            kind,
            quota: Vec::new(),
        }
    }

    /// The scheduler's kind.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// The subflows (indices into `subflows`) that take the next packet: one, or every usable
    /// one for `Redundant`, or none when no subflow may take it. `out` is cleared first.
    pub fn pick(&mut self, subflows: &[SubflowView], out: &mut Vec<usize>) {
        out.clear();
        // mpdccp_scheduler.c mpdccp_return_single_flow: one subflow bypasses selection but
        // still gets the congestion test
        if let [only] = subflows {
            if only.usable() {
                out.push(0);
            }
            return;
        }
        match self.kind {
            SchedulerKind::Cpf => out.extend(cheapest(subflows, |_| true)),
            SchedulerKind::RoundRobin { num_segments } => {
                out.extend(self.round_robin(subflows, num_segments))
            }
            SchedulerKind::Srtt => out.extend(lowest_srtt(subflows)),
            // sched_redundant.c: the first usable subflow is returned, every other usable one
            // gets a copy with the same overall sequence number
            SchedulerKind::Redundant => out.extend(usable(subflows)),
            SchedulerKind::Handover => out.extend(handover(subflows)),
        }
    }

    /// sched_rr.c mpdccp_rrsched.
    fn round_robin(&mut self, subflows: &[SubflowView], num_segments: u32) -> Option<usize> {
        // sched_rr.c rrsched_init_subflow: a new subflow starts with quota 0
        self.quota.resize(subflows.len(), 0);
        let scan = self.rr_scan(subflows, num_segments);
        let best = if scan.eligible > 0 && scan.eligible == scan.full {
            // sched_rr.c: every eligible subflow used its quota: reset all quotas and retry
            self.quota.fill(0);
            self.rr_scan(subflows, num_segments).best
        } else {
            scan.best
        };
        if let Some(i) = best {
            self.quota[i] += 1;
        }
        best
    }

    /// One pass of sched_rr.c over the subflows in list order.
    fn rr_scan(&self, subflows: &[SubflowView], num_segments: u32) -> RrScan {
        let mut scan = RrScan {
            best: None,
            eligible: 0,
            full: 0,
        };
        for i in usable(subflows) {
            // sched_rr.c: congested subflows are skipped and counted neither way
            scan.eligible += 1;
            let quota = self.quota[i];
            if quota > 0 && quota < num_segments {
                // sched_rr.c: a partly used subflow continues its burst at once
                scan.best = Some(i);
                break;
            } else if quota == 0 {
                // sched_rr.c: otherwise the last unused subflow in list order
                scan.best = Some(i);
            } else {
                scan.full += 1;
            }
        }
        scan
    }
}

/// What one round-robin pass found.
struct RrScan {
    best: Option<usize>,
    eligible: usize,
    full: usize,
}

/// Indices of the usable subflows, in list order.
fn usable(subflows: &[SubflowView]) -> impl Iterator<Item = usize> + '_ {
    (0..subflows.len()).filter(|&i| subflows[i].usable())
}

/// sched_cpf.c mpdccp_cpfsched over the usable subflows that `admit` lets in.
fn cheapest(subflows: &[SubflowView], admit: impl Fn(&SubflowView) -> bool) -> Option<usize> {
    // sched_cpf.c: the bar starts at priority 1 and srtt "arbitrarily high", so a priority-0
    // subflow is never chosen
    let mut bar_priority = 1;
    let mut bar_srtt = u64::MAX;
    let mut best = None;
    for i in usable(subflows).filter(|&i| admit(&subflows[i])) {
        let s = &subflows[i];
        // sched_cpf.c: highest prio first, ties by lowest srtt (strictly lower: first wins)
        if s.priority > bar_priority || (s.priority == bar_priority && s.srtt_key() < bar_srtt) {
            bar_priority = s.priority;
            bar_srtt = s.srtt_key();
            best = Some(i);
        }
    }
    best
}

/// sched_srtt.c mpdccp_srttsched: the usable subflow with the lowest srtt, priorities ignored.
fn lowest_srtt(subflows: &[SubflowView]) -> Option<usize> {
    // sched_srtt.c: strictly lower than the best so far, so ties go to the first in list order
    usable(subflows).min_by_key(|&i| subflows[i].srtt_key())
}

/// sched_handover.c mpdccp_hosched.
///
/// The file's header and the commit that made priorities "higher is better" define active
/// paths as priority > 1 and backup paths as priority 1; its first pass as written still skips
/// every non-zero priority (a leftover of the older "0 is active" convention) and so never
/// picks anything. This follows the documented rule.
fn handover(subflows: &[SubflowView]) -> Option<usize> {
    let active = |s: &SubflowView| s.priority > 1;
    // sched_handover.c: an established active path counts before the congestion test, so a
    // congested active path blocks the tunnel rather than spilling to a backup
    if subflows.iter().any(|s| s.established && active(s)) {
        // sched_handover.c: among active paths, CPF's rule: highest prio, then lowest srtt
        cheapest(subflows, active)
    } else {
        // sched_handover.c: second pass over every subflow with CPF's rule (backups, prio 1)
        cheapest(subflows, |_| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An established, uncongested subflow.
    fn open(priority: u8, srtt_ms: u64) -> SubflowView {
        SubflowView {
            established: true,
            pipe: 0,
            cwnd: 10,
            queued: 0,
            srtt_ns: Some(srtt_ms * 1_000_000),
            priority,
        }
    }

    fn congested(priority: u8, srtt_ms: u64) -> SubflowView {
        SubflowView {
            pipe: 10,
            ..open(priority, srtt_ms)
        }
    }

    fn pick(s: &mut Scheduler, subflows: &[SubflowView]) -> Vec<usize> {
        let mut out = vec![99];
        s.pick(subflows, &mut out);
        out
    }

    const ALL: [SchedulerKind; 5] = [
        SchedulerKind::Cpf,
        SchedulerKind::RoundRobin { num_segments: 2 },
        SchedulerKind::Srtt,
        SchedulerKind::Redundant,
        SchedulerKind::Handover,
    ];

    #[test]
    fn usable_is_the_fully_congested_test() {
        // mpdccp_scheduler.c mpdccp_packet_fits_in_cwnd: pipe >= cwnd, or qlen >= cwnd - pipe
        let s = open(3, 10);
        assert!(s.usable());
        assert!(!SubflowView { pipe: 10, ..s }.usable());
        assert!(!SubflowView { pipe: 11, ..s }.usable());
        assert!(!SubflowView {
            pipe: 6,
            queued: 4,
            ..s
        }
        .usable());
        assert!(SubflowView {
            pipe: 6,
            queued: 3,
            ..s
        }
        .usable());
        // mpdccp_scheduler.c mpdccp_sk_can_send: not established
        assert!(!SubflowView {
            established: false,
            ..s
        }
        .usable());
    }

    #[test]
    fn single_subflow_still_gets_the_congestion_test() {
        // mpdccp_scheduler.c mpdccp_return_single_flow: bypass, but congested -> none
        let s = open(3, 10);
        for kind in ALL {
            let mut sched = Scheduler::new(kind);
            assert_eq!(pick(&mut sched, &[s]), vec![0], "{kind:?}");
            assert!(pick(&mut sched, &[SubflowView { pipe: 10, ..s }]).is_empty());
            assert!(pick(
                &mut sched,
                &[SubflowView {
                    pipe: 4,
                    queued: 6,
                    ..s
                }]
            )
            .is_empty());
            assert!(pick(
                &mut sched,
                &[SubflowView {
                    established: false,
                    ..s
                }]
            )
            .is_empty());
            // the bypass ignores priorities: a lone priority-0 subflow is used
            assert_eq!(pick(&mut sched, &[open(0, 10)]), vec![0], "{kind:?}");
        }
        assert!(pick(&mut Scheduler::new(SchedulerKind::Cpf), &[]).is_empty());
    }

    #[test]
    fn cpf_highest_priority_then_lowest_srtt() {
        let mut cpf = Scheduler::new(SchedulerKind::Cpf);
        // sched_cpf.c: highest prio first, whatever the srtt
        assert_eq!(pick(&mut cpf, &[open(3, 10), open(5, 90)]), vec![1]);
        // sched_cpf.c: ties by lowest srtt
        assert_eq!(
            pick(&mut cpf, &[open(3, 30), open(3, 20), open(2, 1)]),
            vec![1]
        );
        // strict comparison: equal srtt goes to the first in list order
        assert_eq!(pick(&mut cpf, &[open(3, 20), open(3, 20)]), vec![0]);
        // ccid2.c/ccid5.c: no sample yet means tx_srtt = 0, which wins the tie-break
        let fresh = SubflowView {
            srtt_ns: None,
            ..open(3, 0)
        };
        assert_eq!(pick(&mut cpf, &[open(3, 1), fresh]), vec![1]);
        // sched_cpf.c: fully congested subflows are skipped
        assert_eq!(pick(&mut cpf, &[congested(5, 1), open(3, 50)]), vec![1]);
        // sched_cpf.c: the bar starts at priority 1, priority 0 is never chosen
        assert!(pick(&mut cpf, &[open(0, 1), open(0, 2)]).is_empty());
        assert_eq!(pick(&mut cpf, &[open(0, 1), open(1, 90)]), vec![1]);
    }

    #[test]
    fn round_robin_quota_and_reset() {
        // sched_rr.c: num_segments consecutive packets; an unused subflow is the last one with
        // quota 0 in list order, a partly used one continues; all full -> reset all quotas
        let mut rr = Scheduler::new(SchedulerKind::RoundRobin { num_segments: 2 });
        let flows = [open(3, 10), open(3, 10), open(3, 10)];
        let picks: Vec<usize> = (0..8).map(|_| pick(&mut rr, &flows)[0]).collect();
        assert_eq!(picks, vec![2, 2, 1, 1, 0, 0, 2, 2]);
    }

    #[test]
    fn round_robin_skips_a_congested_subflow_without_blocking_the_reset() {
        // sched_rr.c: congested subflows are neither eligible nor full, so the reset happens
        // when every eligible one used its quota
        let mut rr = Scheduler::new(SchedulerKind::RoundRobin { num_segments: 1 });
        let flows = [open(3, 10), congested(3, 10), open(3, 10)];
        let picks: Vec<usize> = (0..6).map(|_| pick(&mut rr, &flows)[0]).collect();
        assert_eq!(picks, vec![2, 0, 2, 0, 2, 0]);
        // once it opens, the formerly congested subflow takes its turn (quota 0 after reset)
        let opened = [open(3, 10), open(3, 10), open(3, 10)];
        assert_eq!(pick(&mut rr, &opened), vec![1]);
        // nothing usable: nothing picked, quotas untouched
        let closed = [congested(3, 10), congested(3, 10)];
        assert!(pick(&mut rr, &closed).is_empty());
    }

    #[test]
    fn srtt_lowest_among_usable() {
        // sched_srtt.c: lowest srtt, priorities ignored, congested skipped
        let mut s = Scheduler::new(SchedulerKind::Srtt);
        assert_eq!(pick(&mut s, &[open(9, 30), open(0, 20)]), vec![1]);
        assert_eq!(pick(&mut s, &[open(9, 30), congested(0, 20)]), vec![0]);
    }

    #[test]
    fn redundant_returns_every_usable_subflow() {
        // sched_redundant.c: one returned, a copy on every other usable subflow
        let mut red = Scheduler::new(SchedulerKind::Redundant);
        let flows = [open(3, 10), congested(3, 5), open(0, 90), open(1, 1)];
        assert_eq!(pick(&mut red, &flows), vec![0, 2, 3]);
        assert!(pick(&mut red, &[congested(3, 1), congested(3, 1)]).is_empty());
    }

    #[test]
    fn handover_uses_backup_only_without_an_active_path() {
        let mut ho = Scheduler::new(SchedulerKind::Handover);
        // sched_handover.c: active paths (prio > 1) first, even when a backup is faster
        assert_eq!(pick(&mut ho, &[open(1, 1), open(3, 50)]), vec![1]);
        // among several active paths: highest prio, then lowest srtt
        assert_eq!(
            pick(&mut ho, &[open(3, 10), open(4, 50), open(4, 40)]),
            vec![2]
        );
        // an established but congested active path blocks: no spill to the backup
        assert!(pick(&mut ho, &[open(1, 1), congested(3, 50)]).is_empty());
        // no active path established: the backup (prio 1) carries the traffic
        let down = SubflowView {
            established: false,
            ..open(3, 50)
        };
        assert_eq!(pick(&mut ho, &[open(1, 1), down]), vec![0]);
        // priority 0 is never chosen, as in CPF
        assert!(pick(&mut ho, &[open(0, 1), down]).is_empty());
    }

    #[test]
    fn names_match_kinds() {
        let names: Vec<&str> = ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, NAMES);
        assert_eq!(Scheduler::new(ALL[1]).kind(), ALL[1]);
    }
}
