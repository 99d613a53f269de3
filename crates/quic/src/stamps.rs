//! Datagram timestamps between two kleinrock endpoints: the one-way delay QUIC-DC needs
//! (QUIC-DC paper §III, eq. (3)-(5)), which standard QUIC does not carry.
//!
//! This module owns the timestamp trailer, [`Stamps`] (what one endpoint knows of its peers'
//! timestamps, and the server's anti-amplification limit) and [`StampedSocket`], noq's
//! `AsyncUdpSocket` around a UDP socket that adds and removes the trailer. docs/quic.md
//! describes the exchange.
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
//! handshake-time packets carry their send times too. The client stamps from the end of its
//! handshake. Only a peer that accepts trailers has them stripped and turned into samples: a
//! datagram from anyone else reaches QUIC whole, whatever it ends with. A peer that is not
//! kleinrock never offers or selects `kleinrock-ts`, so it is never stamped.
//!
//! **One connection, one state.** Everything the timestamps involve is kept per connection:
//! what this end stamped and the peer has not echoed yet, the echo owed to the peer, the
//! reference and the newest receive time of the peer's echoes, and the [`OwdFeed`] of that
//! connection's controller ([`Stamps::begin`] attaches it). A connection is known by its peer's
//! address: a server serves one connection per address at a time ([`Stamps::begin`] refuses a
//! second) and does not let clients migrate, so an echo that arrives from an address is applied
//! to the connection with that address only, and only if that connection stamped the datagram
//! echoed. A connection that did not agree to `kleinrock-ts` has no trailers accepted, so its
//! controller never gets a one-way-delay sample. The state lives as long as the connection:
//! [`Stamps::closed`] clears it, so a later client on a reused port starts unstamped.
//!
//! **Echoes that cannot be true.** A peer controls its own receive times, so it can mislead its
//! own connection's controller, and no other. An echo is refused, and counted in the
//! connection's feed ([`OwdFeed::reject`]) and in [`StampStats`], when it names a send time
//! this connection never stamped or already had echoed as often as it stamped it
//! ([`Rejection::UnknownEcho`]), or when its receive time is more than [`BACKWARDS_TOLERANCE`]
//! before the newest one accepted ([`Rejection::Backwards`]); the adapter refuses the rest of
//! what cannot be true, a queuing delay above the connection's RTT ([`Rejection::Queuing`]).
//! docs/quic.md says what a lying receiver can still gain.
//!
//! **Anti-amplification.** A server sends an address it has not validated (a handshake not yet
//! complete, without a Retry token) at most three times the bytes it received from it
//! (RFC 9000 §8.1), trailers included: a datagram beyond that budget is not sent (noq counts it
//! as sent, as if lost) and is counted ([`StampStats::amplification_dropped`]). noq's own check
//! lets a whole datagram through while a single byte of the budget is left, which exceeded the
//! limit by up to one datagram (docs/quic.md).
//!
//! **Samples.** The endpoint that receives an echo of its own send time `s`, with the peer's
//! receive time `r`, gives the connection's [`OwdFeed`] the send time (rebuilt on its own clock)
//! and the one-way delay `r - s` relative to the first such delay of that connection, plus 10 s
//! so it stays positive: the clocks' offset is unknown and cancels in QUIC-DC's differences
//! (eq. (4)).

use crate::adapter::{EchoReport, OwdFeed, Rejection};
use crate::lock;
use noq::udp::{RecvMeta, Transmit};
use noq::{AsyncUdpSocket, Runtime, TokioRuntime, UdpSender};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Bytes a stamped datagram carries after its QUIC packets.
pub const TRAILER_LEN: usize = 16;
/// The ALPN protocol by which two kleinrock endpoints agree to stamp.
pub const ALPN_STAMPED: &[u8] = b"kleinrock-ts";
/// How far an echoed receive time may lie before the newest one accepted from the same
/// connection: an echo further back is refused ([`Rejection::Backwards`]). An honest peer's
/// receive times never go back (its monotonic clock, read when each batch of datagrams
/// arrives); the tolerance only keeps the rule from being stricter than it needs to be.
pub const BACKWARDS_TOLERANCE: Duration = Duration::from_millis(1);
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
/// Most distinct send times a connection keeps of datagrams it stamped and the peer has not
/// echoed yet (32 KiB); beyond, the oldest is forgotten and its echo refused. An echo comes
/// about one round trip after its datagram, and every datagram sent before the one echoed is
/// forgotten then, so a connection keeps about one round trip of send times (a GSO batch shares
/// one).
const MAX_OUTSTANDING: usize = 4096;
/// Send times older than this are forgotten whatever their number (µs).
const OUTSTANDING_AGE_US: u32 = 60_000_000;
/// The smallest datagram that carries a client's first Initial: a server drops a smaller one
/// (RFC 9000 §14.1), so a handshake's budget is at least three times this.
const MIN_INITIAL_DATAGRAM: u64 = 1200;

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
    /// One-way-delay samples given to the connections' feeds.
    pub samples: u64,
    /// Echoes refused because they named a send time their connection never stamped, or one
    /// already echoed ([`Rejection::UnknownEcho`]).
    pub rejected_unknown_echo: u64,
    /// Echoes refused because their receive time ran backwards ([`Rejection::Backwards`]).
    pub rejected_backwards: u64,
    /// Datagrams not sent because they would have taken a server beyond three times what an
    /// address it has not validated sent it (RFC 9000 §8.1).
    pub amplification_dropped: u64,
}

