//! `kleinrock send`: a client that uploads content with its own controller to a kleinrock
//! server (`kleinrock serve`, directly or through `kleinrock emulate`), which checks the bytes'
//! SHA-256. The client's controller is the one under test, so this is the upload twin of
//! `kleinrock transfer`.

use crate::live;
use kleinrock_cc::controller::units::parse_bytes;
use kleinrock_quic::endpoint::{self, certificate_der, ClientOptions, LOOPBACK_RECEIVE_WINDOW};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `kleinrock send`.
#[derive(clap::Args)]
pub struct SendArgs {
    /// The server, or an emulator in front of it (loopback).
    #[arg(long)]
    to: SocketAddr,
    /// The server's certificate, PEM or DER (as `kleinrock serve --cert-out` writes it).
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// Bytes to send, e.g. `10MB`.
    #[arg(long, default_value = "10MB")]
    size: String,
    /// The client's controller, one of `kleinrock list`.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// A controller parameter, `name=value` (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Do not offer datagram timestamps.
    #[arg(long)]
    no_timestamps: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

async fn send(args: SendArgs) -> Result<(), String> {
    let factory = live::controller(&args.cc, &args.param, !args.no_timestamps)?;
    let size = parse_bytes(&args.size).map_err(|e| format!("--size: {e}"))?;
    let cert = std::fs::read(&args.cert)
        .map_err(|e| format!("cannot read {}: {e}", args.cert.display()))?;
    let cert = certificate_der(&cert).map_err(|e| format!("{}: {e}", args.cert.display()))?;
    let opts = ClientOptions {
        receive_window: LOOPBACK_RECEIVE_WINDOW,
        timestamps: !args.no_timestamps,
    };
    let report = endpoint::upload(args.to, &cert, size, &factory, &opts)
        .await
        .map_err(|e| e.to_string())?;
    let sample = factory.probe().sample();
    let counters = sample.as_ref().map(|s| s.counters).unwrap_or_default();
    let rtt = factory.probe().rtt_histogram().unwrap_or_default();
    let rtt_mean_ms = rtt.mean().map(|ns| ns * 1e-6);
    let value = serde_json::json!({
        "bytes": report.bytes,
        "sha256": report.sha256,
        "elapsed_s": report.elapsed.as_secs_f64(),
        "handshake_s": report.handshake.as_secs_f64(),
        "goodput_bps": report.goodput.bits_per_sec(),
        "rtt_mean_ms": rtt_mean_ms,
        "timestamps": report.timestamps,
        "cc": args.cc,
        "counters": live::counters_json(&counters),
        "warnings": factory.warnings(),
    });
    let mut text = format!(
        "sent {} bytes in {:.2} s ({:.3} Mbps) with {}; server verified SHA-256 {}; \
         {} packets lost; timestamps {}",
        report.bytes,
        report.elapsed.as_secs_f64(),
        report.goodput.bits_per_sec() / 1e6,
        args.cc,
        report.sha256,
        counters.packets_lost,
        if report.timestamps { "on" } else { "off" },
    );
    for w in factory.warnings() {
        text.push_str(&format!("\nwarning: {w}"));
    }
    live::event(args.json, value, &text);
    Ok(())
}

/// Runs `kleinrock send`.
pub fn run(args: SendArgs) -> Result<(), String> {
    live::runtime()?.block_on(send(args))
}
