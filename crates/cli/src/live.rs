//! What the real-datapath commands (`transfer`, `serve`, `send`, `emulate`) share: the async
//! runtime, controllers and links described as on the command line, stopping on a signal, and
//! event lines.

use kleinrock_cc::controller::units::parse_duration;
use kleinrock_cc::ControllerConfig;
use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::scenario::{parse, FlowTransport, Scenario};
use kleinrock_quic::adapter::{CcCounters, CcFactory};
use kleinrock_quic::endpoint;
use std::time::Duration;

/// Refuses transport settings the real datapath cannot follow: noq's receiver acknowledges
/// every second packet or after 25 ms, in ACKs of the size their ranges need, and its sender
/// recovers as QUIC does (RFC 9002).
pub fn noq_transport(t: &kleinrock_sim::TransportConfig) -> Result<(), String> {
    let d = kleinrock_sim::TransportConfig::default();
    let fields = [
        ("max_ack_delay", t.max_ack_delay != d.max_ack_delay),
        ("ack_every", t.ack_every != d.ack_every),
        ("ack_size", t.ack_size != d.ack_size),
        ("quick_acks", t.quick_acks != d.quick_acks),
        ("recovery", t.recovery != d.recovery),
    ];
    match fields.iter().find(|(_, changed)| *changed) {
        Some((name, _)) => Err(format!(
            "flows[0].{name}: simulator-only; noq's receiver acknowledges every second packet \
             or after 25 ms and its sender recovers loss as QUIC does, RFC 9002 (remove it, \
             or the preset that sets it, to run the flow for real)"
        )),
        None => Ok(()),
    }
}

/// The async runtime of the real-datapath commands.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// The scenario of one sized download over a dumbbell of `link` (`RATE,RTT,BUFFER`): the
/// flow's data path is `bottleneck`, its ACK path `return` (same rate, a 1000-packet buffer,
/// half the RTT each way). The receiver delays ACKs, as noq's does (every second packet or
/// 25 ms), so a simulated twin sees the same ACK clock.
pub fn dumbbell_text(cc: &str, link: &str, size: &str) -> Result<String, String> {
    let parts: Vec<&str> = link.split(',').map(str::trim).collect();
    let [rate, rtt, buffer] = parts[..] else {
        return Err(format!(
            "--link `{link}`: expected RATE,RTT,BUFFER, e.g. 10Mbps,50ms,2bdp"
        ));
    };
    let rtt = parse_duration(rtt).map_err(|e| format!("--link: {e}"))?;
    let one_way = format!("{}ns", rtt.as_nanos() / 2);
    Ok(Dumbbell {
        name: "transfer".into(),
        trace_interval: Some("10ms".into()),
        return_buffer: "1000pkt".into(),
        flow_name: Some("transfer".into()),
        size: Some(size.into()),
        delayed_ack: true,
        ..Dumbbell::new(cc, rate, &one_way, buffer, "3600s")
    }
    .to_toml())
}

/// [`dumbbell_text`] parsed, with `--param NAME=VALUE` settings of the flow's controller and
/// `--set PATH=VALUE` changes: the scenario checks (names, units, ranges) apply to the
/// command line.
pub fn dumbbell(
    cc: &str,
    params: &[String],
    link: &str,
    size: &str,
    sets: &[String],
) -> Result<Scenario, String> {
    let text = dumbbell_text(cc, link, size)?;
    let overrides: Vec<String> = params
        .iter()
        .map(|p| format!("flows.0.params.{p}"))
        .chain(sets.iter().cloned())
        .collect();
    let set = parse(&text, "<command line>", "transfer", &overrides).map_err(|e| e.to_string())?;
    set.points
        .into_iter()
        .next()
        .ok_or_else(|| "the command line gave no scenario".to_string())
}

/// The controller factory for the first flow of `s`, seeded with the scenario's seed. Its
/// controllers count the QUIC packet that the flow's `packet_size` on the wire leaves
/// ([`endpoint::quic_packet_size`]; with `timestamps`, the trailer's 16 bytes less).
pub fn factory(s: &Scenario, timestamps: bool) -> Result<CcFactory, String> {
    let Some(FlowTransport::Reliable {
        cc,
        params,
        transport,
    }) = s.flows.first().map(|f| &f.transport)
    else {
        return Err("the flow is not a reliable flow with a controller".into());
    };
    let size = endpoint::quic_packet_size(u64::from(transport.packet_size), timestamps)
        .map_err(|e| format!("flows[0].packet_size: {e}"))?;
    let config = ControllerConfig {
        max_datagram_size: size,
        seed: s.seed,
        ..ControllerConfig::default()
    };
    CcFactory::new(cc, params.clone(), config).map_err(|e| e.to_string())
}

