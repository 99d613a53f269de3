//! A controller's extra subflow over QUIC: the second connection that `fq_switch`'s
//! fair-queuing probe runs its fast leg on ([`kleinrock_cc::Controller::extra_subflows`]), from a
//! port of its own, so that a fair queue on the path sees two flows.
//!
//! The simulator opens a subflow inside the connection; QUIC has no such thing, so the server
//! asks its client for a second connection and pairs the two (the request protocol of
//! [`crate::endpoint`], ALPN `kleinrock`, gains one command):
//!
//! 1. When the first `G` request of a connection whose controller opens subflows arrives, the
//!    server opens a unidirectional stream to the client and sends an 8-byte random token on
//!    it, and holds the answer until the client has paired a second connection (at most
//!    [`PAIR_TIMEOUT`]; after that it answers on one connection, and the probe has one leg).
//! 2. The client connects again from a new socket and sends `S` and the token (in place of the
//!    length) on a bidirectional stream; the server finishes that stream.
//! 3. Paired, the first connection's controller starts afresh, so that its probe starts with
//!    both legs as in the simulator, and the second connection's controller is the one the
//!    first's gives for its subflow. Whenever the first's controller wants the subflow, the
//!    server sends filler on a unidirectional stream of the second (the client reads and drops
//!    it) and the subflow's controller paces it; when it no longer does (the probe decided),
//!    the server resets that stream, so nothing of it is sent again. The simulator instead
//!    closes the subflow and resends its stream data on the first; here the fast leg's data is
//!    filler and nothing needs resending.
//! 4. Between probes the second connection stays open and idle, so a re-detection
//!    (`fq_switch`'s `redetect`) starts both legs at once; the server closes it when the first
//!    connection ends, and the client when its fetch ends.

use crate::adapter::{CcFactory, CcProbe};
use crate::endpoint::{command, connection, stream, Client, ClientOptions, Error};
use crate::lock;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long the server holds a fetch for its second connection.
pub const PAIR_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the server looks whether the controller still wants its subflow: the subflow
/// stops at most this long after the probe decided.
const POLL: Duration = Duration::from_millis(1);
/// Bytes of filler written at once.
const FILLER_CHUNK: usize = 16 << 10;

/// A connection that may become a subflow: its handle and its controller's probe.
#[derive(Clone)]
pub(crate) struct Leg {
    pub conn: noq::Connection,
    pub probe: CcProbe,
}

/// The server's connections waiting for their subflow, by token.
#[derive(Default)]
pub(crate) struct Pairing {
    waiting: Mutex<HashMap<u64, oneshot::Sender<Leg>>>,
}

impl Pairing {
    /// A fresh token for a connection and where its subflow will arrive.
    fn expect(&self) -> (u64, oneshot::Receiver<Leg>) {
        let (tx, rx) = oneshot::channel();
        let mut waiting = lock(&self.waiting);
        loop {
            let token = random_token();
            if let std::collections::hash_map::Entry::Vacant(e) = waiting.entry(token) {
                e.insert(tx);
                return (token, rx);
            }
        }
    }

    fn forget(&self, token: u64) {
        lock(&self.waiting).remove(&token);
    }

    /// Hands `leg` to the connection that sent `token`; `false` if none waits for it.
    pub(crate) fn attach(&self, token: u64, leg: Leg) -> bool {
        match lock(&self.waiting).remove(&token) {
            Some(tx) => tx.send(leg).is_ok(),
            None => false,
        }
    }
}

/// A token waiting for its connection, forgotten however the wait ends (paired, timed out, or
/// the task dropped when its connection closed).
struct Waiting<'a> {
    pairing: &'a Pairing,
    token: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.pairing.forget(self.token);
    }
}

/// Eight random bytes from the system's generator: a token a stranger cannot guess.
fn random_token() -> u64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    // The system generator fails only if the kernel has none; a counter would then do.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        return NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    u64::from_be_bytes(bytes)
}

