//! `kleinrock serve`: the QUIC server on its own, for clients that are not `kleinrock
//! transfer` (another kleinrock's `send`, an aioquic or other interop client over
//! `hq-interop`). It serves until SIGINT or SIGTERM (or `--duration`), then reports what its
//! controller and socket saw; see crates/quic/src/endpoint.rs for the protocols.

use crate::live;
use kleinrock_cc::controller::units::parse_bytes;
use kleinrock_lab::runner::write_file;
use kleinrock_quic::endpoint::{self, ServeOptions, ServerHandle, ALPN, ALPN_HQ};
use kleinrock_quic::stamps::ALPN_STAMPED;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `--connection-window`'s default, [`endpoint::DEFAULT_CONNECTION_WINDOW`] (checked below).
const CONNECTION_WINDOW: &str = "16MiB";
/// `--window-budget`'s default, [`endpoint::DEFAULT_WINDOW_BUDGET`] (checked below).
const WINDOW_BUDGET: &str = "128MiB";

/// Arguments of `kleinrock serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Loopback address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:4433")]
    addr: SocketAddr,
    /// Controller of every connection, one of `kleinrock list`.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// A controller parameter, `name=value` (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Write the server's self-signed certificate (for `localhost`, PEM) here for clients to
    /// trust.
    #[arg(long, value_name = "FILE")]
    cert_out: Option<PathBuf>,
    /// Do not offer datagram timestamps to kleinrock clients.
    #[arg(long)]
    no_timestamps: bool,
    /// Stream window granted to uploading clients (`kleinrock send`), e.g. `4MB`: it bounds
    /// what their controller can have in flight, so make it at least the path's BDP plus its
    /// buffer (a smaller --connection-window is raised to it).
    #[arg(long, value_name = "BYTES", default_value = "1MiB")]
    receive_window: String,
    /// Most connections served at once, handshakes included; further clients are refused
    /// with CONNECTION_REFUSED until one ends.
    #[arg(long, value_name = "N", default_value_t = endpoint::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Most requests (streams) one client may have open at once; it opens the next when one
    /// ends.
    #[arg(long, value_name = "N", default_value_t = endpoint::DEFAULT_MAX_STREAMS)]
    max_streams: u32,
    /// Most bytes one connection may buffer each way (sent but unacknowledged, received but
    /// unread) when the --window-budget allows: it bounds what the server's controller can have
    /// in flight, so make it at least the path's BDP plus its buffer.
    #[arg(long, value_name = "BYTES", default_value = CONNECTION_WINDOW)]
    connection_window: String,
    /// Bytes shared out among all connections beyond the 64 KiB window each has: each
    /// direction's buffers together stay within this plus 64 KiB per connection.
    #[arg(long, value_name = "BYTES", default_value = WINDOW_BUDGET)]
    window_budget: String,
    /// Handshakes with clients whose address is not validated kept under way at once; a
    /// further client is answered with Retry (it proves its address and comes back), which
    /// costs the server nothing.
    #[arg(long, value_name = "N", default_value_t = endpoint::DEFAULT_RETRY_ABOVE)]
    retry_above: usize,
    /// Handshakes kept under way at once, validated or not (about 70 kB each, for at most
    /// 10 s); a further Initial is dropped without an answer.
    #[arg(long, value_name = "N", default_value_t = endpoint::DEFAULT_MAX_HANDSHAKES)]
    max_handshakes: usize,
    /// Stop after this long, e.g. `60s` (default: at SIGINT or SIGTERM).
    #[arg(long)]
    duration: Option<String>,
    /// Print events (listening, stopped) as JSON lines.
    #[arg(long)]
    json: bool,
}

fn protocols(timestamps: bool) -> Vec<String> {
    let mut p = Vec::new();
    if timestamps {
        p.push(String::from_utf8_lossy(ALPN_STAMPED).into_owned());
    }
    p.push(String::from_utf8_lossy(ALPN).into_owned());
    p.push(String::from_utf8_lossy(ALPN_HQ).into_owned());
    p
}