/// A controller from `--cc` and `--param`, checked as a scenario's would be, for full packets
/// of 1500 bytes on the wire.
pub fn controller(cc: &str, params: &[String], timestamps: bool) -> Result<CcFactory, String> {
    factory(
        &dumbbell(cc, params, "10Mbps,50ms,2bdp", "1MB", &[])?,
        timestamps,
    )
}

/// `--duration` as a duration.
pub fn duration(text: Option<&str>) -> Result<Option<Duration>, String> {
    text.map(|t| parse_duration(t).map_err(|e| format!("--duration: {e}")))
        .transpose()
}

/// The signals that stop `serve` and `emulate`: SIGINT, SIGTERM, SIGHUP, or a time limit. Made before
/// the command says it is listening, so a signal sent right after that is not lost.
pub struct Stop {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
    limit: Option<Duration>,
}

impl Stop {
    /// Watches the signals from now on.
    pub fn watch(limit: Option<Duration>) -> Result<Stop, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let watch = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| format!("cannot watch {name}: {e}"))
        };
        Ok(Stop {
            interrupt: watch(SignalKind::interrupt(), "SIGINT")?,
            terminate: watch(SignalKind::terminate(), "SIGTERM")?,
            hangup: watch(SignalKind::hangup(), "SIGHUP")?,
            limit,
        })
    }

    /// Waits for the next SIGINT, SIGTERM or SIGHUP; the signal's number.
    pub async fn next_signal(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => 2,
            _ = self.terminate.recv() => 15,
            _ = self.hangup.recv() => 1,
        }
    }

    /// Waits for a signal or the time limit.
    pub async fn wait(mut self) {
        let limit = self.limit;
        let limit = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.next_signal() => {}
            () = limit => {}
        }
    }
}

/// From now on, SIGINT, SIGTERM and SIGHUP end the process after deleting the network
/// namespaces it made (`kleinrock run` of kernel flows, `crosscheck`): its programs die with it
/// and the kernel releases the TUN devices as its descriptors close. The exit status is 128
/// plus the signal's number, as a shell reports a process the signal ended.
pub fn remove_namespaces_on_signal() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the signal watcher: {e}"))?;
    let mut stop = rt.block_on(async { Stop::watch(None) })?;
    std::thread::Builder::new()
        .name("kleinrock-signals".into())
        .spawn(move || {
            let signal = rt.block_on(stop.next_signal());
            kleinrock_quic::netns::remove_own();
            std::process::exit(128 + signal);
        })
        .map_err(|e| format!("cannot start the signal watcher: {e}"))?;
    Ok(())
}

/// Prints an event: one JSON line with `json`, else `text` for a person.
pub fn event(json: bool, value: serde_json::Value, text: &str) {
    if json {
        crate::emit(&format!("{value}\n"));
    } else {
        crate::emit(&format!("{text}\n"));
    }
}

/// A controller's counters as JSON.
pub fn counters_json(c: &CcCounters) -> serde_json::Value {
    serde_json::json!({
        "packets_sent": c.packets_sent,
        "bytes_sent": c.bytes_sent,
        "packets_acked": c.packets_acked,
        "bytes_acked": c.bytes_acked,
        "packets_lost": c.packets_lost,
        "bytes_lost": c.bytes_lost,
        "ack_events": c.ack_events,
        "congestion_events": c.congestion_events,
        "persistent_congestion_events": c.persistent_congestion_events,
        "ecn_events": c.ecn_events,
        "owd_samples": c.owd_samples,
        "ack_delay_samples": c.ack_delay_samples,
        "owd_rejected_unknown_echo": c.owd_rejected_unknown_echo,
        "owd_rejected_backwards": c.owd_rejected_backwards,
        "owd_rejected_queuing": c.owd_rejected_queuing,
        "loss_events": c.loss_events,
        "spurious_congestion_events": c.spurious_congestion_events,
    })
}