/// The server's side, step 1: asks the client of `main` (whose controller `factory` built) for
/// a second connection and waits for it; once paired, a task drives the subflow for the rest
/// of `main`'s life. Returns whether the pairing succeeded.
pub(crate) async fn pair(main: &noq::Connection, factory: &CcFactory, pairing: &Pairing) -> bool {
    let (token, arrived) = pairing.expect();
    let _waiting = Waiting { pairing, token };
    // A client that takes no unidirectional stream never lets `open_uni` finish: the whole
    // exchange is under the timeout.
    let exchange = async {
        let mut send = main.open_uni().await.ok()?;
        send.write_all(&token.to_be_bytes()).await.ok()?;
        send.finish().ok()?;
        arrived.await.ok()
    };
    let Ok(Some(leg)) = tokio::time::timeout(PAIR_TIMEOUT, exchange).await else {
        return false;
    };
    if leg.conn.stable_id() == main.stable_id() {
        leg.conn.close(
            noq::VarInt::from_u32(0),
            b"a connection is not its own subflow",
        );
        return false;
    }
    // Step 3: the probe starts now, with both legs.
    let probe = factory.probe();
    probe.replace_controller(factory.controller());
    factory.lead();
    tokio::spawn(drive(main.clone(), probe, leg));
    true
}

/// Runs the subflow `leg` of `main` while `main` lives: filler whenever `main`'s controller
/// wants the subflow, under the controller it gives.
async fn drive(main: noq::Connection, probe: CcProbe, leg: Leg) {
    let alive = || main.close_reason().is_none() && leg.conn.close_reason().is_none();
    while alive() {
        if probe.extra_subflows() == 0 {
            tokio::time::sleep(POLL).await;
            continue;
        }
        if let Some(cc) = probe.subflow_controller(1) {
            leg.probe.replace_controller(cc);
        }
        let Ok(mut filler) = leg.conn.open_uni().await else {
            break;
        };
        fill(&mut filler, &probe, &alive).await;
        let _ = filler.reset(noq::VarInt::from_u32(0));
    }
    leg.conn.close(noq::VarInt::from_u32(0), b"done");
}

