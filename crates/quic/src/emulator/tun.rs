//! The TUN door: IP packets read from the client namespace's TUN device go through the forward
//! link and are written to the server namespace's device, and back through the reverse link.
//! A packet's size on the link is its IP length. Its class at a fair queue is its transport
//! flow (protocol, addresses and ports, either direction), numbered as first seen, modulo
//! [`MAX_CLASSES`] (past 4096 flows, by a hash of the flow instead, so that the table stays
//! bounded). A packet that is not IPv4 or IPv6 is dropped and counted as unknown. TUN devices
//! give no receive timestamp: a packet enters its link when the thread reads it.

use super::engine::{pollfd, ready, Arrival, Door, Intake, FORWARD, REVERSE};
use super::EmulatorStats;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Most distinct classes (flows) at a fair queue.
pub const MAX_CLASSES: u32 = 256;
/// Most flows numbered as first seen; further flows take the class their key hashes to, so
/// that the table stays bounded whatever the programs behind the link open.
const MAX_NUMBERED: usize = 4096;
/// Packets read from one device before the other's turn.
const BATCH: usize = 64;
/// Largest packet read (the devices' MTU is 1500).
const MAX_PACKET: usize = 65_536;

/// A transport flow: protocol and the two (address, port) ends, the smaller first.
type FlowKey = (u8, [u8; 18], [u8; 18]);

/// The two TUN devices and the flow classes.
pub(crate) struct TunDoor {
    /// `[client device, server device]`: index `d` is read into link `d`.
    tuns: [OwnedFd; 2],
    /// `[control, client device, server device]`.
    fds: [libc::pollfd; 3],
    buf: Vec<u8>,
    classes: HashMap<FlowKey, u32>,
    unknown_dropped: u64,
    unknown_bytes: u64,
    io_errors: u64,
    /// Why a device stopped being read (it failed), if one did.
    failure: Option<String>,
}

impl TunDoor {
    /// The door of the client's and the server's TUN devices; `control` is the engine's poll
    /// entry.
    pub fn new(client: OwnedFd, server: OwnedFd, control: libc::pollfd) -> Self {
        let fds = [control, pollfd(&client), pollfd(&server)];
        TunDoor {
            tuns: [client, server],
            fds,
            buf: vec![0; MAX_PACKET],
            classes: HashMap::new(),
            unknown_dropped: 0,
            unknown_bytes: 0,
            io_errors: 0,
            failure: None,
        }
    }

    /// Reads one packet from device `d` into `buf`: its length, or `None` when there is none.
    fn read(&mut self, d: usize) -> Option<usize> {
        loop {
            // SAFETY: reads at most `buf.len()` bytes into `buf` from a live descriptor.
            let n = unsafe {
                libc::read(
                    self.tuns[d].as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n >= 0 {
                return Some(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return None,
                _ => {
                    // A TUN device does not fail and recover: stop polling it (it would wake
                    // the thread for ever) and make the run invalid.
                    self.io_errors += 1;
                    self.fds[d + 1].fd = -1;
                    self.failure = Some(format!("reading TUN device {d} failed: {e}"));
                    return None;
                }
            }
        }
    }

    /// The class of the packet in `buf[..n]`; `None` if it is not an IP packet.
    fn class_of(&mut self, n: usize) -> Option<u32> {
        let key = flow_key(&self.buf[..n])?;
        let next = self.classes.len();
        let class = match self.classes.get(&key) {
            Some(&c) => c,
            None if next < MAX_NUMBERED => {
                self.classes.insert(key, next as u32);
                next as u32
            }
            None => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                key.hash(&mut h);
                h.finish() as u32
            }
        };
        Some(class % MAX_CLASSES)
    }

    /// Reads up to [`BATCH`] packets from device `d` into `out`; true if it is now empty.
    fn drain_device(&mut self, d: usize, intake: &mut Intake, out: &mut Vec<Arrival>) -> bool {
        let mut last = 0;
        for _ in 0..BATCH {
            if intake.round_full() {
                return false;
            }
            let Some(n) = self.read(d) else {
                return true;
            };
            let Some(class) = self.class_of(n) else {
                self.unknown_dropped += 1;
                self.unknown_bytes += n as u64;
                continue;
            };
            let (at, data) = intake.take(&self.buf[..n], None, last);
            last = at;
            out.push(Arrival {
                at,
                dir: d,
                class,
                data,
                wire: n as u32,
            });
        }
        false
    }
}

/// The flow of an IPv4 or IPv6 packet: protocol, and the (address, port) ends in order, so
/// that both directions of a connection have one key. Ports are read for TCP, UDP and SCTP
/// right after the fixed header (IPv6 extension headers are not followed).
fn flow_key(p: &[u8]) -> Option<FlowKey> {
    let (proto, src, dst, l4) = match p.first()? >> 4 {
        4 if p.len() >= 20 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            (p[9], &p[12..16], &p[16..20], ihl)
        }
        6 if p.len() >= 40 => (p[6], &p[8..24], &p[24..40], 40),
        _ => return None,
    };
    let ports = match proto {
        6 | 17 | 132 => p.get(l4..l4 + 4).unwrap_or(&[0; 4]),
        _ => &[0; 4],
    };
    let end = |addr: &[u8], port: &[u8]| {
        let mut e = [0u8; 18];
        e[..addr.len()].copy_from_slice(addr);
        e[16..].copy_from_slice(port);
        e
    };
    let (a, b) = (end(src, &ports[..2]), end(dst, &ports[2..]));
    Some((proto, a.min(b), a.max(b)))
}

impl Door for TunDoor {
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        &mut self.fds
    }

    fn drain(&mut self, intake: &mut Intake, _held: &[u32], out: &mut Vec<Arrival>) -> bool {
        let mut drained = true;
        for d in [FORWARD, REVERSE] {
            if ready(&self.fds[d + 1]) {
                drained &= self.drain_device(d, intake, out);
            }
        }
        drained
    }

    fn send(&mut self, dir: usize, _class: u32, data: &[u8]) -> io::Result<u32> {
        // Forward packets come out of the server's device, reverse ones out of the client's.
        let to = &self.tuns[1 - dir];
        // SAFETY: writes `data.len()` bytes from `data` to a live descriptor.
        let n = unsafe { libc::write(to.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(data.len() as u32)
    }

    fn upkeep(&mut self, _now_ns: u64, _held: &[u32]) {}

    fn report(&self, stats: &mut EmulatorStats) {
        stats.clients_seen = self.classes.len() as u64;
        stats.unknown_dropped = self.unknown_dropped;
        stats.unknown_bytes = self.unknown_bytes;
        stats.io_errors = self.io_errors;
        stats.failure.clone_from(&self.failure);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_tcp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn both_directions_of_a_connection_share_a_flow_and_other_ports_do_not() {
        let a = flow_key(&ipv4_tcp([10, 77, 0, 1], 40000, [10, 77, 0, 2], 5201)).unwrap();
        let back = flow_key(&ipv4_tcp([10, 77, 0, 2], 5201, [10, 77, 0, 1], 40000)).unwrap();
        let other = flow_key(&ipv4_tcp([10, 77, 0, 1], 40001, [10, 77, 0, 2], 5201)).unwrap();
        assert_eq!(a, back);
        assert_ne!(a, other);
    }

    #[test]
    fn what_is_not_ip_has_no_flow() {
        assert!(flow_key(&[]).is_none());
        assert!(
            flow_key(&[0x45; 10]).is_none(),
            "shorter than an IPv4 header"
        );
        assert!(flow_key(&[0x00; 60]).is_none(), "version 0");
    }
}