/// The report at the end.
fn stopped_event(
    args: &ServeArgs,
    server: &ServerHandle,
    warnings: &[String],
) -> serde_json::Value {
    let stats = server.stats();
    let counters = server
        .probe()
        .sample()
        .map(|s| s.counters)
        .unwrap_or_default();
    let recent: Vec<serde_json::Value> = server
        .connections()
        .iter()
        .map(|c| {
            serde_json::json!({
                "peer": c.peer.to_string(),
                "alpn": c.alpn,
                "timestamps": c.timestamps,
                "open": c.open,
                "counters": live::counters_json(&c.counters),
                "warnings": c.warnings,
            })
        })
        .collect();
    let d = &stats.datagrams;
    serde_json::json!({
        "event": "stopped",
        "cc": args.cc,
        "connections": stats.connections,
        "refused_connections": stats.refused_connections,
        "refused_same_address": stats.refused_same_address,
        "open_connections": stats.open_connections,
        "stamped_connections": stats.stamped_connections,
        "peak_handshakes": stats.peak_handshakes,
        "peak_unvalidated_handshakes": stats.peak_unvalidated_handshakes,
        "retries": stats.retries,
        "dropped_handshakes": stats.dropped_handshakes,
        "handshake_timeouts": stats.handshake_timeouts,
        "datagrams_in": d.datagrams_in,
        "stray_datagrams": d.stray_datagrams,
        "amplification_dropped": d.amplification_dropped,
        "stamped_in": d.stamped_in,
        "stamped_out": d.stamped_out,
        "owd_samples": d.samples,
        "owd_rejected_unknown_echo": d.rejected_unknown_echo,
        "owd_rejected_backwards": d.rejected_backwards,
        "last_connection": {
            "counters": live::counters_json(&counters),
            "warnings": warnings,
        },
        "recent_connections": recent,
    })
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let factory = live::controller(&args.cc, &args.param, !args.no_timestamps)?;
    let stop = live::Stop::watch(live::duration(args.duration.as_deref())?)?;
    let timestamps = !args.no_timestamps;
    let bytes = |name: &str, value: &str| parse_bytes(value).map_err(|e| format!("--{name}: {e}"));
    if args.max_connections == 0 || args.max_streams == 0 || args.max_handshakes == 0 {
        return Err(
            "--max-connections, --max-streams and --max-handshakes must be at least 1".into(),
        );
    }
    let server = endpoint::serve(ServeOptions {
        addr: args.addr,
        timestamps,
        receive_window: bytes("receive-window", &args.receive_window)?,
        max_connections: args.max_connections,
        max_streams: args.max_streams,
        connection_window: bytes("connection-window", &args.connection_window)?,
        window_budget: bytes("window-budget", &args.window_budget)?,
        retry_above: args.retry_above,
        max_handshakes: args.max_handshakes,
        ..ServeOptions::new(factory.clone())
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(path) = &args.cert_out {
        write_file(path, |w| w.write_all(server.cert_pem().as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let addr = server.local_addr();
    live::event(
        args.json,
        serde_json::json!({
            "event": "listening",
            "addr": addr.to_string(),
            "cert": args.cert_out.as_ref().map(|p| p.display().to_string()),
            "alpn": protocols(timestamps),
        }),
        &format!(
            "serving on {addr} with {} (ALPN {}); stop with Ctrl-C",
            args.cc,
            protocols(timestamps).join(", ")
        ),
    );
    stop.wait().await;
    let event = stopped_event(&args, &server, &factory.warnings());
    server.shutdown().await.map_err(|e| e.to_string())?;
    let text = format!(
        "stopped: {} connections, {} stray datagrams dropped; the last connection's controller \
         sent {} packets and lost {}",
        event["connections"],
        event["stray_datagrams"],
        event["last_connection"]["counters"]["packets_sent"],
        event["last_connection"]["counters"]["packets_lost"]
    );
    live::event(args.json, event, &text);
    Ok(())
}

/// Runs `kleinrock serve`.
pub fn run(args: ServeArgs) -> Result<(), String> {
    live::runtime()?.block_on(serve(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_defaults_are_the_library_defaults() {
        assert_eq!(
            parse_bytes(CONNECTION_WINDOW),
            Ok(endpoint::DEFAULT_CONNECTION_WINDOW)
        );
        assert_eq!(
            parse_bytes(WINDOW_BUDGET),
            Ok(endpoint::DEFAULT_WINDOW_BUDGET)
        );
    }
}
