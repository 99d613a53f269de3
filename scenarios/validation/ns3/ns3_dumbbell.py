#!/usr/bin/env python3
"""Single-bottleneck TCP dumbbells in ns-3 3.44, for cross-validating kleinrock.

Usage:  python ns3_dumbbell.py [names...]      (default: all five scenarios)
        python ns3_dumbbell.py --list

Needs the PyPI package ``ns3==3.44.post0`` (cppyy bindings, ``from ns import ns``).
Each scenario runs in its own child process (fresh ns-3 globals, fresh RNG
stream counter), so results do not depend on which scenarios are listed or in
what order.  Outputs go to ``results/<name>.json`` and ``results/<name>.cwnd.csv``
next to this file.  The JSON is byte-identical between runs; the wall-clock time
of a run is printed, never written.

What is modelled (every choice)
-------------------------------
Topology, per flow i: S_i --(1 Gbit/s, a_i)-- R1 --(20 Mbit/s, 10 ms)-- R2
--(1 Gbit/s, 0 ms)-- D_i.  All links are ns-3 PointToPoint (full duplex, no
interframe gap), one sender node and one receiver node per flow, IPv4 with
global routing.  Base RTT = 2 * (a_i + 10 ms) plus serialisation.

Buffers: every device queue is a DropTailQueue<Packet> of 1000 packets, except
R1's bottleneck device (R1->R2), which is DropTail of 100 packets.  The
traffic-control layer's default queue disc (installed by Ipv4AddressHelper::
Assign) is removed from EVERY device after address assignment, so device queues
are the only buffers anywhere (no FqCoDel, no BQL).  The bottleneck's reverse
direction (R2->R1, ACKs only) is 20 Mbit/s with a 1000-packet queue.
``queue_packets`` is Queue::GetNPackets() of R1's bottleneck device: the packet
being serialised has already been dequeued and is not counted.

TCP: SegmentSize 1448 (a full data packet is 1448 + 32 TCP/TS + 20 IPv4 + 2 PPP
= 1502 bytes on the wire), SndBufSize = RcvBufSize = 8 MB (8388608), InitialCwnd
10; all else ns-3 defaults (DelAckCount 2, DelAckTimeout 200 ms, MinRto 1 s,
SACK, timestamps, window scaling, limited transmit, RecoveryType
ns3::TcpPrrRecovery, RttEstimator ns3::RttMeanDeviation).  The values actually
in force are read back from the sender socket, its congestion-control object and
its recovery object at the end of the run and written under
``scenario.attributes``.

Pacing: off for NewReno/Cubic (ns-3 default).  For BBR we set
TcpSocketState::EnablePacing=true explicitly.  Note: ns-3.44's
examples/tcp/tcp-bbr-example.cc does NOT set EnablePacing itself; TcpBbr forces
tcb->m_pacing=true in InitPacingRate ("BBR must use pacing").  The example's
other settings are buffer/topology ones (SndBuf 4 MB, RcvBuf 6 MB, InitialCwnd
10, DelAckCount 2, SegmentSize 1448, FIFO qdisc + BQL on the edges, app start at
0.1 s); we keep this dumbbell's own values for those.  PaceInitialWindow,
MaxPacingRate, PacingSsRatio/PacingCaRatio stay at their defaults (recorded);
with BBR the pacing rate is set by TcpBbr itself.  TcpBbr's own RNG stream
attribute (Stream=4, picks the initial ProbeBW gain-cycle phase) stays default.

Applications: BulkSendApplication (MaxBytes 0, SendSize 1448) from S_i to a
PacketSink on D_i (port 5000+i), both start at 0 s and run to the end.  The
simulation stops at 30 s; the measurement window is [10 s, 30 s) (300 s and
[10 s, 300 s) for newreno_loss).

Loss scenario: a RateErrorModel (ERROR_UNIT_PACKET, rate 0.002, its uniform
variable on fixed stream 1000) as ReceiveErrorModel of R2's bottleneck device,
so it only sees R1->R2 traffic (data; the ACKs travel R2->R1).

RNG: RngSeedManager::SetSeed(1), SetRun(1).

Measurement (C++ trace sinks, compiled with cppyy; nothing runs in Python per
packet).  Everything counted is restricted to events inside the window.
 * goodput_bps: bytes delivered to flow i's PacketSink (its "Rx" trace) * 8 / 20 s.
 * rtt_*: one sample per ACK that advances the sender's cumulative ACK past at
   least one whole outstanding segment (the ACKs for which ns-3's
   TcpSocketBase::EstimateRtt computes a nonzero lastRtt).  rtt_mean_ms /
   rtt_p95_ms / rtt_samples are exactly ns-3's own per-ACK "last RTT" value,
   recomputed in the sender's "Rx" trace sink the way ns-3 does it with
   timestamps on: now_ms - TSecr, both in whole milliseconds
   (TcpOptionTS::ElapsedTimeFromTsValue), so they are quantised to 1 ms, and the
   receiver echoes the TSval of the first segment of a delayed-ACK pair.
   Why not subscribe to the "LastRTT" trace source directly: it is a
   TracedValue<Time>, which fires only when the value CHANGES, so repeated
   identical samples are silently skipped.  We still record its firings
   (last_rtt_trace_*) and check that the de-duplicated per-ACK sequence equals
   it (rtt_check_matches_last_rtt_trace).  The "RTT" trace source in 3.44 is the
   smoothed RTT; srtt_mean_ms is its value sampled every 10 ms in the window.
   rtt_exact_*: ns-resolution samples = now - send time of the segment ending
   at the new cumulative ACK, skipped when any newly acked segment was ever
   retransmitted (Karn).
 * data_packets_sent / retransmitted_packets: the sender socket's "Tx" trace,
   packets with payload > 0; a packet is a retransmission if its sequence
   number is below the highest sequence ever sent.
 * dropped_at_queue: bottleneck overflow drops, data packets attributed to the
   flow by IPv4 source address.  NOTE: with no queue disc, the PPP device's
   NetDeviceQueueInterface stops the device queue as soon as it holds 100
   packets, and the traffic-control layer then drops the next packet itself
   (TrafficControlLayer "TcDrop" on R1) before the device queue sees it; the
   queue's own "Drop" trace is hooked too but never fires.  The behaviour is
   plain 100-packet drop-tail (plus the packet being serialised).
   dropped_by_error_model: "PhyRxDrop" trace of R2's bottleneck device.
   loss_rate = (dropped_at_queue + dropped_by_error_model) / data_packets_sent.
 * bottleneck.utilisation: bytes (PPP frames, headers included) whose
   transmission starts on R1's bottleneck device ("PhyTxBegin") in the window
   * 8 / (20 Mbit/s * 20 s).  mean_queue_packets: queue length sampled every
   10 ms in the window.  other_device_drops: drops on every other device queue
   and TcDrops on every node but R1, over the whole run (should be 0).
 * fast_recovery_episodes / rto_episodes: entries into CA_RECOVERY / CA_LOSS
   (socket "CongState" trace).
 * jain_index over the flows' goodputs.
 * percentiles: linear interpolation between order statistics (numpy's default).
 * cwnd.csv: every 10 ms from 0 s to 29.99 s, per flow, cwnd and ssthresh as
   last reported by the socket's CongestionWindow / SlowStartThreshold traces
   (0 before the handshake; ssthresh 4294967295 = "infinite" initial value),
   and the bottleneck queue length.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

NS3_VERSION = "3.44"  # PyPI ns3==3.44.post0
SEED, RUN = 1, 1

# ---------------------------------------------------------------- scenarios
BASE = {
    "bottleneck_rate_bps": 20_000_000,
    "bottleneck_delay_ms": 10.0,
    "bottleneck_buffer_packets": 100,
    "access_rate_bps": 1_000_000_000,
    "receiver_link_delay_ms": 0.0,
    "other_queue_packets": 1000,
    "queue_disc": "none (traffic-control root queue disc uninstalled on every device)",
    "segment_size_bytes": 1448,
    "wire_bytes_full_data_packet": 1502,
    "snd_buf_bytes": 8 * 1024 * 1024,
    "rcv_buf_bytes": 8 * 1024 * 1024,
    "initial_cwnd_segments": 10,
    "app": "BulkSendApplication MaxBytes=0 SendSize=1448 -> PacketSink",
    "send_size_bytes": 1448,
    "duration_s": 30.0,
    "window_start_s": 10.0,
    "window_end_s": 30.0,
    "sample_interval_s": 0.01,
    "loss_rate": 0.0,
    "pacing": False,
    "ns3_version": NS3_VERSION,
    "rng_seed": SEED,
    "rng_run": RUN,
}

SCENARIOS = {
    "newreno": dict(tcp_type="ns3::TcpNewReno", access_delays_ms=[10.0]),
    "cubic": dict(tcp_type="ns3::TcpCubic", access_delays_ms=[10.0]),
    "bbr": dict(tcp_type="ns3::TcpBbr", access_delays_ms=[10.0], pacing=True),
    # 300 s: random loss gives ~40 loss events per 20 s, too few to compare one realisation
    # with another; over 290 s the loss rate's sampling error is ~5 %.
    "newreno_loss": dict(tcp_type="ns3::TcpNewReno", access_delays_ms=[10.0], loss_rate=0.002,
                         duration_s=300.0, window_end_s=300.0),
    "cubic_two_rtts": dict(tcp_type="ns3::TcpCubic", access_delays_ms=[10.0, 30.0]),
}
ERROR_MODEL_STREAM = 1000


def scenario_config(name):
    cfg = dict(BASE)
    cfg.update(SCENARIOS[name])
    cfg = {"name": name, **cfg}
    cfg["flows"] = len(cfg["access_delays_ms"])
    cfg["start_times_s"] = [0.0] * cfg["flows"]
    cfg["base_rtt_ms"] = [2 * (a + cfg["bottleneck_delay_ms"] + cfg["receiver_link_delay_ms"])
                          for a in cfg["access_delays_ms"]]
    return cfg


# ------------------------------------------------------------- C++ recorder
RECORDER_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/applications-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace krns3 {
using namespace ns3;

struct TxRec { uint32_t end; int64_t tNs; bool retx; };

class Recorder;

// Per-flow counters and sinks; every count is restricted to the window.
class FlowProbe {
public:
  FlowProbe(Recorder* r, int idx) : m_rec(r), m_idx(idx) {}
  void OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s);
  void OnRx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s);
  void OnCwnd(uint32_t o, uint32_t n) { cwnd = n; }
  void OnSsth(uint32_t o, uint32_t n) { ssthresh = n; }
  void OnLastRtt(Time o, Time n);
  void OnSrtt(Time o, Time n) { srtt = n; }
  void OnCongState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n);
  void OnSinkRx(Ptr<const Packet> p, const Address& a);

  Recorder* m_rec; int m_idx;
  Ptr<TcpSocketBase> sock;
  uint32_t cwnd = 0, ssthresh = 0; Time srtt;
  uint64_t dataSent = 0, retx = 0, qDrops = 0, emDrops = 0, goodBytes = 0;
  uint64_t dataSentTotal = 0, retxTotal = 0;
  uint64_t recoveries = 0, rtos = 0, recoveriesTotal = 0, rtosTotal = 0;
  uint32_t highTxEnd = 0, highAck = 0;
  std::map<uint32_t, TxRec> outstanding;   // start seq -> last transmission
  std::vector<double> rttMs, rttExactMs, lastRttTraceMs, srttMs;
};

class Recorder {
public:
  Recorder(double w0, double w1, double dt) : m_w0(Seconds(w0)), m_w1(Seconds(w1)), m_dt(Seconds(dt)) {}
  bool InWindow() const { Time t = Simulator::Now(); return t >= m_w0 && t < m_w1; }

  void AddFlow(uint32_t srcAddr) { m_probes.emplace_back(new FlowProbe(this, (int)m_probes.size())); m_addrToFlow[srcAddr] = (int)m_probes.size() - 1; }

  void HookSink(Ptr<Application> app, int i) {
    DynamicCast<PacketSink>(app)->TraceConnectWithoutContext("Rx", MakeCallback(&FlowProbe::OnSinkRx, m_probes[i].get()));
  }
  // Called shortly after the BulkSend apps started: their sockets exist now.
  void HookSender(Ptr<Application> app, int i) {
    FlowProbe* fp = m_probes[i].get();
    fp->sock = DynamicCast<TcpSocketBase>(DynamicCast<BulkSendApplication>(app)->GetSocket());
    NS_ABORT_MSG_IF(!fp->sock, "no TcpSocketBase");
    fp->sock->TraceConnectWithoutContext("Tx", MakeCallback(&FlowProbe::OnTx, fp));
    fp->sock->TraceConnectWithoutContext("Rx", MakeCallback(&FlowProbe::OnRx, fp));
    fp->sock->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&FlowProbe::OnCwnd, fp));
    fp->sock->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&FlowProbe::OnSsth, fp));
    fp->sock->TraceConnectWithoutContext("LastRTT", MakeCallback(&FlowProbe::OnLastRtt, fp));
    fp->sock->TraceConnectWithoutContext("RTT", MakeCallback(&FlowProbe::OnSrtt, fp));
    fp->sock->TraceConnectWithoutContext("CongState", MakeCallback(&FlowProbe::OnCongState, fp));
  }
  void ScheduleSenderHook(Ptr<Application> app, int i, double atS) {
    Simulator::Schedule(Seconds(atS), &Recorder::HookSender, this, app, i);
  }
  void HookBottleneck(Ptr<NetDevice> r1dev, Ptr<NetDevice> r2dev) {
    Ptr<PointToPointNetDevice> d = DynamicCast<PointToPointNetDevice>(r1dev);
    m_queue = d->GetQueue();
    m_queue->TraceConnectWithoutContext("Drop", MakeCallback(&Recorder::OnQueueDrop, this));
    d->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&Recorder::OnPhyTxBegin, this));
    r2dev->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&Recorder::OnErrorDrop, this));
  }
  void HookOtherQueue(Ptr<NetDevice> dev) {
    DynamicCast<PointToPointNetDevice>(dev)->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&Recorder::OnOtherDrop, this));
  }
  void StartSampling() { Simulator::ScheduleNow(&Recorder::Sample, this); }

  void Sample() {
    uint32_t q = m_queue->GetNPackets();
    char buf[96];
    for (auto& fp : m_probes) {
      std::snprintf(buf, sizeof(buf), "%.2f,%d,%u,%u,%u\n", m_k * 0.01, fp->m_idx + 1, fp->cwnd, fp->ssthresh, q);
      m_csv += buf;
      if (InWindow()) fp->srttMs.push_back(fp->srtt.GetDouble() / 1e6);
    }
    if (InWindow()) { m_qSum += q; m_qN += 1; }
    m_k += 1;
    Simulator::Schedule(m_dt, &Recorder::Sample, this);
  }

  // With no queue disc, a full device queue is "stopped" (NetDeviceQueueInterface flow
  // control) and the traffic-control layer drops the packet before the device sees it:
  // R1's "TcDrop" is where bottleneck overflow drops show up (IPv4 packet, no PPP header).
  void HookTcDrops(Ptr<Node> r1, NodeContainer others) {
    r1->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&Recorder::OnR1TcDrop, this));
    for (uint32_t i = 0; i < others.GetN(); ++i)
      others.Get(i)->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&Recorder::OnOtherDrop, this));
  }
  void OnR1TcDrop(Ptr<const Packet> p) { QueueDrop(p, false); }

  // Classify a packet seen around the bottleneck: flow index (or -1) and whether it carries data.
  int Classify(Ptr<const Packet> p, bool hasPpp, bool* isData) {
    Ptr<Packet> c = p->Copy();
    if (hasPpp) { PppHeader ppp; c->RemoveHeader(ppp); }
    Ipv4Header ip; c->RemoveHeader(ip);
    TcpHeader tcp; c->PeekHeader(tcp);
    *isData = ip.GetPayloadSize() > tcp.GetSerializedSize();
    auto it = m_addrToFlow.find(ip.GetSource().Get());
    return it == m_addrToFlow.end() ? -1 : it->second;
  }
  void OnQueueDrop(Ptr<const Packet> p) { QueueDrop(p, true); }
  void QueueDrop(Ptr<const Packet> p, bool hasPpp) {
    m_qDropsTotal++;
    if (!InWindow()) return;
    m_qDrops++;
    bool d; int f = Classify(p, hasPpp, &d);
    if (f >= 0 && d) m_probes[f]->qDrops++; else m_qDropsNonData++;
  }
  void OnErrorDrop(Ptr<const Packet> p) {
    m_emDropsTotal++;
    if (!InWindow()) return;
    bool d; int f = Classify(p, true, &d);
    if (f >= 0 && d) m_probes[f]->emDrops++; else m_emDropsNonData++;
  }
  void OnPhyTxBegin(Ptr<const Packet> p) { if (InWindow()) m_txBytes += p->GetSize(); }
  void OnOtherDrop(Ptr<const Packet> p) { m_otherDrops++; }

  // ---- accessors for Python
  int NFlows() const { return (int)m_probes.size(); }
  FlowProbe* Flow(int i) { return m_probes[i].get(); }
  std::string Csv() const { return m_csv; }

  Time m_w0, m_w1, m_dt;
  std::vector<std::unique_ptr<FlowProbe>> m_probes;
  std::map<uint32_t, int> m_addrToFlow;
  Ptr<Queue<Packet>> m_queue;
  std::string m_csv;
  uint64_t m_k = 0;
  uint64_t m_qSum = 0, m_qN = 0, m_txBytes = 0;
  uint64_t m_qDrops = 0, m_qDropsTotal = 0, m_qDropsNonData = 0;
  uint64_t m_emDropsTotal = 0, m_emDropsNonData = 0, m_otherDrops = 0;
};

void FlowProbe::OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  uint32_t len = p->GetSize();
  if (len == 0) return;
  uint32_t seq = h.GetSequenceNumber().GetValue();
  bool isRetx = seq < highTxEnd;
  dataSentTotal++; if (isRetx) retxTotal++;
  if (m_rec->InWindow()) { dataSent++; if (isRetx) retx++; }
  if (seq + len > highTxEnd) highTxEnd = seq + len;
  int64_t now = Simulator::Now().GetNanoSeconds();
  auto it = outstanding.find(seq);
  if (it != outstanding.end()) { it->second.tNs = now; it->second.retx = true; if (seq + len > it->second.end) it->second.end = seq + len; }
  else outstanding[seq] = TxRec{seq + len, now, isRetx};
}

void FlowProbe::OnRx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  if (!(h.GetFlags() & TcpHeader::ACK) || (h.GetFlags() & TcpHeader::SYN)) return;
  uint32_t ack = h.GetAckNumber().GetValue();
  if (ack <= highAck) return;
  highAck = ack;
  // Segments fully covered by the new cumulative ACK.
  bool anyRetx = false, covered = false; TxRec last{0, 0, false};
  while (!outstanding.empty() && outstanding.begin()->second.end <= ack) {
    anyRetx |= outstanding.begin()->second.retx;
    last = outstanding.begin()->second; covered = true;
    outstanding.erase(outstanding.begin());
  }
  if (!covered || !m_rec->InWindow()) return;
  // ns-3's own sample (timestamps on): TcpOptionTS::ElapsedTimeFromTsValue(TSecr), 0 -> 1 us.
  if (h.HasOption(TcpOption::TS)) {
    Ptr<const TcpOptionTS> ts = DynamicCast<const TcpOptionTS>(h.GetOption(TcpOption::TS));
    uint32_t now32 = (uint32_t)((uint64_t)Simulator::Now().GetMilliSeconds() & 0xFFFFFFFF);
    uint32_t echo = ts->GetEcho();
    rttMs.push_back(now32 > echo ? (double)(now32 - echo) : 0.001);
  }
  if (!anyRetx && last.end == ack)
    rttExactMs.push_back((Simulator::Now().GetNanoSeconds() - last.tNs) / 1e6);
}

void FlowProbe::OnCongState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n) {
  if (n == TcpSocketState::CA_RECOVERY) { recoveriesTotal++; if (m_rec->InWindow()) recoveries++; }
  if (n == TcpSocketState::CA_LOSS) { rtosTotal++; if (m_rec->InWindow()) rtos++; }
}
void FlowProbe::OnLastRtt(Time o, Time n) { if (m_rec->InWindow()) lastRttTraceMs.push_back(n.GetDouble() / 1e6); }
void FlowProbe::OnSinkRx(Ptr<const Packet> p, const Address& a) { if (m_rec->InWindow()) goodBytes += p->GetSize(); }

// All readable, non-pointer, non-callback attributes of obj (its TypeId and parents),
// one "name\tvalue" per line.
std::string DumpAttributes(Ptr<Object> obj) {
  std::ostringstream os;
  TypeId tid = obj->GetInstanceTypeId();
  while (true) {
    for (uint32_t i = 0; i < tid.GetAttributeN(); ++i) {
      TypeId::AttributeInformation info = tid.GetAttribute(i);
      if (!(info.flags & TypeId::ATTR_GET) || !info.accessor->HasGetter()) continue;
      std::string vt = info.checker->GetValueTypeName();
      if (vt.find("Pointer") != std::string::npos || vt.find("Callback") != std::string::npos ||
          vt.find("ObjectPtrContainer") != std::string::npos) continue;
      Ptr<AttributeValue> v = info.checker->Create();
      if (!obj->GetAttributeFailSafe(info.name, *v)) continue;
      os << tid.GetName() << "\t" << info.name << "\t" << v->SerializeToString(info.checker) << "\n";
    }
    if (tid == tid.GetParent()) break;
    tid = tid.GetParent();
    if (tid.GetName() == "ns3::Object" || tid.GetName() == "ns3::ObjectBase") break;
  }
  return os.str();
}

std::string DumpSocketAttributes(Ptr<TcpSocketBase> s) { return DumpAttributes(s); }

std::string DumpAttributesOf(Ptr<TcpSocketBase> s, std::string pointerAttr) {
  PointerValue pv; s->GetAttribute(pointerAttr, pv);
  Ptr<Object> o = pv.GetObject();
  return o->GetInstanceTypeId().GetName() + "\n" + DumpAttributes(o);
}

// Initial (default) value of an attribute as currently configured (after Config::SetDefault).
std::string DefaultOf(std::string tidName, std::string attr) {
  TypeId tid = TypeId::LookupByName(tidName);
  TypeId::AttributeInformation info;
  if (!tid.LookupAttributeByName(attr, &info)) return "?";
  return info.initialValue->SerializeToString(info.checker);
}

void UninstallQdisc(Ptr<NetDevice> dev) {
  Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
  if (tc && tc->GetRootQueueDiscOnDevice(dev)) tc->DeleteRootQueueDiscOnDevice(dev);
}
bool HasQdisc(Ptr<NetDevice> dev) {
  Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
  return tc && tc->GetRootQueueDiscOnDevice(dev);
}
void SetDeviceQueue(Ptr<NetDevice> dev, std::string size) {
  DynamicCast<PointToPointNetDevice>(dev)->GetQueue()->SetMaxSize(QueueSize(size));
}
std::string DeviceQueueSize(Ptr<NetDevice> dev) {
  std::ostringstream os; os << DynamicCast<PointToPointNetDevice>(dev)->GetQueue()->GetMaxSize(); return os.str();
}
Ptr<RateErrorModel> AddRateErrorModel(Ptr<NetDevice> dev, double rate, int64_t stream) {
  Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
  em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
  em->SetRate(rate);
  em->AssignStreams(stream);
  DynamicCast<PointToPointNetDevice>(dev)->SetReceiveErrorModel(em);
  return em;
}
}  // namespace krns3
"""


