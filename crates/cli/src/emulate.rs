//! `kleinrock emulate`: the userspace bottleneck emulator on its own, between any QUIC (or
//! UDP) client and server on loopback. Clients send to `--listen`; the emulator relays to
//! `--server` through the client-to-server link and back through the server-to-client link,
//! until SIGINT or SIGTERM (or `--duration`), then reports what it relayed and whether it kept
//! up (see crates/quic/src/emulator.rs).

use crate::live;
use kleinrock_cc::controller::units::parse_duration;
use kleinrock_lab::metrics::link_metrics;
use kleinrock_lab::scenario::{load, Scenario};
use kleinrock_quic::emulator::{self, DirectionStats, EmulatorConfig, EmulatorStats};
use kleinrock_sim::LinkConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--client-idle`: a positive duration.
fn parse_idle(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be above zero".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Arguments of `kleinrock emulate`.
#[derive(clap::Args)]
pub struct EmulateArgs {
    /// Where the server listens (loopback).
    #[arg(long)]
    server: SocketAddr,
    /// Where clients send (loopback); port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Both directions as RATE,RTT,BUFFER (half the RTT each way), e.g. `10Mbps,50ms,2bdp`
    /// (the default without --scenario):
    /// BUFFER is the data direction's (server to client; client to server with --upload), the
    /// other direction gets 1000 packets, as in `kleinrock transfer`.
    #[arg(long, value_name = "RATE,RTT,BUFFER", conflicts_with = "scenario")]
    link: Option<String>,
    /// A scenario file with one flow whose paths are one link each way: its data path becomes
    /// the server-to-client direction (a download), its ACK path the other.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// With the flow's data path client-to-server instead (an upload, `kleinrock send`).
    #[arg(long)]
    upload: bool,
    /// How long a client may stay silent before its slot (its upstream socket and its class)
    /// is given to the next new sender, e.g. `30s`; at most 256 clients have a slot at once.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_idle)]
    client_idle: Duration,
    /// Stop after this long, e.g. `60s` (default: at SIGINT or SIGTERM).
    #[arg(long)]
    duration: Option<String>,
    /// Print events (listening, stopped) as JSON lines.
    #[arg(long)]
    json: bool,
}

/// The scenario whose first flow's links the emulator applies.
fn scenario(args: &EmulateArgs) -> Result<Scenario, String> {
    link_scenario(args.link.as_deref(), args.scenario.as_deref())
}

/// The scenario of `--scenario FILE` (one point, one flow of one link each way) or of `--link
/// RATE,RTT,BUFFER` (default `10Mbps,50ms,2bdp`).
pub fn link_scenario(link: Option<&str>, file: Option<&Path>) -> Result<Scenario, String> {
    let s = match file {
        Some(file) => {
            let set = load(file, &[]).map_err(|e| e.to_string())?;
            let [s] = &set.points[..] else {
                return Err(format!("{}: a sweep; emulate one scenario", file.display()));
            };
            s.clone()
        }
        None => live::dumbbell(
            "newreno",
            &[],
            link.unwrap_or("10Mbps,50ms,2bdp"),
            "1MB",
            &[],
        )?,
    };
    match s.flows.first() {
        Some(f) if f.forward.len() == 1 && f.reverse.len() == 1 => Ok(s),
        _ => Err("the emulated flow needs one link each way (path and reverse_path)".into()),
    }
}

/// The client-to-server and server-to-client links of `s`'s first flow: its data path is the
/// server-to-client direction (a download), or with `upload` the other.
pub fn directions(s: &Scenario, upload: bool) -> (LinkConfig, LinkConfig) {
    let flow = &s.flows[0];
    let data = s.links[flow.forward[0]].clone();
    let ack = s.links[flow.reverse[0]].clone();
    if upload {
        (data, ack)
    } else {
        (ack, data)
    }
}

fn config(args: &EmulateArgs, s: &Scenario) -> EmulatorConfig {
    let (forward, reverse) = directions(s, args.upload);
    EmulatorConfig {
        listen: args.listen,
        server: args.server,
        forward,
        reverse,
        seed: s.seed,
        client_idle: args.client_idle,
    }
}