/// Writes filler on `send` until `probe`'s controller no longer wants its subflow or a
/// connection ended.
async fn fill(send: &mut noq::SendStream, probe: &CcProbe, alive: &impl Fn() -> bool) {
    let chunk = vec![0u8; FILLER_CHUNK];
    while probe.extra_subflows() > 0 && alive() {
        tokio::select! {
            written = send.write(&chunk) => if written.is_err() { return },
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// What the client's side of the subflows did. The subflow is the server's controller's
/// concern: a fetch succeeds whether or not its second connection could be made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubflowReport {
    /// Second connections opened (at most one per fetch).
    pub connections: u64,
    /// Filler bytes they received (and dropped).
    pub filler_bytes: u64,
    /// Why the second connection could not be made, if it could not.
    pub failure: Option<String>,
    /// Further requests for a second connection, ignored.
    pub ignored_requests: u64,
}

/// The client's side, step 2: for the first token the server of `main` sends, connects to
/// `server` again from a new socket and drains the filler that arrives there; ends, closing
/// that connection, when `main` closes.
pub(crate) async fn follow(
    main: noq::Connection,
    server: SocketAddr,
    cert_der: Vec<u8>,
    opts: ClientOptions,
) -> SubflowReport {
    let mut report = SubflowReport::default();
    let mut leg = None;
    while let Ok(mut recv) = main.accept_uni().await {
        let mut token = [0u8; 8];
        if recv.read_exact(&mut token).await.is_err() || leg.is_some() {
            report.ignored_requests += 1;
            continue;
        }
        let token = u64::from_be_bytes(token);
        let opened = tokio::select! {
            opened = open_leg(server, &cert_der, &opts, token) => opened,
            _ = main.closed() => break,
        };
        match opened {
            Ok(client) => {
                report.connections += 1;
                let conn = client.conn.clone();
                leg = Some((conn, tokio::spawn(drain(client))));
            }
            Err(e) => report.failure = Some(e.to_string()),
        }
    }
    if let Some((conn, drained)) = leg {
        conn.close(noq::VarInt::from_u32(0), b"done");
        report.filler_bytes = drained.await.unwrap_or_default();
    }
    report
}

/// Connects to `server` from a new socket and asks to be the subflow of `token`'s connection.
async fn open_leg(
    server: SocketAddr,
    cert_der: &[u8],
    opts: &ClientOptions,
    token: u64,
) -> Result<Client, Error> {
    let client = Client::connect(server, cert_der, opts, None).await?;
    let (mut send, _) = client.conn.open_bi().await.map_err(connection)?;
    send.write_all(&command(b'S', token))
        .await
        .map_err(stream)?;
    send.finish().map_err(stream)?;
    Ok(client)
}

/// Reads and drops what arrives on `client`'s unidirectional streams until the connection
/// closes (its server's end, or [`follow`]'s once the main connection closed); the bytes read.
async fn drain(client: Client) -> u64 {
    let mut bytes = 0;
    while let Ok(mut recv) = client.conn.accept_uni().await {
        while let Ok(Some(chunk)) = recv.read_chunk(usize::MAX).await {
            bytes += chunk.len() as u64;
        }
    }
    client.close().await;
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{fetch_with, serve, ServeOptions};
    use kleinrock_cc::{ControllerConfig, Params};

    fn fq_switch() -> CcFactory {
        CcFactory::new("fq_switch", Params::new(), ControllerConfig::default())
            .expect("fq_switch builds")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fetch_pairs_a_second_connection_for_the_fast_leg() {
        let server = serve(ServeOptions::new(fq_switch()))
            .await
            .expect("the server starts");
        let report = fetch_with(
            server.local_addr(),
            server.cert_der(),
            200_000,
            &ClientOptions::default(),
        )
        .await
        .expect("the content arrives whole");
        assert_eq!(report.subflows.connections, 1);
        let stats = server.stats();
        assert_eq!(
            (stats.paired_connections, stats.unpaired_connections),
            (1, 0)
        );
        assert_eq!(stats.connections, 2, "the fetch and its fast leg");
        // The fetch's controller leads the server's probe again once its leg was built.
        let sample = server.probe().sample().expect("a controller");
        assert!(
            sample.counters.bytes_acked >= 200_000,
            "{:?}",
            sample.counters
        );
        server.shutdown().await.expect("released");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_token_nobody_sent_is_refused() {
        let server = serve(ServeOptions::new(fq_switch()))
            .await
            .expect("the server starts");
        let client = Client::connect(
            server.local_addr(),
            server.cert_der(),
            &ClientOptions::default(),
            None,
        )
        .await
        .expect("connects");
        assert!(
            offer_refused(&client.conn, 42).await,
            "the stream is reset, not answered"
        );
        assert_eq!(server.stats().paired_connections, 0);
        client.close().await;
        server.shutdown().await.expect("released");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_is_not_its_own_subflow() {
        let server = serve(ServeOptions::new(fq_switch()))
            .await
            .expect("the server starts");
        let opts = ClientOptions::default();
        let (addr, cert) = (server.local_addr(), server.cert_der().to_vec());
        let main = Client::connect(addr, &cert, &opts, None)
            .await
            .expect("connects");
        let (mut get, _answer) = main.conn.open_bi().await.expect("a stream");
        get.write_all(&command(b'G', 1000)).await.expect("sent");
        get.finish().expect("finished");
        let mut token = [0u8; 8];
        let mut asked = main.conn.accept_uni().await.expect("the server asks");
        asked.read_exact(&mut token).await.expect("a token");
        let token = u64::from_be_bytes(token);
        // The token offered back on the connection that asked: refused.
        assert!(offer_refused(&main.conn, token).await, "refused");
        // A second connection with it pairs.
        let leg = open_leg(addr, &cert, &opts, token).await.expect("pairs");
        until_paired(&server).await;
        leg.close().await;
        main.close().await;
        server.shutdown().await.expect("released");
    }

    /// Offers `conn` as the subflow of `token`'s connection: whether the server refused (reset
    /// the stream).
    async fn offer_refused(conn: &noq::Connection, token: u64) -> bool {
        let (mut send, mut recv) = conn.open_bi().await.expect("a stream");
        send.write_all(&command(b'S', token)).await.expect("sent");
        send.finish().expect("finished");
        recv.read_to_end(16).await.is_err()
    }

    async fn until_paired(server: &crate::endpoint::ServerHandle) {
        for _ in 0..500 {
            if server.stats().paired_connections == 1 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("not paired within 5 s");
    }

    #[test]
    fn tokens_are_unique_among_those_waiting() {
        let pairing = Pairing::default();
        let tokens: Vec<u64> = (0..100).map(|_| pairing.expect().0).collect();
        let mut sorted = tokens.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), tokens.len());
    }
}
