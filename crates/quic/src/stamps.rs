//! Datagram timestamps between two kleinrock endpoints: the one-way delay QUIC-DC needs
//! (QUIC-DC paper §III, eq. (3)-(5)), which standard QUIC does not carry.
//!
//! This module owns the timestamp trailer, [`Stamps`] (what one endpoint knows of its peers'
//! timestamps) and [`StampedSocket`], noq's `AsyncUdpSocket` around a UDP socket that adds and
//! removes the trailer. docs/quic.md describes the exchange.
//!
//! **Trailer.** A stamped UDP datagram ends with 16 bytes after the QUIC packets, big-endian:
//! the sender's send time in microseconds (`u32`, wrapping every 71 minutes), the echo (the send
//! time the peer wrote on the newest datagram received from it, and the time it was received, both
//! `u32` microseconds on their own clocks), and a 4-byte magic that says whether the echo is
//! present. The receiver strips a trailer whose magic matches before QUIC sees the datagram. Each
//! echo is sent once, on the next datagram to that peer, so with the client's ACKs every second
//! packet each ACK carries the one-way delay of the newest data packet before it.
//!
//! **Negotiation.** A kleinrock client offers ALPN `kleinrock-ts` (before `kleinrock`) and from
//! then on accepts trailers from that server. A server that selects it accepts trailers from the
//! client and stamps as soon as it knows the ALPN (before the client can stamp), so its
//! handshake-time packets carry their send times too; until the connection is established, a
//! trailer is added only while everything sent to the client, trailers included, stays within
//! three times what it received (the anti-amplification limit, RFC 9000 §8.1). The client
//! stamps from the end of its handshake.
//! Only a peer that accepts trailers has them stripped and turned into samples: a datagram from
//! anyone else reaches QUIC whole, whatever it ends with. A peer that is not kleinrock never
//! offers or selects `kleinrock-ts`, so it is never stamped. Per-peer state lives as long as the
//! connection: a new handshake from the same address, or the end of the connection, clears it
//! ([`Stamps::reset`]), so a later client on a reused port starts unstamped.
//!
//! **Samples.** The endpoint that receives an echo of its own send time `s`, with the peer's
//! receive time `r`, gives [`OwdFeed`] the send time (rebuilt on its own clock) and the one-way
//! delay `r - s` relative to the first such delay of that peer, plus 10 s so it stays positive:
//! the clocks' offset is unknown and cancels in QUIC-DC's differences (eq. (4)).

use crate::adapter::{EchoReport, OwdFeed};
use noq::udp::{RecvMeta, Transmit};
use noq::{AsyncUdpSocket, Runtime, TokioRuntime, UdpSender};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Bytes a stamped datagram carries after its QUIC packets.
pub const TRAILER_LEN: usize = 16;
/// The ALPN protocol by which two kleinrock endpoints agree to stamp.
pub const ALPN_STAMPED: &[u8] = b"kleinrock-ts";
/// Magic of a trailer without an echo ("klt0").
const MAGIC_PLAIN: u32 = 0x6b6c_7430;
/// Magic of a trailer with an echo ("klt1").
const MAGIC_ECHO: u32 = 0x6b6c_7431;
/// Most peers tracked that never connected; datagrams from further ones are only counted.
const MAX_UNCONNECTED_PEERS: usize = 4096;
/// Most peers kept whose connection ended (see [`Stamps::closed`]); the oldest beyond are
/// forgotten, so that a server's state does not grow with every client it ever had.
const MAX_CLOSED_PEERS: usize = 4096;
/// Added to every relative one-way delay so that it stays positive.
const ONE_WAY_BASE: Duration = Duration::from_secs(10);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What one endpoint counted of datagrams and timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StampStats {
    /// Datagrams received.
    pub datagrams_in: u64,
    /// Of those, datagrams from addresses that never had a connection here (see
    /// [`Stamps::mark_connected`]): strays, which QUIC dropped.
    pub stray_datagrams: u64,
    /// Datagrams received with a trailer.
    pub stamped_in: u64,
    /// Datagrams sent with a trailer.
    pub stamped_out: u64,
    /// One-way-delay samples given to the feed.
    pub samples: u64,
}

