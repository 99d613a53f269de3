//! Packets: small pooled records without payload, and pooled ACK frames. A packet is named by
//! its index in the pool; slots are reused, so steady state allocates nothing.

/// The `carried` of a [`Body::DccpData`] that carries no tunnel packet.
pub const NOT_CARRIED: u32 = u32::MAX;

/// A data packet's stream chunk, or the ACK frame an ACK packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Stream bytes `[offset, offset + len)`; `ack_floor` is the sender's lowest packet number
    /// still awaiting an outcome (the receiver may forget ranges below it).
    Data {
        /// First stream byte carried.
        offset: u64,
        /// Stream bytes carried.
        len: u32,
        /// Sender's lowest packet number not yet acknowledged or declared lost.
        ack_floor: u64,
    },
    /// An ACK; the frame is in the frame pool.
    Ack {
        /// Index of the frame in the frame pool.
        frame: u32,
    },
    /// A datagram of an unresponsive (constant-rate) flow.
    Datagram,
    /// A DCCP data packet: when its application handed it over, the Ack Ratio the sender asks
    /// the receiver to use, and the greatest Acknowledgement Number the sender has seen in an
    /// ACK (`u64::MAX` for none), which lets the receiver prune its Ack Vector.
    DccpData {
        /// When the application handed the packet to the transport, ns.
        app_ns: u64,
        /// The Ack Ratio in force (RFC 4340 §11.3).
        ack_ratio: u32,
        /// Greatest Acknowledgement Number the sender has received (its Ack-of-Ack).
        ack_of_ack: u64,
        /// The tunnel packet it carries (an index into the simulation's carried packets), or
        /// [`NOT_CARRIED`] for a packet of the flow's own application.
        carried: u32,
    },
    /// A DCCP ACK; its Ack Vector is in the simulation's Ack Vector pool.
    DccpAck {
        /// Index of the Ack Vector in the pool.
        vector: u32,
    },
}

/// A packet in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Index of the flow (subflow) it belongs to; also its class at a fair queue.
    pub flow: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Index of the next link on its path.
    pub hop: u16,
    /// Whether it travels the flow's reverse path.
    pub reverse: bool,
    /// Packet number (data and datagrams).
    pub number: u64,
    /// Sender's send time, ns.
    pub sent_ns: u64,
    /// What it carries.
    pub body: Body,
}

/// An ACK frame: received packet-number ranges and the receive time of the largest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckFrame {
    /// Received packet numbers as ascending, disjoint `[start, end)` ranges.
    pub ranges: Vec<(u64, u64)>,
    /// Receiver's clock when the largest acknowledged packet arrived, ns.
    pub largest_received_ns: u64,
    /// Time the receiver held the ACK back (RFC 9000 ack_delay), ns.
    pub ack_delay_ns: u64,
}

impl AckFrame {
    /// Largest acknowledged packet number.
    pub fn largest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1 - 1)
    }

    /// Whether packet `pn` is acknowledged.
    pub fn contains(&self, pn: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= pn);
        self.ranges.get(i).is_some_and(|r| r.0 <= pn)
    }
}

/// A pool of reusable slots.
#[derive(Debug, Default)]
pub struct Pool<T> {
    slots: Vec<T>,
    free: Vec<u32>,
}

impl<T: Default> Pool<T> {
    /// Stores `value` and returns its index, reusing a free slot when there is one.
    pub fn insert(&mut self, value: T) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = value;
            i
        } else {
            self.slots.push(value);
            (self.slots.len() - 1) as u32
        }
    }

    /// A free slot, with its old contents left in place for reuse (e.g. a vector's capacity).
    pub fn take_slot(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            i
        } else {
            self.slots.push(T::default());
            (self.slots.len() - 1) as u32
        }
    }

    /// Frees slot `i`; its contents stay until reused.
    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// The value in slot `i`.
    pub fn get(&self, i: u32) -> &T {
        &self.slots[i as usize]
    }

    /// The value in slot `i`, mutably.
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.slots[i as usize]
    }

    /// Slots in use.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl Default for Packet {
    fn default() -> Self {
        Packet {
            flow: 0,
            size: 0,
            hop: 0,
            reverse: false,
            number: 0,
            sent_ns: 0,
            body: Body::Datagram,
        }
    }
}
