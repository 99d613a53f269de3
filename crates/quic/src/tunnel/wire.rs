//! The tunnel's own header, in front of each carried packet inside a QUIC DATAGRAM frame: the
//! overall sequence number (the MP-DCCP framework's MP_SEQ) and the time the packet entered the
//! tunnel (the far end's latency measurement; both ends share one clock on loopback).
//!
//! Big-endian: the overall sequence number (`u64`), then the entry time in microseconds since
//! the tunnel's start (`u32`, which wraps after 71 minutes: a run is at most [`MAX_RUN`]).

use std::time::Duration;

/// Bytes of the header.
pub const HEADER: usize = 12;
/// Bytes in front of a carried UDP payload that stand for its IPv4 and UDP headers (zeros), so
/// that a carried packet has the size it would have in a tunnel of IP packets, as the
/// simulator counts it.
pub const STAND_IN: usize = 28;
/// The longest run whose entry times do not wrap.
pub const MAX_RUN: Duration = Duration::from_secs(3600);

/// A tunnel packet's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The overall sequence number, from 0.
    pub overall: u64,
    /// When the packet entered the tunnel, ns since the tunnel's start (microsecond steps).
    pub entered_ns: u64,
}

impl Header {
    /// The datagram of this header followed by `carried` bytes of the carried packet: zeros,
    /// then `payload` at the end (the carried packet's UDP payload; empty for a constant-rate
    /// source's packets, which carry nothing).
    pub fn datagram(&self, carried: usize, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0u8; HEADER + carried.max(payload.len())];
        d[..8].copy_from_slice(&self.overall.to_be_bytes());
        let micros = (self.entered_ns / 1_000) as u32;
        d[8..HEADER].copy_from_slice(&micros.to_be_bytes());
        let start = d.len() - payload.len();
        d[start..].copy_from_slice(payload);
        d
    }

    /// The header of `datagram` and the bytes it carries; `None` for a datagram too short to
    /// be a tunnel packet.
    pub fn parse(datagram: &[u8]) -> Option<(Header, usize)> {
        let seq: [u8; 8] = datagram.get(..8)?.try_into().ok()?;
        let micros: [u8; 4] = datagram.get(8..HEADER)?.try_into().ok()?;
        let header = Header {
            overall: u64::from_be_bytes(seq),
            entered_ns: u64::from(u32::from_be_bytes(micros)) * 1_000,
        };
        Some((header, datagram.len() - HEADER))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_to_the_microsecond_and_a_short_datagram_is_refused() {
        let h = Header {
            overall: 0x0102_0304_0506_0708,
            entered_ns: 4_321_987_654,
        };
        let d = h.datagram(1448, &[7, 8]);
        assert_eq!(d.len(), HEADER + 1448);
        let (back, carried) = Header::parse(&d).expect("a whole header");
        assert_eq!(back.overall, h.overall);
        assert_eq!(back.entered_ns, 4_321_987_000);
        assert_eq!(carried, 1448);
        assert_eq!(
            &d[d.len() - 3..],
            &[0, 7, 8],
            "the payload ends the datagram"
        );
        assert_eq!(Header::parse(&d[..HEADER - 1]), None);
    }
}