/// One peer's timestamp state.
#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    /// Trailers from this peer are expected: they are stripped and their echoes sampled.
    accepting: bool,
    /// This end adds trailers to datagrams to the peer.
    stamping: bool,
    /// The newest (peer send time, local receive time) not yet echoed.
    echo: Option<(u32, u32)>,
    /// The peer's first measured one-way delay, the reference of later ones.
    first_one_way: Option<u32>,
    /// A connection with this peer was established.
    connected: bool,
    /// A connection with this peer was stamped (kept across [`Stamps::reset`]).
    stamped_connection: bool,
    /// A connection with this peer is open (from [`Stamps::mark_connected`] to
    /// [`Stamps::closed`]).
    open: bool,
    datagrams: u64,
    /// Bytes received from and sent to the peer before its connection was established: the
    /// anti-amplification budget (RFC 9000 §8.1) that trailers must stay within.
    bytes_in: u64,
    bytes_out: u64,
}

impl Peer {
    /// Whether `bytes` more (trailers included) may go to the peer: always once a connection
    /// is established (its address is validated), else within three times what it sent.
    fn may_send(&self, bytes: u64) -> bool {
        self.connected || self.bytes_out + bytes <= 3 * self.bytes_in
    }
}

#[derive(Debug, Default)]
struct Peers {
    map: HashMap<SocketAddr, Peer>,
    /// Entries of peers that never had a connection (bounded by [`MAX_UNCONNECTED_PEERS`]).
    unconnected: usize,
    /// Datagrams from unconnected peers beyond that bound.
    untracked: u64,
    /// Peers whose connection ended, oldest first (bounded by [`MAX_CLOSED_PEERS`]).
    closed: VecDeque<SocketAddr>,
    /// Stamped connections of the peers forgotten since.
    forgotten_stamped: u64,
    stats: StampStats,
}

impl Peers {
    /// The state of `addr`, created unless too many unconnected peers are tracked already.
    fn get(&mut self, addr: SocketAddr) -> Option<&mut Peer> {
        if !self.map.contains_key(&addr) {
            if self.unconnected >= MAX_UNCONNECTED_PEERS {
                return None;
            }
            self.unconnected += 1;
        }
        Some(self.map.entry(addr).or_default())
    }

    /// The state of `addr`, created whatever the bound (a peer with a handshake under way).
    fn entry(&mut self, addr: SocketAddr) -> &mut Peer {
        if !self.map.contains_key(&addr) {
            self.unconnected += 1;
        }
        self.map.entry(addr).or_default()
    }
}

/// A trailer as read or to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Trailer {
    sent_us: u32,
    echo: Option<(u32, u32)>,
}

