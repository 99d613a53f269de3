//! A tunnel end's socket: noq's UDP socket, passing on only the datagrams of the end's peer
//! once the peer is known; the others are dropped and counted before QUIC sees them.
//!
//! The entry's peer is its path's emulator, known before it connects. The far end's is the
//! emulator's socket for that entry, known once the path's connection is accepted; until then
//! QUIC itself refuses what is not a handshake with it.

use crate::lock;
use noq::udp::RecvMeta;
use noq::{AsyncUdpSocket, Runtime, TokioRuntime, UdpSender};
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Whom a gated socket listens to, and what it dropped.
#[derive(Debug, Default)]
pub struct Gate {
    peer: Mutex<Option<SocketAddr>>,
    dropped: AtomicU64,
}

impl Gate {
    /// From now on, only `peer`'s datagrams pass.
    pub fn admit_only(&self, peer: SocketAddr) {
        *lock(&self.peer) = Some(peer);
    }

    /// Datagrams dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn peer(&self) -> Option<SocketAddr> {
        *lock(&self.peer)
    }
}

/// noq's socket around a UDP socket, behind a [`Gate`].
pub struct GatedSocket {
    inner: Box<dyn AsyncUdpSocket>,
    gate: Arc<Gate>,
}

impl fmt::Debug for GatedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatedSocket").finish_non_exhaustive()
    }
}

impl GatedSocket {
    /// Wraps `socket` (non-blocking) for noq on the tokio runtime; call inside the runtime.
    pub fn new(socket: std::net::UdpSocket, gate: Arc<Gate>) -> io::Result<Self> {
        Ok(GatedSocket {
            inner: TokioRuntime.wrap_udp_socket(socket)?,
            gate,
        })
    }
}

/// Moves the first `n` received buffers that come from `peer` (all, without one) to the
/// front, in order; returns how many there are and how many datagrams were left out.
fn keep_from(
    peer: Option<SocketAddr>,
    bufs: &mut [IoSliceMut<'_>],
    meta: &mut [RecvMeta],
    n: usize,
) -> (usize, u64) {
    let mut kept = 0;
    let mut dropped = 0;
    for i in 0..n {
        let m = meta[i];
        if peer.is_some_and(|p| p != m.addr) {
            dropped += m.len.div_ceil(m.stride.max(1)).max(1) as u64;
            continue;
        }
        if kept != i {
            let (front, back) = bufs.split_at_mut(i);
            front[kept][..m.len].copy_from_slice(&back[0][..m.len]);
            meta[kept] = m;
        }
        kept += 1;
    }
    (kept, dropped)
}

impl AsyncUdpSocket for GatedSocket {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        self.inner.create_sender()
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            let n = match self.inner.poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(n)) => n,
                other => return other,
            };
            let (kept, dropped) = keep_from(self.gate.peer(), bufs, meta, n);
            self.gate.dropped.fetch_add(dropped, Ordering::Relaxed);
            if kept > 0 {
                return Poll::Ready(Ok(kept));
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_receive_segments(&self) -> NonZeroUsize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(addr: &str, len: usize) -> RecvMeta {
        let mut m = RecvMeta::default();
        m.addr = addr.parse().expect("an address");
        m.len = len;
        m.stride = len;
        m
    }

    #[test]
    fn only_the_peers_datagrams_pass_in_order_and_the_others_are_counted() {
        let mut storage = [[1u8; 4], [2; 4], [3; 4], [4; 4]];
        let mut bufs: Vec<IoSliceMut> = storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let mut m = [
            meta("127.0.0.1:9", 4),
            meta("127.0.0.1:7", 3),
            meta("127.0.0.1:8", 4),
            meta("127.0.0.1:7", 2),
        ];
        let peer = Some("127.0.0.1:7".parse().expect("an address"));
        let (kept, dropped) = keep_from(peer, &mut bufs, &mut m, 4);
        assert_eq!((kept, dropped), (2, 2));
        assert_eq!((m[0].len, m[1].len), (3, 2));
        assert_eq!(
            (&bufs[0][..3], &bufs[1][..2]),
            (&[2u8; 3][..], &[4u8; 2][..])
        );
        let (kept, dropped) = keep_from(None, &mut bufs, &mut m, 4);
        assert_eq!(
            (kept, dropped),
            (4, 0),
            "before the peer is known, all pass"
        );
    }
}