/// The two directions in a line.
pub fn describe(forward: &LinkConfig, reverse: &LinkConfig) -> String {
    let one = |l: &LinkConfig| {
        format!(
            "{:.3} Mbps, {:?}, buffer {:?}",
            l.rate.bits_per_sec() / 1e6,
            l.delay,
            l.buffer
        )
    };
    format!(
        "client->server {}; server->client {}",
        one(forward),
        one(reverse)
    )
}

fn direction_json(d: &DirectionStats) -> serde_json::Value {
    let link = link_metrics(&d.link);
    serde_json::json!({
        "datagrams_in": d.datagrams_in,
        "datagrams_out": d.datagrams_out,
        "bytes_out": d.bytes_out,
        "dropped_buffer": d.dropped_buffer,
        "lost_random": d.lost_random,
        "policed": d.policed,
        "dropped_memory": d.dropped_memory,
        "send_errors": d.send_errors,
        "achieved_rate_bps": d.achieved_rate.bits_per_sec(),
        "max_queue_packets": link.max_queue_packets,
        "utilisation": link.utilisation,
    })
}

pub fn stopped_event(s: &EmulatorStats) -> serde_json::Value {
    serde_json::json!({
        "event": "stopped",
        "valid": s.valid,
        "failure": s.failure,
        "elapsed_s": s.elapsed.as_secs_f64(),
        "lateness_p99_us": s.lateness_p99().as_secs_f64() * 1e6,
        "lateness_bound_us": s.lateness_bound.as_secs_f64() * 1e6,
        "realtime": s.realtime,
        "clients": s.clients.len(),
        "clients_seen": s.clients_seen,
        "clients_expired": s.clients_expired,
        "clients_refused": s.clients_refused,
        "unknown_dropped": s.unknown_dropped,
        "held_peak_datagrams": s.held_peak_datagrams,
        "held_peak_bytes": s.held_peak_bytes,
        "socket_drops": s.socket_drops,
        "io_errors": s.io_errors,
        "forward": direction_json(&s.forward),
        "reverse": direction_json(&s.reverse),
    })
}

async fn emulate(args: EmulateArgs) -> Result<(), String> {
    let s = scenario(&args)?;
    let stop = live::Stop::watch(live::duration(args.duration.as_deref())?)?;
    let config = config(&args, &s);
    let handle = emulator::start(config.clone()).map_err(|e| e.to_string())?;
    let addr = handle.listen_addr();
    live::event(
        args.json,
        serde_json::json!({ "event": "listening", "addr": addr.to_string() }),
        &format!(
            "emulating on {addr} -> {}: {}; stop with Ctrl-C",
            args.server,
            describe(&config.forward, &config.reverse)
        ),
    );
    stop.wait().await;
    let stats = tokio::task::spawn_blocking(move || handle.shutdown())
        .await
        .map_err(|e| format!("the emulator did not stop: {e}"))?;
    live::event(args.json, stopped_event(&stats), &stopped_text(&stats));
    Ok(())
}

/// What the emulator relayed and its verdict, in a line.
pub fn stopped_text(stats: &EmulatorStats) -> String {
    format!(
        "stopped after {:.1} s: {} datagrams to the server, {} to clients, {} dropped by the \
         buffer; lateness p99 {:?} (bound {:?}): {}",
        stats.elapsed.as_secs_f64(),
        stats.forward.datagrams_out,
        stats.reverse.datagrams_out,
        stats.forward.dropped_buffer + stats.reverse.dropped_buffer,
        stats.lateness_p99(),
        stats.lateness_bound,
        stats
            .why_invalid()
            .map_or("valid".to_string(), |why| format!("NOT valid: {why}"))
    )
}

/// Runs `kleinrock emulate`.
pub fn run(args: EmulateArgs) -> Result<(), String> {
    live::runtime()?.block_on(emulate(args))
}
