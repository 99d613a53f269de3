//! The UDP door: the listen socket, one upstream socket per client, and the client slots (see
//! the parent module's "Topology").

use super::engine::{pollfd, ready, Arrival, Door, Intake, FORWARD, REVERSE};
use super::{
    enable_receive_metadata, receive, set_socket_buffers, wire_bytes, ClientInfo, EmulatorStats,
    Received, MAX_CLIENTS, SOCKET_BUFFER_BYTES,
};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// Datagrams read from one socket before the next socket's turn.
const BATCH: usize = 64;
/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_536;

/// A client: its address and the socket that speaks to the server for it.
#[derive(Debug)]
struct Client {
    addr: SocketAddr,
    upstream: UdpSocket,
    upstream_addr: SocketAddr,
    /// When a datagram from or to it last arrived, ns.
    last_active_ns: u64,
}

/// The relay's sockets and client slots.
pub(crate) struct UdpDoor {
    listen: UdpSocket,
    server: SocketAddr,
    /// The client slots (a slot's index is its client's class); `None` is free.
    clients: Vec<Option<Client>>,
    /// Free slots.
    free_clients: Vec<u32>,
    by_addr: HashMap<SocketAddr, u32>,
    client_idle_ns: u64,
    /// When the slots were last looked at for expiry, ns.
    last_sweep_ns: u64,
    clients_seen: u64,
    clients_expired: u64,
    clients_refused: u64,
    /// `[control, listen, upstream of slot 0, slot 1, ...]`; a free slot's fd is -1 (ignored
    /// by poll).
    fds: Vec<libc::pollfd>,
    buf: Vec<u8>,
    unknown_dropped: u64,
    unknown_bytes: u64,
    io_errors: u64,
    socket_buffer_bytes: usize,
    /// Each socket's drop counter, as `fds` (index 0, the control socket, stays 0).
    socket_drops: Vec<u32>,
    /// The drop counters of the upstream sockets of expired slots.
    socket_drops_gone: u64,
}

impl UdpDoor {
    /// The door of `listen`, relaying to `server`; `control` is the engine's poll entry.
    pub fn new(
        listen: UdpSocket,
        server: SocketAddr,
        client_idle_ns: u64,
        control: libc::pollfd,
        socket_buffer_bytes: usize,
    ) -> Self {
        let fds = vec![control, pollfd(&listen)];
        UdpDoor {
            listen,
            server,
            clients: Vec::new(),
            free_clients: Vec::new(),
            by_addr: HashMap::new(),
            client_idle_ns,
            last_sweep_ns: 0,
            clients_seen: 0,
            clients_expired: 0,
            clients_refused: 0,
            fds,
            buf: vec![0; MAX_DATAGRAM],
            unknown_dropped: 0,
            unknown_bytes: 0,
            io_errors: 0,
            socket_buffer_bytes,
            socket_drops: vec![0, 0],
            socket_drops_gone: 0,
        }
    }