/// One peer's state: its connection's timestamps, and what the server counts of its address.
#[derive(Debug, Default)]
struct Peer {
    /// Trailers from this peer are expected: they are stripped and their echoes sampled.
    accepting: bool,
    /// This end adds trailers to datagrams to the peer.
    stamping: bool,
    /// The newest (peer send time, local receive time) not yet echoed.
    echo: Option<(u32, u32)>,
    /// Send times of datagrams stamped to the peer and not yet echoed, oldest first, with the
    /// number of datagrams that carried each (at most [`MAX_OUTSTANDING`]).
    outstanding: VecDeque<(u32, u32)>,
    /// The receive time of the newest accepted echo (peer clock).
    last_received: Option<u32>,
    /// The connection's first measured one-way delay, the reference of later ones.
    first_one_way: Option<u32>,
    /// Where the connection's samples and refusals go.
    feed: Option<OwdFeed>,
    /// A connection with this peer was established (ever: its datagrams are not strays).
    connected: bool,
    /// A connection with this peer was stamped (kept across connections).
    stamped_connection: bool,
    /// A handshake or connection with this address is under way (from [`Stamps::begin`] to
    /// [`Stamps::closed`]).
    live: bool,
    /// The connection's address is validated (its handshake completed, or came with a Retry
    /// token).
    validated: bool,
    /// A handshake with this address began and the address has not been validated since: a
    /// server sends it at most three times what it received, also once the handshake failed
    /// (noq may still send its close).
    limited: bool,
    datagrams: u64,
    /// Bytes received from and sent to the address while it was not validated: the
    /// anti-amplification budget (RFC 9000 §8.1), trailers included.
    bytes_in: u64,
    bytes_out: u64,
}

impl Peer {
    /// The bytes that may still go to the peer: `None` (no limit) unless `limit` and the
    /// address is limited; then three times what it sent, less what it got.
    fn budget(&self, limit: bool) -> Option<u64> {
        (limit && self.limited).then(|| (3 * self.bytes_in).saturating_sub(self.bytes_out))
    }

    /// The address is validated: no limit, nothing more to count.
    fn validate(&mut self) {
        self.validated = true;
        self.limited = false;
        self.bytes_in = 0;
        self.bytes_out = 0;
    }

    /// Forgets the connection's timestamps.
    fn clear_timestamps(&mut self) {
        self.accepting = false;
        self.stamping = false;
        self.echo = None;
        self.outstanding = VecDeque::new();
        self.last_received = None;
        self.first_one_way = None;
        self.feed = None;
    }

    /// `count` datagrams stamped with send time `sent_us` went to the peer.
    fn record_stamped(&mut self, sent_us: u32, count: u64) {
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        while self
            .outstanding
            .front()
            .is_some_and(|&(t, _)| sent_us.wrapping_sub(t) > OUTSTANDING_AGE_US)
        {
            self.outstanding.pop_front();
        }
        match self.outstanding.back_mut() {
            Some((t, n)) if *t == sent_us => *n = n.saturating_add(count),
            _ => {
                if self.outstanding.len() >= MAX_OUTSTANDING {
                    self.outstanding.pop_front();
                }
                self.outstanding.push_back((sent_us, count));
            }
        }
    }