impl Trailer {
    fn encode(&self) -> [u8; TRAILER_LEN] {
        let (echo_sent, echo_received) = self.echo.unwrap_or((0, 0));
        let magic = if self.echo.is_some() {
            MAGIC_ECHO
        } else {
            MAGIC_PLAIN
        };
        let mut out = [0u8; TRAILER_LEN];
        for (i, word) in [self.sent_us, echo_sent, echo_received, magic]
            .into_iter()
            .enumerate()
        {
            out[4 * i..4 * i + 4].copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// The trailer at the end of `datagram`, if its magic matches and a packet precedes it.
    fn decode(datagram: &[u8]) -> Option<Trailer> {
        let start = datagram.len().checked_sub(TRAILER_LEN).filter(|&s| s > 0)?;
        let word = |i: usize| {
            let at = start + 4 * i;
            u32::from_be_bytes([
                datagram[at],
                datagram[at + 1],
                datagram[at + 2],
                datagram[at + 3],
            ])
        };
        let echo = match word(3) {
            MAGIC_PLAIN => None,
            MAGIC_ECHO => Some((word(1), word(2))),
            _ => return None,
        };
        Some(Trailer {
            sent_us: word(0),
            echo,
        })
    }
}

/// One endpoint's timestamp state: its peers, its counters and where samples go.
#[derive(Debug)]
pub struct Stamps {
    epoch: Instant,
    peers: Mutex<Peers>,
    feed: Option<OwdFeed>,
}

impl Stamps {
    /// State for one endpoint; one-way-delay samples go to `feed` (an endpoint that only
    /// receives data needs none: it echoes).
    pub fn new(feed: Option<OwdFeed>) -> Arc<Self> {
        Arc::new(Stamps {
            epoch: Instant::now(),
            peers: Mutex::new(Peers::default()),
            feed,
        })
    }

    fn micros(&self, t: Instant) -> u32 {
        // Wrapping on purpose: only differences of recent times are used.
        t.saturating_duration_since(self.epoch).as_micros() as u32
    }

    /// Trailers from `peer` are expected from now on (a client that offered `kleinrock-ts`
    /// to it, or a server that selected it): they are stripped and sampled.
    pub fn accept(&self, peer: SocketAddr) {
        lock(&self.peers).entry(peer).accepting = true;
    }

    /// Both ends agreed and the handshake is complete: datagrams to `peer` carry trailers.
    pub fn stamp(&self, peer: SocketAddr) {
        let mut peers = lock(&self.peers);
        let p = peers.entry(peer);
        p.accepting = true;
        p.stamping = true;
        p.stamped_connection = true;
    }

    /// A connection with `peer` was established: its datagrams are not strays.
    pub fn mark_connected(&self, peer: SocketAddr) {
        let mut peers = lock(&self.peers);
        let p = peers.entry(peer);
        let was_unconnected = !p.connected;
        p.connected = true;
        p.open = true;
        peers.unconnected -= usize::from(was_unconnected);
    }

    /// The connection with `peer` ended: its timestamp state is forgotten ([`Stamps::reset`]),
    /// and once [`MAX_CLOSED_PEERS`] later connections have ended, the rest of it too (its
    /// datagrams from then on count as strays).
    pub fn closed(&self, peer: SocketAddr) {
        self.reset(peer);
        let mut peers = lock(&self.peers);
        let Some(p) = peers.map.get_mut(&peer) else {
            return;
        };
        p.open = false;
        peers.closed.push_back(peer);
        while peers.closed.len() > MAX_CLOSED_PEERS {
            let Some(old) = peers.closed.pop_front() else {
                break;
            };
            // Forgotten unless a connection from that address is open again.
            if peers.map.get(&old).is_some_and(|p| !p.open) {
                if let Some(p) = peers.map.remove(&old) {
                    peers.forgotten_stamped += u64::from(p.stamped_connection);
                }
            }
        }
    }

    /// Forgets the timestamp state of `peer` (a new handshake from its address, or the end of
    /// its connection); its datagram and byte counts stay.
    pub fn reset(&self, peer: SocketAddr) {
        if let Some(p) = lock(&self.peers).map.get_mut(&peer) {
            *p = Peer {
                connected: p.connected,
                open: p.open,
                datagrams: p.datagrams,
                stamped_connection: p.stamped_connection,
                bytes_in: p.bytes_in,
                bytes_out: p.bytes_out,
                ..Peer::default()
            };
        }
    }

    /// Peers with which a connection was stamped.
    pub fn stamped_peers(&self) -> u64 {
        let peers = lock(&self.peers);
        peers.map.values().filter(|p| p.stamped_connection).count() as u64 + peers.forgotten_stamped
    }

    /// Whether this end adds trailers to datagrams to `peer`.
    pub fn stamping(&self, peer: SocketAddr) -> bool {
        lock(&self.peers).map.get(&peer).is_some_and(|p| p.stamping)
    }

    /// The counters so far.
    pub fn stats(&self) -> StampStats {
        let peers = lock(&self.peers);
        let strays: u64 = peers
            .map
            .values()
            .filter(|p| !p.connected)
            .map(|p| p.datagrams)
            .sum();
        StampStats {
            stray_datagrams: strays + peers.untracked,
            ..peers.stats
        }
    }

    /// The trailer for the next `count` datagrams of `bytes` bytes to `peer`, if this end
    /// stamps to it and the trailers fit the peer's anti-amplification budget.
    fn trailer(&self, peer: SocketAddr, now: Instant, bytes: u64, count: u64) -> Option<Trailer> {
        let peers = lock(&self.peers);
        let p = peers.map.get(&peer).filter(|p| p.stamping)?;
        p.may_send(bytes + count * TRAILER_LEN as u64)
            .then(|| Trailer {
                sent_us: self.micros(now),
                echo: p.echo,
            })
    }

    /// `bytes` went to `peer`, stamped with `trailer` in `count` datagrams if given (its echo
    /// is then spent).
    fn sent(&self, peer: SocketAddr, bytes: u64, stamped: Option<(Trailer, u64)>) {
        let mut peers = lock(&self.peers);
        if let Some((_, count)) = stamped {
            peers.stats.stamped_out += count;
        }
        let Some(p) = peers.map.get_mut(&peer) else {
            return;
        };
        if !p.connected {
            p.bytes_out += bytes;
        }
        if let Some((trailer, _)) = stamped {
            if p.echo == trailer.echo {
                p.echo = None;
            }
        }
    }

    /// Takes the trailer off a datagram from `from` received at `now`, notes its send time for
    /// the echo and turns an echo into a sample; returns the length of what QUIC gets.
    fn received(&self, from: SocketAddr, datagram: &[u8], now: Instant) -> usize {
        let now_us = self.micros(now);
        let mut peers = lock(&self.peers);
        peers.stats.datagrams_in += 1;
        let Some(p) = peers.get(from) else {
            peers.untracked += 1;
            return datagram.len();
        };
        p.datagrams += 1;
        if !p.connected {
            p.bytes_in += datagram.len() as u64;
        }
        let trailer = Trailer::decode(datagram).filter(|_| p.accepting);
        let Some(trailer) = trailer else {
            return datagram.len();
        };
        p.echo = Some((trailer.sent_us, now_us));
        if let Some((echo_sent, echo_received)) = trailer.echo {
            let one_way = echo_received.wrapping_sub(echo_sent);
            let first = *p.first_one_way.get_or_insert(one_way);
            // Relative to the first delay, signed: the offset of the two clocks cancels.
            let relative_us = i64::from(one_way.wrapping_sub(first) as i32);
            let age = Duration::from_micros(u64::from(now_us.wrapping_sub(echo_sent)));
            // The peer held our datagram from its receipt until it sent this one (its clock).
            let hold =
                Duration::from_micros(u64::from(trailer.sent_us.wrapping_sub(echo_received)));
            if let (Some(feed), Some(sent)) = (&self.feed, now.checked_sub(age)) {
                let base = ONE_WAY_BASE.as_micros() as i64;
                feed.push(EchoReport {
                    sent,
                    one_way: Duration::from_micros((base + relative_us).max(0) as u64),
                    hold: hold.min(age),
                });
                peers.stats.samples += 1;
            }
        }
        peers.stats.stamped_in += 1;
        datagram.len() - TRAILER_LEN
    }
}

/// noq's socket around a UDP socket, adding and removing timestamp trailers (see the module
/// documentation). Receive offload (GRO) is turned off so that each received buffer is one
/// datagram with its own trailer.
pub struct StampedSocket {
    inner: Box<dyn AsyncUdpSocket>,
    stamps: Arc<Stamps>,
}

impl fmt::Debug for StampedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StampedSocket").finish_non_exhaustive()
    }
}