    /// Reads one datagram from socket `i` of `fds` (1: listen, 2+: upstream of client i-2);
    /// `None` when there is nothing more to read now.
    fn read(&mut self, i: usize) -> Option<Received> {
        loop {
            let socket = match i {
                1 => &self.listen,
                _ => match &self.clients[i - 2] {
                    Some(c) => &c.upstream,
                    None => return None,
                },
            };
            match receive(socket, &mut self.buf) {
                Ok(r) => {
                    if let Some(d) = r.socket_drops {
                        self.socket_drops[i] = self.socket_drops[i].max(d);
                    }
                    return Some(r);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(_) => {
                    self.io_errors += 1;
                    return None;
                }
            }
        }
    }

    /// The datagram just read into `buf`, for link `dir`, arrived no earlier than `after` (see
    /// [`Intake::take`]).
    fn arrival(
        &self,
        intake: &mut Intake,
        r: &Received,
        dir: usize,
        client: u32,
        after: u64,
    ) -> Arrival {
        let (at, data) = intake.take(&self.buf[..r.len], r.waited_ns(), after);
        Arrival {
            at,
            dir,
            class: client,
            data,
            wire: wire_bytes(r.len, r.from.is_ipv6()),
        }
    }

    /// Reads up to [`BATCH`] datagrams from the listen socket into `out`; true if it is now
    /// empty.
    fn drain_listen(&mut self, intake: &mut Intake, held: &[u32], out: &mut Vec<Arrival>) -> bool {
        let mut last = 0;
        for _ in 0..BATCH {
            if intake.round_full() {
                return false;
            }
            let Some(r) = self.read(1) else {
                return true;
            };
            let now = intake.now_ns();
            let Some(client) = self.client_for(r.from, now, held) else {
                self.clients_refused += 1;
                continue;
            };
            self.touch(client, now);
            let a = self.arrival(intake, &r, FORWARD, client, last);
            last = a.at;
            out.push(a);
        }
        false
    }

    /// Reads up to [`BATCH`] datagrams from a client's upstream socket into `out`; true if it
    /// is now empty.
    fn drain_upstream(
        &mut self,
        client: usize,
        intake: &mut Intake,
        out: &mut Vec<Arrival>,
    ) -> bool {
        let mut last = 0;
        for _ in 0..BATCH {
            if intake.round_full() {
                return false;
            }
            let Some(r) = self.read(client + 2) else {
                return true;
            };
            if r.from != self.server {
                self.unknown_dropped += 1;
                self.unknown_bytes += r.len as u64;
                continue;
            }
            self.touch(client as u32, intake.now_ns());
            let a = self.arrival(intake, &r, REVERSE, client as u32, last);
            last = a.at;
            out.push(a);
        }
        false
    }

    /// A datagram from or to `client` arrived at `now`.
    fn touch(&mut self, client: u32, now: u64) {
        if let Some(c) = &mut self.clients[client as usize] {
            c.last_active_ns = now;
        }
    }

    /// How often the slots are looked at for expiry: a quarter of the idle time, at most once
    /// a second (and whenever a new client finds them all taken).
    fn sweep_every_ns(&self) -> u64 {
        (self.client_idle_ns / 4).min(1_000_000_000)
    }

    /// Frees the slots of clients idle for `client_idle` with nothing in the links: their
    /// upstream sockets close, and their senders are new clients if they come back.
    fn expire_idle_clients(&mut self, now: u64, held: &[u32]) {
        self.last_sweep_ns = now;
        for i in 0..self.clients.len() {
            let in_links = held.get(i).copied().unwrap_or(0);
            let idle = self.clients[i].as_ref().is_some_and(|c| {
                in_links == 0 && now.saturating_sub(c.last_active_ns) >= self.client_idle_ns
            });
            if !idle {
                continue;
            }
            if let Some(c) = self.clients[i].take() {
                self.by_addr.remove(&c.addr);
                self.fds[i + 2].fd = -1;
                self.fds[i + 2].revents = 0;
                self.free_clients.push(i as u32);
                self.clients_expired += 1;
            }
        }
    }

    /// The index of the client at `addr`, creating it (and its upstream socket) if new.
    fn client_for(&mut self, addr: SocketAddr, now: u64, held: &[u32]) -> Option<u32> {
        if let Some(&c) = self.by_addr.get(&addr) {
            return Some(c);
        }
        if self.by_addr.len() >= MAX_CLIENTS {
            self.expire_idle_clients(now, held);
            if self.by_addr.len() >= MAX_CLIENTS {
                return None;
            }
        }
        let ip = match self.server.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        let open = || -> io::Result<(UdpSocket, SocketAddr)> {
            let s = UdpSocket::bind(SocketAddr::new(ip, 0))?;
            s.set_nonblocking(true)?;
            set_socket_buffers(&s, SOCKET_BUFFER_BYTES)?;
            enable_receive_metadata(&s)?;
            let a = s.local_addr()?;
            Ok((s, a))
        };
        let Ok((upstream, upstream_addr)) = open() else {
            self.io_errors += 1;
            return None;
        };
        let entry = pollfd(&upstream);
        let client = Client {
            addr,
            upstream,
            upstream_addr,
            last_active_ns: now,
        };
        let c = match self.free_clients.pop() {
            Some(c) => {
                self.fds[c as usize + 2] = entry;
                // The kernel's drop counter is the new socket's.
                self.socket_drops_gone += u64::from(self.socket_drops[c as usize + 2]);
                self.socket_drops[c as usize + 2] = 0;
                self.clients[c as usize] = Some(client);
                c
            }
            None => {
                self.fds.push(entry);
                self.socket_drops.push(0);
                self.clients.push(Some(client));
                (self.clients.len() - 1) as u32
            }
        };
        self.by_addr.insert(addr, c);
        self.clients_seen += 1;
        Some(c)
    }
}

impl Door for UdpDoor {
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        &mut self.fds
    }

    fn drain(&mut self, intake: &mut Intake, held: &[u32], out: &mut Vec<Arrival>) -> bool {
        let mut drained = true;
        if ready(&self.fds[1]) {
            drained &= self.drain_listen(intake, held, out);
        }
        // Clients added while draining are polled from the next round on.
        for i in 2..self.fds.len() {
            if ready(&self.fds[i]) && self.clients[i - 2].is_some() {
                drained &= self.drain_upstream(i - 2, intake, out);
            }
        }
        drained
    }

    fn send(&mut self, dir: usize, class: u32, data: &[u8]) -> io::Result<u32> {
        let Some(client) = self.clients[class as usize].as_ref() else {
            return Err(io::Error::other("the client's slot expired"));
        };
        let (socket, to) = if dir == FORWARD {
            (&client.upstream, self.server)
        } else {
            (&self.listen, client.addr)
        };
        socket.send_to(data, to)?;
        Ok(wire_bytes(data.len(), to.is_ipv6()))
    }

    fn upkeep(&mut self, now_ns: u64, held: &[u32]) {
        if now_ns.saturating_sub(self.last_sweep_ns) >= self.sweep_every_ns() {
            self.expire_idle_clients(now_ns, held);
        }
    }

    fn report(&self, stats: &mut EmulatorStats) {
        stats.clients = self
            .clients
            .iter()
            .flatten()
            .map(|c| ClientInfo {
                addr: c.addr,
                upstream: c.upstream_addr,
            })
            .collect();
        stats.clients_seen = self.clients_seen;
        stats.clients_expired = self.clients_expired;
        stats.clients_refused = self.clients_refused;
        stats.unknown_dropped = self.unknown_dropped;
        stats.unknown_bytes = self.unknown_bytes;
        stats.io_errors = self.io_errors;
        stats.socket_drops =
            self.socket_drops_gone + self.socket_drops.iter().map(|&d| u64::from(d)).sum::<u64>();
        stats.socket_buffer_bytes = self.socket_buffer_bytes;
    }
}