    /// Whether a datagram stamped `sent_us` went to the peer and was not echoed yet; if so,
    /// one echo of it is spent and every earlier send time forgotten (the peer echoes the
    /// newest datagram it received, so their echoes are not coming).
    fn take_outstanding(&mut self, sent_us: u32) -> bool {
        let Some(&(front, _)) = self.outstanding.front() else {
            return false;
        };
        // Send times are in sending order and span less than OUTSTANDING_AGE_US: their
        // distances from the oldest grow.
        let after_front = |t: u32| t.wrapping_sub(front);
        let at = self
            .outstanding
            .partition_point(|&(t, _)| after_front(t) < after_front(sent_us));
        if self.outstanding.get(at).is_none_or(|&(t, _)| t != sent_us) {
            return false;
        }
        self.outstanding.drain(..at);
        if let Some((_, n)) = self.outstanding.front_mut() {
            *n -= 1;
            if *n == 0 {
                self.outstanding.pop_front();
            }
        }
        true
    }

    /// Whether an echo of `sent_us` received at `received_us` (peer clock) can be true; if
    /// so, it is taken (see [`Peer::take_outstanding`]).
    fn judge(&mut self, sent_us: u32, received_us: u32) -> Result<(), Rejection> {
        if !self.take_outstanding(sent_us) {
            return Err(Rejection::UnknownEcho);
        }
        if let Some(last) = self.last_received {
            let step = i64::from(received_us.wrapping_sub(last) as i32);
            if step < -(BACKWARDS_TOLERANCE.as_micros() as i64) {
                return Err(Rejection::Backwards);
            }
            if step <= 0 {
                return Ok(());
            }
        }
        self.last_received = Some(received_us);
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Peers {
    map: HashMap<SocketAddr, Peer>,
    /// Entries of peers that never had a connection (bounded by [`MAX_UNCONNECTED_PEERS`],
    /// but for those with a handshake under way).
    unconnected: usize,
    /// Datagrams from unconnected peers beyond that bound, or whose entry was dropped.
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

    /// Forgets the entry of `addr`, keeping its datagrams in the counts.
    fn forget(&mut self, addr: SocketAddr) {
        if let Some(p) = self.map.remove(&addr) {
            self.forgotten_stamped += u64::from(p.stamped_connection);
            if !p.connected {
                self.unconnected -= 1;
                self.untracked += p.datagrams;
            }
        }
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

/// What may go out of one transmit: how many of its datagrams, and with which trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    datagrams: usize,
    trailer: Option<Trailer>,
}

/// What an echo turned into.
enum Outcome {
    Sample,
    Refused(Rejection),
    Ignored,
}

/// One endpoint's timestamp state: its peers' connections and its counters.
#[derive(Debug)]
pub struct Stamps {
    epoch: Instant,
    peers: Mutex<Peers>,
    /// A server's: addresses it has not validated get at most three times what they sent.
    limit_amplification: bool,
}

impl Stamps {
    /// State for a client endpoint.
    pub fn client() -> Arc<Self> {
        Self::new(false)
    }

    /// State for a server endpoint, which keeps to the anti-amplification limit.
    pub fn server() -> Arc<Self> {
        Self::new(true)
    }

    fn new(limit_amplification: bool) -> Arc<Self> {
        Arc::new(Stamps {
            epoch: Instant::now(),
            peers: Mutex::new(Peers::default()),
            limit_amplification,
        })
    }

    fn micros(&self, t: Instant) -> u32 {
        // Wrapping on purpose: only differences of recent times are used.
        t.saturating_duration_since(self.epoch).as_micros() as u32
    }

    /// A handshake with `peer` begins; the samples of its connection go to `feed` (an endpoint
    /// that only receives data needs none: it echoes). Returns false, changing nothing, if a
    /// handshake or connection with that address is already under way: one connection per
    /// address. Its first Initial counts at least 1200 bytes in its anti-amplification budget.
    pub fn begin(&self, peer: SocketAddr, feed: Option<OwdFeed>) -> bool {
        let mut peers = lock(&self.peers);
        let p = peers.entry(peer);
        if p.live {
            return false;
        }
        p.clear_timestamps();
        p.feed = feed;
        p.live = true;
        p.validated = false;
        p.limited = true;
        p.bytes_in = p.bytes_in.max(MIN_INITIAL_DATAGRAM);
        true
    }

    /// The address of `peer` is validated (its Initial carried a Retry token): no
    /// anti-amplification limit for it.
    pub fn validated(&self, peer: SocketAddr) {
        if let Some(p) = lock(&self.peers).map.get_mut(&peer) {
            p.validate();
        }
    }

    /// Trailers from `peer` are expected from now on (a client that offered `kleinrock-ts`
    /// to it, or a server that selected it): they are stripped and sampled.
    pub fn accept(&self, peer: SocketAddr) {
        lock(&self.peers).entry(peer).accepting = true;
    }

    /// Both ends agreed: datagrams to `peer` carry trailers.
    pub fn stamp(&self, peer: SocketAddr) {
        let mut peers = lock(&self.peers);
        let p = peers.entry(peer);
        p.accepting = true;
        p.stamping = true;
        p.stamped_connection = true;
    }

    /// The peer did not agree to timestamps: its trailers are not expected (a client that
    /// offered them to a server that chose otherwise).
    pub fn unstamped(&self, peer: SocketAddr) {
        if let Some(p) = lock(&self.peers).map.get_mut(&peer) {
            let feed = p.feed.take();
            p.clear_timestamps();
            p.feed = feed;
        }
    }

    /// A connection with `peer` was established: its address is validated and its datagrams
    /// are not strays.
    pub fn mark_connected(&self, peer: SocketAddr) {
        let mut peers = lock(&self.peers);
        let p = peers.entry(peer);
        let was_unconnected = !p.connected;
        p.connected = true;
        p.validate();
        peers.unconnected -= usize::from(was_unconnected);
    }

    /// The handshake or connection with `peer` ended: its timestamp state is forgotten, and
    /// once [`MAX_CLOSED_PEERS`] later connections have ended, the rest of it too (its
    /// datagrams from then on count as strays). An address whose handshake failed stays
    /// limited to three times what it sent; such addresses are forgotten once more than
    /// [`MAX_UNCONNECTED_PEERS`] are kept.
    pub fn closed(&self, peer: SocketAddr) {
        let mut peers = lock(&self.peers);
        let Some(p) = peers.map.get_mut(&peer) else {
            return;
        };
        p.clear_timestamps();
        p.live = false;
        p.validated = false;
        if !p.connected {
            if peers.unconnected > MAX_UNCONNECTED_PEERS {
                peers.forget(peer);
            }
            return;
        }
        peers.closed.push_back(peer);
        while peers.closed.len() > MAX_CLOSED_PEERS {
            let Some(old) = peers.closed.pop_front() else {
                break;
            };
            // Forgotten unless a connection from that address is under way again.
            if peers.map.get(&old).is_some_and(|p| !p.live) {
                peers.forget(old);
            }
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

    /// What may go to `peer` of a transmit of `len` bytes in datagrams of `segment` bytes (the
    /// last may be shorter): all of them unless the anti-amplification budget ends first, with
    /// a trailer if this end stamps to the peer and the trailers fit the budget too.
    fn plan(&self, peer: SocketAddr, now: Instant, segment: usize, len: usize) -> Plan {
        let count = len.div_ceil(segment).max(1);
        let peers = lock(&self.peers);
        let Some(p) = peers.map.get(&peer) else {
            return Plan {
                datagrams: count,
                trailer: None,
            };
        };
        let trailer = p.stamping.then(|| Trailer {
            sent_us: self.micros(now),
            echo: p.echo,
        });
        let Some(budget) = p.budget(self.limit_amplification) else {
            return Plan {
                datagrams: count,
                trailer,
            };
        };
        let stamped = (len + count * TRAILER_LEN) as u64;
        if trailer.is_some() && stamped <= budget {
            return Plan {
                datagrams: count,
                trailer,
            };
        }
        // Whole datagrams while they fit, without trailers.
        let fit = if len as u64 <= budget {
            count
        } else {
            usize::try_from(budget).unwrap_or(usize::MAX) / segment
        };
        Plan {
            datagrams: fit,
            trailer: None,
        }
    }

    /// `bytes` went to `peer`, stamped with `trailer` in `count` datagrams if given (its echo
    /// is then spent); `dropped` datagrams of the transmit were held back by the budget.
    fn sent(&self, peer: SocketAddr, bytes: u64, stamped: Option<(Trailer, u64)>, dropped: u64) {
        let mut peers = lock(&self.peers);
        peers.stats.amplification_dropped += dropped;
        if let Some((_, count)) = stamped {
            peers.stats.stamped_out += count;
        }
        let Some(p) = peers.map.get_mut(&peer) else {
            return;
        };
        if !p.validated {
            p.bytes_out += bytes;
        }
        if let Some((trailer, count)) = stamped {
            if p.echo == trailer.echo {
                p.echo = None;
            }
            p.record_stamped(trailer.sent_us, count);
        }
    }

    /// Takes the trailer off a datagram from `from` received at `now`, notes its send time for
    /// the echo and turns an echo that can be true into a sample for the connection's feed;
    /// returns the length of what QUIC gets.
    fn received(&self, from: SocketAddr, datagram: &[u8], now: Instant) -> usize {
        let now_us = self.micros(now);
        let mut peers = lock(&self.peers);
        peers.stats.datagrams_in += 1;
        let Some(p) = peers.get(from) else {
            peers.untracked += 1;
            return datagram.len();
        };
        p.datagrams += 1;
        if !p.validated {
            p.bytes_in += datagram.len() as u64;
        }
        let trailer = Trailer::decode(datagram).filter(|_| p.accepting);
        let Some(trailer) = trailer else {
            return datagram.len();
        };
        p.echo = Some((trailer.sent_us, now_us));
        let outcome = match trailer.echo {
            None => Outcome::Ignored,
            Some((echo_sent, echo_received)) => match p.judge(echo_sent, echo_received) {
                Err(why) => {
                    if let Some(feed) = &p.feed {
                        feed.reject(why);
                    }
                    Outcome::Refused(why)
                }
                Ok(()) => {
                    let one_way = echo_received.wrapping_sub(echo_sent);
                    let first = *p.first_one_way.get_or_insert(one_way);
                    // Relative to the first delay, signed: the offset of the two clocks
                    // cancels.
                    let relative_us = i64::from(one_way.wrapping_sub(first) as i32);
                    let age = Duration::from_micros(u64::from(now_us.wrapping_sub(echo_sent)));
                    // The peer held our datagram from its receipt until it sent this one (its
                    // clock).
                    let hold = Duration::from_micros(u64::from(
                        trailer.sent_us.wrapping_sub(echo_received),
                    ));
                    match (&p.feed, now.checked_sub(age)) {
                        (Some(feed), Some(sent)) => {
                            let base = ONE_WAY_BASE.as_micros() as i64;
                            feed.push(EchoReport {
                                sent,
                                one_way: Duration::from_micros((base + relative_us).max(0) as u64),
                                hold: hold.min(age),
                            });
                            Outcome::Sample
                        }
                        _ => Outcome::Ignored,
                    }
                }
            },
        };
        let stats = &mut peers.stats;
        stats.stamped_in += 1;
        match outcome {
            Outcome::Sample => stats.samples += 1,
            Outcome::Refused(Rejection::UnknownEcho) => stats.rejected_unknown_echo += 1,
            Outcome::Refused(Rejection::Backwards) => stats.rejected_backwards += 1,
            Outcome::Refused(Rejection::Queuing) | Outcome::Ignored => {}
        }
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
        let len = transmit.contents.len();
        let segment = transmit.segment_size.unwrap_or(len).max(1);
        let count = len.div_ceil(segment).max(1);
        let plan = this.stamps.plan(to, Instant::now(), segment, len);
        let dropped = (count - plan.datagrams) as u64;
        if plan.datagrams == 0 {
            // Beyond the anti-amplification budget: noq takes it as sent (and lost).
            this.stamps.sent(to, 0, None, dropped);
            return Poll::Ready(Ok(()));
        }
        // The datagrams that go: all, or the whole segments that fit.
        let kept = if dropped == 0 {
            len
        } else {
            plan.datagrams * segment
        };
        let segment_size = transmit.segment_size.filter(|_| plan.datagrams > 1);
        let Some(trailer) = plan.trailer else {
            let plain = Transmit {
                destination: to,
                ecn: transmit.ecn,
                contents: &transmit.contents[..kept],
                segment_size,
                src_ip: transmit.src_ip,
            };
            let result = this.inner.as_mut().poll_send(&plain, cx);
            if matches!(result, Poll::Ready(Ok(()))) {
                this.stamps.sent(to, kept as u64, None, dropped);
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
        let mut stamped_count = 0u64;
        for (i, datagram) in transmit.contents[..kept].chunks(segment).enumerate() {
            this.buf.extend_from_slice(datagram);
            // The echo rides on the first datagram only.
            this.buf
                .extend_from_slice(if i == 0 { &encoded } else { &plain });
            stamped_count += 1;
        }
        let stamped = Transmit {
            destination: to,
            ecn: transmit.ecn,
            contents: &this.buf,
            segment_size: segment_size.map(|s| s + TRAILER_LEN),
            src_ip: transmit.src_ip,
        };
        let result = this.inner.as_mut().poll_send(&stamped, cx);
        if matches!(result, Poll::Ready(Ok(()))) {
            this.stamps.sent(
                to,
                this.buf.len() as u64,
                Some((trailer, stamped_count)),
                dropped,
            );
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

    /// A datagram of 20 QUIC bytes whose trailer echoes `(sent, received)`.
    fn echo(sent_us: u32, echo: (u32, u32)) -> Vec<u8> {
        stamped(Trailer {
            sent_us,
            echo: Some(echo),
        })
    }

    /// `s` sent `count` datagrams stamped at `sent_us` to `peer`.
    fn stamped_to(s: &Stamps, peer: SocketAddr, sent_us: u32, count: u64) {
        let t = Trailer {
            sent_us,
            echo: None,
        };
        s.sent(peer, 100 * count, Some((t, count)), 0);
    }

    /// A server with a stamped, established connection from `peer` whose samples go to the
    /// feed returned.
    fn stamped_connection(peer: SocketAddr) -> (Arc<Stamps>, OwdFeed) {
        let feed = OwdFeed::default();
        let s = Stamps::server();
        assert!(s.begin(peer, Some(feed.clone())));
        s.stamp(peer);
        s.mark_connected(peer);
        (s, feed)
    }

    #[test]
    fn stamps_only_once_agreed_and_echoes_once() {
        let server = Stamps::server();
        let client = addr(1000);
        let t0 = server.epoch + Duration::from_millis(5);
        let d = stamped(Trailer {
            sent_us: 111,
            echo: None,
        });
        // Before the ALPN is known a trailer is not taken for one: QUIC gets the datagram whole.
        assert_eq!(server.received(client, &d, t0), d.len());
        assert!(server.begin(client, None));
        server.accept(client);
        assert_eq!(server.received(client, &d, t0), 20);
        assert!(!server.stamping(client), "not before the ALPN is known");
        server.stamp(client);
        assert!(server.stamping(client));
        server.mark_connected(client);
        let p = server.plan(client, t0, 100, 100);
        let t = p.trailer.expect("stamping");
        assert_eq!((p.datagrams, t.echo), (1, Some((111, 5000))));
        server.sent(client, 116, Some((t, 1)), 0);
        assert_eq!(
            server.plan(client, t0, 100, 100).trailer.unwrap().echo,
            None
        );
    }

    /// A server with a handshake under way with a client at `port` that sent one Initial.
    fn handshaking(port: u16) -> (Arc<Stamps>, SocketAddr, Instant) {
        let server = Stamps::server();
        let client = addr(port);
        let now = server.epoch;
        server.received(client, &[0xc0u8; 1200], now);
        assert!(server.begin(client, None));
        (server, client, now)
    }

    #[test]
    fn before_its_address_is_validated_a_client_gets_at_most_three_times_what_it_sent() {
        // RFC 9000 §8.1, trailers included.
        let (server, client, now) = handshaking(1002);
        server.stamp(client);
        server.sent(client, 2_400, None, 0);
        // 1,200 bytes left: one datagram of 1,184 with its trailer, one of 1,200 without, and
        // of two, only the first.
        let plan = |segment, len| server.plan(client, now, segment, len);
        assert_eq!(plan(1_184, 1_184).datagrams, 1);
        assert!(plan(1_184, 1_184).trailer.is_some());
        assert_eq!(plan(1_200, 1_200).datagrams, 1);
        assert!(
            plan(1_200, 1_200).trailer.is_none(),
            "the trailer does not fit"
        );
        assert_eq!(plan(1_200, 2_000).datagrams, 1);
        assert_eq!(plan(1_201, 1_201).datagrams, 0);
        server.sent(client, 1_000, None, 1);
        assert_eq!(plan(201, 201).datagrams, 0);
        assert_eq!(server.stats().amplification_dropped, 1);
        // The client sends more: more budget.
        server.received(client, &[0x40u8; 100], now);
        assert_eq!(plan(500, 500).datagrams, 1);
        // Once the handshake is complete the address is validated: no limit.
        server.mark_connected(client);
        assert_eq!(plan(1_200, 1_200_000).datagrams, 1_000);
        assert!(plan(1_200, 1_200_000).trailer.is_some());

        // An address validated by a Retry token has no limit from the start.
        let retried = addr(1003);
        assert!(server.begin(retried, None));
        server.validated(retried);
        assert_eq!(server.plan(retried, now, 1_200, 12_000).datagrams, 10);
        // Nor has a client's server, nor an address with no handshake (noq's stateless
        // answers: Retry, refusals).
        let client_side = Stamps::client();
        assert!(client_side.begin(client, None));
        assert_eq!(client_side.plan(client, now, 1_200, 12_000).datagrams, 10);
        assert_eq!(server.plan(addr(1004), now, 1_200, 1_200).datagrams, 1);
    }

    #[test]
    fn an_address_whose_handshake_failed_stays_limited() {
        let (server, client, now) = handshaking(1005);
        server.sent(client, 3_500, None, 0);
        server.closed(client);
        // noq's close of the abandoned handshake: 100 bytes left.
        assert_eq!(server.plan(client, now, 101, 101).datagrams, 0);
        assert_eq!(server.plan(client, now, 100, 100).datagrams, 1);
        // A new handshake from the address: what it sends counts.
        server.received(client, &[0xc0u8; 1200], now);
        assert!(server.begin(client, None));
        assert_eq!(server.plan(client, now, 3_700, 3_700).datagrams, 1);
        // Once validated, and after that connection ends, nothing is limited.
        server.mark_connected(client);
        server.closed(client);
        assert_eq!(server.plan(client, now, 10_000, 10_000).datagrams, 1);
    }

    #[test]
    fn one_connection_per_address_and_a_closed_one_is_forgotten() {
        let feed = OwdFeed::default();
        let client = addr(1001);
        let (server, _) = stamped_connection(client);
        assert!(
            !server.begin(client, Some(feed.clone())),
            "a second connection from the same address"
        );
        assert!(server.stamping(client), "the first one is untouched");
        server.closed(client);
        assert!(!server.stamping(client));
        // A new client on the address of an earlier stamped one (port reuse) starts clean.
        assert!(server.begin(client, Some(feed.clone())));
        let d = echo(5, (1, 2));
        assert_eq!(server.received(client, &d, server.epoch), d.len());
        assert!(feed.drain().is_empty());
        assert_eq!(
            server.stats().stray_datagrams,
            0,
            "still a connected address"
        );
        assert_eq!(server.stamped_peers(), 1);
    }

    #[test]
    fn echoes_reach_only_the_connection_they_arrived_on() {
        let honest = addr(4000);
        let (server, stamped_feed) = stamped_connection(addr(4001));
        let honest_feed = OwdFeed::default();
        assert!(server.begin(honest, Some(honest_feed.clone())));
        server.mark_connected(honest);
        let now = server.epoch + Duration::from_millis(50);
        // The server stamped datagrams to the stamped client only; it echoes them.
        for t in [10_000, 20_000] {
            stamped_to(&server, addr(4001), t, 1);
        }
        let d = echo(1_000_000, (10_000, 1_000_000));
        assert_eq!(server.received(addr(4001), &d, now), 20);
        // The other client did not agree to timestamps: a trailer from it is its QUIC
        // bytes, whatever it echoes, and nothing reaches any feed.
        let d = echo(1_000_000, (20_000, 1_000_500));
        assert_eq!(server.received(honest, &d, now), d.len());
        assert_eq!(stamped_feed.drain().len(), 1);
        assert!(honest_feed.drain().is_empty());
        assert_eq!(honest_feed.refused(), (0, 0));
        assert_eq!(server.stats().samples, 1);
    }

    #[test]
    fn echoes_that_cannot_be_true_are_refused_and_counted() {
        let peer = addr(5000);
        let (server, feed) = stamped_connection(peer);
        let now = server.epoch + Duration::from_millis(100);
        // Two datagrams stamped at 10 ms (a GSO batch), one at 11 ms and one at 12 ms.
        stamped_to(&server, peer, 10_000, 2);
        stamped_to(&server, peer, 11_000, 1);
        stamped_to(&server, peer, 12_000, 1);
        let mut received = 500_000u32;
        let send = |sent: u32, received: u32| {
            server.received(peer, &echo(received + 1, (sent, received)), now);
        };
        // A send time never stamped.
        send(10_500, received);
        // The first echo of 10 ms is taken, the second too (two datagrams), a third is not.
        send(10_000, received);
        received += 1_000;
        send(10_000, received);
        send(10_000, received);
        // 11 ms, with a receive time 2 ms back: beyond the tolerance.
        send(11_000, received - 2_000);
        // 12 ms, 0.5 ms back: within it.
        send(12_000, received - 500);
        assert_eq!(feed.drain().len(), 3);
        assert_eq!(feed.refused(), (2, 1), "(unknown echoes, backwards)");
        let stats = server.stats();
        assert_eq!(
            (
                stats.samples,
                stats.rejected_unknown_echo,
                stats.rejected_backwards
            ),
            (3, 2, 1)
        );
        // Echoing 12 ms spent it and everything before.
        send(11_000, received);
        assert_eq!(feed.refused(), (3, 1));
    }

    #[test]
    fn a_connection_keeps_a_bounded_number_of_send_times() {
        let peer = addr(5001);
        let (server, feed) = stamped_connection(peer);
        let n = MAX_OUTSTANDING as u32 + 10;
        for i in 0..n {
            stamped_to(&server, peer, 1_000 + i, 1);
        }
        assert_eq!(
            lock(&server.peers).map[&peer].outstanding.len(),
            MAX_OUTSTANDING
        );
        let now = server.epoch;
        server.received(peer, &echo(1, (1_000, 0)), now);
        assert_eq!(feed.refused().0, 1, "the oldest was forgotten");
        server.received(peer, &echo(1, (1_010, 0)), now);
        assert_eq!(feed.drain().len(), 1, "the oldest kept");
        // Send times a minute old are forgotten.
        stamped_to(&server, peer, 1_000 + n + OUTSTANDING_AGE_US + 20, 1);
        assert_eq!(lock(&server.peers).map[&peer].outstanding.len(), 1);
    }

    #[test]
    fn echoes_become_relative_one_way_delays_on_the_sender_clock() {
        let peer = addr(2000);
        let (sender, feed) = stamped_connection(peer);
        let at = |ms: u64| sender.epoch + Duration::from_millis(ms);
        stamped_to(&sender, peer, 10_000, 1);
        stamped_to(&sender, peer, 20_000, 1);
        // Sent at 10 ms, received at 1,000,000 us on the peer's clock, echoed 2 ms later;
        // the echo arrives at 60 ms.
        sender.received(peer, &echo(1_002_000, (10_000, 1_000_000)), at(60));
        // 7 ms more queuing for a packet sent at 20 ms, echoed at once.
        sender.received(peer, &echo(1_017_000, (20_000, 1_017_000)), at(70));
        let r = feed.drain();
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
        let peer = addr(3000);
        let (sender, feed) = stamped_connection(peer);
        let now = sender.epoch + Duration::from_micros(u64::from(u32::MAX) + 50_000);
        let sent_us = sender.micros(now).wrapping_sub(100_000); // 100 ms before, before the wrap
        assert!(sent_us > u32::MAX - 100_000);
        stamped_to(&sender, peer, sent_us, 1);
        stamped_to(&sender, peer, sent_us.wrapping_add(1_000), 1);
        let received_us = 20_000u32; // after the peer's own wrap
        sender.received(
            peer,
            &echo(received_us.wrapping_add(1_000), (sent_us, received_us)),
            now,
        );
        sender.received(
            peer,
            &echo(
                received_us.wrapping_add(2_000),
                (sent_us.wrapping_add(1_000), received_us.wrapping_add(500)),
            ),
            now,
        );
        let r = feed.drain();
        assert_eq!(r.len(), 2, "both taken: {:?}", feed.refused());
        assert_eq!(now - r[0].sent, Duration::from_millis(100));
        assert_eq!(r[0].hold, Duration::from_millis(1));
        // The second packet took 0.5 ms less than the first.
        assert_eq!(r[1].one_way, ONE_WAY_BASE - Duration::from_micros(500));
    }

    #[test]
    fn peers_whose_connection_ended_are_forgotten_beyond_a_bound() {
        let s = Stamps::server();
        let quic = [0x40u8; 50];
        let n = MAX_CLOSED_PEERS as u16 + 10;
        for port in 1..=n {
            assert!(s.begin(addr(port), None));
            s.stamp(addr(port));
            s.mark_connected(addr(port));
            s.received(addr(port), &quic, s.epoch);
            s.closed(addr(port));
        }
        // Port 11, the oldest kept, connects again before it would be forgotten: it is kept.
        assert!(s.begin(addr(11), None));
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
    fn failed_handshakes_leave_a_bounded_number_of_addresses() {
        let s = Stamps::server();
        let n = MAX_UNCONNECTED_PEERS as u16 + 100;
        for port in 1..=n {
            s.received(addr(port), &[0xc0u8; 1200], s.epoch);
            assert!(s.begin(addr(port), None));
            s.closed(addr(port));
        }
        assert!(lock(&s.peers).map.len() <= MAX_UNCONNECTED_PEERS);
        let stats = s.stats();
        assert_eq!(
            (stats.datagrams_in, stats.stray_datagrams),
            (u64::from(n), u64::from(n))
        );
    }

    #[test]
    fn datagrams_from_peers_without_a_connection_are_strays() {
        let s = Stamps::server();
        assert!(s.begin(addr(1), None));
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