impl StampedSocket {
    /// Wraps `socket` (non-blocking) for noq on the tokio runtime; call inside the runtime.
    pub fn new(socket: std::net::UdpSocket, stamps: Arc<Stamps>) -> io::Result<Self> {
        let fd = socket.as_raw_fd();
        let inner = TokioRuntime.wrap_udp_socket(socket)?;
        disable_receive_offload(fd)?;
        Ok(StampedSocket { inner, stamps })
    }
}

/// Turns UDP GRO off (noq's socket state turns it on where the kernel has it).
#[cfg(not(target_os = "linux"))]
fn disable_receive_offload(_fd: std::os::fd::RawFd) -> io::Result<()> {
    // Only Linux has UDP GRO.
    Ok(())
}

/// Turns UDP GRO off (noq's socket state turns it on where the kernel has it).
#[cfg(target_os = "linux")]
fn disable_receive_offload(fd: std::os::fd::RawFd) -> io::Result<()> {
    let off: libc::c_int = 0;
    // SAFETY: `fd` is an open UDP socket owned by the wrapper; the option value is a c_int
    // that lives across the call, with its size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let err = io::Error::last_os_error();
    match rc {
        0 => Ok(()),
        // A kernel without UDP GRO never coalesces.
        _ if err.raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(()),
        _ => Err(err),
    }
}