# ------------------------------------------------------------ ns-3 helpers
def load_ns3():
    from ns import ns  # noqa: import is slow (cppyy); only in the child process
    import cppyy
    cppyy.include("ns3/traffic-control-module.h")
    cppyy.cppdef(RECORDER_CPP)
    return ns, cppyy.gbl.krns3


def configure_defaults(ns, cfg):
    ns.RngSeedManager.SetSeed(SEED)
    ns.RngSeedManager.SetRun(RUN)
    sd = ns.Config.SetDefault
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue(cfg["tcp_type"]))
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(cfg["segment_size_bytes"]))
    sd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(cfg["snd_buf_bytes"]))
    sd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(cfg["rcv_buf_bytes"]))
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(cfg["initial_cwnd_segments"]))
    sd("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(cfg["pacing"]))
    sd("ns3::DropTailQueue<Packet>::MaxSize",
       ns.QueueSizeValue(ns.QueueSize(f"{cfg['other_queue_packets']}p")))


def p2p_helper(ns, rate_bps, delay_ms):
    h = ns.PointToPointHelper()
    h.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate_bps))))
    h.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(int(round(delay_ms * 1000)))))
    return h


def build_topology(ns, kr, cfg):
    """Create nodes, links, addresses, routes; return the handles needed later."""
    n = cfg["flows"]
    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    routers.Create(2)
    receivers.Create(n)
    r1, r2 = routers.Get(0), routers.Get(1)

    bott = p2p_helper(ns, cfg["bottleneck_rate_bps"], cfg["bottleneck_delay_ms"]).Install(r1, r2)
    access, egress = [], []
    for i, a in enumerate(cfg["access_delays_ms"]):
        access.append(p2p_helper(ns, cfg["access_rate_bps"], a).Install(senders.Get(i), r1))
        egress.append(p2p_helper(ns, cfg["access_rate_bps"], cfg["receiver_link_delay_ms"])
                      .Install(r2, receivers.Get(i)))

    stack = ns.InternetStackHelper()
    stack.Install(senders)
    stack.Install(routers)
    stack.Install(receivers)

    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(bott)
    sender_if, receiver_if = [], []
    for i in range(n):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        sender_if.append(addr.Assign(access[i]))
        addr.SetBase(ns.Ipv4Address(f"10.2.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        receiver_if.append(addr.Assign(egress[i]))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # Assign() installed the default qdisc on every device: remove them all, so the
    # device queues are the only buffers.  Then shrink R1's bottleneck queue.
    all_devs = [bott] + access + egress
    for c in all_devs:
        for j in range(c.GetN()):
            kr.UninstallQdisc(c.Get(j))
            assert not kr.HasQdisc(c.Get(j))
    kr.SetDeviceQueue(bott.Get(0), f"{cfg['bottleneck_buffer_packets']}p")

    return dict(senders=senders, receivers=receivers, r1=r1, r2=r2, bott=bott,
                access=access, egress=egress, sender_if=sender_if, receiver_if=receiver_if,
                all_devs=all_devs)


def install_apps(ns, cfg, topo):
    sources, sinks = [], []
    for i in range(cfg["flows"]):
        port = 5001 + i
        dst = ns.InetSocketAddress(topo["receiver_if"][i].GetAddress(1), port).ConvertTo()
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", dst)
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(cfg["send_size_bytes"]))
        src = bulk.Install(topo["senders"].Get(i))
        src.Start(ns.Seconds(cfg["start_times_s"][i]))
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sink = sink_helper.Install(topo["receivers"].Get(i))
        sink.Start(ns.Seconds(0.0))
        sources.append(src.Get(0))
        sinks.append(sink.Get(0))
    return sources, sinks


def attach_recorder(ns, kr, cfg, topo, sources, sinks):
    rec = kr.Recorder(cfg["window_start_s"], cfg["window_end_s"], cfg["sample_interval_s"])
    for i in range(cfg["flows"]):
        rec.AddFlow(topo["sender_if"][i].GetAddress(0).Get())
        rec.HookSink(sinks[i], i)
        # The BulkSend socket is created when the app starts; hook it 1 ns later.
        rec.ScheduleSenderHook(sources[i], i, cfg["start_times_s"][i] + 1e-9)
    bott = topo["bott"]
    rec.HookBottleneck(bott.Get(0), bott.Get(1))
    for c in topo["all_devs"]:
        for j in range(c.GetN()):
            if c is bott and j == 0:
                continue
            rec.HookOtherQueue(c.Get(j))
    others = ns.NodeContainer(topo["senders"], topo["receivers"])
    others.Add(topo["r2"])
    rec.HookTcDrops(topo["r1"], others)
    rec.StartSampling()
    return rec


# ------------------------------------------------------- attribute read-back
def snake(name):
    out = ""
    for k, ch in enumerate(name):
        if ch.isupper() and k > 0 and (not name[k - 1].isupper() or
                                       (k + 1 < len(name) and name[k + 1].islower())):
            out += "_"
        out += ch.lower()
    return out


def parse_value(key, text):
    """ns-3 serialised attribute value -> (snake_case key, JSON value)."""
    k = snake(key)
    if text in ("true", "false"):
        return k, text == "true"
    if text.endswith("ns") and text[:-2].lstrip("+-").replace("e", "").replace(".", "").replace("+", "").isdigit():
        return k + "_s", float(text[:-2]) / 1e9
    if text.endswith("bps") and text[:-3].isdigit():
        return k + "_bps", int(text[:-3])
    try:
        return k, int(text)
    except ValueError:
        pass
    try:
        return k, float(text)
    except ValueError:
        return k, text


def parse_dump(text):
    out = {}
    for line in text.strip().splitlines():
        _tid, name, value = line.split("\t")
        k, v = parse_value(name, value)
        out[k] = v
    return out


def read_back_attributes(ns, kr, rec, cfg):
    sock = rec.Flow(0).sock
    socket_attrs = parse_dump(str(kr.DumpSocketAttributes(sock)))
    cc_dump = str(kr.DumpAttributesOf(sock, "CongestionOps")).split("\n", 1)
    rec_dump = str(kr.DumpAttributesOf(sock, "RecoveryOps")).split("\n", 1)
    state = {}
    for a in ("EnablePacing", "MaxPacingRate", "PacingSsRatio", "PacingCaRatio", "PaceInitialWindow"):
        k, v = parse_value(a, str(kr.DefaultOf("ns3::TcpSocketState", a)))
        state[k] = v
    l4 = {}
    for a in ("SocketType", "RecoveryType", "RttEstimatorType"):
        k, v = parse_value(a, str(kr.DefaultOf("ns3::TcpL4Protocol", a)))
        l4[k] = v
    return {
        "socket_class": str(sock.GetInstanceTypeId().GetName()),
        "socket": socket_attrs,
        "congestion_ops_class": cc_dump[0],
        "congestion_ops": parse_dump(cc_dump[1]) if len(cc_dump) > 1 and cc_dump[1].strip() else {},
        "recovery_ops_class": rec_dump[0],
        "recovery_ops": parse_dump(rec_dump[1]) if len(rec_dump) > 1 and rec_dump[1].strip() else {},
        "tcp_socket_state_defaults": state,
        "tcp_l4_protocol_defaults": l4,
    }


# ---------------------------------------------------------------- metrics
def percentile(sorted_xs, q):
    if not sorted_xs:
        return None
    pos = (len(sorted_xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarise(xs):
    xs = sorted(xs)
    if not xs:
        return None, None, 0
    return sum(xs) / len(xs), percentile(xs, 0.95), len(xs)


def dedup(xs):
    out = []
    for x in xs:
        if not out or out[-1] != x:
            out.append(x)
    return out


def r(x, nd=6):
    return None if x is None else round(x, nd)


def flow_metrics(rec, cfg):
    window = cfg["window_end_s"] - cfg["window_start_s"]
    flows = []
    for i in range(cfg["flows"]):
        fp = rec.Flow(i)
        rtt = list(fp.rttMs)
        exact = list(fp.rttExactMs)
        trace = list(fp.lastRttTraceMs)
        srtt = list(fp.srttMs)
        m, p95, n = summarise(rtt)
        em, ep95, en = summarise(exact)
        tm, tp95, tn = summarise(trace)
        sent = int(fp.dataSent)
        lost = int(fp.qDrops) + int(fp.emDrops)
        flows.append({
            "flow": i + 1,
            "access_delay_ms": cfg["access_delays_ms"][i],
            "base_rtt_ms": cfg["base_rtt_ms"][i],
            "goodput_bps": r(int(fp.goodBytes) * 8 / window, 3),
            "goodput_bytes": int(fp.goodBytes),
            "rtt_mean_ms": r(m), "rtt_p95_ms": r(p95), "rtt_samples": n,
            "rtt_min_ms": r(min(rtt)) if rtt else None, "rtt_max_ms": r(max(rtt)) if rtt else None,
            "rtt_exact_mean_ms": r(em), "rtt_exact_p95_ms": r(ep95), "rtt_exact_samples": en,
            "rtt_exact_min_ms": r(min(exact)) if exact else None,
            "rtt_exact_max_ms": r(max(exact)) if exact else None,
            "last_rtt_trace_firings": tn, "last_rtt_trace_mean_ms": r(tm),
            "rtt_check_matches_last_rtt_trace": dedup(rtt)[-len(trace):] == trace if trace else None,
            "srtt_mean_ms": r(sum(srtt) / len(srtt)) if srtt else None,
            "data_packets_sent": sent,
            "retransmitted_packets": int(fp.retx),
            "dropped_at_queue": int(fp.qDrops),
            "dropped_by_error_model": int(fp.emDrops),
            "loss_rate": r(lost / sent if sent else None, 8),
            "fast_recovery_episodes": int(fp.recoveries),
            "rto_episodes": int(fp.rtos),
            "whole_run_data_packets_sent": int(fp.dataSentTotal),
            "whole_run_retransmitted_packets": int(fp.retxTotal),
            "whole_run_fast_recovery_episodes": int(fp.recoveriesTotal),
            "whole_run_rto_episodes": int(fp.rtosTotal),
        })
    return flows


def jain(xs):
    s2 = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * s2) if s2 else None


def bottleneck_metrics(rec, cfg):
    window = cfg["window_end_s"] - cfg["window_start_s"]
    return {
        "utilisation": r(int(rec.m_txBytes) * 8 / (cfg["bottleneck_rate_bps"] * window), 6),
        "tx_bytes": int(rec.m_txBytes),
        "queue_drops": int(rec.m_qDrops),
        "queue_drops_non_data": int(rec.m_qDropsNonData),
        "mean_queue_packets": r(int(rec.m_qSum) / int(rec.m_qN), 4) if int(rec.m_qN) else None,
        "queue_samples": int(rec.m_qN),
        "whole_run_queue_drops": int(rec.m_qDropsTotal),
        "whole_run_error_model_drops": int(rec.m_emDropsTotal),
        "error_model_drops_non_data": int(rec.m_emDropsNonData),
        "other_device_drops": int(rec.m_otherDrops),
    }


# ------------------------------------------------------------------ runner
def run_one(name):
    """Run one scenario in this process and write its files; return wall seconds."""
    t0 = time.monotonic()
    cfg = scenario_config(name)
    ns, kr = load_ns3()
    configure_defaults(ns, cfg)
    topo = build_topology(ns, kr, cfg)
    em = None
    if cfg["loss_rate"] > 0:
        em = kr.AddRateErrorModel(topo["bott"].Get(1), cfg["loss_rate"], ERROR_MODEL_STREAM)
        cfg["error_model"] = {"class": "ns3::RateErrorModel", "unit": "ERROR_UNIT_PACKET",
                              "rate": cfg["loss_rate"], "where": "R2 bottleneck device (ReceiveErrorModel)",
                              "stream": ERROR_MODEL_STREAM}
    sources, sinks = install_apps(ns, cfg, topo)
    rec = attach_recorder(ns, kr, cfg, topo, sources, sinks)
    cfg["bottleneck_device_queue"] = str(kr.DeviceQueueSize(topo["bott"].Get(0)))
    cfg["reverse_bottleneck_device_queue"] = str(kr.DeviceQueueSize(topo["bott"].Get(1)))

    ns.Simulator.Stop(ns.Seconds(cfg["duration_s"]))
    t_run = time.monotonic()
    ns.Simulator.Run()
    run_s = time.monotonic() - t_run

    cfg["attributes"] = read_back_attributes(ns, kr, rec, cfg)
    flows = flow_metrics(rec, cfg)
    result = {
        "scenario": cfg,
        "flows": flows,
        "bottleneck": bottleneck_metrics(rec, cfg),
        "jain_index": r(jain([f["goodput_bps"] for f in flows]), 6),
    }
    csv = "time_s,flow,cwnd_bytes,ssthresh_bytes,queue_packets\n" + str(rec.Csv())
    ns.Simulator.Destroy()
    del em

    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    with open(os.path.join(RESULTS, f"{name}.cwnd.csv"), "w") as f:
        f.write(csv)
    return time.monotonic() - t0, run_s


def main(argv):
    if argv and argv[0] == "--list":
        print("\n".join(SCENARIOS))
        return 0
    if argv and argv[0] == "--one":
        wall, run_s = run_one(argv[1])
        print(f"WALL {argv[1]} {wall:.1f} {run_s:.1f}")
        return 0
    names = argv or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {unknown}; known: {list(SCENARIOS)}", file=sys.stderr)
        return 2
    rc = 0
    for name in names:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name],
                              capture_output=True, text=True)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            rc = 1
            print(f"{name}: FAILED (rc {proc.returncode})\n{proc.stdout}\n{proc.stderr}", file=sys.stderr)
            continue
        inner = [l for l in proc.stdout.splitlines() if l.startswith("WALL ")]
        inner_s, run_s = inner[-1].split()[-2:] if inner else ("?", "?")
        print(f"{name}: done, wall {wall:.1f} s (child {inner_s} s incl. ns-3 import/JIT, "
              f"Simulator::Run {run_s} s) "
              f"-> results/{name}.json, results/{name}.cwnd.csv")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