impl AsyncUdpSocket for StampedSocket {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        Box::pin(StampedSender {
            inner: self.inner.create_sender(),
            stamps: self.stamps.clone(),
            buf: Vec::new(),
        })
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = match self.inner.poll_recv(cx, bufs, meta) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        let now = Instant::now();
        for (buf, m) in bufs.iter().zip(meta.iter_mut()).take(n) {
            if m.stride < m.len {
                // A coalesced buffer (offload could not be turned off): left to QUIC whole.
                continue;
            }
            m.len = self.stamps.received(m.addr, &buf[..m.len], now);
            m.stride = m.len;
        }
        Poll::Ready(Ok(n))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_receive_segments(&self) -> NonZeroUsize {
        NonZeroUsize::MIN
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// The sender of a [`StampedSocket`]: copies each datagram of a transmit with its trailer.
struct StampedSender {
    inner: Pin<Box<dyn UdpSender>>,
    stamps: Arc<Stamps>,
    buf: Vec<u8>,
}

impl fmt::Debug for StampedSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StampedSender").finish_non_exhaustive()
    }
}

impl UdpSender for StampedSender {
    fn poll_send(
        self: Pin<&mut Self>,
        transmit: &Transmit<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let to = transmit.destination;
        let segment = transmit
            .segment_size
            .unwrap_or(transmit.contents.len())
            .max(1);
        let datagrams = transmit.contents.len().div_ceil(segment).max(1) as u64;
        let bytes = transmit.contents.len() as u64;
        let Some(trailer) = this.stamps.trailer(to, Instant::now(), bytes, datagrams) else {
            let result = this.inner.as_mut().poll_send(transmit, cx);
            if matches!(result, Poll::Ready(Ok(()))) {
                this.stamps.sent(to, bytes, None);
            }
            return result;
        };
        let encoded = trailer.encode();
        let plain = Trailer {
            echo: None,
            ..trailer
        }
        .encode();
        this.buf.clear();
        let mut count = 0u64;
        for (i, datagram) in transmit.contents.chunks(segment).enumerate() {
            this.buf.extend_from_slice(datagram);
            // The echo rides on the first datagram only.
            this.buf
                .extend_from_slice(if i == 0 { &encoded } else { &plain });
            count += 1;
        }
        let stamped = Transmit {
            destination: transmit.destination,
            ecn: transmit.ecn,
            contents: &this.buf,
            segment_size: transmit.segment_size.map(|s| s + TRAILER_LEN),
            src_ip: transmit.src_ip,
        };
        let result = this.inner.as_mut().poll_send(&stamped, cx);
        if matches!(result, Poll::Ready(Ok(()))) {
            this.stamps
                .sent(to, this.buf.len() as u64, Some((trailer, count)));
        }
        result
    }

    fn max_transmit_segments(&self) -> NonZeroUsize {
        self.inner.max_transmit_segments()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn trailer_round_trips_with_and_without_echo() {
        for t in [
            Trailer {
                sent_us: 7,
                echo: None,
            },
            Trailer {
                sent_us: u32::MAX,
                echo: Some((1, 0xdead_beef)),
            },
        ] {
            let mut datagram = vec![0x40u8; 30];
            datagram.extend_from_slice(&t.encode());
            assert_eq!(Trailer::decode(&datagram), Some(t));
        }
        // No magic, or nothing before the trailer: not a trailer.
        assert_eq!(Trailer::decode(&[0u8; 40]), None);
        let alone = Trailer {
            sent_us: 1,
            echo: None,
        }
        .encode();
        assert_eq!(Trailer::decode(&alone), None);
    }

    /// A datagram of 20 QUIC bytes with `trailer`.
    fn stamped(trailer: Trailer) -> Vec<u8> {
        let mut d = vec![0x40u8; 20];
        d.extend_from_slice(&trailer.encode());
        d
    }

    #[test]
    fn stamps_only_once_agreed_and_echoes_once() {
        let server = Stamps::new(None);
        let client = addr(1000);
        let t0 = server.epoch + Duration::from_millis(5);
        let d = stamped(Trailer {
            sent_us: 111,
            echo: None,
        });
        // Before the ALPN is known a trailer is not taken for one: QUIC gets the datagram whole.
        assert_eq!(server.received(client, &d, t0), d.len());
        server.accept(client);
        assert_eq!(server.received(client, &d, t0), 20);
        assert!(!server.stamping(client), "not before the ALPN is known");
        server.stamp(client);
        assert!(server.stamping(client));
        server.mark_connected(client);
        let t = server.trailer(client, t0, 100, 1).expect("stamping");
        assert_eq!(t.echo, Some((111, 5000)));
        server.sent(client, 116, Some((t, 1)));
        assert_eq!(
            server.trailer(client, t0, 100, 1).and_then(|t| t.echo),
            None
        );
    }

    #[test]
    fn before_the_handshake_trailers_stay_within_three_times_what_the_client_sent() {
        // RFC 9000 §8.1: before its address is validated, at most 3x the bytes received.
        let server = Stamps::new(None);
        let client = addr(1002);
        server.received(client, &[0xc0u8; 1200], server.epoch);
        server.stamp(client);
        // 3,568 bytes already sent: one more trailer fits (3,584 <= 3,600), two do not.
        server.sent(client, 3_568, None);
        assert!(server.trailer(client, server.epoch, 0, 1).is_some());
        assert!(server.trailer(client, server.epoch, 32, 1).is_none());
        // Once the connection is established the budget no longer applies.
        server.mark_connected(client);
        assert!(server.trailer(client, server.epoch, 1_000_000, 1).is_some());
    }

    #[test]
    fn a_reset_peer_is_neither_stamped_nor_stripped() {
        // A new client on the address of an earlier stamped one (port reuse) starts clean.
        let feed = OwdFeed::default();
        let server = Stamps::new(Some(feed.clone()));
        let client = addr(1001);
        server.stamp(client);
        server.mark_connected(client);
        server.reset(client);
        assert!(!server.stamping(client));
        let d = stamped(Trailer {
            sent_us: 5,
            echo: Some((1, 2)),
        });
        assert_eq!(server.received(client, &d, server.epoch), d.len());
        assert!(feed.drain().is_empty());
        assert_eq!(
            server.stats().stray_datagrams,
            0,
            "still a connected address"
        );
        assert_eq!(server.stamped_peers(), 1);
    }

    /// The reports in `feed`, newest last.
    fn reports(feed: &OwdFeed) -> Vec<EchoReport> {
        feed.drain()
    }

    #[test]
    fn echoes_become_relative_one_way_delays_on_the_sender_clock() {
        let feed = OwdFeed::default();
        let sender = Stamps::new(Some(feed.clone()));
        let peer = addr(2000);
        sender.accept(peer);
        let at = |ms: u64| sender.epoch + Duration::from_millis(ms);
        // Sent at 10 ms, received at 1,000,000 us on the peer's clock, echoed 2 ms later;
        // the echo arrives at 60 ms.
        let first = stamped(Trailer {
            sent_us: 1_002_000,
            echo: Some((10_000, 1_000_000)),
        });
        sender.received(peer, &first, at(60));
        // 7 ms more queuing for a packet sent at 20 ms, echoed at once.
        let second = stamped(Trailer {
            sent_us: 1_017_000,
            echo: Some((20_000, 1_017_000)),
        });
        sender.received(peer, &second, at(70));
        let r = reports(&feed);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].sent, r[0].one_way), (at(10), ONE_WAY_BASE));
        assert_eq!(r[0].hold, Duration::from_millis(2));
        assert_eq!(r[1].sent, at(20));
        assert_eq!(r[1].one_way, ONE_WAY_BASE + Duration::from_millis(7));
        assert_eq!(r[1].hold, Duration::ZERO);
        assert_eq!(sender.stats().samples, 2);
    }

    #[test]
    fn delays_are_right_across_the_wrap_of_both_clocks() {
        // Microsecond stamps wrap every 2^32 us (71 minutes); differences stay right, and a
        // delay below the first one is negative relative to it.
        let feed = OwdFeed::default();
        let sender = Stamps::new(Some(feed.clone()));
        let peer = addr(3000);
        sender.accept(peer);
        let now = sender.epoch + Duration::from_micros(u64::from(u32::MAX) + 50_000);
        let sent_us = sender.micros(now).wrapping_sub(100_000); // 100 ms before, before the wrap
        assert!(sent_us > u32::MAX - 100_000);
        let received_us = 20_000u32; // after the peer's own wrap
        let d = stamped(Trailer {
            sent_us: received_us.wrapping_add(1_000),
            echo: Some((sent_us, received_us)),
        });
        sender.received(peer, &d, now);
        let d = stamped(Trailer {
            sent_us: received_us.wrapping_add(2_000),
            echo: Some((sent_us.wrapping_add(1_000), received_us.wrapping_add(500))),
        });
        sender.received(peer, &d, now);
        let r = reports(&feed);
        assert_eq!(now - r[0].sent, Duration::from_millis(100));
        assert_eq!(r[0].hold, Duration::from_millis(1));
        // The second packet took 0.5 ms less than the first.
        assert_eq!(r[1].one_way, ONE_WAY_BASE - Duration::from_micros(500));
    }

    #[test]
    fn peers_whose_connection_ended_are_forgotten_beyond_a_bound() {
        let s = Stamps::new(None);
        let quic = [0x40u8; 50];
        let n = MAX_CLOSED_PEERS as u16 + 10;
        for port in 1..=n {
            s.stamp(addr(port));
            s.mark_connected(addr(port));
            s.received(addr(port), &quic, s.epoch);
            s.closed(addr(port));
        }
        // Port 11, the oldest kept, connects again before it would be forgotten: it is kept.
        s.mark_connected(addr(11));
        s.closed(addr(n));
        assert!(lock(&s.peers).map.len() <= MAX_CLOSED_PEERS + 1);
        assert_eq!(
            s.stamped_peers(),
            u64::from(n),
            "forgotten peers still count"
        );
        assert_eq!(s.stats().stray_datagrams, 0);
        // A forgotten peer's later datagrams are strays; a kept one's are not.
        s.received(addr(1), &quic, s.epoch);
        s.received(addr(11), &quic, s.epoch);
        s.received(addr(n), &quic, s.epoch);
        assert_eq!(s.stats().stray_datagrams, 1);
    }

    #[test]
    fn datagrams_from_peers_without_a_connection_are_strays() {
        let s = Stamps::new(None);
        s.mark_connected(addr(1));
        let quic = [0x40u8; 50];
        for _ in 0..3 {
            s.received(addr(1), &quic, s.epoch);
        }
        for port in 2..7 {
            s.received(addr(port), &quic, s.epoch);
        }
        let stats = s.stats();
        assert_eq!(stats.datagrams_in, 8);
        assert_eq!(stats.stray_datagrams, 5);
        assert_eq!(stats.stamped_in, 0);
    }
}
